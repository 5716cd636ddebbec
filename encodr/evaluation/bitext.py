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

    Pairs of several language pairs (a held-out split of a multilingual bitext) are scored per
    language pair: a sentence is searched among its own language pair's translations only, and
    the primary ``acc@1`` is the mean over language pairs; one pair of languages (Tatoeba) gives
    exactly the single-pair scores.

    With ``pcr`` (``centred`` or ``uncentred``), each language's first principal component is
    fitted on that side's vectors and removed before retrieval (CMLM §5.2), as ``encodr index
    --pcr`` does."""

    def __init__(self, name: str, pairs: list[Translation], pcr: str | None = None):
        self.name = name
        self.pairs = pairs
        self.pcr = pcr

    def evaluate(self, encoder, progress: bool = False) -> list[Score]:
        groups: dict[tuple[str, str], list[Translation]] = {}
        for p in self.pairs:
            groups.setdefault((p.source_lang or "src", p.target_lang or "tgt"), []).append(p)
        means, details = [], []
        for (src, tgt), pairs in groups.items():
            source = encoder.encode([p.source for p in pairs], progress=progress)
            target = encoder.encode([p.target for p in pairs], progress=progress)
            if self.pcr:
                from ..models.pcr import fit_and_remove

                fit_and_remove(source, [src] * len(pairs), self.pcr)
                fit_and_remove(target, [tgt] * len(pairs), self.pcr)
            forward, backward = retrieval_accuracy(source, target), retrieval_accuracy(target, source)
            means.append((forward + backward) / 2)
            details += [
                Score(self.name, f"acc@1 {src}→{tgt}", forward, len(pairs)),
                Score(self.name, f"acc@1 {tgt}→{src}", backward, len(pairs)),
            ]
        return [Score(self.name, "acc@1", float(np.mean(means)), len(self.pairs)), *details]
