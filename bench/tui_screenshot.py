"""Save a screenshot of ``encodr tui`` searching an index (SVG, via Textual's pilot).

    python bench/tui_screenshot.py --index DIR --query "heart disease treatment" --out docs/tui.svg
    rsvg-convert docs/tui.svg -o docs/tui.png      # Debian package librsvg2-bin
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as `encodr tui` does

import argparse
import asyncio
from pathlib import Path

from encodr.index import Searcher
from encodr.tui import EncodrApp


async def shoot(index: Path, query: str, out: Path) -> None:
    searcher = Searcher(index)
    searcher.search(["warm-up"], 10)  # the status line then shows a warm query's time
    app = EncodrApp(searcher=searcher, debounce=0.0)
    async with app.run_test(size=(130, 24)) as pilot:
        await pilot.click("#query")
        await pilot.press(*query)
        await pilot.press("enter")
        # the Train pane's DirectoryTree keeps a loader worker alive: wait for the others
        others = [w for w in app.workers if w.group != "_loader"]
        if others:  # an empty list would mean "all of them"
            await app.workers.wait_for_complete(others)
        await pilot.pause()
        app.save_screenshot(filename=out.name, path=str(out.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--query", default="heart disease treatment")
    parser.add_argument("--out", type=Path, default=Path("docs/tui.svg"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(shoot(args.index, args.query, args.out))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
