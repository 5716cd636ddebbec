"""Does a cross-encoder re-ranker help hybrid search? — nDCG@10 of the first stage, of the
cross-encoder's order, and of the two scores interpolated, on a dev half and a report half.

    python bench/rerank.py --cross RUN/cross [RUN2/cross …] --queries 200
    python bench/rerank.py --queries 200          # the anchors alone: first stage and random order

One index of the data's corpus is built with the model (the default hybrid, convex fusion, as
`encodr eval retrieval` builds and searches it), its first `--depth` (50) documents per query are
scored once by each cross-encoder, and the rankings are scored by `RetrievalEvaluator.scores`
(sentence-transformers' metric code). The judged queries are taken in file order and cut in two
halves: the interpolation weight is chosen on the first half ("dev") and reported on the second
("report"), so the report half's number is not selected on itself. Rows:

- first stage: the hybrid ranking;
- random order: the first `depth` shuffled (mean of 20 seeded shuffles), the floor a re-ranker that
  learned nothing would sit at;
- cross-encoder: the first `depth` by the cross-encoder's score alone (what `--rerank` does);
- interpolated (w): `w · ŝ_cross + (1 − w) · ŝ_first`, each min-max normalised over the query's
  `depth` candidates (`encodr.index.fusion.interpolate`, what `--rerank-weight w` does), for w in 0.1 … 0.9.

Prints a table and writes JSON (bench/results/rerank.json).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results"
DATA = ROOT.parent / "shared" / "data" / "retrieval"
WEIGHTS = [round(0.1 * i, 1) for i in range(1, 10)]

QUICK = ["--queries", "20", "--index", "{tmp}/index", "--out", "{tmp}/rerank.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cross",
        nargs="*",
        default=[],
        help="CrossEncoder folders (e.g. an encodr run's cross/); none: the first-stage and random-order rows only",
    )
    parser.add_argument("--data", default="scifact")
    parser.add_argument("--split", default="train", help="qrels split (scifact: train; the test split is never used here)")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--queries", type=int, default=200, help="first N judged queries, cut into a dev and a report half")
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--index", type=Path, default=None, help="keep the built index here and reuse it on a later run")
    parser.add_argument("--out", type=Path, default=RESULTS / "rerank.json")
    args = parser.parse_args()
    if args.split == "test":
        parser.error("--split test: defaults are never chosen on a test split")

    from encodr.data.beir import read_retrieval
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.index import BuildOptions, Searcher, build
    from encodr.index.fusion import interpolate
    from encodr.index.options import SearchOptions
    from encodr.models import load_cross, load_encoder

    evaluator = RetrievalEvaluator(args.data, read_retrieval(DATA / args.data), split=args.split, limit=args.queries)
    qids = evaluator.query_ids()
    queries = [evaluator.data.queries[q] for q in qids]
    same_text = evaluator.same_text()
    encoder = load_encoder(args.model)
    where = args.index or Path(f"/tmp/encodr-rerank-{args.data}-{args.model}")
    if not where.exists():  # an index built by an earlier run is reused
        started = time.perf_counter()
        build([str(evaluator.data.corpus_file)], where, BuildOptions(model=encoder, backend="torch"))
        print(f"built {where} in {time.perf_counter() - started:.0f} s", flush=True)
    searcher = Searcher(where, encoder=encoder)
    _, hits = searcher.query(queries, SearchOptions(k=100, mode="hybrid", fusion="convex"))
    half = len(qids) // 2
    halves = {"dev": slice(0, half), "report": slice(half, len(qids))}

    def ndcg(rows: list[list[tuple[str, float]]], part: slice) -> float:
        evaluator.query_ids = lambda: qids[part]  # score only this half's queries
        try:
            return next(s.value for s in evaluator.scores(rows[part]) if s.metric == "ndcg@10")
        finally:
            del evaluator.query_ids

    def ranking(order_scores: list[np.ndarray]) -> list[list[tuple[str, float]]]:
        rows = []
        for row, scores in zip(hits, order_scores):
            head = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
            ranked = [row[i] for i in head] + row[len(scores) :]
            rows.append([(doc, 1.0 / (r + 1)) for r, h in enumerate(ranked) for doc in same_text.get(h.ext_id, [h.ext_id])])
        return rows

    first = [np.array([h.score for h in row[: args.depth]]) for row in hits]
    results = {
        "data": args.data,
        "split": args.split,
        "model": args.model,
        "queries": len(qids),
        "dev_queries": half,
        "report_queries": len(qids) - half,
        "depth": args.depth,
        "rows": [],
    }
    base = ranking(first)
    results["rows"].append(
        {"cross": None, "run": "first stage (hybrid, convex)", **{h: round(ndcg(base, s), 2) for h, s in halves.items()}}
    )
    shuffles = [ranking([np.random.default_rng(seed).random(len(f)) for f in first]) for seed in range(20)]
    results["rows"].append(
        {
            "cross": None,
            "run": f"random order of the first {args.depth} (mean of 20)",
            **{h: round(float(np.mean([ndcg(r, s) for r in shuffles])), 2) for h, s in halves.items()},
        }
    )
    for path in args.cross:
        scorer = load_cross(path)
        started = time.perf_counter()
        cross = [
            np.asarray(scorer.query_scores(q, [h.text for h in row[: args.depth]]), dtype=np.float64)
            for q, row in zip(queries, hits)
        ]
        seconds = time.perf_counter() - started
        rows = [
            {"cross": path, "run": "cross-encoder alone", **{h: round(ndcg(ranking(cross), s), 2) for h, s in halves.items()}}
        ]
        for w in WEIGHTS:
            mixed = [np.array(interpolate(list(c), list(f), w)) for c, f in zip(cross, first)]
            rows.append(
                {
                    "cross": path,
                    "run": f"interpolated w={w}",
                    "weight": w,
                    **{h: round(ndcg(ranking(mixed), s), 2) for h, s in halves.items()},
                }
            )
        best = max((r for r in rows if "weight" in r), key=lambda r: r["dev"])
        best["chosen_on_dev"] = True
        for r in rows:
            r["pairs_per_s"] = round(sum(len(c) for c in cross) / seconds, 1)
        results["rows"] += rows
    print(f"| cross-encoder | run | nDCG@10 dev ({half}) | nDCG@10 report ({len(qids) - half}) |")
    print("|---|---|---:|---:|")
    for r in results["rows"]:
        mark = " (chosen on dev)" if r.get("chosen_on_dev") else ""
        print(f"| {r['cross'] or '–'} | {r['run']}{mark} | {r['dev']:.2f} | {r['report']:.2f} |")
    from common import machine, write_json

    write_json(args.out, {"machine": machine(), **results})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
