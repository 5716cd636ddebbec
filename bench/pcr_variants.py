"""Which "first principal component" should PCR remove? Tatoeba spa/fra/deu ↔ eng (the
multilingual dev set), acc@1 both directions averaged, for each model without PCR and with
the ``centred`` (PCA of the covariance) and ``uncentred`` (CMLM §5.2: first right singular
vector) variants, fitted per language on the evaluated vectors (``encodr eval bitext --pcr``).

    python bench/pcr_variants.py                    # minilm and me5

Prints a table and writes bench/results/pcr_variants.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

from encodr import evaluation  # noqa: E402
from encodr.models import load_encoder  # noqa: E402

# python -m bench run pcr_variants --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--models", "minilm", "--out", "{tmp}/pcr_variants.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["minilm", "me5"])
    parser.add_argument("--out", type=Path, default=RESULTS / "pcr_variants.json")
    args = parser.parse_args()
    rows = []
    for model in args.models:
        encoder = load_encoder(model)
        for variant in (None, "centred", "uncentred"):
            started = time.perf_counter()
            report = evaluation.run("bitext", encoder, **({"pcr": variant} if variant else {}))
            row = {"model": model, "pcr": variant or "none"}
            row.update({s.dataset: round(s.value, 2) for s in report.scores if s.metric == "acc@1"})
            row["mean"] = round(report.mean, 2)
            row["seconds"] = round(time.perf_counter() - started, 1)
            rows.append(row)
            print(row, flush=True)
    print_table(
        "Tatoeba acc@1 × 100 (both directions), PCR variants",
        rows,
        ["model", "pcr", "tatoeba-spa", "tatoeba-fra", "tatoeba-deu", "mean", "seconds"],
    )
    write_json(args.out, {"machine": machine(), "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
