"""The FAISS index types encodr builds, and how it makes, trains, fills and writes them: ``flat``
(exact), ``hnsw`` (a graph), ``ivf`` and ``ivfpq`` (inverted lists, the latter with product
quantisation re-ranked from 8-bit vectors), each optionally ``int8`` or ``binary`` quantised
(:mod:`.quantized`). Vectors are normalised, so inner product is cosine."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import EncodrError, S, one_of
from ..outputs import errno_in
from .ondisk import RefinedOnDisk
from .quantized import QUANTIZE, BinaryRescored

# --index-type auto: exact search up to FLAT_MAX vectors, HNSW up to HNSW_MAX, IVF-PQ above
# (chosen with bench/search.py: each meets p99 < 10 ms and recall@10 >= 0.95 in its range).
FLAT_MAX = 50_000


HNSW_MAX = 250_000


INDEX_TYPES = ("auto", "flat", "hnsw", "ivf", "ivfpq")


HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 80, 128


# IVF lists visited per query, by index type (--nprobe overrides).
IVF_NPROBE = {"ivf": 32, "ivfpq": 128}


# IVF-PQ: PQ_BYTES one-byte codes per vector, re-ranked by a scalar-quantised (8-bit) copy of
# each vector: the REFINE_K_FACTOR × k best PQ candidates are scored again, nearly exactly.
# PQ alone finds too few of the exact neighbours; 8-bit re-ranking recovers nearly all of them
# (bench/search.py; docs/benchmarks/search.md gives recall and latency). The 8-bit copy is most of
# the size (d bytes of d + 48 + 8 per vector).
PQ_BYTES, REFINE_K_FACTOR = 48, 32


# …and each sub-quantiser codes at least PQ_MIN_SUB dimensions: a one-byte code of 1–3 dimensions
# compresses little or no better than the 8-bit copy, and each sub-quantiser is one more k-means to
# train. It changes nothing from 192 dimensions up (48 codes of at least 4 dimensions each).
PQ_MIN_SUB = 4


TRAIN_SAMPLE = 100_000  # vectors quantisers train on at least (a seeded sample; build.training_sample)


TRAIN_PER_LIST = 39  # …and at least this many for each IVF list: FAISS's k-means asks 39 a centroid


def new_faiss(kind: str, dim: int, n: int, sample: np.ndarray | None, quantize: str = "none"):
    """An empty FAISS index of ``kind`` for ``n`` vectors of dimension ``dim`` (inner
    product), its quantisers trained on ``sample`` (IVF types, ``int8``, ``binary``).

    ``quantize``: ``none`` (float32 vectors), ``int8`` (FAISS's 8-bit scalar quantiser in place
    of the float vectors, per-dimension ranges trained on ``sample``: d bytes a vector) or
    ``binary`` (:class:`~.quantized.BinaryRescored`, ``flat`` only: d / 8 bytes in memory, d on disk)."""
    import faiss

    ip, sq8 = faiss.METRIC_INNER_PRODUCT, faiss.ScalarQuantizer.QT_8bit
    if quantize == "binary":
        return BinaryRescored.new(dim, sample)
    if kind == "flat":
        if quantize == "int8":
            index = faiss.IndexScalarQuantizer(dim, sq8, ip)
            index.train(sample)
            return index
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWSQ(dim, sq8, HNSW_M, ip) if quantize == "int8" else faiss.IndexHNSWFlat(dim, HNSW_M, ip)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        if quantize == "int8":
            index.train(sample)
        return index
    nlist = ivf_lists(n)
    if kind == "ivf" and quantize == "int8":
        index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist, sq8, ip)
    elif kind == "ivf":
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    else:  # ivfpq: PQ codes, re-ranked from 8-bit scalar-quantised vectors
        index = faiss.index_factory(dim, f"IVF{nlist},PQ{pq_codes(dim)}x8,Refine(SQ8)", faiss.METRIC_INNER_PRODUCT)
        # FAISS's factory turns on polysemous training (codes reordered so that Hamming distances
        # between them approximate true ones), which serves only a Hamming pre-filter
        # (polysemous_ht), never set here, and costs most of the training time.
        faiss.downcast_index(faiss.extract_index_ivf(index)).do_polysemous_training = False
    index.train(sample)
    return index


def pq_codes(dim: int) -> int:
    """The number of PQ sub-quantisers (one-byte codes a vector) for ``dim``-dimensional vectors:
    the most that divide ``dim``, at most :data:`PQ_BYTES`, each of at least :data:`PQ_MIN_SUB`
    dimensions where ``dim`` allows it (1 for ``dim`` under 4). ``dim`` 384 → 48, 768 → 48,
    1024 → 32, 64 → 16, 32 → 8."""
    fits = [m for m in range(1, min(dim, PQ_BYTES) + 1) if dim % m == 0 and dim // m >= PQ_MIN_SUB]
    return max(fits, default=1)


def ivf_lists(n: int) -> int:
    """The number of IVF lists (coarse centroids) for ``n`` vectors: 4·√n, FAISS's guideline,
    with at least 39 vectors a list (FAISS's minimum to train them), at least 1."""
    return max(1, min(int(4 * np.sqrt(n)), n // TRAIN_PER_LIST))


def auto_index_type(n: int) -> str:
    """The index type ``--index-type auto`` picks for ``n`` vectors: ``flat`` up to
    :data:`FLAT_MAX`, ``hnsw`` up to :data:`HNSW_MAX`, ``ivfpq`` above."""
    return "flat" if n <= FLAT_MAX else "hnsw" if n <= HNSW_MAX else "ivfpq"


def write_faiss(index, path: Path) -> None:
    """``faiss.write_index`` (or the index's own ``write``: :class:`~.quantized.BinaryRescored`,
    :class:`~.ondisk.RefinedOnDisk`), its write errors (a full disk…) raised as ``OSError`` with the file
    named, like every other write of a build.

    Raises:
        OSError: FAISS could not write ``path`` (``errno`` from its message when it names one).
    """
    import errno

    import faiss

    try:
        index.write(path) if isinstance(index, (BinaryRescored, RefinedOnDisk)) else faiss.write_index(index, str(path))
    except RuntimeError as exc:
        code = errno_in(str(exc)) or errno.EIO
        raise OSError(code, os.strerror(code), str(path)) from None


def add_vectors(index, vectors: np.ndarray, first: int) -> None:
    """Add float32 (n, d) ``vectors`` to a FAISS ``index`` as ids ``first`` … ``first + n − 1``:
    an IVF index (which may have had ids removed, so its count is not the next id) takes them
    with their ids, any other index numbers them from its count, which must equal ``first``."""
    import faiss

    if isinstance(index, faiss.IndexIVF):
        index.add_with_ids(vectors, np.arange(first, first + len(vectors), dtype=np.int64))
    else:
        assert index.ntotal == first, (index.ntotal, first)
        index.add(vectors)


def training_sample(vectors: np.ndarray) -> np.ndarray:
    """What an index's quantisers train on: a seeded draw of ``vectors`` (n, d), kept in row order,
    of :data:`TRAIN_SAMPLE` vectors or 39 for each of the :func:`ivf_lists` an IVF index
    of n vectors has, whichever is more (FAISS's k-means asks 39 a centroid: above about 410,000
    vectors the fixed sample would train under-filled centroids), all of them below that size.

    Returns:
        (m, d) float32, m = min(n, max(TRAIN_SAMPLE, 39 · ivf_lists(n))): 760 MB at 10M vectors of 384.
    """
    n = len(vectors)
    size = min(n, max(TRAIN_SAMPLE, TRAIN_PER_LIST * ivf_lists(n)))
    return np.asarray(vectors[np.sort(np.random.default_rng(0).choice(n, size=size, replace=False))], dtype=np.float32)


def check_quantize(quantize: str, index_type: str) -> None:
    """Refuse a ``--quantize`` that is unknown or that the index type cannot hold.

    Raises:
        EncodrError: naming the option and what to pass instead.
    """
    if quantize not in QUANTIZE:
        one_of("quantize", quantize, QUANTIZE)
    if quantize == "binary" and index_type not in ("auto", "flat"):
        raise EncodrError(
            f"{S.quantize} binary searches every vector's bits (a flat Hamming scan); drop {S.index_type} {index_type} "
            f"or pass {S.index_type} flat"
        )
    if quantize == "int8" and index_type == "ivfpq":
        raise EncodrError(
            f"{S.index_type} ivfpq already compresses vectors (PQ codes); use {S.quantize} int8 with flat, hnsw or "
            f"ivf, or drop {S.quantize}"
        )
