"""Does dev-set selection keep a tuned model at least as good as its base?

Takes output directories of ``encodr tune ... --dev SET`` runs, reads the dev curve the
trainer recorded (the starting model at step 0, every ``eval_steps`` steps, each epoch end)
and which checkpoint was kept, then scores each saved model and the base model (with its
own pooling) on a test set that selection never saw.

    encodr tune --recipe phrase --dev mesh-dev --out runs/phrase-dev
    encodr tune --recipe phrase --dev mesh-dev --set pooling=cls --out runs/phrase-dev-cls
    python bench/dev_selection.py runs/phrase-dev runs/phrase-dev-cls          # mesh-test
    python bench/dev_selection.py runs/word-dev --test simlex999

Prints a table and writes bench/results/dev_selection.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

from encodr.evaluation import TASKS  # noqa: E402
from encodr.models import load_encoder  # noqa: E402

QUICK = ["--tune", "200", "--out", "{tmp}/dev_selection.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="output directories of encodr tune --dev runs")
    parser.add_argument(
        "--tune",
        type=int,
        default=0,
        metavar="N",
        help="first tune the phrase recipe on its first N strings with --dev mesh-dev, into a temporary folder, and add that run",
    )
    parser.add_argument("--test", default="mesh-test", choices=sorted(TASKS), help="held-out set to score the saved models on")
    parser.add_argument("--base", default="minilm", help="the base model, scored with its own pooling")
    parser.add_argument("--out", default=str(RESULTS / "dev_selection.json"))
    args = parser.parse_args()
    if not args.runs and not args.tune:
        parser.error("give encodr tune --dev runs, or --tune N")
    if args.tune:
        from common import run_tune

        from encodr.methods import load_recipe

        run = Path(tempfile.mkdtemp(prefix="encodr-bench-dev-")) / "phrase-dev"
        run_tune(None, load_recipe("phrase", {}), args.base, run, dev="mesh-dev", limit=args.tune, warn=lambda line: None)
        args.runs.append(str(run))
    evaluator = TASKS[args.test].evaluator()
    base_score = evaluator.evaluate(load_encoder(args.base))[0]
    rows = [
        {
            "model": f"{args.base} (base, own pooling)",
            "pooling": load_encoder(args.base).pooling,
            "dev set": "",
            "dev curve": "",
            "kept": "",
            f"{args.test} {base_score.metric}": round(base_score.value, 2),
            "Δ vs base": 0.0,
        }
    ]
    for run in args.runs:
        summary = json.loads((Path(run) / "encodr.json").read_text())
        encoder = load_encoder(run)
        score = evaluator.evaluate(encoder)[0]
        best = summary["best"]
        rows.append(
            {
                "model": run,
                "pooling": encoder.pooling,
                "dev set": summary["dev"],
                "dev curve": " → ".join(f"{p['step']}:{p['dev']:.2f}" for p in summary["dev_curve"]),
                "kept": "start (no step beat it)" if best["step"] == 0 else f"step {best['step']}",
                f"{args.test} {score.metric}": round(score.value, 2),
                "Δ vs base": round(score.value - base_score.value, 2),
            }
        )
    columns = list(rows[0])
    print_table(f"encodr bench/dev_selection.py ({args.test})", rows, columns)
    write_json(Path(args.out), {"machine": machine(), "test": args.test, "base": args.base, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
