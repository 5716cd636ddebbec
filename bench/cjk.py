"""Does a person who keeps notes in Chinese, Japanese or Korean find the note a sentence is in,
and see the sentence, asking in that language or in English?

The set: ../shared/data/tatoeba's cmn, jpn and kor test sets (1,000 sentences each, each with its
English translation on the same line of the ``.eng`` file; CC BY 2.0 FR). Each language's
sentences are written as notes of 20 sentences, one a line (``note-00.txt`` …), in a folder of
their own, and the folder is indexed at the defaults (``encodr index FOLDER --out IDX``: the model
encodr chooses for it). Each sentence is asked, then its English twin, with
``encodr search Q --index IDX``, the CLI drawing its hits at 80 columns in this process (Typer's
test runner), and that text is read:

- ``note@1``: the top hit's file is the note that holds the sentence;
- ``visible``: the sentence is in the top hit's card as printed (whitespace removed on both
  sides: a card's line wrap cuts a CJK sentence where it has no space);
- ``screen``: the sentence is in any hit's snippet on the output's first 23 lines;
- ``errors``: asks that exited with a traceback or an error, in the CLI; ``http`` and ``mcp``
  count the same over ``POST /v1/search`` (FastAPI's test client) and the MCP ``search`` tool
  for every ``--every``-th question: a refusal with a one-line error is an error, a traceback
  is an error.

Run it as:

    python bench/cjk.py [--questions 1000] [--langs cmn,jpn,kor] [--label after] [--every 10]

Prints a table and writes bench/results/cjk.json (rows of other labels are kept).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answers import ask, first_screen, top_hit  # noqa: E402
from common import RESULTS, print_table, write_labelled  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tatoeba"
QUICK = ["--questions", "6", "--langs", "cmn", "--every", "3", "--out", "{tmp}/cjk.json"]
NOTE = 20  # sentences a note


def write_notes(lang: str, folder: Path) -> list[dict]:
    """Write ``lang``'s sentences as notes into ``folder``; returns a question a sentence:
    the sentence, its English twin and its note's file name."""
    own = (DATA / f"tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").splitlines()
    english = (DATA / f"tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").splitlines()
    asked = []
    for start in range(0, len(own), NOTE):
        name = f"note-{start // NOTE:02d}.txt"
        (folder / name).write_text("\n".join(own[start : start + NOTE]) + "\n", encoding="utf-8")
        pairs = zip(own[start : start + NOTE], english[start : start + NOTE])
        asked += [{"sentence": s, "english": e, "file": name} for s, e in pairs]
    return asked


def bare(text: str) -> str:
    """``text`` without whitespace, case folded: a CJK sentence as wrapped lines show it."""
    return re.sub(r"\s+", "", text).casefold()


def cli_ask(query: str, index: str) -> tuple[str | None, bool]:
    """What ``encodr search QUERY --index INDEX`` prints at 80 columns, or None, and whether it failed."""
    try:
        return ask(["search", query, "--index", index]), False
    except Exception:  # noqa: BLE001 - counted: a traceback or an error exit is what this bench looks for
        return None, True


def front_errors(index: str, queries: list[str]) -> dict:
    """How many of ``queries`` fail over HTTP and MCP (an error status, a refusal, an exception)."""
    from fastapi.testclient import TestClient

    from encodr.mcp import Agents
    from encodr.serve import Limits, create_app, load

    served = load([], [index], Limits())
    name = next(iter(served.searchers))
    client = TestClient(create_app(served))
    errors = {"http": 0, "mcp": 0}
    try:
        for query in queries:
            try:
                answer = client.post("/v1/search", json={"query": query, "index": name})
                errors["http"] += answer.status_code != 200
            except Exception:  # noqa: BLE001
                errors["http"] += 1
            try:
                Agents(served).call("search", {"query": query})
            except Exception:  # noqa: BLE001
                errors["mcp"] += 1
    finally:
        served.close()
    return errors


def score(question: dict, output: str | None) -> dict:
    """One ask's marks: the note first, the sentence in the top card and on the first screen."""
    if output is None:
        return {"note@1": 0, "visible": 0, "screen": 0}
    card, _ = top_hit(output)
    found = re.search(r"note-\d+\.txt", card[0]) if card else None
    sentence = bare(question["sentence"])
    return {
        "note@1": bool(found) and found.group() == question["file"],
        "visible": sentence in bare("".join(card[1:])),
        "screen": sentence in bare(first_screen(output)),
    }


def measure(lang: str, questions: int, seed: int, every: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix=f"encodr-cjk-{lang}-") as tmp:
        folder = Path(tmp) / lang
        folder.mkdir()
        asked = write_notes(lang, folder)
        random.Random(seed).shuffle(asked)
        asked = asked[:questions]
        index = str(Path(tmp) / "idx")
        ask(["index", str(folder), "--out", index])
        from encodr.index.search import open_index

        opened = open_index(index)
        model = opened.meta.model
        opened.close()
        rows = []
        for side in ("sentence", "english"):
            marks = {"note@1": 0, "visible": 0, "screen": 0, "errors": 0}
            for q in asked:
                output, failed = cli_ask(q[side], index)
                marks["errors"] += failed
                for key, value in score(q, output).items():
                    marks[key] += bool(value)
            fronts = front_errors(index, [q[side] for q in asked[::every]])
            n = len(asked)
            rows.append(
                {
                    "lang": lang,
                    "asked in": lang if side == "sentence" else "eng",
                    "model": model,
                    "questions": n,
                    **{k: 100 * marks[k] / n for k in ("note@1", "visible", "screen")},
                    "errors": marks["errors"],
                    **fronts,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000, help="sentences asked a language (a seeded sample)")
    parser.add_argument("--langs", default="cmn,jpn,kor")
    parser.add_argument("--every", type=int, default=10, help="ask every N-th question over HTTP and MCP too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="after")
    parser.add_argument("--out", type=Path, default=RESULTS / "cjk.json")
    args = parser.parse_args()
    rows = [
        {"label": args.label, **row}
        for lang in args.langs.split(",")
        for row in measure(lang, args.questions, args.seed, args.every)
    ]
    columns = ["label", "lang", "asked in", "model", "questions", "note@1", "visible", "screen", "errors", "http", "mcp"]
    print_table("A sentence of a CJK note: found, and seen at 80 columns (% of questions; errors: count)", rows, columns)
    write_labelled(args.out, args.label, rows, {"set": "tatoeba cmn/jpn/kor as notes of 20 sentences", "columns": columns})


if __name__ == "__main__":
    main()
