"""Compressed vectors for ``encodr index --quantize``: int8 (FAISS's 8-bit scalar quantiser) and
binary with rescoring.

Guarantee of :class:`BinaryRescored`: a search returns, among the ``RESCORE_FACTOR × k``
nearest texts by Hamming distance between sign bits, the ``k`` with the highest inner product
between the float query and the text's int8 vector; only the bits (d / 8 bytes a vector) are
held in memory, the int8 vectors (d bytes) are read from a memory-mapped file on disk.

This is the "binary retrieval, int8 rescoring" of sentence-transformers' embedding-quantisation
guide (``semantic_search_faiss`` with ``rescore_multiplier``), built on the same pieces:
``quantize_embeddings`` (``ubinary``, ``int8`` with calibration ranges) and FAISS's
``IndexBinaryFlat``. How it differs: the int8 vectors live on disk and are memory-mapped, not
held in memory, the rescoring score is dequantised (so that it is on the cosine scale that
fusion and thresholds expect), and it answers the subset of FAISS's ``Index`` interface that
:class:`~encodr.index.reader.IndexReader` uses (``ntotal``, ``search`` with an ID selector, ``add``,
``reconstruct``), so every search mode and ``--add`` work unchanged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

QUANTIZE = ("none", "int8", "binary")
RESCORE_FILE = "rescore.i8.npy"  # binary indexes: the int8 vectors the Hamming candidates are rescored with
RESCORE_FACTOR = 4  # candidates by Hamming distance per hit wanted (sentence-transformers' guide uses 4)


def int8_ranges(sample: np.ndarray) -> np.ndarray:
    """Per-dimension (min, max) of ``sample`` (n, d) float32: the calibration of
    :func:`sentence_transformers.quantize_embeddings` for ``int8``. Returns (2, d) float32."""
    return np.stack([sample.min(axis=0), sample.max(axis=0)]).astype(np.float32)


def to_int8(vectors: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """(n, d) float32 → (n, d) int8, with sentence-transformers' ``quantize_embeddings``."""
    from sentence_transformers import quantize_embeddings

    return quantize_embeddings(np.ascontiguousarray(vectors, dtype=np.float32), precision="int8", ranges=ranges)


def from_int8(codes: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """(n, d) int8 → (n, d) float32: the centre of each code's bucket (the inverse of
    :func:`to_int8` up to half a bucket, (max − min) / 510 per dimension)."""
    step = (ranges[1] - ranges[0]) / 255
    step = np.where(step == 0, 1, step)
    return ranges[0] + (codes.astype(np.float32) + 128.5) * step


def to_bits(vectors: np.ndarray) -> np.ndarray:
    """(n, d) float32 → (n, ⌈d/8⌉) uint8: sign bits, packed (``quantize_embeddings``' ``ubinary``)."""
    from sentence_transformers import quantize_embeddings

    return quantize_embeddings(np.ascontiguousarray(vectors, dtype=np.float32), precision="ubinary")


class BinaryRescored:
    """Sign bits searched by Hamming distance in FAISS, candidates rescored by int8 vectors.

    Args:
        binary: a ``faiss.IndexBinaryFlat`` over :func:`to_bits` of the vectors.
        codes: (n, d) int8, row i the :func:`to_int8` of vector i (a memory map when opened).
        ranges: (2, d) float32 int8 calibration (:func:`int8_ranges`).
    """

    def __init__(self, binary, codes: np.ndarray, ranges: np.ndarray):
        self.binary, self.codes, self.ranges = binary, codes, np.asarray(ranges, dtype=np.float32)
        self.dimension = self.codes.shape[1]

    @classmethod
    def new(cls, dim: int, sample: np.ndarray) -> "BinaryRescored":
        """An empty index for ``dim``-dimensional vectors, int8 calibrated on ``sample`` (m, dim)."""
        import faiss

        return cls(faiss.IndexBinaryFlat(8 * ((dim + 7) // 8)), np.zeros((0, dim), dtype=np.int8), int8_ranges(sample))

    @classmethod
    def read(cls, path: Path, ranges, mmap: bool = True) -> "BinaryRescored":
        """Open what :meth:`write` wrote at ``path`` (the int8 file beside it memory-mapped).

        Raises:
            RuntimeError: FAISS cannot read ``path``. OSError / ValueError: the int8 file is
                missing or damaged.
        """
        import faiss

        codes = np.load(Path(path).with_name(RESCORE_FILE), mmap_mode="r" if mmap else None)
        return cls(faiss.read_index_binary(str(path)), codes, np.asarray(ranges, dtype=np.float32))

    def write(self, path: Path) -> None:
        """Write the bits to ``path`` (FAISS's binary format) and the int8 vectors beside it
        (:data:`RESCORE_FILE`, a NumPy file).

        Raises:
            RuntimeError: FAISS could not write ``path``. OSError: the int8 file could not be written.
        """
        import faiss

        faiss.write_index_binary(self.binary, str(path))
        np.save(Path(path).with_name(RESCORE_FILE), np.ascontiguousarray(self.codes))

    @property
    def ntotal(self) -> int:
        return int(self.binary.ntotal)

    def add(self, vectors: np.ndarray) -> None:
        """Append (n, d) float32 vectors: their bits to the FAISS index, their int8 codes to the
        rescoring vectors (which are then held in memory until written)."""
        self.binary.add(to_bits(vectors))
        self.codes = np.concatenate([np.asarray(self.codes), to_int8(vectors, self.ranges)])

    def reconstruct(self, i: int) -> np.ndarray:
        """Vector ``i`` as its int8 code dequantised (d,) float32."""
        return from_int8(np.asarray(self.codes[i : i + 1]), self.ranges)[0]

    def search(self, x: np.ndarray, k: int, params=None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best of the ``RESCORE_FACTOR × k`` Hamming-nearest texts, by float query ·
        dequantised int8 vector.

        Args:
            x: float32 (q, d) queries.
            k: hits per query.
            params: ``faiss.SearchParameters`` (its ID selector, if any, restricts the
                Hamming search).

        Returns:
            (scores float32 (q, k), ids int64 (q, k)), best first; id −1 and score −inf pad.
        """
        wanted = min(self.ntotal, RESCORE_FACTOR * k)
        scores = np.full((len(x), k), -np.inf, dtype=np.float32)
        ids = np.full((len(x), k), -1, dtype=np.int64)
        if not wanted or not len(x):
            return scores, ids
        _, found = (
            self.binary.search(to_bits(x), wanted, params=params)
            if params is not None
            else self.binary.search(to_bits(x), wanted)
        )
        for row, candidates in enumerate(found):
            candidates = candidates[candidates >= 0]
            if not len(candidates):
                continue
            order = np.sort(candidates)  # ascending rows: one sequential pass over the memory map
            exact = from_int8(np.asarray(self.codes[order]), self.ranges) @ x[row]
            best = np.argsort(-exact, kind="stable")[:k]
            scores[row, : len(best)], ids[row, : len(best)] = exact[best], order[best]
        return scores, ids
