"""Deleting documents from an index, tombstones, and compaction.

A deleted text whose vector the FAISS index cannot remove (HNSW, IVF-PQ, binary, on-disk IVF)
stays as a tombstone, left out of every search, until tombstones pass :data:`COMPACT_AT` of the
vectors; then the write rebuilds the FAISS index from the live vectors."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import EncodrError, S
from ..outputs import SHARDED_RECORD, generation, os_fault
from .faiss_types import new_faiss, training_sample, write_faiss
from .lock import index_lock
from .meta import IndexMeta
from .ondisk import ONDISK_FILE
from .quantized import RESCORE_FILE, BinaryRescored
from .reader import PCR_FILE, STORE_FILE, VECTORS_FILE, IndexReader, locate
from .texts import TextStore

# A deleted text whose vector the FAISS index cannot remove (HNSW, IVF-PQ, binary, on-disk IVF)
# stays as a tombstone, left out of every search, until tombstones pass COMPACT_AT of the
# vectors; then the write rebuilds the FAISS index from the live vectors (Lucene's merges of
# segments with deletes: TieredMergePolicy's deletesPctAllowed defaults to 20 %). Below it, a
# search visits at most 25 % more vectors than live ones; above it, HNSW's filtered search
# starts to lose neighbours to the dead nodes it must route through, and the rebuild (an HNSW
# graph: ~seconds per 10,000 vectors on 2 cores) is paid once per 20 % of deletions.
COMPACT_AT = 0.20


def removable_now(index, meta: IndexMeta) -> bool:
    """Whether FAISS removes ids from ``index`` (described by its ``index.json`` ``meta``) itself:
    a flat index (float or int8; it then renumbers the vectors after each removed one) or an
    in-memory IVF index (ids kept). HNSW, IVF-PQ with its re-ranking copy, IVF lists on disk
    (a merged, memory-mapped file) and binary indexes cannot."""
    import faiss

    return isinstance(index, (faiss.IndexFlatCodes, faiss.IndexIVF)) and not meta.on_disk


def remove_texts(index, deleted: np.ndarray, texts: TextStore, meta: IndexMeta):
    """Take the vectors of ``deleted`` texts (int64 ids; their rows are already gone from
    ``texts``, the generation's store) out of ``index``.

    - flat: removed by FAISS, the rest renumbered 0…n−1 (:meth:`~.texts.TextStore.renumber`);
    - in-memory IVF: removed by FAISS, ids kept;
    - HNSW, IVF-PQ, binary, on-disk IVF: kept as tombstones (searches leave them out); once
      they pass :data:`COMPACT_AT` of the vectors the index is rebuilt from the live vectors
      (:func:`compacted`), except on-disk IVF, which keeps them until it is built again.

    Returns:
        The FAISS index to write (``index`` itself, or a rebuilt one).
    """
    import faiss

    if not len(deleted):
        return index
    if removable_now(index, meta):
        index.remove_ids(faiss.IDSelectorBatch(np.ascontiguousarray(deleted, dtype=np.int64)))
        if isinstance(index, faiss.IndexFlatCodes):
            texts.renumber()
        return index
    texts.add_tombstones(deleted)
    dead = len(texts.tombstones())
    if meta.on_disk or dead <= COMPACT_AT * index.ntotal:
        return index
    return compacted(index, texts, meta)


def compacted(index, texts: TextStore, meta: IndexMeta):
    """A new FAISS index of ``meta``'s type holding only the live vectors of ``index`` (the
    stored texts' ids, in order), its quantisers trained again on them; the store is renumbered
    to match. Vectors are read back from the index (HNSW: exact; IVF-PQ: its 8-bit re-ranking
    copy; binary: its int8 copy), so a compaction costs no encoding.

    Returns:
        The rebuilt index (ntotal = live texts)."""
    live = np.array(texts.column("id"), dtype=np.int64)
    if not len(live):
        vectors = np.zeros((0, meta.dimension), np.float32)
    elif hasattr(index, "reconstruct_batch"):  # FAISS's own: one call (the binary index reads its int8 copy a vector at a time)
        vectors = index.reconstruct_batch(live).astype(np.float32)
    else:
        vectors = np.stack([index.reconstruct(int(i)) for i in live]).astype(np.float32)
    kind, quantize = meta.index_type, meta.quantize
    sample = training_sample(vectors) if (kind.startswith("ivf") or quantize != "none") and len(vectors) else None
    fresh = new_faiss(kind, meta.dimension, len(vectors), sample, quantize)
    for start in range(0, len(vectors), 10_000):
        fresh.add(np.ascontiguousarray(vectors[start : start + 10_000]))
    if isinstance(fresh, BinaryRescored):
        meta.int8_ranges = fresh.ranges.tolist()
    texts.renumber()
    return fresh


def delete(
    out: str | Path,
    ids: list[str] = (),
    sources: list[str] = (),
    filters: list = (),
    warn: Callable[[str], None] = lambda line: None,
) -> dict:
    """Remove documents from an index: those whose id is in ``ids``, and those whose source
    matches one of the globs ``sources`` (as :mod:`.filters`' ``source``) and that pass all
    ``filters`` (either may be empty).
    Their texts go unless another document holds them; their vectors leave a flat or IVF index
    at once and stay as tombstones elsewhere (:func:`remove_texts`). One new generation: a
    search sees the documents or none of their removal, never half; the keyword index follows.

    Returns:
        ``removed`` (documents), ``not_found`` (ids asked for that the index lacks),
        ``deleted_texts``, ``tombstones`` (after), ``compacted``, ``count``, ``documents``, ``path``.

    Raises:
        EncodrError: no criterion, no such index, an index of an older format (see
            :mod:`.format`), a bad filter; an OS fault, with the index unchanged.
    """
    from . import filters as fl

    if not (ids or sources or filters):
        raise EncodrError(f"name the documents to delete: IDs, {S.source} GLOB or {S.filter} FIELD=VALUE", field="ids")
    out = locate(out)
    if (out / SHARDED_RECORD).is_file():
        from .sharded import delete_sharded

        return delete_sharded(out, ids, sources, filters, warn, delete)
    with _rewriting(out) as old:
        wanted: set[str] = set()
        known = old.texts.documents_info(list(ids)) if ids else {}
        missing = [i for i in ids if i not in known]
        wanted.update(known)
        chosen = list(filters) + ([fl.Filter("source", "in", tuple(sources))] if sources else [])
        if chosen:
            dsql, dparams, tsql, tparams = fl.sql(chosen)
            if tsql:
                raise EncodrError(
                    f"{S.filter} lang applies to texts, not documents; delete by id, source or a metadata field", field="filter"
                )
            wanted.update(old.texts.documents_matching(dsql, dparams))
        return _delete_locked(out, old, sorted(wanted), missing)


@contextlib.contextmanager
def _rewriting(out: Path):
    """The index ``out`` locked against other writers and opened, for a write that rewrites its
    current generation (:func:`delete`, :func:`compact`); an OS fault inside becomes one line
    saying the index is unchanged, and the index is closed however the block ends."""
    with index_lock(out):
        old = IndexReader.open(out)
        try:
            yield old
        except (OSError, sqlite3.OperationalError) as exc:
            raise os_fault(exc, getattr(exc, "filename", None) or out, kept="the previous index is unchanged") from None
        finally:
            old.close()


def compact(out: str | Path) -> dict:
    """Rebuild an index's FAISS index from its live vectors now, dropping every tombstone
    (what a write does by itself once they pass :data:`COMPACT_AT`; Lucene's ``forceMerge``).
    One new generation; nothing is encoded.

    Returns:
        As :func:`delete` (``removed`` 0); for a sharded index, ``shards``: each shard's.

    Raises:
        EncodrError: no such index; an on-disk IVF index (built again to compact it); an OS fault, the index unchanged.
    """
    out = locate(out)
    if (out / SHARDED_RECORD).is_file():
        from .manifest import shard_folders

        return {"path": str(out.resolve()), "shards": [compact(folder) for folder in shard_folders(out)]}
    with _rewriting(out) as old:
        if old.meta.on_disk:
            raise EncodrError(
                f"index {out} keeps its IVF lists on disk: compact it by building it again (encodr index … --overwrite)"
            )
        return _delete_locked(out, old, [], [], force=True)


def _delete_locked(out: Path, old: IndexReader, wanted: list[str], missing: list[str], force: bool = False) -> dict:
    """:func:`delete` once the documents are known and the index is locked (``force``: compact
    even below the threshold, :func:`compact`)."""
    with generation(out) as tmp:
        old.copy_store(tmp / STORE_FILE)
        if (old.folder / PCR_FILE).exists():
            shutil.copy2(old.folder / PCR_FILE, tmp / PCR_FILE)
        texts = TextStore.create(tmp / STORE_FILE)
        try:
            deleted = texts.settle_members([], wanted)
            meta = old.meta.copy()
            index = remove_texts(old.faiss, deleted, texts, meta)
            if force and len(texts.tombstones()) and index is old.faiss:
                index = compacted(old.faiss, texts, meta)
            rewritten = index is not old.faiss or removable_now(old.faiss, meta)
            meta.count = int(index.ntotal)
            meta.documents = texts.document_count()
            meta.passages, meta.split_documents = texts.passage_counts()
            meta.deleted = len(texts.tombstones())
            meta.languages = texts.languages()
            meta.updated = time.strftime("%Y-%m-%d %H:%M:%S")
            if len(deleted) or index is not old.faiss:  # texts gone, or ids renumbered: the keyword index follows
                texts.build_keywords()
        finally:
            texts.close()
        if rewritten:
            write_faiss(index, tmp / VECTORS_FILE)
        else:  # the vectors are unchanged (tombstones only): the new generation shares the old files
            for name in (VECTORS_FILE, ONDISK_FILE, RESCORE_FILE):
                if (old.folder / name).exists():
                    _link_or_copy(old.folder / name, tmp / name)
        meta.write(tmp)
        old.close()
    return {
        "removed": len(wanted),
        "not_found": missing,
        "deleted_texts": int(len(deleted)),
        "tombstones": meta.deleted,
        "compacted": index is not old.faiss and not removable_now(old.faiss, meta),
        "count": meta.count,
        "documents": meta.documents,
        "path": str(out.resolve()),
    }


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link of ``source`` at ``target`` (instant, no space), or a copy across file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
