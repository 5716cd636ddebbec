"""Does a person who asks a question of a folder of long documents see the answer? XQuAD's
articles written as files, its questions asked through the CLI as a person asks them, the
default output read at 80 columns.

The set: ../shared/data/xquad (en, de, es; CC BY-SA 4.0), each of the 48 articles one file in a
folder per language: its title as a ``#`` heading, then one paragraph a line with a blank line
between. Articles 0–5 are written as Word files (``.docx``, python-docx: a heading, then a
paragraph each) and 6–11 as plain text (``.txt``, the title on the first line), the rest as
Markdown. Each folder is indexed with ``encodr index FOLDER --out IDX``; ``--questions``
questions a language (a seeded sample) are asked with ``encodr search Q --index IDX -k 5``, the
CLI's own code drawing its hits at 80 columns (in this process: Typer's test runner, the
console 80 wide), and that text is read:

- ``file@1``: the top hit's path is the article's file;
- ``visible``: the answer's text (whitespace folded) is in the top hit's card (its heading and snippet) as printed;
- ``line``: the line the top hit shows (``path:LINE``) is the line of the file the answer sits
  on (Markdown and text files; a Word file has no lines of its own and is left out);
- ``k5``: the output has 5 hits;
- ``screen``: the answer's text is in any hit's snippet on the output's first 23 lines (a
  terminal of 80 × 24 after the command's own line), from whichever file: what a person sees
  without scrolling;
- ``full visible``: the ceiling, the answer in the top hit's ``--full`` text.

The folders are written to a temporary folder and removed after the run.

    python bench/answers.py [--questions 60] [--langs en,de,es] [--label after] [--model me5]

Prints a table and writes bench/results/answers.json (``--label`` names the row set; rows of
other labels already in the file are kept, so a run of the code before a change sits beside
the run after it).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_labelled  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad"
QUICK = ["--questions", "4", "--langs", "en", "--articles", "14", "--out", "{tmp}/answers.json"]
DOCX, TXT = range(0, 6), range(6, 12)


def write_folder(lang: str, folder: Path, articles: int | None = None) -> list[dict]:
    """Write one language's articles into ``folder``; returns its questions, each with its
    file, the answer's line in it (None in a Word file) and the answer texts."""
    data = json.loads((DATA / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"][:articles]
    questions = []
    for n, article in enumerate(data):
        name = re.sub(r"\W+", "_", article["title"]).strip("_")
        paragraphs = [" ".join(p["context"].split()) for p in article["paragraphs"]]
        if n in DOCX:
            import docx

            document = docx.Document()
            document.add_heading(article["title"].replace("_", " "), level=1)
            for text in paragraphs:
                document.add_paragraph(text)
            path = folder / f"{name}.docx"
            document.save(str(path))
            lines = [None] * len(paragraphs)
        elif n in TXT:
            path = folder / f"{name}.txt"
            path.write_text(article["title"].replace("_", " ") + "\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
            lines = [3 + 2 * i for i in range(len(paragraphs))]
        else:
            path = folder / f"{name}.md"
            path.write_text(f"# {article['title'].replace('_', ' ')}\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
            lines = [3 + 2 * i for i in range(len(paragraphs))]
        for p, line in zip(article["paragraphs"], lines):
            for qa in p["qas"]:
                questions.append(
                    {
                        "question": qa["question"],
                        "file": path.name,
                        "line": line,
                        "answers": sorted({a["text"] for a in qa["answers"]}),
                    }
                )
    return questions


def ask(args: list[str], width: int = 80) -> str:
    """What ``encodr ARGS`` prints, its tables drawn ``width`` columns wide (plain text)."""
    from rich.console import Console
    from typer.testing import CliRunner

    import encodr.cli as cli

    buffer = io.StringIO()
    cli.out_console = Console(width=width, file=buffer, color_system=None, legacy_windows=False)
    result = CliRunner().invoke(cli.app, args)
    if result.exit_code != 0:
        raise RuntimeError(f"encodr {' '.join(args)} failed: {result.output[-500:]}")
    return buffer.getvalue()


ROW = re.compile(r"^│\s*(\d+)\s*│")
CARD = re.compile(r"^ {0,3}(\d+)  (\S.*?)(?:\s+-?\d+\.\d{4})?\s*$")  # a card's heading: rank, path · title · lang, score


def top_hit(output: str) -> tuple[list[str], int]:
    """The printed text of the first hit and the number of hits: a card's heading (rank and
    score left out) and its indented lines, as the CLI prints hits; or, in the bordered table
    older code printed, the hit's cell lines, borders stripped."""
    if "│" not in output:
        hits, current = [], None
        for line in output.splitlines():
            m = CARD.match(line)
            if m:
                current = [m.group(2)]
                hits.append(current)
            elif current is not None and line.startswith("    "):
                current.append(line.strip())
            else:
                current = None
        return (hits[0] if hits else []), len(hits)
    hits, current, column = [], None, -1
    for line in output.splitlines():
        if line.startswith("┃"):
            names = [c.strip() for c in line.strip("┃").split("┃")]
            column = names.index("text") if "text" in names else -1
        if not line.startswith("│"):
            continue
        m = ROW.match(line)
        if m:
            current = []
            hits.append(current)
        if current is not None:
            cells = [c.strip() for c in line.strip("│").split("│")]
            current.append(" ".join(cells[column:]))  # the text and what a narrow table moves under it (the source)
    return (hits[0] if hits else []), len(hits)


def fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def first_screen(output: str, rows: int = 23) -> str:
    """The snippets' text (a card's indented lines, folded) on the first ``rows`` lines of ``output``."""
    return fold(" ".join(line for line in output.splitlines()[:rows] if line.startswith("    ")))


def located(cell: list[str]) -> tuple[str | None, int | None]:
    """The file and line a hit's cell names (its ``path:LINE``, the last one printed)."""
    found = re.findall(r"([^\s·:]+\.(?:md|txt|docx)):(\d+)", " ".join(cell))
    return (Path(found[-1][0]).name, int(found[-1][1])) if found else (None, None)


def _model_of(index: str) -> str:
    """The model ``index`` was built with (without ``--model``: the one encodr index chose)."""
    from encodr.index.search import open_index

    opened = open_index(index)
    try:
        return opened.meta.model
    finally:
        opened.close()


def measure(lang: str, questions: int, articles: int | None, seed: int, model: str | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"encodr-answers-{lang}-") as tmp:
        folder = Path(tmp) / lang
        folder.mkdir()
        asked = write_folder(lang, folder, articles)
        random.Random(seed).shuffle(asked)
        asked = asked[:questions]
        index = str(Path(tmp) / "idx")
        ask(["index", str(folder), "--out", index, *(["--model", model] if model else [])])
        built = _model_of(index)
        counts = {"file@1": 0, "visible": 0, "line": 0, "line_asked": 0, "k5": 0, "screen": 0, "full visible": 0}
        for q in asked:
            output = ask(["search", q["question"], "--index", index, "-k", "5"])
            cell, n = top_hit(output)
            counts["screen"] += any(fold(a) in first_screen(output) for a in q["answers"])
            path, line = located(cell)
            text = fold(" ".join(cell))
            counts["file@1"] += path == q["file"]
            counts["visible"] += path == q["file"] and any(fold(a) in text for a in q["answers"])
            if q["line"] is not None:
                counts["line_asked"] += 1
                counts["line"] += path == q["file"] and line == q["line"]
            counts["k5"] += n == 5
            full, _ = top_hit(ask(["search", q["question"], "--index", index, "-k", "1", "--full"], width=200))
            counts["full visible"] += path == q["file"] and any(fold(a) in fold(" ".join(full)) for a in q["answers"])
    n = len(asked)
    return {
        "lang": lang,
        "model": built,
        "questions": n,
        "file@1": 100 * counts["file@1"] / n,
        "visible": 100 * counts["visible"] / n,
        "line": 100 * counts["line"] / max(counts["line_asked"], 1),
        "k5": 100 * counts["k5"] / n,
        "screen": 100 * counts["screen"] / n,
        "full visible": 100 * counts["full visible"] / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--langs", default="en,de,es")
    parser.add_argument("--articles", type=int, default=None, help="only the first N articles (a quick run)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="after")
    parser.add_argument("--model", default=None, help="the index's model (default: the one encodr index chooses for the folder)")
    parser.add_argument("--out", type=Path, default=RESULTS / "answers.json")
    args = parser.parse_args()
    rows = [
        {"label": args.label, **measure(lang, args.questions, args.articles, args.seed, args.model)}
        for lang in args.langs.split(",")
    ]
    columns = ["label", "lang", "model", "questions", "file@1", "visible", "line", "k5", "screen", "full visible"]
    print_table("A question of a folder: what the default output shows at 80 columns (% of questions)", rows, columns)
    write_labelled(args.out, args.label, rows, {"set": "xquad articles as files (md, docx 0-5, txt 6-11)", "columns": columns})


if __name__ == "__main__":
    main()
