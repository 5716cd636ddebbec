"""Entity linking by nearest neighbour (Mirror-BERT §3, biomedical entity linking)."""

from __future__ import annotations

import numpy as np

from ..data.readers import LinkingSet
from .base import Evaluator, Score


class LinkingEvaluator(Evaluator):
    """Each query name is linked to its most similar candidate name by cosine.

    acc@k (× 100) is the share of queries whose gold concept is among the concepts named
    by the top-k candidates.
    """

    def __init__(self, name: str, data: LinkingSet, ks: tuple[int, ...] = (1, 5), chunk: int = 4096):
        self.name = name
        self.data = data
        self.ks = ks
        self.chunk = chunk

    def ranks(self, encoder, progress: bool = False) -> list[int | None]:
        """Per query, the 0-based rank of the first candidate naming its gold concept
        among the top ``max(ks)`` by cosine, or ``None`` when none of them does.

        Args:
            encoder: anything with ``encode(texts, progress=) → (n, d)`` float32
                L2-normalised vectors (so the dot product is the cosine).
            progress: show encoding progress bars.

        Returns:
            A list as long as ``data.queries``.
        """
        d = self.data
        cand = encoder.encode(d.candidates, progress=progress)
        queries = encoder.encode(d.queries, progress=progress)
        kmax = min(max(self.ks), len(d.candidates))  # fewer candidates than k: rank them all
        found: list[int | None] = []
        for start in range(0, len(queries), self.chunk):
            sims = queries[start : start + self.chunk] @ cand.T
            top = np.argpartition(-sims, kmax - 1, axis=1)[:, :kmax]
            order = np.take_along_axis(sims, top, axis=1).argsort(axis=1)[:, ::-1]
            top = np.take_along_axis(top, order, axis=1)
            for row, gold in zip(top, d.query_ids[start : start + self.chunk]):
                found.append(next((r for r, c in enumerate(row) if gold in d.candidate_ids[c]), None))
        return found

    def evaluate(self, encoder, progress: bool = False) -> list[Score]:
        found = self.ranks(encoder, progress)
        n = len(found)
        return [Score(self.name, f"acc@{k}", 100.0 * sum(r is not None and r < k for r in found) / n, n) for k in self.ks]
