"""Snippets chosen with the query encoder's int8 twin: are they the float32 ones, and how much
sooner do they come? The twin (``encodr.models.onnx.quantised_twin``) encodes a hit's sentences
in a warm searcher (the TUI, ``encodr serve``, ``encodr mcp``: ``Searcher.warm``).

Two sets, each searched twice through ``encodr.core.commands.search`` (hybrid, k = 10, the
front ends' search: snippets included), once with each encoder of the sentences:

- ``scifact``: SciFact's abstracts (../shared/data/retrieval/scifact) and its train claims
  ``--skip`` … ``--skip + --queries`` (distinct ones; ``bench/latency.py`` times the first 200);
- ``xquad-en``: XQuAD's English articles written as files as ``bench/answers.py`` writes them,
  and ``--questions`` of its questions (a seeded sample).

Per set and encoder: ``top same`` (% of queries whose top hit shows the same snippet as with
float32), ``all same`` (% of all hits), ``answer`` (XQuAD: % of questions whose top hit is the
article's file and whose snippet holds an answer text), the snippets phase's mean and the
search's p50 in ms, on this CPU (its flags and load in the JSON).

    python bench/sentence_twin.py [--queries 300] [--questions 120] [--keep DIR]

``--keep DIR`` keeps the two indexes there (and reuses them). Writes bench/results/sentence_twin.json.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402

QUICK = ["--sets", "xquad-en", "--questions", "4", "--articles", "6", "--out", "{tmp}/sentence_twin.json"]


def scifact_set(folder: Path, skip: int, queries: int) -> tuple[Path, list[dict]]:
    """The SciFact index (built in ``folder`` unless there) and its claims as questions without answers."""
    from latency import build_index, scifact

    texts, claims = scifact(skip + queries)
    index = folder / "scifact"
    build_index(texts, index, random_dense=False, backend="auto")
    return index, [{"question": c} for c in claims[skip:]]


def xquad_set(folder: Path, questions: int, articles: int | None, seed: int) -> tuple[Path, list[dict]]:
    """The English XQuAD folder as ``bench/answers.py`` writes it, indexed (unless there), and a
    seeded sample of its questions with their files and answers."""
    from answers import write_folder

    from encodr.index import BuildOptions, build

    files, index = folder / "xquad-en-files", folder / "xquad-en"
    files.mkdir(parents=True, exist_ok=True)
    asked = write_folder("en", files, articles)
    if not (index / "current").exists():
        build([str(files)], index, BuildOptions(backend="auto"))
    random.Random(seed).shuffle(asked)
    return index, asked[:questions]


def run(searcher, encoder, asked: list[dict]) -> tuple[list[list[str]], list[float], list[float], int]:
    """Each question searched with ``encoder`` choosing the snippets: the hits' snippets, each
    search's ms, each snippets phase's ms, and how many top hits show an answer in their file."""
    from encodr.core.commands import search
    from encodr.core.requests import SearchRequest

    searcher.sentence_encoder = encoder
    shown, ms, snippets, answered = [], [], [], 0
    for q in asked:
        request = SearchRequest(query=[q["question"]], index=str(searcher.index.path), k=10, mode="hybrid", timings=True)
        started = time.perf_counter()
        result = search(request, searcher=searcher)
        ms.append((time.perf_counter() - started) * 1000)
        snippets.append((result.timings or {}).get("snippets", 0.0))
        hits = result.results[0].hits
        shown.append([h.snippet or "" for h in hits])
        if hits and q.get("answers") and Path(hits[0].source).name == q["file"]:
            answered += any(" ".join(a.split()) in " ".join((hits[0].snippet or "").split()) for a in q["answers"])
    return shown, ms, snippets, answered


def measure(name: str, index: Path, asked: list[dict]) -> list[dict]:
    """The float32 and the int8 row of one set (each encoder's run after one run of both to warm them)."""
    from encodr.index import Searcher
    from encodr.models.onnx import quantised_twin

    searcher = Searcher(index)
    base, twin = searcher.encoder, quantised_twin(searcher.encoder)
    if twin is None:
        raise SystemExit(f"the index at {index} is not queried through ONNX float32 ({searcher.encoder.backend}): no twin")
    for encoder in (base, twin):
        run(searcher, encoder, asked[:5])
    runs = {label: run(searcher, encoder, asked) for label, encoder in (("float32", base), ("int8", twin))}
    reference = runs["float32"][0]
    rows = []
    for label, (shown, ms, snippets, answered) in runs.items():
        pairs = [(a, b) for x, y in zip(shown, reference) for a, b in zip(x, y)]
        rows.append(
            {
                "set": name,
                "encoder": label,
                "queries": len(asked),
                "top same": 100 * sum(x[:1] == y[:1] for x, y in zip(shown, reference)) / len(asked),
                "all same": 100 * sum(a == b for a, b in pairs) / max(len(pairs), 1),
                "answer": 100 * answered / len(asked) if asked[0].get("answers") else None,
                "snippets ms": statistics.fmean(snippets),
                "search p50 ms": statistics.median(ms),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="scifact,xquad-en")
    parser.add_argument("--queries", type=int, default=300, help="SciFact claims")
    parser.add_argument("--skip", type=int, default=200, help="SciFact claims left to bench/latency.py")
    parser.add_argument("--questions", type=int, default=120, help="XQuAD questions")
    parser.add_argument("--articles", type=int, default=None, help="only the first N XQuAD articles (a quick run)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, default=None, help="keep (and reuse) the indexes in this folder")
    parser.add_argument("--out", type=Path, default=RESULTS / "sentence_twin.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="encodr-twin-") as tmp:
        folder = args.keep or Path(tmp)
        os.environ.setdefault("ENCODR_HOME", str(folder / "home"))  # the exports beside the indexes
        rows = []
        for name in args.sets.split(","):
            if name == "scifact":
                index, asked = scifact_set(folder, args.skip, args.queries)
            else:
                index, asked = xquad_set(folder, args.questions, args.articles, args.seed)
            rows += measure(name, index, asked)
    columns = ["set", "encoder", "queries", "top same", "all same", "answer", "snippets ms", "search p50 ms"]
    print_table("Snippets chosen with float32 and int8 sentence vectors (hybrid, k = 10)", rows, columns)
    write_json(args.out, {"rows": rows, "columns": columns})


if __name__ == "__main__":
    main()
