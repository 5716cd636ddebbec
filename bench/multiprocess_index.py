"""``encodr index --processes N`` (sentence-transformers' multi-process pool) and ``--engine ray``
(Ray Data: N encoder actors on a local Ray) against one process: the same texts, the same model, and the
largest difference between the stored vectors (it should be below 1e-5 for the torch backend).
A build's seconds count from the model loaded to the index written: for Ray they include
starting the local Ray and its actors (each loads the model).

    python bench/multiprocess_index.py --limit 3000 --processes 2
    python bench/multiprocess_index.py --limit 3000 --processes 2 --engines local ray
    python bench/multiprocess_index.py --limit 20000 --engines ray --ivfpq   # and IVF-PQ: recall@10 of each engine's index

With ``--ivfpq``, each engine also builds an IVF-PQ index (``--processes`` actors for Ray) of the
same texts, and the table gives its recall@10 against exact search over one process's vectors,
on the same 1,000 stored vectors as queries.

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

from encodr.index import BuildOptions, Index, build  # noqa: E402
from encodr.paths import bundled  # noqa: E402


def vectors_by_line(index_dir: Path) -> np.ndarray:
    index = Index.open(index_dir)
    lines = index.texts.column("line")
    return index.faiss.reconstruct_n(0, len(index))[np.argsort(lines)]


# python -m bench run multiprocess_index --quick: a small run that checks the benchmark still runs (its JSON to a
# temporary folder)
QUICK = ["--limit", "200", "--processes", "2", "--out", "{tmp}/multiprocess_index.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--engines", nargs="+", default=["local"], choices=["local", "ray"])
    parser.add_argument("--ivfpq", action="store_true", help="also build IVF-PQ with each engine and report recall@10")
    parser.add_argument("--out", type=Path, default=RESULTS / "multiprocess_index.json")
    args = parser.parse_args()
    texts = bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines()[: args.limit]
    rows, vectors = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "wiki.txt"
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
        runs = [("local", 1)] + [
            (engine, n) for engine in args.engines for n in (1, args.processes) if (engine, n) != ("local", 1)
        ]
        for engine, processes in runs:
            out = Path(tmp) / f"{engine}{processes}"
            meta = build(
                [str(corpus)],
                out,
                BuildOptions(model=args.model, index_type="flat", lang="eng", processes=processes, engine=engine),
            )
            vectors[engine, processes] = vectors_by_line(out)
            rows.append(
                {
                    "engine": engine,
                    "processes": processes,
                    "index": "flat",
                    "texts": meta["count"],
                    "seconds": meta["seconds"],
                    "texts/s": round(meta["count"] / meta["seconds"], 1),
                }
            )
        queries = vectors["local", 1][:: max(1, len(texts) // 1000)][
            :1000
        ]  # stored vectors as queries: exact top-10 by inner product
        top = {key: np.argsort(-(queries @ v.T), axis=1)[:, :10] for key, v in vectors.items()}
        pq_rows = []
        for engine in ["local", *[e for e in args.engines if e != "local"]] if args.ivfpq else []:
            processes = 1 if engine == "local" else args.processes
            out = Path(tmp) / f"{engine}{processes}-ivfpq"
            meta = build(
                [str(corpus)],
                out,
                BuildOptions(model=args.model, index_type="ivfpq", lang="eng", processes=processes, engine=engine),
            )
            index = Index.open(out)
            lines = np.asarray(index.texts.column("line"))
            order = np.sort(lines)  # a text's position in vectors_by_line's order
            _, ids = index.search(queries, 10)
            found = np.searchsorted(order, lines[ids])
            recall = float(np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, top["local", 1])]))
            index.close()
            pq_rows.append(
                {
                    "engine": engine,
                    "processes": processes,
                    "index": "ivfpq",
                    "texts": meta["count"],
                    "seconds": meta["seconds"],
                    "texts/s": round(meta["count"] / meta["seconds"], 1),
                    "recall@10": round(recall, 4),
                }
            )
    diff = 0.0
    for row in rows:
        key = row["engine"], row["processes"]
        d = float(np.abs(vectors["local", 1] - vectors[key]).max())
        row["max |Δ| to 1 process"] = f"{d:.2e}" if key != ("local", 1) else "–"
        row["same exact top-10"] = f"{sum(set(a) == set(b) for a, b in zip(top[key], top['local', 1]))}/{len(queries)}"
        diff = max(diff, d)
    rows += pq_rows
    print_table(
        f"encodr index --processes / --engine, {len(texts):,} Wikipedia sentences, {args.model}, torch",
        rows,
        ["engine", "processes", "index", "texts", "seconds", "texts/s", "max |Δ| to 1 process", "same exact top-10", "recall@10"],
    )
    write_json(args.out, {"model": args.model, "rows": rows, "max_abs_diff": diff, "machine": machine()})


if __name__ == "__main__":
    main()
