"""IVF indexes whose inverted lists live in a file beside the index, memory-mapped: built in
blocks and merged on disk, so neither building nor searching needs the whole index in memory.

Guarantee: the index finds what the same IVF index built in memory finds (same trained
quantisers, same vectors, same ids, so the same lists in the same order), while the memory it
needs is bounded by the coarse centroids (nlist × d × 4 bytes), one block of vectors while it is
built, and the lists a query visits while it searches (``nprobe`` of ``nlist``), which the OS pages
in from ``lists.ivfdata`` and may drop again. With ``ivfpq``, the 8-bit copy of each vector that
re-ranks the PQ candidates (``Refine(SQ8)``, d bytes a vector) is written block by block to a file
while the index is built (:class:`RefineCodes`) and streamed into ``vectors.faiss`` at the end
(:meth:`RefinedOnDisk.write`), where searches memory-map it like any flat index's codes: it is never held
in memory, neither when built nor when searched, nor by ``--add`` (``bench/ondisk_10m.py``).

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
import shutil
import sys
from pathlib import Path
from typing import Callable

import numpy as np

ONDISK_FILE = "lists.ivfdata"
REFINE_FILE = (
    "refine.codes"  # while an on-disk IVF-PQ index is built: its re-ranking codes, until RefinedOnDisk.write streams them in
)
BLOCK = 1_000_000  # vectors added to one copy of the trained index before it is written
COPY = 64 << 20  # bytes a stream of codes copies at a time


class RefineCodes:
    """The 8-bit re-ranking codes of an on-disk ``IndexRefine`` (``IVF…,PQ…,Refine(SQ8)``) being
    built, in a file instead of in memory.

    Guarantee: the file holds, row after row, exactly the codes ``refine_index.add`` would have
    appended to the index's memory (``sa_encode`` of the same trained scalar quantiser, in the
    order the vectors were added, after the codes of the generation extended with ``--add``), and
    :meth:`RefinedOnDisk.write` writes the index with them in the byte layout ``faiss.write_index`` gives
    the same index built in memory (a test compares the bytes). FAISS can neither write an index
    from codes it does not hold nor append to a memory-mapped ``IndexFlatCodes``; the rest of the
    file (quantisers, list offsets, ``k_factor``) is still FAISS's own serialisation.

    Args:
        trained: the ``IndexRefine``; its refine index must hold no codes (:func:`extend_trained`
            empties it).
        path: the file to write (:data:`REFINE_FILE` in the generation's folder).
        old: with ``--add``, the old generation's ``vectors.faiss`` and its number of vectors: its
            codes are copied first, read from the end of that file.

    Attributes:
        rows: the codes written so far.

    Raises:
        OSError: the file cannot be written, or ``old``'s codes are not where FAISS's layout puts them.
    """

    def __init__(self, trained, path: Path, old: tuple[Path, int] | None = None):
        import faiss

        self.refine = faiss.downcast_index(trained.refine_index)
        self.path, self.rows = Path(path), 0
        self.handle = open(self.path, "wb")
        try:
            if old is not None:
                self._copy_old(*old)
        except BaseException:
            self.handle.close()
            raise

    def _copy_old(self, file: Path, rows: int) -> None:
        size = rows * self.refine.code_size
        with open(file, "rb") as f:
            start = (
                f.seek(0, os.SEEK_END) - 4 - size
            )  # …, uint64 byte count, the codes, float32 k_factor (FAISS's IndexRefine layout)
            f.seek(start - 8)
            if start < 8 or int(np.frombuffer(f.read(8), dtype=np.uint64)[0]) != size:
                raise OSError(
                    errno.EINVAL,
                    f"the re-ranking codes of {rows:,} vectors are not at the end of the file; rebuild the index",
                    str(file),
                )
            while size:
                chunk = f.read(min(COPY, size))
                if not chunk:  # the file shrank while it was read
                    raise OSError(errno.EIO, "the old re-ranking codes ended early; rebuild the index", str(file))
                self.handle.write(chunk)
                size -= len(chunk)
        self.rows = rows

    def add(self, vectors: np.ndarray) -> None:
        """Append the codes of (n, d) float32 ``vectors``."""
        self.handle.write(self.refine.sa_encode(vectors).tobytes())
        self.rows += len(vectors)

    def close(self) -> None:
        self.handle.close()


class RefinedOnDisk:
    """What :func:`add_on_disk` returns for an ``IndexRefine``: the index (lists on disk, refine
    index empty) and its :class:`RefineCodes`, to be written with :meth:`write`. It is not searched
    in memory (it holds no codes to re-rank with): search the file it writes.

    Attributes:
        index: the FAISS ``IndexRefine``. codes: its :class:`RefineCodes`. ntotal: its vectors.
    """

    def __init__(self, index, codes: RefineCodes):
        self.index, self.codes = index, codes

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def write(self, path: Path) -> None:
        """Write ``faiss.write_index``'s bytes for the index with its codes to ``path``, the codes
        streamed from their file (then removed) instead of serialised from memory.

        Raises:
            RuntimeError: FAISS cannot serialise the index. OSError: ``path`` cannot be written.
        """
        import faiss

        refine = faiss.downcast_index(self.index.refine_index)
        refine.ntotal = self.codes.rows  # the header says how many codes follow; the codes vector itself stays empty
        try:
            head = faiss.serialize_index(self.index)
        finally:
            refine.ntotal = 0  # never searched in memory with codes it does not hold
        if int(head[-12:-4].view(np.uint64)[0]) != 0:
            raise RuntimeError("unexpected FAISS layout: the refine codes are not serialised last")
        try:
            with open(path, "wb") as out, open(self.codes.path, "rb") as f:
                out.write(head[:-12].tobytes())
                out.write(np.uint64(self.codes.rows * refine.code_size).tobytes())
                shutil.copyfileobj(f, out, COPY)
                out.write(head[-4:].tobytes())  # k_factor
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        self.codes.path.unlink()


def add_on_disk(
    trained,
    vectors: np.ndarray,
    folder: Path,
    write: Callable[[object, Path], None],
    block: int | None = None,
    old=None,
    add_blocks: Callable | None = None,
    old_file: Path | None = None,
):
    """Fill the trained, empty IVF index ``trained`` with ``vectors`` (after the vectors of
    ``old``, with ``--add``), its inverted lists in ``folder / ONDISK_FILE``.

    Args:
        trained: a trained FAISS IVF index (IVFFlat, IVFScalarQuantizer, IVFPQ), or an
            ``IndexRefine`` around one, whose refine index holds no codes: the codes go to
            ``folder / REFINE_FILE`` (:class:`RefineCodes`), and a :class:`RefinedOnDisk` is
            returned.
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
        old_file: ``old``'s ``vectors.faiss``, when ``trained`` is an ``IndexRefine`` (its
            re-ranking codes are copied from there).

    Returns:
        ``trained``, holding ``old``'s vectors and n more, its lists on disk; for an
        ``IndexRefine``, a :class:`RefinedOnDisk` around it (write it with its ``write``).

    Raises:
        OSError: a block or the list file cannot be written (full disk…), naming the file.
    """
    import faiss

    ivf = faiss.extract_index_ivf(trained)
    first = 0 if old is None else int(old.ntotal)
    block = block or BLOCK
    codes = None
    if isinstance(
        trained, faiss.IndexRefine
    ):  # its re-ranking codes go to a file, in the order of adding (they are the refine ids)
        if old is not None and old_file is None:
            raise ValueError(
                "add_on_disk: an IndexRefine extended from an old index needs old_file (its codes are copied from there)"
            )
        codes = RefineCodes(trained, folder / REFINE_FILE, (Path(old_file), first) if old is not None else None)

    def blocks():
        for start in range(0, len(vectors), block):
            chunk = np.ascontiguousarray(vectors[start : start + block], dtype=np.float32)
            if codes is not None:
                codes.add(chunk)
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
            raise OSError(
                errno.EIO, f"merging the IVF lists failed ({str(exc).splitlines()[0]})", str(folder / ONDISK_FILE)
            ) from None
    finally:
        for path in parts:
            path.unlink(missing_ok=True)
        if codes is not None:
            codes.close()
    if codes is not None:  # the merge set trained.ntotal: old's vectors and these
        if codes.rows != trained.ntotal:
            raise OSError(errno.EIO, f"{codes.rows:,} re-ranking codes for {trained.ntotal:,} vectors", str(codes.path))
        return RefinedOnDisk(trained, codes)
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
    gets an empty refine index with the same trained scalar quantiser, and :class:`RefineCodes`
    copies the old codes from ``path`` (``add_on_disk(…, old_file=path)``; they are only
    memory-mapped here, never read in)."""
    import faiss

    index = faiss.read_index(str(path), faiss.IO_FLAG_SKIP_IVF_DATA | faiss.IO_FLAG_MMAP_IFC)
    ivf = faiss.extract_index_ivf(index)
    empty = faiss.ArrayInvertedLists(ivf.nlist, ivf.code_size)
    ivf.replace_invlists(empty, True)
    empty.this.disown()  # the index owns its lists now
    ivf.ntotal = 0
    if isinstance(index, faiss.IndexRefine):
        mapped = faiss.downcast_index(index.refine_index)
        refine = faiss.IndexScalarQuantizer(mapped.d, mapped.sq.qtype, mapped.metric_type)
        refine.sq = mapped.sq  # the trained ranges, copied
        refine.is_trained = True
        index.refine_index = refine
        refine.this.disown()  # the index owns it now (own_refine_index, as read)…
        mapped.this.acquire()  # …and the replaced one is this proxy's to free (its mapping with it)
        del mapped
        index.ntotal = 0
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
