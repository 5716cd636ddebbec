"""Pair similarity: STS and word similarity (Mirror-BERT §3 evaluation protocol)."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from .base import Evaluator, Score
from .readers import ScoredPair


class PairSimilarityEvaluator(Evaluator):
    """Cosine similarity of each pair's two embeddings against gold scores, Spearman ρ × 100.

    Used for STS (sentences) and SimLex-999 / WordSim-353 (words), as in Mirror-BERT §3
    and SentEval: one ρ per dataset, never pooled across datasets.
    """

    def __init__(self, name: str, pairs: list[ScoredPair]):
        self.name = name
        self.pairs = pairs

    def evaluate(self, encoder, progress: bool = False) -> list[Score]:
        texts = list(dict.fromkeys(t for p in self.pairs for t in (p.text1, p.text2)))
        index = {t: i for i, t in enumerate(texts)}
        vectors = encoder.encode(texts, progress=progress)
        a = vectors[[index[p.text1] for p in self.pairs]]
        b = vectors[[index[p.text2] for p in self.pairs]]
        cosine = np.sum(a * b, axis=1)  # unit vectors
        gold = np.array([p.score for p in self.pairs])
        rho = spearmanr(cosine, gold).statistic
        return [Score(self.name, "spearman", float(rho) * 100, len(self.pairs))]
