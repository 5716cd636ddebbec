"""Compressed vectors on SciFact: ``encodr index --quantize none | int8 | binary`` (binary: Hamming
candidates rescored by int8 vectors), and truncation to fewer dimensions, side by side in one run.

The corpus (SciFact's 5,183 abstracts, split into passages as ``encodr index`` splits them) is
encoded once, into an exact float32 index (``--quantize none``); every other index is made from
that index's vectors by the code ``encodr index --quantize`` runs (``new_faiss`` with the same
training sample: all vectors below 100,000), so the rows differ only in how vectors are stored.

Per row: bytes a vector in memory (``vectors.faiss``) and on disk (with binary, the int8 file the
candidates are rescored with, memory-mapped), recall@10 against the exact top 10 of the float32
index, nDCG@10 of dense search on the 809 train queries (``encodr eval retrieval``'s metrics; a
document ranks by its best passage), and p50 / p99 of one query's search (the vector search
alone, queries encoded beforehand).

Truncation rows (``--dim N``): the first N dimensions of each vector, renormalised, in an exact
index made by the code ``encodr index --dim`` runs; queries are truncated as the index's search
truncates them. With ``--model minilm`` (or mpnet, me5: trained without Matryoshka loss) they show
what ``--dim`` costs a model not trained for it; give a model tuned with ``matryoshka_dims`` to see
what the training buys.

    python bench/quantize.py [--model minilm] [--dims 256 128 64] [--big FLAT_INDEX_OF_THE_SEARCH_CORPUS]

With ``--big``, the same rows for an exact index of the ``bench/search.py`` corpus (336,198 texts;
``encodr index corpus.tsv --index-type flat``), with that bench's 1,000 held-out queries: no
relevance judgments there, so recall@10 against its exact top 10, bytes and speed only.

Prints a table and writes bench/results/quantize.json.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "scifact"


def requantize(base: Path, out: Path, quantize: str, dim: int | None = None) -> None:
    """A copy of the index at ``base`` whose vectors are stored as ``quantize`` (and truncated to
    ``dim``), made by the same code as ``encodr index --quantize`` / ``--dim`` (same vectors,
    same training sample)."""
    from encodr.index import Index
    from encodr.index.faiss_types import new_faiss, training_sample, write_faiss
    from encodr.index.meta import IndexMeta
    from encodr.index.quantized import RESCORE_FILE, BinaryRescored
    from encodr.index.reader import VECTORS_FILE

    with Index.open(base) as index:
        n = len(index)
        vectors = np.ascontiguousarray(index.vectors_of(list(range(n))), dtype=np.float32)
        folder = index.folder
    if dim is not None:
        from encodr.models.encoder import truncated

        vectors = truncated(vectors, dim)
    shutil.copytree(folder, out)
    faiss_index = new_faiss("flat", vectors.shape[1], n, training_sample(vectors), quantize)
    faiss_index.add(vectors)
    write_faiss(faiss_index, out / VECTORS_FILE)
    meta = IndexMeta.read(out)
    if dim is not None:
        meta.dimension = meta.truncate_dim = dim
    meta.quantize, meta.bytes_per_vector = quantize, round((out / VECTORS_FILE).stat().st_size / n, 1)
    if isinstance(faiss_index, BinaryRescored):
        meta.int8_ranges = faiss_index.ranges.tolist()
        meta.rescore_bytes_per_vector = round((out / RESCORE_FILE).stat().st_size / n, 1)
    meta.write(out)


def timed_search(search, queries: np.ndarray) -> tuple[list[float], np.ndarray]:
    """One query at a time: per-query milliseconds, and the (q, 10) ids."""
    ms, ids = [], []
    for q in queries:
        started = time.perf_counter()
        _, found = search(q[None, :])
        ms.append(1000 * (time.perf_counter() - started))
        ids.append(found[0, :10])
    return ms, np.stack(ids)


def ndcg_at_10(evaluator, searcher, same_text) -> float:
    """nDCG@10 × 100 of dense search through ``searcher`` (a document ranks by its best passage)."""
    from encodr.index import SearchOptions

    dense = SearchOptions(mode="dense")
    ranked = evaluator._rank(searcher, (dense,), None, same_text)[dense.label]
    return next(s.value for s in evaluator.scores(ranked) if s.metric == "ndcg@10")


def compressed_rows(
    base: Path, work: Path, encoder, queries: np.ndarray, dims: list[int], quality=None, prefix: str = ""
) -> list[dict]:
    """One row per way of storing the vectors of the exact index ``base`` (none, int8, binary, each
    of ``dims``), each made in ``work`` by :func:`requantize`: bytes a vector, recall@10 against
    ``base``'s top 10 for ``queries`` (float32 (q, d)), p50 / p99 ms of one query's vector search, and
    ``quality(searcher)`` (nDCG@10) when given."""
    from encodr.index import Searcher
    from encodr.models.encoder import truncated

    rows, exact = [], None
    for quantize, dim in [("none", None), ("int8", None), ("binary", None), *(("none", d) for d in dims)]:
        name = quantize if dim is None else f"dim{dim}"
        folder = base if name == "none" else work / f"{prefix}{name}"
        if name != "none":
            requantize(base, folder, quantize, dim)
        searcher = Searcher(folder, encoder=encoder)
        meta = searcher.index.meta
        ms, top10 = timed_search(lambda q: searcher.index.search(q, 10), queries if dim is None else truncated(queries, dim))
        exact = top10 if exact is None else exact
        rows.append(
            {
                "row": f"--quantize {quantize}" if dim is None else f"--dim {dim}",
                "texts": len(searcher.index),
                "bytes/vector (memory)": meta.bytes_per_vector
                or round((searcher.index.folder / "vectors.faiss").stat().st_size / len(searcher.index), 1),
                "recall@10 vs exact": round(float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top10, exact)])), 4),
                "ndcg@10": round(quality(searcher), 2) if quality else "–",
                "p50 ms": round(float(np.percentile(ms, 50)), 3),
                "p99 ms": round(float(np.percentile(ms, 99)), 3),
            }
        )
        rows[-1]["bytes/vector (disk)"] = rows[-1]["bytes/vector (memory)"] + (meta.rescore_bytes_per_vector or 0)
        searcher.index.close()
        if name != "none":
            shutil.rmtree(folder)
        print(rows[-1], flush=True)
    return rows


def big_corpus_rows(big: Path, work: Path, encoder, dims: list[int], count: int) -> list[dict]:
    """:func:`compressed_rows` of the exact index ``big`` of the ``bench/search.py`` corpus, with
    that bench's ``count`` held-out queries (texts not in the corpus, seeded as there)."""
    import random

    from search import corpus_texts, held_out

    texts, pools = corpus_texts(None)
    queries = encoder.encode(held_out(pools, count, {t for t, _ in texts}, random.Random(0)))
    return compressed_rows(big, work, encoder, np.asarray(queries, dtype=np.float32), dims, prefix="big-")


QUICK = ["--dims", "64", "--out", "{tmp}/quantize.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--dims", type=int, nargs="*", default=[256, 128, 64], help="truncation rows")
    parser.add_argument(
        "--big",
        type=Path,
        help="a flat index of the bench/search.py corpus (encodr index corpus.tsv --index-type flat, same --model): "
        "its rows too, with bench/search.py's held-out queries (no relevance judgments: recall@10 and speed only)",
    )
    parser.add_argument("--big-queries", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS / "quantize.json")
    args = parser.parse_args()

    from encodr.data.beir import read_retrieval
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.index import BuildOptions, Index, build
    from encodr.models import load_encoder

    data = read_retrieval(DATA)
    evaluator = RetrievalEvaluator("scifact", data, split="train")
    same_text = evaluator.same_text()
    encoder = load_encoder(args.model)
    work = Path(tempfile.mkdtemp(prefix="encodr-quantize-"))
    started = time.perf_counter()
    build([str(data.corpus_file)], work / "none", BuildOptions(model=encoder, index_type="flat"))
    encode_s = time.perf_counter() - started
    texts = [data.queries[q] for q in evaluator.query_ids()]
    queries = encoder.encode(texts, prompt=encoder.prompt("query"))

    rows = compressed_rows(
        work / "none", work, encoder, queries, args.dims, lambda searcher: ndcg_at_10(evaluator, searcher, same_text)
    )
    big_rows = []
    if args.big:
        big_rows = big_corpus_rows(args.big, work, encoder, args.dims, args.big_queries)

    with Index.open(work / "none") as index:
        n = len(index)
    columns = ["row", "bytes/vector (memory)", "bytes/vector (disk)", "recall@10 vs exact", "ndcg@10", "p50 ms", "p99 ms"]
    print_table(f"{args.model} on SciFact ({n:,} passages; 809 train queries): compressed vectors", rows, columns)
    if big_rows:
        print_table(
            f"{args.model} on the bench/search.py corpus ({big_rows[0]['texts']:,} texts; {args.big_queries:,} held-out queries)",
            big_rows,
            columns,
        )
    write_json(
        args.out,
        {
            "machine": machine(),
            "model": args.model,
            "passages": n,
            "queries": len(texts),
            "encode_seconds": round(encode_s, 1),
            "rows": rows,
            "big_corpus": {"index": str(args.big), "rows": big_rows} if big_rows else None,
        },
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
