"""Speed of the search modes at scale: p50 and p99 per query, one query at a time on one thread,
for dense, keyword (FTS5 BM25), hybrid (RRF and convex) and hybrid + re-ranking of the first 50,
over the ``bench/search.py`` corpus (336,198 texts); and the index build time with the keyword
index and without it (the FTS5 build is timed inside the same build: ``keyword_seconds``).

The re-ranker is a cross-encoder with MiniLM-L6's architecture (the bundled MiniLM's encoder
under a new, untrained one-label head, ``encodr.models.cross.new_cross_encoder``): the
architecture of the usual ``cross-encoder/ms-marco-MiniLM-L-6-v2``, so the same arithmetic per
pair; its scores mean nothing and only its time is reported. Each query runs end to end
(encoding, FAISS, SQLite, fusion, re-ranking), warm, after 20 untimed queries.

    python bench/hybrid_speed.py                 # ≈ 25 min on 2 CPU cores, most of it encoding
    python bench/hybrid_speed.py --n 20000       # a quick look

Prints a table and writes bench/results/hybrid_speed.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402
from search import corpus_texts, held_out  # noqa: E402

# python -m bench run hybrid_speed --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--n", "2000", "--queries", "20", "--rerank-queries", "2", "--out", "{tmp}/hybrid_speed.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="only the first N texts")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rerank-queries", type=int, default=100, help="queries timed with re-ranking (each scores 50 pairs)")
    parser.add_argument("--backend", default="onnx-int8")
    parser.add_argument("--out", type=Path, default=RESULTS / "hybrid_speed.json")
    args = parser.parse_args()
    import faiss
    import torch

    from encodr.index import BuildOptions, Searcher, build
    from encodr.index.options import SearchOptions
    from encodr.models.cross import new_cross_encoder

    torch.set_num_threads(1)
    faiss.omp_set_num_threads(1)
    rng = random.Random(0)
    texts, pools = corpus_texts(args.n)
    queries = held_out(pools, args.queries + 20, {t for t, _ in texts}, rng)
    rng.shuffle(queries)
    with tempfile.TemporaryDirectory(prefix="encodr-hybrid-") as tmp:
        corpus = Path(tmp) / "corpus.tsv"
        corpus.write_text("text\tlang\n" + "".join(f"{t}\t{lang}\n" for t, lang in texts), encoding="utf-8")
        started = time.perf_counter()
        meta = build([str(corpus)], Path(tmp) / "idx", BuildOptions(model="minilm", index_type="flat", backend=args.backend))
        build_s = time.perf_counter() - started
        print(
            f"built {meta['count']:,} texts in {build_s:.0f} s, of which the keyword index {meta['keyword_seconds']:.1f} s",
            flush=True,
        )
        searcher = Searcher(Path(tmp) / "idx")
        reranker = new_cross_encoder("minilm", max_length=256, device="cpu")
        setups = [
            ("dense", "rrf", None),
            ("keyword", "rrf", None),
            ("hybrid", "rrf", None),
            ("hybrid", "convex", None),
            ("hybrid", "convex", reranker),
        ]
        rows = []
        for mode, fusion, rerank in setups:
            todo = queries[20 : 20 + (args.rerank_queries if rerank else args.queries)]
            for q in queries[:20]:
                searcher.query([q], SearchOptions(k=10, mode=mode, fusion=fusion), reranker=rerank)
            ms = []
            for q in todo:
                t = time.perf_counter()
                searcher.query([q], SearchOptions(k=10, mode=mode, fusion=fusion), reranker=rerank)
                ms.append((time.perf_counter() - t) * 1000)
            label = mode if mode != "hybrid" else f"hybrid ({fusion})" + (" + re-rank 50" if rerank else "")
            rows.append(
                {
                    "mode": label,
                    "queries": len(todo),
                    "p50_ms": float(np.percentile(ms, 50)),
                    "p99_ms": float(np.percentile(ms, 99)),
                }
            )
            print(rows[-1], flush=True)
        searcher.index.close()
    build_row = {
        "texts": meta["count"],
        "build_s": round(build_s, 1),
        "keyword_index_s": meta["keyword_seconds"],
        "build_without_keyword_index_s": round(build_s - meta["keyword_seconds"], 1),
    }
    print_table(
        f"search modes over {meta['count']:,} texts (MiniLM, {args.backend}, flat index, one thread)", rows, list(rows[0])
    )
    print_table("index build", [build_row], list(build_row))
    write_json(args.out, {"machine": machine(), "backend": args.backend, "build": build_row, "rows": rows})


if __name__ == "__main__":
    main()
