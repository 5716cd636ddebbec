"""Where does Mirror-BERT tuning win or lose on MeSH entity linking?

The paper (§4, after Table 2) finds that Mirror-BERT turns a model into "a very good
surface-form encoder for biomedical names" and that synonyms with different surface forms
need external knowledge. This script tests that on the bundled base: it splits the
linking queries by how many words they share with their concept's canonical name (token
Jaccard on :func:`encodr.data.readers.surface_key`, i.e. lower-cased, singular) and
reports acc@1 per bucket for the base model (with its own mean pooling and with [CLS]) and
for each tuned model given, with its change from the base in the same pooling (what tuning
did) and from the base's own mean pooling (what a user gains or loses).

    encodr tune --recipe phrase --out runs/phrase
    python bench/linking_breakdown.py runs/phrase                  # mesh-dev
    python bench/linking_breakdown.py runs/phrase --task mesh-test

Prints a table and writes bench/results/linking_breakdown.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

from encodr.data.readers import surface_key  # noqa: E402
from encodr.evaluation import TASKS  # noqa: E402
from encodr.models import load_encoder  # noqa: E402

# bucket name → test on the Jaccard overlap with the gold canonical name
BUCKETS = {
    "no shared word": lambda j: j == 0,
    "some shared (< 1/2)": lambda j: 0 < j < 0.5,
    "mostly shared (≥ 1/2)": lambda j: j >= 0.5,
}


def overlap(query: str, gold_names: list[str]) -> float:
    """Highest token Jaccard between ``query`` and any of its concept's canonical names."""
    q = set(surface_key(query))
    return max(len(q & g) / max(len(q | g), 1) for g in (set(surface_key(name)) for name in gold_names))


QUICK = ["--out", "{tmp}/linking_breakdown.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="tuned model directories (or specs) to compare with the base")
    parser.add_argument("--task", default="mesh-dev", choices=[t for t in TASKS if TASKS[t].type == "linking"])
    parser.add_argument("--out", type=Path, default=RESULTS / "linking_breakdown.json")
    args = parser.parse_args()

    evaluator = TASKS[args.task].evaluator()
    data = evaluator.data
    names_of: dict[str, list[str]] = {}
    for name, ids in zip(data.candidates, data.candidate_ids):
        for concept in ids:
            names_of.setdefault(concept, []).append(name)
    bucket_of = [
        next(b for b, test in BUCKETS.items() if test(overlap(q, names_of[c]))) for q, c in zip(data.queries, data.query_ids)
    ]

    encoders = [("base (mean)", load_encoder("minilm", "mean")), ("base (cls)", load_encoder("minilm", "cls"))]
    encoders += [(m, load_encoder(m)) for m in args.models]
    rows = []
    for label, encoder in encoders:
        ranks = evaluator.ranks(encoder)
        for bucket in [*BUCKETS, "all"]:
            hits = [r == 0 for r, b in zip(ranks, bucket_of) if bucket in ("all", b)]
            rows.append(
                {
                    "model": label,
                    "pooling": encoder.pooling,
                    "bucket": bucket,
                    "queries": len(hits),
                    "acc@1": 100.0 * sum(hits) / len(hits),
                }
            )
    base = {(r["pooling"], r["bucket"]): r["acc@1"] for r in rows if r["model"].startswith("base")}
    for r in rows:  # a tuned model against the base with the same pooling: the change training made
        r["vs base, same pooling"] = r["acc@1"] - base[r["pooling"], r["bucket"]]
        r["vs base (mean)"] = r["acc@1"] - base["mean", r["bucket"]]
    write_json(args.out, {"machine": machine(), "task": args.task, "rows": rows})
    print_table(
        f"acc@1 on {args.task} by word overlap of query and canonical name",
        rows,
        ["model", "pooling", "bucket", "queries", "acc@1", "vs base, same pooling", "vs base (mean)"],
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
