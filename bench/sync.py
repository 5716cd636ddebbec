"""Keeping an index in step with documents that change: ``--sync`` against a full rebuild,
deletes through tombstones and their compaction, and metadata filters.

Part 1, 20,000 documents with the real model (minilm), one Markdown file each, in 200 folders:
the 5,183 SciFact abstracts (split into passages) and the first 14,817 bundled Wikipedia
sentences, each with front matter ``bucket`` (0–99: ``bucket=7`` keeps 1 %) and ``half``
(``half=1`` keeps 50 %). An HNSW index (the type that keeps tombstones) is built, then 1 % of
the documents are changed, 1 % deleted and 1 % added, and ``encodr index --sync`` runs; its
time is set against a full rebuild of the changed folder in the same run (the anchor), with
the passages each encoded. Then 10 % of the documents are deleted (tombstones: HNSW cannot
remove vectors), and search latency (dense and hybrid, p50 / p99 over held-out queries, one
thread, warm) is measured before, after, and after compaction; then with ``--filter`` keeping
1 % and 50 %, counting queries that got fewer than k hits.

Part 2, the filter rows at 336,198 documents (``bench/search.py``'s corpus: Wikipedia, MeSH,
the Bible in 8 languages) for flat, HNSW and on-disk IVF-PQ: the documents' vectors are random
unit vectors (what a filter costs does not depend on what the vectors mean; encoding 336k texts
takes 25 min here), the queries are encoded by minilm.

    python bench/sync.py                      # ≈ 40 min on 2 CPU cores
    python bench/sync.py --docs 2000 --scale 0   # a quick look

Prints tables and writes bench/results/sync.json (tools/docs.py renders docs/benchmarks/sync.md from it).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
K = 10


def documents(n: int) -> list[tuple[str, str]]:
    """(title, text) of n documents: SciFact abstracts first, then Wikipedia sentences."""
    from encodr.data.bundled import bundled

    docs = []
    with open(DATA / "retrieval" / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            docs.append((row.get("title") or "abstract", row["text"]))
    for sentence in bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines():
        if sentence.strip():
            docs.append(("sentence", sentence.strip()))
    return docs[:n]


def write_doc(folder: Path, i: int, title: str, text: str) -> Path:
    path = folder / f"d{i // 100:03d}" / f"doc{i:06d}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nbucket: {i % 100}\nhalf: {i % 2}\n---\n# {title}\n{text}\n", encoding="utf-8")
    return path


def latency(searcher, queries: list[str], mode: str, filters=()) -> dict:
    """p50 / p99 ms of one query at a time, warm (5 untimed first; the first one's ms kept: it
    reads the filter's ids), the documents the filter keeps, and how many queries got fewer
    hits than min(K, those documents)."""
    from encodr.index import SearchOptions
    from encodr.index.filters import sql

    index = searcher.index
    if filters:
        dsql, dparams, _, _ = sql(list(filters))
        passing = len(index.texts.documents_matching(dsql, dparams))
    else:
        passing = index.texts.document_count()
    t = time.perf_counter()
    searcher.query([queries[0]], SearchOptions(k=K, mode=mode, filter=filters))
    first = (time.perf_counter() - t) * 1000
    for q in queries[1:5]:
        searcher.query([q], SearchOptions(k=K, mode=mode, filter=filters))
    ms, short = [], 0
    for q in queries:
        t = time.perf_counter()
        _, hits = searcher.query([q], SearchOptions(k=K, mode=mode, filter=filters))
        ms.append((time.perf_counter() - t) * 1000)
        short += len(hits[0]) < min(K, passing)
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "first_ms": round(first, 1),
        "documents_kept": passing,
        "queries": len(queries),
        "fewer_than_k": short,
    }


def part_one(args, tmp: Path, queries: list[str]) -> tuple[list[dict], list[dict], dict]:
    from encodr.index import BuildOptions, Searcher, build
    from encodr.index.delete import compact, delete
    from encodr.index.filters import parse

    rng = random.Random(0)
    docs = documents(args.docs + args.docs // 100)
    base, extra = docs[: args.docs], docs[args.docs :]
    folder = tmp / "docs"
    for i, (title, text) in enumerate(base):
        write_doc(folder, i, title, text)
    out = tmp / "idx"
    t = time.perf_counter()
    first = build([str(folder)], out, BuildOptions(model=args.model, index_type="hnsw", lang="eng", backend=args.backend))
    first_s = time.perf_counter() - t
    ids = list(range(args.docs))
    rng.shuffle(ids)
    step = args.docs // 100
    changed, deleted = ids[:step], ids[step : 2 * step]
    for i in changed:
        title, text = base[i]
        write_doc(folder, i, title, text.replace(".", ";", 1) + " Revised.")
    for i in deleted:
        (folder / f"d{i // 100:03d}" / f"doc{i:06d}.md").unlink()
    for j, (title, text) in enumerate(extra):
        write_doc(folder, args.docs + j, title, text)
    t = time.perf_counter()
    synced = build([str(folder)], out, BuildOptions(write="sync"))
    sync_s = time.perf_counter() - t
    t = time.perf_counter()
    rebuilt = build(
        [str(folder)], tmp / "rebuilt", BuildOptions(model=args.model, index_type="hnsw", lang="eng", backend=args.backend)
    )
    rebuild_s = time.perf_counter() - t
    sync_rows = [
        {
            "step": "first build (HNSW)",
            "seconds": round(first_s, 1),
            "encoded": first["encoded"],
            "documents": first["documents"],
            "added": first["added"],
            "updated": 0,
            "removed": 0,
            "unchanged": 0,
        },
        {
            "step": "--sync after 1 % changed, 1 % deleted, 1 % added",
            "seconds": round(sync_s, 1),
            "encoded": synced["encoded"],
            "documents": synced["documents"],
            "added": synced["added"],
            "updated": synced["updated"],
            "removed": synced["removed"],
            "unchanged": synced["unchanged"],
        },
        {
            "step": "full rebuild of the same folder (anchor)",
            "seconds": round(rebuild_s, 1),
            "encoded": rebuilt["encoded"],
            "documents": rebuilt["documents"],
            "added": rebuilt["added"],
            "updated": 0,
            "removed": 0,
            "unchanged": 0,
        },
    ]
    sync_rows[1]["vs_rebuild_pct"] = round(100 * sync_s / rebuild_s, 2)
    shutil.rmtree(tmp / "rebuilt")

    searcher = Searcher(out)
    search_rows = []

    def measure(state: str, filters=(), label: str = "") -> None:
        for mode in ("dense", "hybrid"):
            found = latency(searcher, queries, mode, [parse(f) for f in filters])
            search_rows.append(
                {"index": f"{args.docs // 1000}k docs, HNSW", "state": state, "filter": label or "none", "mode": mode, **found}
            )

    measure("before deletes")
    live = [i for i in range(args.docs) if i not in set(deleted)]
    gone = rng.sample(live, args.docs // 10)
    t = time.perf_counter()
    result = delete(out, ids=[str(folder / f"d{i // 100:03d}" / f"doc{i:06d}.md") for i in gone])
    delete_s = time.perf_counter() - t
    searcher.refresh()
    measure(f"after deleting 10 % ({result['tombstones']:,} tombstones)")
    t = time.perf_counter()
    compacted = compact(out)
    compact_s = time.perf_counter() - t
    searcher.refresh()
    measure("after compaction")
    measure("after compaction", ["bucket=7"], "bucket=7 (1 %)")
    measure("after compaction", ["half=1"], "half=1 (50 %)")
    costs = {
        "delete_seconds": round(delete_s, 2),
        "deleted_documents": result["removed"],
        "tombstones": result["tombstones"],
        "compact_seconds": round(compact_s, 2),
        "vectors_after_compaction": compacted["count"],
    }
    searcher.index.close()
    return sync_rows, search_rows, costs


class RandomVectors:
    """Stands in for the model's ``encode`` in part 2: seeded random unit vectors (d = 384)."""

    def __init__(self, encoder):
        self.encoder, self.rng = encoder, np.random.default_rng(0)

    def __call__(self, texts, batch_size=None, progress=False, on_batch=None, prompt=None):
        v = self.rng.standard_normal((len(texts), self.encoder.dimension)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        if on_batch is not None:
            on_batch(len(texts))
        return v


def part_two(args, tmp: Path, queries: list[str]) -> list[dict]:
    from search import corpus_texts

    from encodr.index import BuildOptions, Searcher, build
    from encodr.index.filters import parse
    from encodr.models import load_encoder, pick_device
    from encodr.models.encoder import choose_backend

    texts, _ = corpus_texts(args.scale)
    corpus = tmp / "scale.jsonl"
    with open(corpus, "w", encoding="utf-8") as f:
        for i, (text, lang) in enumerate(texts):
            f.write(json.dumps({"_id": f"s{i}", "text": text, "lang": lang, "bucket": i % 100, "half": i % 2}) + "\n")
    rows = []
    for kind, on_disk in (("flat", False), ("hnsw", False), ("ivfpq", True)):
        encoder = load_encoder(args.model, backend=choose_backend(args.backend, pick_device()))
        encoder.encode = RandomVectors(encoder)  # the documents' vectors only: the searcher below loads the model afresh
        out = tmp / f"scale-{kind}"
        t = time.perf_counter()
        build([str(corpus)], out, BuildOptions(model=encoder, index_type=kind, on_disk=on_disk, whole=True))
        built = time.perf_counter() - t
        searcher = Searcher(out)
        for filters, label in (((), "none"), (("bucket=7",), "bucket=7 (1 %)"), (("half=1",), "half=1 (50 %)")):
            for mode in ("dense", "hybrid"):
                found = latency(searcher, queries, mode, [parse(f) for f in filters])
                rows.append(
                    {
                        "index": f"{len(texts) // 1000}k docs, {kind}{' on disk' if on_disk else ''}",
                        "filter": label,
                        "mode": mode,
                        "build_s": round(built, 1),
                        **found,
                    }
                )
                print_table("filters at scale (so far)", rows[-1:], list(rows[-1]))
        searcher.index.close()
        shutil.rmtree(out)
    return rows


# python -m bench run sync --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--docs", "200", "--scale", "0", "--queries", "10", "--out", "{tmp}/sync.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-only", action="store_true", help="run part 2 alone, adding its rows to the JSON at --out")
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--scale", type=int, default=336_198, help="documents of part 2 (0: skip it)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--out", type=Path, default=RESULTS / "sync.json")
    args = parser.parse_args()
    import faiss
    import torch
    from search import corpus_texts, held_out

    torch.set_num_threads(2)
    rng = random.Random(1)
    texts, pools = corpus_texts(None)
    queries = held_out({"wiki": pools["wiki"]}, args.queries, {t for t, _ in texts}, rng)
    payload = {"machine": machine(), "command": "python bench/sync.py " + " ".join(sys.argv[1:]), "k": K}
    with tempfile.TemporaryDirectory(prefix="encodr-sync-") as tmp:
        if args.scale_only:  # part 1 measured before: keep its rows and its command
            payload = json.loads(args.out.read_text())
            payload["scale_command"] = "python bench/sync.py " + " ".join(sys.argv[1:])
        else:
            sync_rows, search_rows, costs = part_one(args, Path(tmp), queries)
            payload.update(sync=sync_rows, search=search_rows, deletes=costs)
            print_table("sync against a full rebuild", sync_rows, list(sync_rows[1]))
            print_table("search with tombstones, after compaction, and filtered", search_rows, list(search_rows[0]))
            write_json(args.out, payload)
        if args.scale:
            torch.set_num_threads(1)
            faiss.omp_set_num_threads(1)
            payload["scale"] = part_two(args, Path(tmp), queries)
            print_table("filters at scale", payload["scale"], list(payload["scale"][0]))
    write_json(args.out, payload)


if __name__ == "__main__":
    main()
