"""Search over an index: the core that ``encodr search`` and the TUI share.

text → model (:class:`~encodr.models.Encoder`) → vector → PCR (optional) → FAISS → rows.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import EncodrError
from .store import Index, fingerprint
from ..models import Encoder, load_encoder


@dataclass(frozen=True)
class Hit:
    """One search result: rank (1-based), cosine score, the text and where it came from."""

    rank: int
    score: float
    text: str
    source: str
    line: int
    id: int
    lang: str | None = None
    ext_id: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class Searcher:
    """An opened index plus the model it was built with.

    Args:
        index_dir: the index directory.
        model: optional model spec; refused unless its weights match the index's model.

    Raises:
        EncodrError: the index cannot be opened (see :meth:`Index.open`), or ``model``
            differs from the index's model.
    """

    def __init__(self, index_dir: str | Path, model: str | None = None, encoder: Encoder | None = None):
        import faiss

        # One query at a time gains nothing from FAISS threads, and two OpenMP pools (torch's and
        # FAISS's) spinning in turn made a warm query 20× slower on 2 cores (bench/search.py).
        faiss.omp_set_num_threads(1)
        self.index = Index.open(index_dir)
        meta = self.index.meta
        self.encoder = encoder or load_encoder(model or meta["model"])
        if fingerprint(self.encoder) != meta["fingerprint"]:
            raise EncodrError(
                f"model '{model or meta['model']}' is not the model index {index_dir} was built with "
                f"({meta['model']}, pooling {meta['pooling']}); search it without --model, or rebuild the index"
            )
        self.last_ms = 0.0

    def search(self, queries: list[str], k: int = 10, lang: str | None = None) -> list[list[Hit]]:
        """Top-k hits for each query (cosine, highest first); sets ``last_ms``."""
        started = time.perf_counter()
        results = self._hits(self.encoder.encode(queries), k, lang)
        self.last_ms = (time.perf_counter() - started) * 1000
        return results

    def _hits(self, query_vectors: np.ndarray, k: int, lang: str | None) -> list[list[Hit]]:
        """Hits for already-encoded queries (float32 (q, d), unit norm, before PCR)."""
        vectors = self.index.prepare_queries(query_vectors, lang)
        scores, ids = self.index.search(vectors, k)
        rows = self.index.rows(np.unique(ids))
        results = []
        for qs, qi in zip(scores, ids):
            hits = []
            for score, i in zip(qs, qi):
                if i < 0:
                    continue
                r = rows[int(i)]
                hits.append(Hit(len(hits) + 1, float(score), r["text"], r["source"], r["line"], r["id"], r["lang"], r["ext_id"]))
            results.append(hits)
        return results

    def compare(self, a: str, b: str, k: int = 5, lang: str | None = None) -> dict:
        """Cosine similarity of two texts and each one's nearest neighbours in the index
        (the two texts are encoded once, for both)."""
        started = time.perf_counter()
        vectors = self.encoder.encode([a, b])
        near = self._hits(vectors, k, lang)
        self.last_ms = (time.perf_counter() - started) * 1000
        return {"cosine": float(vectors[0] @ vectors[1]), "a": a, "b": b, "neighbours_a": near[0], "neighbours_b": near[1]}
