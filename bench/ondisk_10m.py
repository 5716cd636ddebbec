"""A 10M-vector IVF-PQ index built on this machine through encodr's shard → train → add → merge
path (``--on-disk``), and what it takes to open and search it.

1. Vectors. The real MiniLM vectors of the ``bench/search.py`` corpus (336,198 texts), read from
   a flat index of it (``--base``, made by ``encodr index corpus.tsv --index-type flat``), are
   rows 0 … 336,197. Every further row is the normalised sum of two of them, drawn at random
   (shard k: ``numpy.random.default_rng(1000 + k)``; i uniform, j uniform among the others), up to
   ``--n`` rows. Stored as float16 shards of 1,000,000 rows (``vectors-KKKK.npy``).
2. Queries: the 1,000 held-out queries of ``bench/search.py`` (texts not in the corpus), encoded
   by MiniLM; exact top-10 by brute force over all rows (float32 products of the float16 shards).
3. Build, in its own process: the training sample, quantisers and blocks of ``encodr index
   --index-type ivfpq --on-disk`` (``training_sample``, ``new_faiss``, ``add_on_disk`` with
   1,000,000-vector blocks, the merge into ``lists.ivfdata``, ``write_faiss``), the float16
   shards read one block at a time. Time, peak RSS (``ru_maxrss``) and peak anonymous memory of
   that process.
4. Search, in a fresh process: the index opened as ``encodr search`` opens an on-disk index
   (``read_on_disk``, ``IO_FLAG_MMAP_IFC``), one FAISS thread, encodr's default ``nprobe`` and
   refinement; p50 / p99 of one query, recall@10 against the exact top 10, and resident memory
   after opening and after the queries, split into the process's own (anonymous) and the pages of
   the mapped files (the OS pages in the lists and codes that queries touch, and may drop them);
   then the same queries at other ``--nprobe`` values.

No texts are stored for the synthetic rows: the SQLite store of a real index is not built.

    encodr index /work/cache/corpus336k.tsv --out /work/cache/flat336k --index-type flat --backend torch-bf16
    python bench/ondisk_10m.py --base /work/cache/flat336k --work /work/cache/10m

Each stage's result is kept in ``--work`` and skipped when present (``--redo STAGE`` reruns one).
Prints a table and writes bench/results/ondisk_10m.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

SHARD = 1_000_000
STAGES = ("vectors", "exact", "build", "search")


def rss_mb() -> float:
    """Resident memory of this process now, MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, MiB (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_mb() -> dict[str, float]:
    """This process's resident memory now, MiB: ``anon`` (its own: heap, arrays) and ``file``
    (pages of mapped files, which the OS may drop and read again), from /proc/self/status."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {"anon": int(fields["RssAnon"].split()[0]) / 1024, "file": int(fields["RssFile"].split()[0]) / 1024}


class PeakAnon:
    """The peak of this process's anonymous resident memory (``RssAnon``), sampled every 0.2 s
    in a thread while the ``with`` block runs (``ru_maxrss`` counts mapped file pages too)."""

    def __enter__(self):
        import threading

        self.peak, self.done = 0.0, threading.Event()

        def sample():
            while not self.done.wait(0.2):
                self.peak = max(self.peak, memory_mb()["anon"])

        self.thread = threading.Thread(target=sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, memory_mb()["anon"])


class Shards:
    """The float16 shards of ``work`` as one read-only (n, d) array: ``len``, slices and integer
    arrays give float32 rows, one shard read into memory at a time (a plain read, not a map, so
    that the build's resident memory is what it holds, not the page cache of the shards)."""

    def __init__(self, work: Path):
        self.paths = sorted(work.glob("vectors-*.npy"))
        heads = [np.load(p, mmap_mode="r") for p in self.paths]  # shapes only
        self.starts = np.cumsum([0] + [len(h) for h in heads])
        self.shape = (int(self.starts[-1]), heads[0].shape[1])
        self.current: tuple[int, np.ndarray] | None = None

    def part(self, s: int) -> np.ndarray:
        if self.current is None or self.current[0] != s:
            self.current = None
            self.current = (s, np.load(self.paths[s]))
        return self.current[1]

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key) -> np.ndarray:
        if isinstance(key, slice):
            key = np.arange(*key.indices(len(self)))
        key = np.asarray(key)
        out = np.empty((len(key), self.shape[1]), dtype=np.float32)
        shard = np.searchsorted(self.starts, key, side="right") - 1
        for s in np.unique(shard):
            rows = shard == s
            out[rows] = self.part(s)[key[rows] - self.starts[s]]
        return out


def stage_vectors(args) -> dict:
    from search import corpus_texts, held_out

    from encodr.index import Index
    from encodr.models import load_encoder

    with Index.open(args.base) as index:
        base = index.faiss.reconstruct_n(0, len(index)).astype(np.float32)
        model = index.meta.model
    n0, d = base.shape
    for k in range(-(-args.n // SHARD)):
        path = args.work / f"vectors-{k:04d}.npy"
        if path.exists():
            continue
        lo, hi = k * SHARD, min(args.n, (k + 1) * SHARD)
        rows = np.empty((hi - lo, d), dtype=np.float16)
        real = max(0, min(hi, n0) - lo)
        rows[:real] = base[lo : lo + real]
        rng = np.random.default_rng(1000 + k)
        m = hi - lo - real
        i = rng.integers(0, n0, size=m)
        j = (i + 1 + rng.integers(0, n0 - 1, size=m)) % n0  # another row than i
        for s in range(0, m, 100_000):
            v = base[i[s : s + 100_000]] + base[j[s : s + 100_000]]
            rows[real + s : real + s + len(v)] = v / np.linalg.norm(v, axis=1, keepdims=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, rows)
        os.replace(tmp, path)
        print(f"  shard {k}: rows {lo:,}–{hi:,}", flush=True)
    texts, pools = corpus_texts(None)
    queries = held_out(pools, args.queries, {t for t, _ in texts}, random.Random(0))
    qv = load_encoder(model).encode(queries)
    np.save(args.work / "queries.npy", np.asarray(qv, dtype=np.float32))
    return {
        "real_rows": n0,
        "rows": args.n,
        "dimension": d,
        "shard_bytes": sum(p.stat().st_size for p in args.work.glob("vectors-*.npy")),
    }


def stage_exact(args) -> dict:
    import faiss

    qv = np.load(args.work / "queries.npy")
    shards = Shards(args.work)
    best_s = np.full((len(qv), 10), -np.inf, dtype=np.float32)
    best_i = np.full((len(qv), 10), -1, dtype=np.int64)
    t = time.perf_counter()
    for start in range(0, len(shards), SHARD):
        block = shards[start : start + SHARD]
        s, i = faiss.knn(qv, block, 10, metric=faiss.METRIC_INNER_PRODUCT)
        s_all, i_all = np.hstack([best_s, s]), np.hstack([best_i, i + start])
        top = np.argsort(-s_all, axis=1, kind="stable")[:, :10]
        best_s, best_i = np.take_along_axis(s_all, top, 1), np.take_along_axis(i_all, top, 1)
    np.save(args.work / "exact.npy", best_i)
    return {"exact_s": time.perf_counter() - t}


def stage_build(args) -> dict:
    from encodr.index.faiss_types import new_faiss, training_sample, write_faiss
    from encodr.index.ondisk import add_on_disk
    from encodr.index.reader import VECTORS_FILE

    shards = Shards(args.work)
    folder = args.work / "index"
    folder.mkdir(exist_ok=True)
    with PeakAnon() as peak:
        t0 = time.perf_counter()
        sample = training_sample(shards)
        samples = len(sample)
        index = new_faiss("ivfpq", shards.shape[1], len(shards), sample)
        del sample
        t1 = time.perf_counter()
        if args.ray:
            import ray

            from encodr.index.engines import ray_adding

            ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
            with ray_adding(None) as add_blocks:
                index = add_on_disk(index, shards, folder, write_faiss, block=SHARD, add_blocks=add_blocks)
        else:
            index = add_on_disk(index, shards, folder, write_faiss, block=SHARD)
        t2 = time.perf_counter()
        write_faiss(index, folder / VECTORS_FILE)
        t3 = time.perf_counter()
    import faiss

    index = getattr(
        index, "index", index
    )  # add_on_disk gives an IndexRefine back wrapped (RefinedOnDisk: its codes were streamed)
    ivf = faiss.extract_index_ivf(index)
    return {
        "train_s": t1 - t0,
        "add_merge_s": t2 - t1,
        "write_s": t3 - t2,
        "build_s": t3 - t0,
        "build_peak_rss_mb": peak_rss_mb(),
        "build_peak_anon_mb": peak.peak,
        "training_sample": samples,
        "nlist": ivf.nlist,
        "index_factory": f"IVF{ivf.nlist},PQ{faiss.downcast_index(ivf).pq.M}x8,Refine(SQ8)",
        "ntotal": int(index.ntotal),
        "vectors_faiss_bytes": (folder / VECTORS_FILE).stat().st_size,
        "lists_bytes": (folder / "lists.ivfdata").stat().st_size,
    }


def stage_search(args) -> dict:
    before = rss_mb()
    import faiss

    from encodr.index.faiss_types import IVF_NPROBE, REFINE_K_FACTOR
    from encodr.index.ondisk import read_on_disk
    from encodr.index.reader import VECTORS_FILE

    imported, imported_parts = rss_mb(), memory_mb()
    t = time.perf_counter()
    index = read_on_disk(args.work / "index" / VECTORS_FILE, faiss.IO_FLAG_MMAP_IFC)
    open_s = time.perf_counter() - t
    opened = rss_mb()
    faiss.omp_set_num_threads(1)
    qv, exact = np.load(args.work / "queries.npy"), np.load(args.work / "exact.npy")
    sweep = {}
    for nprobe in (IVF_NPROBE["ivfpq"], 64, 256, 512):  # the default first: its memory is measured after it alone
        ivf = faiss.SearchParametersIVF(nprobe=nprobe)
        params = faiss.IndexRefineSearchParameters(k_factor=REFINE_K_FACTOR, base_index_params=ivf)
        ms, found = [], []
        for q in qv:
            t = time.perf_counter()
            _, ids = index.search(q[None, :], 10, params=params)
            ms.append((time.perf_counter() - t) * 1000)
            found.append(ids[0])
        sweep[nprobe] = {
            "p50_ms": float(np.percentile(ms, 50)),
            "p99_ms": float(np.percentile(ms, 99)),
            "recall_at_10": float(np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, exact)])),
        }
        if nprobe == IVF_NPROBE["ivfpq"]:
            after = memory_mb()
            default = {
                "rss_after_queries_mb": rss_mb() - imported,
                "anon_after_queries_mb": after["anon"] - imported_parts["anon"],
                "file_after_queries_mb": after["file"] - imported_parts["file"],
                **sweep[nprobe],
            }
        print(f"  nprobe {nprobe}: {sweep[nprobe]}", flush=True)
    return {
        "open_s": open_s,
        "rss_imports_mb": imported - before,
        "rss_open_mb": opened - imported,
        **default,
        "nprobe": IVF_NPROBE["ivfpq"],
        "k_factor": REFINE_K_FACTOR,
        "queries": len(qv),
        "nprobe_sweep": sweep,
    }


QUICK = ["--base-texts", "2000", "--n", "20000", "--queries", "20", "--work", "{tmp}/work", "--out", "{tmp}/ondisk_10m.json"]


def build_base(out: Path, count: int) -> Path:
    """A flat index of the first ``count`` texts of the ``bench/search.py`` corpus at ``out`` (kept when there)."""
    from search import corpus_texts

    from encodr.index import BuildOptions, build

    if not out.exists():
        texts, _ = corpus_texts(count)
        corpus = out.with_suffix(".txt")
        corpus.write_text("".join(t + "\n" for t, _ in texts), encoding="utf-8")
        build([str(corpus)], out, BuildOptions(model="minilm", index_type="flat", lang="eng"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--base", type=Path, help="a flat encodr index of the bench/search.py corpus (its vectors are the real rows)"
    )
    parser.add_argument(
        "--base-texts",
        type=int,
        default=0,
        metavar="N",
        help="without --base: build a flat index of the corpus's first N texts in --work first (a quick run's base)",
    )
    parser.add_argument("--work", type=Path, required=True, help="where shards, the index and each stage's result are kept")
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--ray", action="store_true", help="add the blocks in Ray tasks (a local Ray, one CPU a task)")
    parser.add_argument("--stage", choices=STAGES, help="run one stage here (the default runs each in its own process)")
    parser.add_argument("--redo", choices=STAGES, action="append", default=[])
    parser.add_argument("--out", type=Path, default=RESULTS / "ondisk_10m.json")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.base is None and not args.stage:
        if not args.base_texts:
            parser.error("give --base (a flat index of the bench/search.py corpus) or --base-texts N")
        args.base = build_base(args.work / "base", args.base_texts)
    if args.stage:
        result = globals()[f"stage_{args.stage}"](args)
        (args.work / f"{args.stage}.json").write_text(json.dumps(result, indent=2))
        return
    results = {}
    for stage in STAGES:
        done = args.work / f"{stage}.json"
        if stage in args.redo or not done.exists():
            print(f"{stage} …", flush=True)
            cmd = [
                sys.executable,
                __file__,
                "--stage",
                stage,
                "--work",
                str(args.work),
                "--n",
                str(args.n),
                "--queries",
                str(args.queries),
            ]
            cmd += ["--base", str(args.base)] if args.base else []
            subprocess.run(cmd + (["--ray"] if args.ray else []), check=True)
        results[stage] = json.loads(done.read_text())
    b, s = results["build"], results["search"]
    size = b["vectors_faiss_bytes"] + b["lists_bytes"]
    row = {
        "vectors": f"{b['ntotal']:,}",
        "index": b["index_factory"],
        "training sample": f"{b.get('training_sample', 0):,}",
        "build (min)": b["build_s"] / 60,
        "peak RSS build (GiB)": b["build_peak_rss_mb"] / 1024,
        "peak anon build (GiB)": b.get("build_peak_anon_mb", float("nan")) / 1024,
        "on disk (GiB)": size / 2**30,
        "B/vector": size / b["ntotal"],
        "RSS open (MiB)": s["rss_open_mb"],
        "anon / file after 1k queries (MiB)": f"{s.get('anon_after_queries_mb', float('nan')):.0f} / "
        f"{s.get('file_after_queries_mb', float('nan')):.0f}",
        "p50 ms": s["p50_ms"],
        "p99 ms": s["p99_ms"],
        "recall@10": s["recall_at_10"],
    }
    print_table(f"{b['ntotal']:,} vectors, --on-disk IVF-PQ, nprobe {s['nprobe']} (one FAISS thread on search)", [row], list(row))
    sweep = [
        {"nprobe": int(k), "p50 ms": v["p50_ms"], "p99 ms": v["p99_ms"], "recall@10": v["recall_at_10"]}
        for k, v in sorted(s.get("nprobe_sweep", {}).items(), key=lambda kv: int(kv[0]))
    ]
    if sweep:
        print_table("--nprobe", sweep, list(sweep[0]))
    write_json(args.out, {"machine": machine(), "n": args.n, "stages": results, "row": row, "nprobe": sweep})


if __name__ == "__main__":
    main()
