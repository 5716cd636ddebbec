"""Trans-Encoder on STS-B, starting from the bundled bi-encoder (all-MiniLM-L6-v2).

Jobs (all use STS-B dev for model selection; STS-B test is scored after every phase for
the report only, never for selection):

- ``pairs``: the STS-B train+dev+test pairs without their labels (as the paper does, §4);
- ``mined``: only the STS-B sentences, no pairing given: pairs mined with FAISS from the
  start model's nearest neighbours plus random pairs (capped at ``--max-pairs``);
- ``mutual``: mutual distillation (§2.4) of two differently seeded Mirror-tuned copies of
  the bundled model (sentence recipe on ``--mirror-limit`` Wikipedia sentences), on the
  first ``--mutual-pairs`` STS-B pairs.

    python bench/trans_encoder.py --jobs pairs mined mutual --cycles 3 --bi-epochs 1

On a CPU the bi-encoder epochs are cut (paper: 10). Prints a table and writes
bench/results/trans_encoder.json (merged with earlier jobs).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, parse_overrides, print_table, run_trans_encoder, run_tune, write_json  # noqa: E402

from encodr.data.bundled import default_corpus  # noqa: E402
from encodr.data.pairs import stsb_pairs  # noqa: E402
from encodr.methods import load_recipe  # noqa: E402


def rows_of(job: str, summary: dict) -> list[dict]:
    rows = []
    for c, chain in enumerate(summary["chains"], 1):
        rows.append(
            {
                "job": job,
                "chain": c,
                "cycle": 0,
                "model": f"start ({Path(chain['start']).name})",
                "dev": chain["start_dev"],
                "test": chain["start_report"],
            }
        )
        for h in chain["history"]:
            rows.append(
                {
                    "job": job,
                    "chain": c,
                    "cycle": h["cycle"],
                    "model": f"TENC ({h['phase']})",
                    "dev": h["dev"],
                    "test": h["report"],
                    "seconds": h["seconds"],
                }
            )
        for kind in ("bi", "cross"):
            best = chain["best"][kind]
            # the starting bi-encoder kept (no cycle beat it on dev): its own test score
            test = next(
                (h["report"] for h in chain["history"] if h["phase"] == kind and h["cycle"] == best["cycle"]),
                chain["start_report"] if kind == "bi" else None,
            )
            rows.append(
                {
                    "job": job,
                    "chain": c,
                    "cycle": f"best={best['cycle']}",
                    "model": f"TENC ({kind}) selected on dev",
                    "dev": best["dev"],
                    "test": test,
                }
            )
    return rows


QUICK = [
    "--jobs",
    "mutual",
    "--mirror-limit",
    "200",
    "--mutual-pairs",
    "64",
    "--mutual-cycles",
    "1",
    "--out",
    "{tmp}/trans_encoder.json",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", nargs="+", default=["pairs", "mined", "mutual"], choices=["pairs", "mined", "mutual"])
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--bi-epochs", type=int, default=1, help="cut from the paper's 10 on a CPU")
    parser.add_argument("--max-pairs", type=int, default=0, help="cap on mined pairs (0: as many as the STS-B pairs)")
    parser.add_argument("--mirror-limit", type=int, default=2000)
    parser.add_argument("--mutual-pairs", type=int, default=2000)
    parser.add_argument("--mutual-cycles", type=int, default=1)
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="recipe overrides for every job, e.g. --set cross_epochs=2 (results are stored as JOB+KEY=VALUE)",
    )
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", type=Path, default=RESULTS / "trans_encoder.json")
    args = parser.parse_args()
    overrides = parse_overrides(args.set)

    payload = json.loads(args.out.read_text()) if args.out.exists() else {"jobs": {}}
    payload["machine"] = machine()
    work = Path(tempfile.mkdtemp(prefix="encodr-tenc-"))

    def recipe_for(**extra):
        return load_recipe("cross-encoder", {**overrides, "cycles": args.cycles, "bi_epochs": args.bi_epochs, **extra})

    for job in args.jobs:
        models, data, recipe, limit = ["minilm"], None, recipe_for(), None
        if job == "mined":
            stsb = stsb_pairs()
            data = work / "stsb-sentences.txt"
            data.write_text("\n".join(stsb.sentences) + "\n", encoding="utf-8")
            recipe = recipe_for(max_pairs=args.max_pairs or len(stsb.pairs))
            data = str(data)
        if job == "mutual":
            wiki = default_corpus("wiki")
            models = []
            for seed in (1, 2):
                mirror = load_recipe("sentence", {"seed": seed})
                out = work / f"mirror-seed{seed}"
                run_tune(wiki, mirror, "minilm", out, overwrite=True, device=args.device, limit=args.mirror_limit, progress=True)
                models.append(str(out))
            recipe = recipe_for(cycles=args.mutual_cycles)
            limit = args.mutual_pairs
        summary = run_trans_encoder(
            data,
            recipe,
            models,
            work / f"tenc-{job}",
            overwrite=True,
            device=args.device,
            dev="stsb-dev",
            limit=limit,
            progress=True,
            report="stsb-test",
        )
        key = "+".join([job, *args.set])
        payload["jobs"][key] = {
            "settings": {
                "overrides": overrides,
                "cycles": recipe.cycles,
                "bi_epochs": recipe.bi_epochs,
                "paper_bi_epochs": 10,
                "pairs": summary["pairs"],
                "mined": summary["mined"],
                "models": models,
                "selection": summary["selection"],
            },
            "phases": summary["phases"],
            "rows": rows_of(key, summary),
        }
        write_json(args.out, payload)
    rows = [r for j in payload["jobs"].values() for r in j["rows"]]
    print_table(
        "Trans-Encoder on STS-B (Spearman ρ × 100; selection on dev, test reported)",
        rows,
        ["job", "chain", "cycle", "model", "dev", "test"],
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
