"""Learning from judgments: the judged recipe on SciFact's train judgments, each component's gain on the dev fold.

SciFact's ``qrels/train.tsv`` (809 queries, 919 judgments; ``../shared/data/retrieval/scifact``)
is split by ``encodr.index.judgments.fold`` (a hash of each query: 60 % train, 20 % dev, 20 %
test). ``encodr tune DIR --recipe judged`` trains on the train fold and keeps each component
only when it beats what it replaces on the dev fold; this script then scores, on the same dev
fold, the starting model and the tuned one through one exact index each (``encodr eval
retrieval``'s pipeline): dense, hybrid at the declared weight, hybrid at the tuned weight, and
re-ranked by the tuned re-ranker at its tuned depth and weight. Beside them, from the same run
on the same queries: BM25 (bm25s) and sentence-transformers' dense evaluator on the starting
model. txtai's published SciFact hybrid figure (71.3, its benchmark page, BEIR's test split:
another split, so not comparable query for query) is shown as a reference line.

The dev fold chooses the components, so its numbers are optimistic for what was kept; the test
fold of the same split, never read by the run, is what a held-out figure would use (scored
elsewhere). The SciFact test split is never read.

    python bench/judged.py                         # minilm, on the CPU (or the GPU when one is visible)
    python bench/judged.py --set cross=false       # recipe overrides

Prints the tables and writes bench/results/judged.json (judged_gpu.json on a GPU).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, commit, machine, parse_overrides, print_table, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402  (the CPU flags that decide its matrix speed, as that bench records them)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "scifact"
TXTAI_PUBLISHED = 71.3  # txtai's benchmark page: SciFact, hybrid (BEIR test split)

QUICK = [
    "--documents",
    "400",
    "--queries",
    "60",
    "--set",
    "epochs=1",
    "distill=false",
    "cross_negatives=1",
    "--out",
    "{tmp}/judged.json",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--set", nargs="*", default=[], help="recipe overrides KEY=VALUE")
    parser.add_argument(
        "--documents",
        type=int,
        default=0,
        help="a quick run: the judged documents and a sample of others, this many in all (0: all)",
    )
    parser.add_argument("--queries", type=int, default=0, help="a quick run: the first N judged train queries (0: all)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import torch
    from retrieval import bm25s_anchor, st_anchor  # the anchors of bench/retrieval.py

    from encodr.data.beir import read_retrieval
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.index import SearchOptions
    from encodr.methods import load_recipe
    from encodr.methods.judged.data import read_judged
    from encodr.models import load_cross, load_encoder

    measured = commit()  # the code that runs, before the checkout can move on
    gpu = torch.cuda.is_available()
    out_file = args.out or RESULTS / ("judged_gpu.json" if gpu else "judged.json")
    recipe = load_recipe("judged", parse_overrides(args.set))
    with tempfile.TemporaryDirectory(prefix="encodr-bench-judged-") as tmp:
        if args.documents or args.queries:
            from common import beir_subset

            args.data = beir_subset(args.data, "train", args.documents, args.queries, Path(tmp) / "data")
        model_dir = Path(tmp) / "tuned"
        started = time.perf_counter()
        from common import run_tune

        summary = run_tune(str(args.data), recipe, args.model, model_dir, warn=lambda line: print("warning:", line, flush=True))
        tune_seconds = time.perf_counter() - started
        folds = read_judged(None, str(args.data), Path(tmp) / "folds")  # the same folds the run used
        evaluator = RetrievalEvaluator("scifact-dev", read_retrieval(folds.folder), split="dev")
        search = summary.get("search") or {}
        rows = []
        start = load_encoder(
            args.model, recipe.pooling, recipe.raw_pooling, recipe.max_length
        )  # the starting model as the run loads it
        for name, spec in (("start: " + args.model, args.model), ("tuned (judged)", str(model_dir))):
            encoder = start if spec == args.model else load_encoder(spec)
            searches = (
                SearchOptions(mode="dense"),
                SearchOptions(mode="keyword"),
                SearchOptions(mode="hybrid", fusion_weight=0.5),
            )
            if spec != args.model and "fusion_weight" in search:
                searches += (SearchOptions(mode="hybrid", fusion_weight=search["fusion_weight"]),)
            reranker = load_cross(str(model_dir / "cross")) if spec != args.model and (model_dir / "cross").is_dir() else None
            best = searches[-1]
            ranked = evaluator.ranked(
                encoder, searches, reranker=reranker, first_stage=reranker is not None, reranked=(best,) if reranker else None
            )
            row = {"model": name, "queries": len(evaluator.query_ids())}
            for key, values in ranked.items():
                row[key] = next(s.value for s in evaluator.scores(values) if s.metric == "ndcg@10")
            rows.append(row)
        anchors = {
            "anchor: BM25 (bm25s)": bm25s_anchor(evaluator),
            f"anchor: sentence-transformers dense ({args.model})": st_anchor(start, evaluator),
            "reference: txtai hybrid, published (SciFact test split)": TXTAI_PUBLISHED,
        }
    components = [
        {
            "component": c["name"],
            "metric": c["metric"],
            "before": c["before"],
            "after": c["after"],
            "p": c.get("p"),
            "kept": c["kept"],
            "note": c["note"],
        }
        for c in summary.get("components", [])
    ]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    print_table("SciFact dev fold (of its train judgments), nDCG@10 × 100", rows, columns)
    print_table(
        "components (dev fold, nDCG@10 × 100; kept only when better)",
        components,
        ["component", "metric", "before", "after", "p", "kept", "note"],
    )
    print_table(
        "anchors (same run, same dev-fold queries)",
        [{"anchor": k, "nDCG@10": v} for k, v in anchors.items()],
        ["anchor", "nDCG@10"],
    )
    hardware = {**machine(), "cpu_flags": cpu_flags(), "device": summary.get("device")}
    payload = {
        "machine": hardware,
        "command": " ".join(["python bench/judged.py", *sys.argv[1:]]),
        "commit": measured,
        "model": args.model,
        "judgments": summary.get("judgments"),
        "train_queries": summary.get("train_queries"),
        "dev_queries": summary.get("dev_queries"),
        "tune_wall_seconds": round(tune_seconds, 1),
        "kept": summary.get("kept"),
        "search": search,
        "rows": rows,
        "components": components,
        "anchors": [{"anchor": k, "nDCG@10": v} for k, v in anchors.items()],
    }
    write_json(out_file, payload)
    print(f"tune wall time {tune_seconds:.0f} s on {summary.get('device')}; wrote {out_file}")


if __name__ == "__main__":
    main()
