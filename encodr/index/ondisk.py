"""IVF indexes whose inverted lists live in a file beside the index, memory-mapped: built in
blocks and merged on disk, so neither building nor searching needs the whole index in memory.

Guarantee: the index finds what the same IVF index built in memory finds (same trained
quantisers, same vectors, same ids, so the same lists in the same order), while the memory it
needs is bounded by the coarse centroids (nlist × d × 4 bytes), one block of vectors while it is
built, and the lists a query visits while it searches (``nprobe`` of ``nlist``), which the OS pages
in from ``lists.ivfdata`` and may drop again. With ``ivfpq``, the 8-bit copy of each vector that
re-ranks the PQ candidates (``Refine(SQ8)``, d bytes a vector) stays in ``vectors.faiss`` and is
memory-mapped on search like any flat index's codes, but is held in memory while the index is
built: there the bound is d bytes a vector on top of the block (``bench/ondisk_10m.py``).

As FAISS's wiki ("Indexes that do not fit in RAM") and autofaiss do: train once on a sample, add
each block of vectors to a copy of the trained index and write it, then merge the blocks' lists
into one ``OnDiskInvertedLists`` file (``faiss.contrib.ondisk.merge_ondisk``). Unlike autofaiss,
the blocks are added here in order, one at a time (the build's memory bound is the point; adding
is not where a build spends its time), and the result is one generation of an encodr index.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from pathlib import Path
from typing import Callable

import numpy as np

ONDISK_FILE = "lists.ivfdata"
BLOCK = 1_000_000  # vectors added to one copy of the trained index before it is written


def add_on_disk(trained, vectors: np.ndarray, folder: Path, write: Callable[[object, Path], None], block: int | None = None, old=None,
                add_blocks: Callable | None = None):  # fmt: skip
    """Fill the trained, empty IVF index ``trained`` with ``vectors`` (after the vectors of
    ``old``, with ``--add``), its inverted lists in ``folder / ONDISK_FILE``.

    Args:
        trained: a trained FAISS IVF index (IVFFlat, IVFScalarQuantizer, IVFPQ), or an
            ``IndexRefine`` around one (its refine codes are added in memory, in order).
        vectors: (n, d) float32, a NumPy array or memmap; row i gets id i (``first + i``
            after ``old``'s ``first`` vectors).
        folder: where the list file and the blocks (removed once merged) are written.
        write: ``(index, path)`` writes a block (the build's ``write_faiss``, which raises
            ``OSError`` naming the file).
        block: vectors per block (default :data:`BLOCK`).
        add_blocks: ``(ivf, blocks) → iterator of IVF indexes``: each ``(first id, vectors)``
            block added to a copy of ``trained``'s empty IVF index, in order (default: here,
            one block at a time; :func:`encodr.index.engines.ray_adding`: in Ray tasks).
        old: an on-disk index with the same quantisers (:func:`extend_trained` made
            ``trained`` from it): its lists come first in each merged list, read from its own
            memory-mapped file, which is left as it was.

    Returns:
        ``trained``, holding ``old``'s vectors and n more, its lists on disk.

    Raises:
        OSError: a block or the list file cannot be written (full disk…), naming the file.
    """
    import faiss

    ivf = faiss.extract_index_ivf(trained)
    refined = isinstance(trained, faiss.IndexRefine)
    first = 0 if old is None else int(old.ntotal)
    block = block or BLOCK

    def blocks():
        for start in range(0, len(vectors), block):
            chunk = np.ascontiguousarray(vectors[start : start + block], dtype=np.float32)
            if refined:  # IndexRefine: the refine index is flat, its ids are the order of adding
                faiss.downcast_index(trained.refine_index).add(chunk)
            yield first + start, chunk

    parts = []
    try:
        for b, part in enumerate((add_blocks or _add_here)(ivf, blocks())):
            path = folder / f"block{b:05d}.index"
            parts.append(path)
            write(part, path)
            del part
        try:
            with _c_stdout_silenced():  # OnDiskInvertedLists printf()s "resizing FILE to N bytes" on stdout, which --json owns
                _merge(trained, ([faiss.extract_index_ivf(old).invlists] if old is not None else []), parts, folder / ONDISK_FILE)
        except RuntimeError as exc:
            raise OSError(errno.EIO, f"merging the IVF lists failed ({str(exc).splitlines()[0]})", str(folder / ONDISK_FILE)) from None
    finally:
        for path in parts:
            path.unlink(missing_ok=True)
    return trained


def _add_here(ivf, blocks):
    """Each ``(first id, vectors)`` block added to a copy of the empty IVF index ``ivf``, in this process."""
    import faiss

    for first, chunk in blocks:
        part = faiss.clone_index(ivf)
        part.add_with_ids(chunk, np.arange(first, first + len(chunk), dtype=np.int64))
        yield part


def _merge(trained, lists: list, parts: list[Path], target: Path) -> None:
    """``faiss.contrib.ondisk.merge_ondisk``, which takes block files only, with inverted lists
    already open (an old generation's, mapped from its own folder) merged first, in order."""
    import faiss

    opened = []
    for path in parts:
        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP)
        part = faiss.extract_index_ivf(index)
        opened.append(index)  # kept alive until merged
        lists.append(part.invlists)
    ivf = faiss.extract_index_ivf(trained)
    merged = faiss.OnDiskInvertedLists(ivf.nlist, ivf.code_size, str(target))
    pointers = faiss.InvertedListsPtrVector()
    for item in lists:
        pointers.push_back(item)
    ntotal = merged.merge_from_multiple(pointers.data(), pointers.size(), False)
    ivf.ntotal = trained.ntotal = ntotal
    ivf.replace_invlists(merged, True)
    merged.this.disown()


def extend_trained(path: Path):
    """The trained quantisers of the on-disk index at ``path`` (``vectors.faiss``) with empty
    lists in memory, ready for :func:`add_on_disk` ``(…, old=the index)``; an ``IndexRefine``
    keeps its refine codes (read into memory, d bytes a vector), to which the new ones are added."""
    import faiss

    index = faiss.read_index(str(path), faiss.IO_FLAG_SKIP_IVF_DATA)
    ivf = faiss.extract_index_ivf(index)
    empty = faiss.ArrayInvertedLists(ivf.nlist, ivf.code_size)
    ivf.replace_invlists(empty, True)
    empty.this.disown()  # the index owns its lists now
    ivf.ntotal = 0
    return index


def read_on_disk(path: Path, flags: int):
    """Read the index at ``path`` (``vectors.faiss``) whose lists are in ``ONDISK_FILE`` beside
    it, wherever its folder was when it was written (a generation is renamed into place), and
    memory-map them. FAISS's own ``IO_FLAG_ONDISK_SAME_DIR`` does this too, but printf()s a line
    on stdout and refuses ``IO_FLAG_MMAP_IFC``; here the lists are read without their data
    (``IO_FLAG_SKIP_IVF_DATA``), pointed at the file and mapped.

    Raises:
        RuntimeError: FAISS cannot read the index or map the file.
    """
    import faiss

    index = faiss.read_index(str(path), flags | faiss.IO_FLAG_SKIP_IVF_DATA)
    lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(index).invlists)
    lists.filename = str(Path(path).parent / ONDISK_FILE)
    lists.do_mmap()
    return index


@contextlib.contextmanager
def _c_stdout_silenced():
    """Send what C code writes to file descriptor 1 to /dev/null meanwhile (Python's own
    ``sys.stdout`` is flushed first; C's stdio buffer before fd 1 is given back)."""
    import ctypes

    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
