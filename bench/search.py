"""Search speed and quality at 100,000 vectors, and warm query latency on the bundled
Wikipedia sentences.

1. Corpus: the 17,534 bundled Wikipedia sentences, the 72,297 bundled MeSH disease names,
   then the most frequent English words (wordfreq) to reach 100,000 distinct texts: all
   offline, and short enough to encode in minutes on a CPU.
2. ``encodr index`` builds an HNSW index of it (build time includes encoding), and the same
   vectors go into IVF and exact FAISS indexes and a NumPy matrix.
3. 1,000 held-out queries (Wikipedia sentences and MeSH names with every fourth word
   dropped, none of them in the corpus), k = 10: p50 and
   p99 latency of the vector search per single query, and recall@10 against exact search.
4. End to end (encode the query with the bundled model + search + fetch rows): a warm query
   on the 17,534-sentence index, p50 / p99 over 200 queries.

Searches run one query at a time on one FAISS thread, with OMP_WAIT_POLICY=PASSIVE, as
``encodr search`` and the TUI do.

    python bench/search.py            # ≈ 10 min on 2 CPU cores (most of it encoding)

Prints tables and writes bench/results/search.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as `encodr search` and `encodr tui` do

import argparse
import csv
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

from encodr.data.text import read_corpus, top_words  # noqa: E402
from encodr.index import build  # noqa: E402
from encodr.paths import bundled  # noqa: E402
from encodr.index import Searcher  # noqa: E402


def percentiles(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def timed_single(fn, queries: np.ndarray) -> tuple[list[float], list[np.ndarray]]:
    ms, ids = [], []
    for q in queries:
        t = time.perf_counter()
        ids.append(fn(q[None]))
        ms.append((time.perf_counter() - t) * 1000)
    return ms, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--wiki-index", type=Path, help="an existing index of the bundled Wikipedia sentences (else built here)")
    parser.add_argument("--out", type=Path, default=RESULTS / "search.json")
    args = parser.parse_args()
    import faiss

    rng = random.Random(0)
    wiki = read_corpus(bundled("wiki/wiki_sentences_en.txt")).strings
    with open(bundled("mesh/mesh_disease_names.tsv"), encoding="utf-8") as f:
        mesh = [row["name"] for row in csv.DictReader(f, delimiter="\t")]
    corpus = dict.fromkeys(wiki + mesh)
    for w in top_words(60_000):
        if len(corpus) >= args.n:
            break
        corpus.setdefault(w)
    texts = list(corpus)[: args.n]
    held = set(texts)

    def held_out(pool: list[str], count: int) -> list[str]:
        out = []
        for s in rng.sample(pool, min(len(pool), 3 * count)):
            q = " ".join(w for k, w in enumerate(s.split()) if k % 4 != 1)  # drop every fourth word
            if q != s and q not in held:
                out.append(q)
            if len(out) == count:
                break
        return out

    half = args.queries // 2
    queries = held_out(wiki, half) + held_out([m for m in mesh if len(m.split()) > 3], args.queries - half)

    scratch = Path(tempfile.mkdtemp(prefix="encodr-search-"))
    rows = []
    try:
        (scratch / "corpus.txt").write_text("\n".join(texts))
        t = time.perf_counter()
        meta = build([str(scratch / "corpus.txt")], "minilm", scratch / "hnsw", index_type="hnsw")
        build_s = time.perf_counter() - t
        searcher = Searcher(scratch / "hnsw")
        index = searcher.index
        n = len(index)
        vectors = index.faiss.reconstruct_n(0, n)
        qv = searcher.encoder.encode(queries)
        k = 10

        def np_exact(q):
            sims = vectors @ q[0]
            top = np.argpartition(-sims, k)[:k]
            return top[np.argsort(-sims[top])]

        np_ms, exact_ids = timed_single(np_exact, qv)
        exact = [set(i.tolist()) for i in exact_ids]
        flat = faiss.IndexFlatIP(vectors.shape[1])
        flat.add(vectors)
        t = time.perf_counter()
        ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(vectors.shape[1]), vectors.shape[1], int(4 * np.sqrt(n)), faiss.METRIC_INNER_PRODUCT)
        ivf.train(vectors)
        ivf.add(vectors)
        ivf.nprobe = 32
        ivf_build = time.perf_counter() - t
        hnsw_index_s = meta["seconds"]

        for name, idx, extra in (("faiss flat (exact)", flat, 0.0), ("faiss hnsw (encodr default > 50k)", index.faiss, build_s), ("faiss ivf, nprobe 32", ivf, ivf_build)):
            ms, got = timed_single(lambda q: idx.search(q, k)[1][0], qv)
            recall = float(np.mean([len(exact[i] & set(g.tolist())) / k for i, g in enumerate(got)]))
            p50, p99 = percentiles(ms)
            rows.append({"method": name, "vectors": n, "build_s": extra, "p50_ms": p50, "p99_ms": p99, "recall@10": recall})
        p50, p99 = percentiles(np_ms)
        rows.append({"method": "numpy exact (matmul + argpartition)", "vectors": n, "build_s": 0.0, "p50_ms": p50, "p99_ms": p99, "recall@10": 1.0})
        print_table(f"vector search, k = {k}, {len(queries)} single queries ({n:,} vectors, dim {vectors.shape[1]})", rows,
                    ["method", "vectors", "build_s", "p50_ms", "p99_ms", "recall@10"])  # fmt: skip
        print(f"encodr index (hnsw) built in {build_s:.1f} s including encoding; index work {hnsw_index_s:.1f} s wall")

        # warm end-to-end queries on the bundled Wikipedia sentences
        wiki_dir, wiki_build = args.wiki_index, None
        if wiki_dir is None:
            t = time.perf_counter()
            wiki_dir = scratch / "wiki"
            build([str(bundled("wiki/wiki_sentences_en.txt"))], "minilm", wiki_dir)
            wiki_build = time.perf_counter() - t
        wiki_searcher = Searcher(wiki_dir)
        wiki_searcher.search(["warm-up query"], 10)
        e2e = []
        for q in queries[:200]:
            wiki_searcher.search([q], 10)
            e2e.append(wiki_searcher.last_ms)
        p50, p99 = percentiles(e2e)
        e2e_row = {"method": "encodr search (encode + flat + sqlite), warm", "vectors": len(wiki_searcher.index), "build_s": wiki_build if wiki_build is not None else "",
                   "p50_ms": p50, "p99_ms": p99, "recall@10": 1.0}  # fmt: skip
        print_table("end to end, bundled Wikipedia sentences, k = 10, 200 queries", [e2e_row], ["method", "vectors", "build_s", "p50_ms", "p99_ms"])
        write_json(args.out, {"machine": machine(), "k": k, "queries": len(queries), "vector_search": rows, "end_to_end": e2e_row})
        print(f"wrote {args.out}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
