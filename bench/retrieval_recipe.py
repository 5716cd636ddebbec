"""Does the retrieval recipe make search on a user's documents better, without labels? And does
the label-free dev set rank checkpoints the way real queries do?

One run of ``encodr tune CORPUS --recipe retrieval --dev auto`` on a BEIR folder's corpus (its
queries are never read by training or by the dev set), with the folder's real queries
(``--split``, SciFact: train) scored at every checkpoint beside the label-free dev score (the
method's report set; reporting only, it chooses nothing). From that one run:

- ``base``: the starting model (checkpoint 0), nDCG@10 of dense search for the real queries;
- ``--dev auto``: the checkpoint the label-free dev set keeps (what the command hands back);
- ``real dev``: the checkpoint the real queries would keep among the same checkpoints — what
  ``--dev FOLDER`` selects, except that ``--dev auto`` also cut its pseudo-queries (a few
  hundred sentences) out of the training documents;
- Spearman ρ between the label-free and the real score over the checkpoints.

Both per-checkpoint scores are dense search, each document ranked by its best passage, through
``encodr eval retrieval``'s code, over ``--searched`` documents (2,000: every judged document and
a seeded sample of the rest; the recipe's ``dev_documents`` likewise), so that scoring a checkpoint
takes seconds, not minutes, on a CPU. The final rows — base and the model handed back, dense and the
default hybrid search — search the whole corpus. Training cost: examples/s and minutes here.
``--train-searched`` trains on the searched documents only (a run a 2-core CPU finishes in an hour;
the real queries are still never read by training).

    python bench/retrieval_recipe.py --data scifact --model minilm
    python bench/retrieval_recipe.py --data xquad-en --model me5 --eval-steps 5
    python bench/retrieval_recipe.py --data scifact --searched 1000 --train-searched --eval-steps 7 \\
        --set batch_size=32 dev_documents=1000

Prints a table and writes bench/results/retrieval_recipe_DATA_MODEL.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, beir_subset, machine, parse_overrides, print_table, write_json  # noqa: E402
from retrieval import DATA, SPLITS  # noqa: E402

QUICK = [
    "--documents",
    "300",
    "--queries",
    "40",
    "--searched",
    "300",
    "--train-searched",
    "--eval-steps",
    "5",
    "--set",
    "dev_queries=50",
    "--out",
    "{tmp}/retrieval_recipe.json",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="scifact")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--eval-steps", type=int, default=15)
    parser.add_argument(
        "--searched",
        type=int,
        default=2000,
        help="documents both dev sets search at each checkpoint (the judged ones among them; 0: all); the final rows search all",
    )
    parser.add_argument(
        "--train-searched",
        action="store_true",
        help="train on the searched documents only, not the whole corpus (a run sized for a CPU)",
    )
    parser.add_argument("--set", nargs="*", default=[], help="recipe overrides KEY=VALUE")
    parser.add_argument(
        "--documents",
        type=int,
        default=0,
        help="a quick run: the corpus cut to the judged documents and a sample of others, this many in all (0: all)",
    )
    parser.add_argument("--queries", type=int, default=0, help="a quick run: the first N real queries (0: all)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from scipy.stats import spearmanr

    from encodr.data.beir import read_retrieval
    from encodr.methods import TuneJob, load_recipe, tune

    folder, split = DATA / args.data, SPLITS[args.data]
    scratch = Path(tempfile.mkdtemp(prefix="encodr-report-"))
    if args.documents or args.queries:  # a quick run: a smaller corpus and fewer real queries
        folder = beir_subset(folder, split, args.documents, args.queries, scratch / "data")
    real = read_retrieval(folder)
    report = beir_subset(
        folder, split, args.searched, 0, scratch / args.data
    )  # the real queries of one split, named dev so dev_set reads them
    (report / "qrels" / f"{split}.tsv").rename(report / "qrels" / "dev.tsv")
    searched = sum(1 for _ in (report / "corpus.jsonl").open(encoding="utf-8"))
    recipe = load_recipe(
        "retrieval", {"eval_steps": args.eval_steps, "dev_documents": args.searched, **parse_overrides(args.set)}
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        train = report / "corpus.jsonl" if args.train_searched else folder / "corpus.jsonl"
        summary = tune(
            recipe,
            TuneJob(
                out=Path(tmp) / "run",
                data=str(train),
                models=[args.model],
                dev="auto",
                report=str(report),
                warn=lambda line: print("warning:", line, flush=True),
            ),
        )
        minutes = (time.perf_counter() - started) / 60
        from encodr.evaluation.retrieval import RetrievalEvaluator
        from encodr.models import load_encoder

        evaluator = RetrievalEvaluator(args.data, real, split=split)
        search = {}  # the default search (hybrid, convex) and dense, for the base and the model --dev auto hands back
        for label, spec in (("base", args.model), ("--dev auto", str(Path(tmp) / "run"))):
            from encodr.index import SearchOptions

            ranked = evaluator.ranked(
                load_encoder(spec), (SearchOptions(mode="dense"), SearchOptions(mode="hybrid", fusion="convex"))
            )
            search[label] = {
                mode: next(
                    s.value
                    for s in evaluator.scores(ranked["dense" if mode == "dense" else "hybrid·convex"])
                    if s.metric == "ndcg@10"
                )
                for mode in ("dense", "hybrid")
            }
    curve = summary["dev_curve"]
    for point in curve:
        print(point, flush=True)
    auto = max(curve, key=lambda p: p["dev"])  # the trainer keeps the first best
    real = max(curve, key=lambda p: p["report"])
    rho = spearmanr([p["dev"] for p in curve], [p["report"] for p in curve]).statistic
    rows = [
        {
            "model": "base",
            "step": 0,
            "label-free dev": curve[0]["dev"],
            f"real ({split})": curve[0]["report"],
            "real, hybrid": search["base"]["hybrid"],
        },
        {
            "model": "--dev auto",
            "step": auto["step"],
            "label-free dev": auto["dev"],
            f"real ({split})": auto["report"],
            "real, hybrid": search["--dev auto"]["hybrid"],
        },
        {
            "model": "real dev (same checkpoints)",
            "step": real["step"],
            "label-free dev": real["dev"],
            f"real ({split})": real["report"],
        },
    ]
    print_table(f"retrieval recipe on {args.data} ({args.model}): nDCG@10 × 100, dense search", rows, list(rows[0]))
    cost = {
        "checkpoints": len(curve),
        "searched_per_checkpoint": searched,
        "spearman_label_free_vs_real": round(float(rho), 3),
        "examples_per_s": summary["examples_per_s"],
        "train_minutes": round(summary["train_seconds"] / 60, 1),
        "eval_minutes": round((summary.get("eval_seconds") or 0) / 60, 1),
        "total_minutes": round(minutes, 1),
        "trained_on": "searched" if args.train_searched else "corpus",
        "documents": summary["documents"],
        "passages": summary["passages"],
        "steps": summary["steps"],
    }
    print_table("checkpoints and cost", [cost], list(cost))
    out = args.out or RESULTS / f"retrieval_recipe_{args.data}_{args.model}.json"
    write_json(out, {"machine": machine(), "recipe": recipe.to_dict(), "rows": rows, "cost": cost, "curve": curve})


if __name__ == "__main__":
    main()
