"""Pair scoring: STS and word similarity (Spearman ρ), binary pairs (ROC-AUC).

Both work for bi-encoders (cosine of the two embeddings) and cross-encoders (σ of the
joint score, both orders averaged): anything with ``pair_scores(texts1, texts2)``.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import mannwhitneyu, spearmanr

from ..data.readers import LabelledPair, ScoredPair
from ..errors import EncodrError
from .base import Evaluator, Score


class _PairEvaluator(Evaluator):
    """Scores a list of pairs (anything with ``text1``, ``text2``) with the model."""

    def __init__(self, name: str, pairs: list):
        self.name = name
        self.pairs = pairs

    def predict(self, model, progress: bool = False) -> np.ndarray:
        """The model's similarity of each pair: float array (N,)."""
        return model.pair_scores([p.text1 for p in self.pairs], [p.text2 for p in self.pairs], progress=progress)

    def gold_groups(self) -> tuple[np.ndarray, np.ndarray, str, str]:
        """(indices of the high-gold pairs, of the low-gold pairs, their labels), for the
        score-distribution picture (Mirror-BERT §4, Fig. 7)."""
        raise NotImplementedError


class PairSimilarityEvaluator(_PairEvaluator):
    """Predicted similarity of each pair against gold scores, Spearman ρ × 100.

    Used for STS (sentences) and SimLex-999 / WordSim-353 (words), as in Mirror-BERT §3
    and SentEval: one ρ per dataset, never pooled across datasets. A torch bi-encoder is scored
    by sentence-transformers' ``EmbeddingSimilarityEvaluator`` (Spearman of the cosines); an
    ONNX one (:mod:`encodr.models.onnx`) here, by the same computation on its own vectors, since
    the library's evaluator would run the torch model. A cross-encoder is scored here: σ of its score averaged over both
    orders of each pair (Trans-Encoder §2.2), which the library's
    ``CrossEncoderCorrelationEvaluator`` (one order) does not do.
    """

    pairs: list[ScoredPair]

    def __init__(self, name: str, pairs: list[ScoredPair]):
        """Args:
            name: dataset name for the score table.
            pairs: pairs with gold scores on any scale.

        Raises:
            EncodrError: fewer than two different gold scores (ρ is undefined).
        """
        if len({p.score for p in pairs}) < 2:
            raise EncodrError(
                f"{name}: Spearman ρ needs pairs with at least two different gold scores; "
                f"it has {len(pairs)} pair{'s' * (len(pairs) != 1)}"
                f"{' all scored ' + format(pairs[0].score, 'g') if pairs else ''}"
            )
        super().__init__(name, pairs)

    def evaluate(self, model, progress: bool = False) -> list[Score]:
        from ..models import Encoder

        gold = [p.score for p in self.pairs]
        if isinstance(model, Encoder) and model.backend == "torch":  # the library runs the torch model itself
            from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

            library = EmbeddingSimilarityEvaluator(
                [p.text1 for p in self.pairs],
                [p.text2 for p in self.pairs],
                gold,
                batch_size=128,
                similarity_fn_names=["cosine"],
                show_progress_bar=progress,
                write_csv=False,
            )
            rho = library(model.st)["spearman_cosine"]
        else:
            rho = spearmanr(self.predict(model, progress), np.array(gold)).statistic
        return [Score(self.name, "spearman", float(rho) * 100, len(self.pairs))]

    def gold_groups(self) -> tuple[np.ndarray, np.ndarray, str, str]:
        """The top and bottom quarter of the pairs by gold score."""
        gold = np.array([p.score for p in self.pairs], dtype=np.float64)
        high, low = np.quantile(gold, 0.75), np.quantile(gold, 0.25)
        return (
            np.flatnonzero(gold >= high),
            np.flatnonzero(gold <= low),
            f"gold ≥ {high:g} (top quarter)",
            f"gold ≤ {low:g} (bottom quarter)",
        )


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve: the probability that a random positive pair scores above a
    random negative one (ties count ½), via the Mann–Whitney U statistic.

    Args:
        scores: float (N,); labels: int (N,) of 0/1 with both classes present.

    Returns:
        AUC in [0, 1].
    """
    positive, negative = scores[labels == 1], scores[labels == 0]
    u = mannwhitneyu(positive, negative, alternative="two-sided").statistic
    return float(u) / (len(positive) * len(negative))


class PairClassificationEvaluator(_PairEvaluator):
    """Binary pair tasks (QQP, QNLI, MRPC): ROC-AUC × 100 of the predicted similarity
    (Trans-Encoder §3, following Li et al. 2020 and Liu et al. 2021)."""

    pairs: list[LabelledPair]

    def evaluate(self, model, progress: bool = False) -> list[Score]:
        predicted = self.predict(model, progress)
        labels = np.array([p.label for p in self.pairs])
        return [Score(self.name, "roc_auc", roc_auc(np.asarray(predicted, dtype=np.float64), labels) * 100, len(self.pairs))]

    def gold_groups(self) -> tuple[np.ndarray, np.ndarray, str, str]:
        """Positive and negative pairs (Mirror-BERT Fig. 7 draws QQP this way)."""
        labels = np.array([p.label for p in self.pairs])
        return np.flatnonzero(labels == 1), np.flatnonzero(labels == 0), "positive pairs", "negative pairs"
