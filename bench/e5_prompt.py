"""Should encodr add e5's "query: " prefix? Tatoeba spa/fra/deu ↔ eng (the multilingual dev set),
acc@1 in both directions and their mean, as LASER and XTREME report it, for the ``me5`` alias
with no prefix, with "query: " and with "passage: " on every sentence (e5's model card asks
for "query: " on both sides of symmetric tasks).

    python bench/e5_prompt.py

Prints a table and writes bench/results/e5_prompt.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

from encodr.data.bitext import read_tatoeba  # noqa: E402
from encodr.evaluation.bitext import retrieval_accuracy  # noqa: E402
from encodr.models import load_encoder  # noqa: E402
from encodr.paths import bundled  # noqa: E402

QUICK = ["--limit", "100", "--out", "{tmp}/e5_prompt.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="me5")
    parser.add_argument("--limit", type=int, default=0, help="the first N pairs of each language (0: all)")
    parser.add_argument("--out", type=Path, default=RESULTS / "e5_prompt.json")
    args = parser.parse_args()
    encoder = load_encoder(args.model)
    rows = []
    for prefix in ("", "query: ", "passage: "):
        started = time.perf_counter()
        row = {"prefix": repr(prefix)}
        means = []
        for lang in ("spa", "fra", "deu"):
            pairs = read_tatoeba(bundled(f"tatoeba/tatoeba.{lang}-eng.{lang}"))[: args.limit or None]
            foreign, english = [p.source for p in pairs], [p.target for p in pairs]
            f = encoder.encode([prefix + t for t in foreign], batch_size=64)
            e = encoder.encode([prefix + t for t in english], batch_size=64)
            to_eng, from_eng = retrieval_accuracy(f, e), retrieval_accuracy(e, f)
            row[f"{lang}→eng"], row[f"eng→{lang}"] = round(to_eng, 2), round(from_eng, 2)
            means.append((to_eng + from_eng) / 2)
        row["mean"] = round(float(np.mean(means)), 2)
        row["seconds"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        print(row, flush=True)
    columns = ["prefix", "spa→eng", "eng→spa", "fra→eng", "eng→fra", "deu→eng", "eng→deu", "mean", "seconds"]
    print_table(f"Tatoeba acc@1 × 100, both directions, model {args.model}", rows, columns)
    write_json(args.out, {"machine": machine(), "model": args.model, "pairs_per_language": args.limit or "all", "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
