"""Search at scale: build time, bytes per vector, p50 / p99 latency and recall@10 of exact,
HNSW and IVF-PQ indexes over ≥ 300,000 real texts, and the automatic choice.

1. Corpus: everything offline — the 17,534 bundled Wikipedia sentences, the 72,297 MeSH disease
   names and the Bible in 8 languages (8 × 31,102 verses) from ``../shared/data`` — 336,198
   distinct texts, as TSV with each text's language (so no detection). ``--n`` cuts it.
2. ``encodr index --index-type flat`` (through :func:`encodr.index.build`, ``--backend``
   onnx-int8 by default: the CPU encodes 336k texts in about 20 min instead of 50) builds it;
   its stored vectors are exact, and the same vectors then go into an HNSW and an IVF-PQ index
   made by encodr's own builder (``new_faiss``, as ``--index-type auto`` does above
   250,000 vectors), each timed. The anchor beside them: the same IVF-PQ index as FAISS's
   factory makes it by default (polysemous codes trained too), timed and searched alike.
3. 1,000 held-out queries: Wikipedia sentences, MeSH names and Bible verses (in their own
   languages) with every fourth word dropped, none of them in the corpus; k = 10. p50 and p99
   of the vector search, one query at a time on one FAISS thread (as ``encodr search`` runs),
   and recall@10 against exact search over the same vectors.
4. The IVF-PQ index written to disk and opened as ``encodr search`` opens it, memory-mapped:
   open time and resident memory against a full read; and warm end-to-end queries (encode +
   search + SQLite rows) p50 / p99 over 200 queries.

    python bench/search.py                       # ≈ 30 min on 2 CPU cores, most of it encoding

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
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

from encodr.index import BuildOptions, Index, Searcher, build  # noqa: E402
from encodr.index.faiss_types import HNSW_EF_SEARCH, IVF_NPROBE, auto_index_type, new_faiss, training_sample  # noqa: E402  # noqa: E402
from encodr.index.meta import IndexMeta  # noqa: E402
from encodr.index.options import SearchOptions
from encodr.index.reader import VECTORS_FILE  # noqa: E402
from encodr.paths import bundled  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
BIBLE = ("eng", "spa", "fra", "deu", "ita", "rus", "ara", "vie")


def corpus_texts(limit: int | None) -> tuple[list[tuple[str, str]], dict[str, list[str]]]:
    """(text, lang) of the corpus, deduplicated, and the pools queries are drawn from."""
    wiki = bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines()
    with open(bundled("mesh/mesh_disease_names.tsv"), encoding="utf-8") as f:
        mesh = [row["name"] for row in csv.DictReader(f, delimiter="\t")]
    rows = [(t, "eng") for t in wiki + mesh]
    bible = []
    for lang in BIBLE:
        with open(DATA / "bible" / f"{lang}.tsv", encoding="utf-8") as f:
            next(f)
            verses = [line.rstrip("\n").split("\t", 3)[3] for line in f]
        rows += [(v, lang) for v in verses]
        bible += verses
    seen: dict[str, str] = {}
    for text, lang in rows:
        text = " ".join(text.split())
        if text and text not in seen:
            seen[text] = lang
    texts = list(seen.items())[:limit]
    return texts, {
        "wiki": wiki,
        "mesh": [m for m in mesh if len(m.split()) > 3],
        "bible": [b for b in bible if len(b.split()) > 6],
    }


def held_out(pools: dict[str, list[str]], count: int, corpus: set[str], rng: random.Random) -> list[str]:
    """``count`` queries, a third from each pool: a text with every fourth word dropped, not in the corpus."""
    out = []
    for i, pool in enumerate(pools.values()):
        want = count // len(pools) + (1 if i < count % len(pools) else 0)
        got = 0
        for s in rng.sample(pool, min(len(pool), 3 * want)):
            q = " ".join(w for k, w in enumerate(s.split()) if k % 4 != 1)
            if q != s and q not in corpus:
                out.append(q)
                got += 1
            if got == want:
                break
    return out


ANCHOR = "ivfpq-faiss"  # the IVF-PQ index as FAISS's factory makes it by default: polysemous codes trained too


def faiss_default_ivfpq(dim: int, n: int, sample: np.ndarray):
    """encodr's IVF-PQ index (its lists, codes and re-ranking copy) as FAISS's factory makes and
    trains it by default, polysemous training included, which ``new_faiss`` turns off."""
    import faiss

    from encodr.index.faiss_types import ivf_lists, pq_codes

    index = faiss.index_factory(dim, f"IVF{ivf_lists(n)},PQ{pq_codes(dim)}x8,Refine(SQ8)", faiss.METRIC_INNER_PRODUCT)
    index.train(sample)
    return index


def timed(fn, queries: np.ndarray) -> tuple[list[float], list[np.ndarray]]:
    ms, ids = [], []
    for q in queries:
        t = time.perf_counter()
        ids.append(fn(q[None]))
        ms.append((time.perf_counter() - t) * 1000)
    return ms, ids


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# python -m bench run search --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--n", "2000", "--queries", "20", "--out", "{tmp}/search.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="only the first N texts")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--backend", default="onnx-int8")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--keep", type=Path, help="keep the built indexes in this folder")
    parser.add_argument("--out", type=Path, default=RESULTS / "search.json")
    args = parser.parse_args()
    import faiss

    rng = random.Random(0)
    texts, pools = corpus_texts(args.n)
    queries = held_out(pools, args.queries, {t for t, _ in texts}, rng)
    scratch = Path(tempfile.mkdtemp(prefix="encodr-search-", dir=args.keep))
    k, rows = 10, []
    try:
        corpus = scratch / "corpus.tsv"
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("text\tlang\n" + "".join(f"{t}\t{lang}\n" for t, lang in texts))
        t = time.perf_counter()
        meta = build([str(corpus)], scratch / "flat", BuildOptions(model=args.model, index_type="flat", backend=args.backend))
        build_s = time.perf_counter() - t
        print(
            f"encodr index: {meta['count']:,} texts in {build_s:.0f} s ({meta['count'] / build_s:.0f} texts/s, backend "
            f"{args.backend})",
            flush=True,
        )
        searcher = Searcher(scratch / "flat")
        flat = searcher.index.faiss
        n, dim = flat.ntotal, flat.d
        vectors = flat.reconstruct_n(0, n)
        qv = searcher.encoder.encode(queries)
        faiss.omp_set_num_threads(1)
        exact_ms, exact_ids = timed(lambda q: flat.search(q, k)[1][0], qv)
        exact = [set(i.tolist()) for i in exact_ids]
        sample = training_sample(vectors)  # as encodr index draws it
        built = {"flat": (flat, 0.0)}
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        for kind in ("hnsw", "ivfpq", ANCHOR):
            t = time.perf_counter()
            index = (
                faiss_default_ivfpq(dim, n, sample)
                if kind == ANCHOR
                else new_faiss(kind, dim, n, sample if kind == "ivfpq" else None)
            )
            for start in range(0, n, 10_000):
                index.add(vectors[start : start + 10_000])
            built[kind] = (index, time.perf_counter() - t)
            print(f"{kind}: built in {built[kind][1]:.0f} s", flush=True)
        faiss.omp_set_num_threads(1)
        sizes = {}
        for kind, (index, _) in built.items():
            path = scratch / f"{kind}.faiss"
            faiss.write_index(index, str(path))
            sizes[kind] = path.stat().st_size / n
        auto = auto_index_type(n)
        settings = [
            ("flat", None),
            ("hnsw", 64),
            ("hnsw", HNSW_EF_SEARCH),
            ("ivfpq", 32),
            ("ivfpq", 64),
            ("ivfpq", IVF_NPROBE["ivfpq"]),
            ("ivfpq", 256),
            (ANCHOR, IVF_NPROBE["ivfpq"]),
        ]
        for kind, setting in settings:
            index, seconds = built[kind]
            # encodr's own search parameters for this setting (IndexReader.search_params), on the FAISS index alone
            holder = SimpleNamespace(
                faiss=index, nprobe=setting if kind in ("ivfpq", ANCHOR) else None, ef_search=setting if kind == "hnsw" else None
            )
            params = Index.search_params(holder)
            ms, got = timed(lambda q: index.search(q, k, params=params)[1][0], qv)
            recall = float(np.mean([len(exact[i] & set(g.tolist())) / k for i, g in enumerate(got)]))
            label = {
                "flat": "flat (exact)",
                "hnsw": f"hnsw, efSearch {setting}",
                "ivfpq": f"ivfpq, nprobe {setting}",
                ANCHOR: f"anchor: FAISS's default ivfpq, nprobe {setting}",
            }[kind]
            default = setting in (None, HNSW_EF_SEARCH, IVF_NPROBE["ivfpq"])
            rows.append(
                {
                    "index": label + (" ← auto" if kind == auto and default else ""),
                    "vectors": n,
                    "faiss build s": round(seconds, 1),
                    "bytes/vector": round(sizes[kind], 1),
                    "p50 ms": round(float(np.percentile(ms, 50)), 3),
                    "p99 ms": round(float(np.percentile(ms, 99)), 3),
                    "recall@10": round(recall, 3),
                }
            )
        print_table(
            f"vector search, k = {k}, {len(queries)} single queries, 1 FAISS thread ({n:,} vectors, dim {dim})",
            rows,
            ["index", "vectors", "faiss build s", "bytes/vector", "p50 ms", "p99 ms", "recall@10"],
        )

        # the automatic choice as encodr search opens it: memory-mapped, then end to end
        auto_dir = scratch / "auto"
        shutil.copytree(
            searcher.index.folder, auto_dir, ignore=shutil.ignore_patterns(VECTORS_FILE)
        )  # one generation, as a flat index
        shutil.copy(scratch / f"{auto}.faiss", auto_dir / VECTORS_FILE)
        IndexMeta.read(auto_dir).copy(index_type=auto).write(auto_dir)
        opened = {}
        for mmap in (True, False):
            before, t = rss_mb(), time.perf_counter()
            handle = Index.open(auto_dir, mmap=mmap)
            opened["mmap" if mmap else "read"] = {
                "open_ms": round((time.perf_counter() - t) * 1000, 1),
                "rss_mb": round(rss_mb() - before, 1),
            }
            del handle
        e2e_searcher = Searcher(auto_dir)
        e2e_searcher.search(["warm-up query"], SearchOptions(k=k, mode="dense"))
        e2e = []
        for q in queries[:200]:
            t = time.perf_counter()
            e2e_searcher.search([q], SearchOptions(k=k, mode="dense"))
            e2e.append((time.perf_counter() - t) * 1000)
        e2e_row = {
            "index": f"{auto} (auto), memory-mapped",
            "p50 ms": round(float(np.percentile(e2e, 50)), 2),
            "p99 ms": round(float(np.percentile(e2e, 99)), 2),
        }
        print_table(
            f"end to end (encode with {args.backend} + search + SQLite rows), warm, 200 queries",
            [e2e_row],
            ["index", "p50 ms", "p99 ms"],
        )
        print(f"open {auto}: {opened}")
        write_json(
            args.out,
            {
                "machine": machine(),
                "texts": n,
                "dimension": dim,
                "backend": args.backend,
                "model": args.model,
                "encodr_index_seconds": round(build_s, 1),
                "encodr_index_texts_per_s": round(n / build_s, 1),
                "k": k,
                "queries": len(queries),
                "auto": auto,
                "vector_search": rows,
                "open": opened,
                "end_to_end": e2e_row,
            },
        )
        print(f"wrote {args.out}")
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
