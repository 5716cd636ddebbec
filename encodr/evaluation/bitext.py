"""Bitext retrieval (Tatoeba; CMLM §5, LASER, XTREME): find each sentence's translation among
all the other side's sentences by cosine."""

from __future__ import annotations

import numpy as np

from ..data.bitext import Translation
from .base import Evaluator, Score


def retrieval_accuracy(queries: np.ndarray, candidates: np.ndarray) -> float:
    """acc@1 × 100: the share of rows i whose nearest candidate by inner product is row i.

    Args:
        queries, candidates: float32 (n, d) unit vectors; row i of each translates the other.
    """
    return 100.0 * float(np.mean((queries @ candidates.T).argmax(axis=1) == np.arange(len(queries))))


class BitextEvaluator(Evaluator):
    """acc@1 in both directions and their mean (the primary metric), as LASER and XTREME report
    Tatoeba. Repeated sentences stay, so line i is always the gold answer for line i.

    With ``pcr`` (``centred`` or ``uncentred``), each language's first principal component is
    fitted on that side's vectors and removed before retrieval (CMLM §5.2), as ``encodr index
    --pcr`` does."""

    def __init__(self, name: str, pairs: list[Translation], pcr: str | None = None):
        self.name = name
        self.pairs = pairs
        self.pcr = pcr

    def evaluate(self, encoder, progress: bool = False) -> list[Score]:
        source = encoder.encode([p.source for p in self.pairs], progress=progress)
        target = encoder.encode([p.target for p in self.pairs], progress=progress)
        if self.pcr:
            from ..models.pcr import fit_and_remove

            fit_and_remove(source, [p.source_lang or "src" for p in self.pairs], self.pcr)
            fit_and_remove(target, [p.target_lang or "tgt" for p in self.pairs], self.pcr)
        forward, backward = retrieval_accuracy(source, target), retrieval_accuracy(target, source)
        src, tgt = self.pairs[0].source_lang or "src", self.pairs[0].target_lang or "tgt"
        n = len(self.pairs)
        return [Score(self.name, "acc@1", (forward + backward) / 2, n), Score(self.name, f"acc@1 {src}→{tgt}", forward, n),
                Score(self.name, f"acc@1 {tgt}→{src}", backward, n)]  # fmt: skip
