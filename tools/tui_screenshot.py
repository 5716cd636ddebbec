"""Screenshots of every screen of ``encodr tui`` (SVG via Textual's pilot, then PNG), made by
doing the whole job once in a fresh workspace with the bundled MiniLM:

1. **Train** (F5): the word recipe on the 2,000 most frequent English words, WordSim-353 as the
   dev set (20 steps, about 20 s on 2 cores) — the loss curve, the dev curve, the result;
2. **Index** (F6): the first 3,000 bundled Wikipedia sentences with the base MiniLM;
3. **Search** (F2, opened from the Index pane with ``o``): a query;
4. **Compare** (F3): two texts;
5. **Eval** (F7): the ``words`` suite, the tuned model against MiniLM (table and bar chart);
6. **Runs** (F8): the run just made;
7. **Workspace** (F4) and **Help** (F1).

    python tools/tui_screenshot.py --out docs/tui            # docs/tui-train.svg/.png, …
    python tools/tui_screenshot.py --only search --out docs/tui --query "heart disease treatment"

PNG conversion uses ``rsvg-convert`` (Debian ``librsvg2-bin``) when it is on the PATH, else
``cairosvg`` (``pip install -e .[bench]``). Every screen drives the same core as the CLI
(``encodr.methods.tune``, ``encodr.index.build``, ``encodr.evaluation.run``, the registry).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as `encodr tui` does

import argparse
import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

SCREENS = ("train", "index", "search", "compare", "eval", "runs", "workspace", "help")
SIZE = (160, 48)


def to_png(svg: Path) -> Path:
    """Convert one SVG screenshot to PNG beside it (rsvg-convert, else cairosvg)."""
    png = svg.with_suffix(".png")
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", str(svg), "-o", str(png)], check=True)
    else:
        import cairosvg

        cairosvg.svg2png(url=str(svg), write_to=str(png))
    return png


async def settle(app, pilot) -> None:
    """Wait until no worker but the DirectoryTree's permanent loader is running."""
    while True:
        others = [w for w in app.workers if w.group != "_loader" and not w.is_finished]
        if not others:  # an empty list would mean "all of them" to Textual
            break
        await app.workers.wait_for_complete(others)
    await pilot.pause()


async def shoot(out: Path, work: Path, query: str, only: set[str]) -> list[Path]:
    from encodr.data.text import top_words
    from encodr.paths import bundled
    from encodr.tui import EncodrApp

    words = work / "words2000.txt"
    words.write_text("\n".join(top_words(2000)) + "\n")
    wiki = work / "wiki3000.txt"
    wiki.write_text("".join(bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines(keepends=True)[:3000]))
    shots: list[Path] = []
    app = EncodrApp(debounce=0.0)

    async def snap(name: str) -> None:
        if name in only:
            await pilot.pause()
            svg = out.parent / f"{out.name}-{name}.svg"
            app.save_screenshot(filename=svg.name, path=str(svg.parent))
            shots.append(svg)

    async with app.run_test(size=SIZE) as pilot:
        # Train
        await pilot.press("f5")
        await pilot.pause()
        app.query_one("#train-file").value = str(words)
        app.query_one("TrainPane").preview(words)
        app.query_one("#train-dev").value = "wordsim353"
        app.query_one("#train-out").value = str(work / "word-minilm")
        await pilot.pause()
        app.query_one("TrainPane").start()  # the Start button (below the fold at this size)
        await settle(app, pilot)
        await snap("train")
        # Index → Search
        await pilot.press("f6")
        app.query_one("#index-corpus").value = str(wiki)
        app.query_one("#index-out").value = str(work / "wiki-index")
        await pilot.click("#index-build")
        await settle(app, pilot)
        await snap("index")
        await pilot.click("#index-open")
        await settle(app, pilot)
        await pilot.click("#query")
        await pilot.press(*query)
        await pilot.press("enter")
        await settle(app, pilot)
        await snap("search")
        # Compare
        await pilot.press("f3")
        await pilot.click("#compare-a")
        await pilot.press(*"a heart attack")
        await pilot.click("#compare-b")
        await pilot.press(*"myocardial infarction", "enter")
        await settle(app, pilot)
        await snap("compare")
        # Eval
        await pilot.press("f7")
        app.query_one("#eval-suite").value = "words"
        app.query_one("#eval-model").value = str(work / "word-minilm")
        app.query_one("#eval-compare").value = "minilm"
        await pilot.pause()
        await pilot.click("#eval-run")
        await settle(app, pilot)
        await snap("eval")
        # Runs, Workspace, Help
        await pilot.press("f8")
        await settle(app, pilot)
        await snap("runs")
        await pilot.press("f4")
        await settle(app, pilot)
        await snap("workspace")
        await pilot.press("f1")
        await pilot.pause()
        await snap("help")
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs/tui"), help="prefix: OUT-train.svg, OUT-train.png, …")
    parser.add_argument("--query", default="heart disease treatment")
    parser.add_argument("--only", nargs="+", choices=SCREENS, default=list(SCREENS))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ENCODR_HOME"] = str(Path(tmp) / "home")  # a fresh workspace and registry
        shots = asyncio.run(shoot(args.out, Path(tmp), args.query, set(args.only)))
    for svg in shots:
        print(f"wrote {svg} and {to_png(svg)}")


if __name__ == "__main__":
    main()
