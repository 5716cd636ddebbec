"""How close must another judged query be for its judgments to apply to a new one? The
threshold of :data:`encodr.index.pinning.NEAR_DUPLICATE`, chosen on SciFact's shared train claims.

Each claim of the dev fold (:func:`encodr.index.judgments.fold`, a hash of its text) is matched to
its nearest claim of the other folds by the cosine of their vectors (the bundled MiniLM, as
search encodes queries). A match is right when the two claims share a relevant abstract
(``qrels/train.tsv``): the judged documents it would move are then ones this claim needs. For
each threshold the table gives how many dev claims find a match at or above it, the share of
those that are right (precision) and the share of the claims with a right nearest match that it
keeps (recall). The threshold kept is the lowest whose precision is 1.

    python bench/judged_at_once.py

Prints a table and writes bench/results/judged_at_once.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "scifact"
THRESHOLDS = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
QUICK = ["--out", "{tmp}/judged_at_once.json"]


def main() -> None:
    import argparse

    from encodr.index.judgments import fold
    from encodr.models import load_encoder

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "judged_at_once.json")
    args = parser.parse_args()
    claims = {r["_id"]: r["text"] for r in map(json.loads, (SCIFACT / "queries.jsonl").read_text().splitlines())}
    relevant: dict[str, set] = {}
    for line in (SCIFACT / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        q, doc, _ = line.split("\t")
        relevant.setdefault(q, set()).add(doc)
    ids = [q for q in claims if q in relevant]
    dev, judged = [q for q in ids if fold(claims[q]) == "dev"], [q for q in ids if fold(claims[q]) != "dev"]
    encoder = load_encoder("minilm")
    cosines = encoder.encode([claims[q] for q in dev]) @ encoder.encode([claims[q] for q in judged]).T
    nearest, best = cosines.argmax(1), cosines.max(1)
    right = np.array([bool(relevant[q] & relevant[judged[j]]) for q, j in zip(dev, nearest)])
    rows = []
    for t in THRESHOLDS:
        kept = best >= t
        rows.append(
            {
                "threshold": t,
                "dev claims": len(dev),
                "matched": int(kept.sum()),
                "precision": 100 * float(right[kept].mean()) if kept.any() else None,
                "recall": 100 * float((kept & right).sum() / max(right.sum(), 1)),
            }
        )
    chosen = next((r["threshold"] for r in rows if r["precision"] == 100.0), None)
    print_table(
        f"Near-duplicate judged queries (chosen: {chosen})", rows, ["threshold", "dev claims", "matched", "precision", "recall"]
    )
    write_json(args.out, {"bench": "judged_at_once", "model": "minilm", "chosen": chosen, "rows": rows})


if __name__ == "__main__":
    main()
