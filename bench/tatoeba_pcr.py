"""Cross-language retrieval on Tatoeba (spa, fra, deu ↔ eng) with and without
principal-component removal (CMLM §5.2), through encodr index / search.

For each language, both sides (1,000 + 1,000 sentences) go into one index with a ``lang``
column; each foreign sentence is a query (``--lang`` its language) and counts as correct when
the first English hit is its translation (accuracy = acc@1). PCR fits each language's first
principal component at index time and removes it from that language's vectors and queries.

    python bench/tatoeba_pcr.py [--model minilm]

Prints a table and writes bench/results/tatoeba_pcr.json.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

from encodr.index import (  # noqa: E402
    BuildOptions,
    Searcher,  # noqa: E402
    build,
)
from encodr.index.options import SearchOptions
from encodr.models import load_encoder  # noqa: E402
from encodr.paths import bundled  # noqa: E402

# python -m bench run tatoeba_pcr --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--out", "{tmp}/tatoeba_pcr.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--out", type=Path, default=RESULTS / "tatoeba_pcr.json")
    args = parser.parse_args()
    encoder = load_encoder(args.model)
    rows = []
    scratch = Path(tempfile.mkdtemp(prefix="encodr-tatoeba-"))
    try:
        for lang in ("spa", "fra", "deu"):
            foreign = bundled(f"tatoeba/tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").splitlines()
            english = bundled(f"tatoeba/tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").splitlines()
            tsv = scratch / f"{lang}.tsv"
            lines = (
                ["id\ttext\tlang"]
                + [f"eng-{i}\t{t}\teng" for i, t in enumerate(english)]
                + [f"{lang}-{i}\t{t}\t{lang}" for i, t in enumerate(foreign)]
            )
            tsv.write_text("\n".join(lines) + "\n", encoding="utf-8")
            row = {"pair": f"{lang}→eng", "pairs": len(foreign)}
            for pcr in (False, True):
                out = scratch / f"{lang}-{pcr}"
                build([str(tsv)], out, BuildOptions(model=args.model, pcr=pcr))
                searcher = Searcher(out, encoder=encoder)
                results = searcher.search(
                    foreign, SearchOptions(k=len(searcher.index), lang=lang if pcr else None, mode="dense")
                )  # every hit: the first English one counts (the language picks the PCR component)
                correct = 0
                for i, hits in enumerate(results):
                    first_eng = next((h for h in hits if h.lang == "eng"), None)
                    correct += first_eng is not None and english[i] == first_eng.text
                row["acc@1 (pcr)" if pcr else "acc@1"] = 100.0 * correct / len(foreign)
            row["Δ"] = row["acc@1 (pcr)"] - row["acc@1"]
            rows.append(row)
            print(row, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print_table(
        f"Tatoeba cross-language retrieval, model {args.model} (acc@1 × 100)",
        rows,
        ["pair", "pairs", "acc@1", "acc@1 (pcr)", "Δ"],
    )
    write_json(args.out, {"machine": machine(), "model": args.model, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
