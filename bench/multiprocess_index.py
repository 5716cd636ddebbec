"""``encodr index --processes N`` against one process: the same texts, the same model, and the
largest difference between the stored vectors (it should be below 1e-5 for the torch backend).

    python bench/multiprocess_index.py --limit 3000 --processes 2

Prints a table and writes bench/results/multiprocess_index.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

from encodr.index import Index, build  # noqa: E402
from encodr.paths import bundled  # noqa: E402


def vectors_by_line(index_dir: Path) -> np.ndarray:
    index = Index.open(index_dir)
    lines = index.texts.column("line")
    return index.faiss.reconstruct_n(0, len(index))[np.argsort(lines)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "multiprocess_index.json")
    args = parser.parse_args()
    texts = bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines()[: args.limit]
    rows, vectors = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "wiki.txt"
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
        for processes in (1, args.processes):
            meta = build([str(corpus)], args.model, Path(tmp) / f"p{processes}", index_type="flat", lang="eng", processes=processes)
            vectors[processes] = vectors_by_line(Path(tmp) / f"p{processes}")
            rows.append({"processes": processes, "texts": meta["count"], "seconds": meta["seconds"], "texts/s": round(meta["count"] / meta["seconds"], 1)})
    diff = float(np.abs(vectors[1] - vectors[args.processes]).max())
    for row in rows:
        row["max |Δ| to 1 process"] = f"{diff:.2e}" if row["processes"] != 1 else "–"
    print_table(f"encodr index --processes, {len(texts):,} Wikipedia sentences, {args.model}, torch", rows,
                ["processes", "texts", "seconds", "texts/s", "max |Δ| to 1 process"])  # fmt: skip
    write_json(args.out, {"model": args.model, "rows": rows, "max_abs_diff": diff, "machine": machine()})


if __name__ == "__main__":
    main()
