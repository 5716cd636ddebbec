"""Learning from judgments: the judged recipe on SciFact's train judgments, each component's
cross-validated gain, and where the time goes.

SciFact's ``qrels/train.tsv`` (809 queries, 919 judgments; ``../shared/data/retrieval/scifact``)
is read as ``encodr tune DIR --recipe judged`` reads it: the queries of the train and dev folds of
``encodr.index.judgments.fold`` (a hash of each query: 80 %; its test fold, 20 %, is never read)
are split again into the recipe's ``folds`` by a hash of their text, and each component is trained
on the other folds and scored on the held-out one (``encodr.methods.judged.crossval``); the final
model is trained on every one of them. The figures are the run's own: each query's nDCG@10 comes
from a model that never saw it, so they are the cross-validated figures the issue asks for, not a
figure on data the model saw. Beside them, from the same run on the same queries: BM25 (bm25s) and
sentence-transformers' dense evaluator on the starting model. txtai's published SciFact hybrid
figure (71.3, its benchmark page, BEIR's test split: another split, so not comparable query for
query) is shown as a reference line. The SciFact test split is never read.

    python bench/judged.py                         # minilm, on the CPU (or the GPU when one is visible)
    python bench/judged.py --set cross=true        # recipe overrides

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
    from encodr.methods import load_recipe
    from encodr.methods.judged.data import JUDGED, read_judged
    from encodr.models import load_encoder

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
        folds = read_judged(None, str(args.data), Path(tmp) / "folds")  # the queries the run read
        evaluator = RetrievalEvaluator("scifact-judged", read_retrieval(folds.folder), split=JUDGED)
        start = load_encoder(args.model, recipe.pooling, recipe.raw_pooling, recipe.max_length)  # as the run loads it
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
    seconds = [{"phase": k, "seconds": v} for k, v in (summary.get("seconds") or {}).items()]
    print_table(
        f"components ({summary.get('folds')}-fold cross-validation over {summary.get('queries')} judged queries, "
        "nDCG@10 × 100; kept only when better)",
        components,
        ["component", "metric", "before", "after", "p", "kept", "note"],
    )
    print_table("where the time goes (s)", seconds, ["phase", "seconds"])
    print_table(
        "anchors (same run, the same judged queries, the starting model)",
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
        "queries": summary.get("queries"),
        "folds": summary.get("folds"),
        "tune_wall_seconds": round(tune_seconds, 1),
        "kept": summary.get("kept"),
        "search": summary.get("search") or {},
        "components": components,
        "seconds": seconds,
        "anchors": [{"anchor": k, "nDCG@10": v} for k, v in anchors.items()],
    }
    write_json(out_file, payload)
    print(f"tune wall time {tune_seconds:.0f} s on {summary.get('device')}; wrote {out_file}")


if __name__ == "__main__":
    main()
