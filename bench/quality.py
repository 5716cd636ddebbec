"""Quality of the Mirror-BERT recipes on the bundled base model (all-MiniLM-L6-v2).

For each recipe: evaluate the base model, tune with each pooling on the recipe's standard
data, evaluate again. The pooling is *chosen on the dev set* (WordSim-353 for words,
MeSH-dev for phrases, STS-B dev for sentences) and the test score is reported for both.
For words, the sentence-transformers equivalent (MultipleNegativesRankingLoss on (x, x)
pairs, scale = 1/τ, same data, batch, length, epochs, mean pooling) is measured the same way,
and both it and encodr with the selected pooling are run with several seeds (the paper
reports averages of three runs); the table ends with their means.

    python bench/quality.py                     # all jobs (≈ 45 min on 2 CPU cores)
    python bench/quality.py --jobs word phrase  # a subset

Prints a table and writes bench/results/quality.json.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, parse_overrides, print_table, run_tune, write_json  # noqa: E402

from encodr import evaluation  # noqa: E402
from encodr.data.bundled import default_corpus  # noqa: E402
from encodr.data.text import Corpus  # noqa: E402
from encodr.methods import load_recipe  # noqa: E402
from encodr.models import Encoder, load_encoder  # noqa: E402

# job → (recipe, data, suite, dev task, test task)
JOBS = {
    "word": ("word", "words", "words", "wordsim353", "simlex999"),
    "phrase": ("phrase", "mesh", "linking", "mesh-dev", "mesh-test"),
    "sentence-stsb": ("sentence", "stsb-train", "sts", "stsb-dev", "stsb-test"),
    "sentence-wiki": ("sentence", "wiki", "sts", "stsb-dev", "stsb-test"),
}
PRIMARY = evaluation.tasks.PRIMARY


def score(encoder, suite: str, task: str) -> float:
    report = evaluation.run(suite, encoder, [task])
    return next(s.value for s in report.scores if s.metric == PRIMARY[suite])


def corpus_for(name: str, n: int) -> Corpus:
    corpus = default_corpus(name, n=n)
    corpus.strings = corpus.strings[:n]
    return corpus


QUICK = ["--jobs", "word", "--poolings", "mean", "--n", "200", "--no-st", "--out", "{tmp}/quality.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", nargs="+", default=list(JOBS), choices=list(JOBS))
    parser.add_argument("--poolings", nargs="+", default=["mean", "cls"])
    parser.add_argument("--n", type=int, default=10_000, help="training strings per job")
    parser.add_argument("--no-st", action="store_true", help="skip the sentence-transformers baseline")
    parser.add_argument(
        "--word-seeds", nargs="+", type=int, default=[42, 43, 44], help="seeds for the word job's final comparison"
    )
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="recipe overrides for every tuned model, e.g. --set drophead=0.2 lr=5e-5 (choose on dev only)",
    )
    parser.add_argument(
        "--trace-every",
        type=int,
        default=0,
        metavar="N",
        help="also score the dev task every N training steps (encodr tune --dev: the run then keeps its best dev "
        "checkpoint; stored as dev_trace)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "quality.json")
    args = parser.parse_args()
    overrides = parse_overrides(args.set)

    rows: list[dict] = []
    payload = {"machine": machine(), "base_model": "minilm (all-MiniLM-L6-v2)", "overrides": overrides, "rows": rows}
    scratch = Path(tempfile.mkdtemp(prefix="encodr-quality-"))
    base = load_encoder("minilm")
    try:
        for job in args.jobs:
            recipe_name, data, suite, dev, test = JOBS[job]
            corpus = corpus_for(data, args.n)
            rows.append(
                {
                    "job": job,
                    "model": "base",
                    "pooling": base.pooling,
                    "seed": "",
                    "dev_task": dev,
                    "dev": score(base, suite, dev),
                    "test_task": test,
                    "test": score(base, suite, test),
                    "train_s": 0.0,
                    "selected": "",
                }
            )
            tuned = []
            for pooling in args.poolings:
                traced = {"eval_steps": args.trace_every} if args.trace_every else {}
                recipe = load_recipe(recipe_name, {**overrides, "pooling": pooling, **traced})
                started = time.perf_counter()
                summary = run_tune(
                    corpus,
                    recipe,
                    "minilm",
                    scratch / f"{job}-{pooling}",
                    progress=False,
                    warn=lambda m: None,
                    **({"dev": dev} if args.trace_every else {}),
                )
                trace = [{"step": p["step"], "dev": p["dev"]} for p in summary.get("dev_curve", [])]
                enc = load_encoder(summary["out"])
                row = {
                    "job": job,
                    "model": f"encodr {recipe_name}",
                    "pooling": pooling,
                    "seed": recipe.seed,
                    "dev_task": dev,
                    "dev": score(enc, suite, dev),
                    "test_task": test,
                    "test": score(enc, suite, test),
                    "train_s": time.perf_counter() - started,
                    "selected": "",
                }
                if trace:
                    row["dev_trace"] = trace
                rows.append(row)
                tuned.append(row)
                print(row, flush=True)
                write_json(args.out, payload)
            best = max(tuned, key=lambda r: r["dev"])
            best["selected"] = "✓ (best dev)"
            if job == "word" and not args.no_st:
                from st_baseline import train_st_equivalent

                means = {}
                for impl in ("encodr", "sentence-transformers MNRL"):
                    tests = []
                    for seed in args.word_seeds:
                        recipe = load_recipe(recipe_name, {**overrides, "pooling": best["pooling"], "seed": seed})
                        if impl == "encodr" and seed == best["seed"]:
                            row = best  # already trained above
                        else:
                            started = time.perf_counter()
                            if impl == "encodr":
                                summary = run_tune(
                                    corpus, recipe, "minilm", scratch / f"{job}-seed{seed}", progress=False, warn=lambda m: None
                                )
                                enc = load_encoder(summary["out"])
                            else:
                                enc = Encoder(train_st_equivalent(corpus.strings, recipe, scratch / f"st-{seed}"), "st-mnrl")
                            row = {
                                "job": job,
                                "model": impl if impl != "encodr" else f"encodr {recipe_name}",
                                "pooling": best["pooling"],
                                "seed": seed,
                                "dev_task": dev,
                                "dev": score(enc, suite, dev),
                                "test_task": test,
                                "test": score(enc, suite, test),
                                "train_s": time.perf_counter() - started,
                                "selected": "",
                            }
                            rows.append(row)
                            print(row, flush=True)
                            write_json(args.out, payload)
                        tests.append(row)
                    means[impl] = {k: sum(r[k] for r in tests) / len(tests) for k in ("dev", "test")}
                    rows.append(
                        {
                            "job": job,
                            "model": f"{impl if impl != 'encodr' else 'encodr ' + recipe_name} (mean)",
                            "pooling": best["pooling"],
                            "seed": f"{len(tests)} seeds",
                            "dev_task": dev,
                            "dev": means[impl]["dev"],
                            "test_task": test,
                            "test": means[impl]["test"],
                            "train_s": "",
                            "selected": "",
                        }
                    )
                payload["word_seed_means"] = means
            write_json(args.out, payload)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_json(args.out, payload)
    print_table(
        "encodr bench/quality.py (metric: Spearman ρ×100, or acc@1 for linking)",
        rows,
        ["job", "model", "pooling", "seed", "dev_task", "dev", "test_task", "test", "train_s", "selected"],
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
