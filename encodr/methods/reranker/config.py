"""The re-ranker recipe: Trans-Encoder's fields, with the pair mining's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...training.args import Rules
from ..trans_encoder.config import TransEncoderRecipe


@dataclass(frozen=True)
class RerankerRecipe(TransEncoderRecipe):
    """Settings of the self-trained re-ranker: Trans-Encoder's (:class:`TransEncoderRecipe`),
    with ordered pairs (``symmetric`` false: a query, then a passage) and these:

    Attributes:
        method: always ``reranker``.
        queries: inverse-cloze pseudo-queries drawn from the passages (a seeded sample; each
            is a sentence cut out of its passage, ORQA §5).
        candidates: pairs per query: its passage (the sentence removed, or kept at
            probability ``ict_keep``) and the ``candidates − 1`` other passages the starting
            bi-encoder ranks highest for it (exact inner-product search, FAISS).
        ict_keep: the share of positives that keep the query sentence (ORQA: 0.1).
        positive_label: the label every labelling gives a query's own passage (it is known
            relevant); ``-1``: none, the passage is labelled like any pair (plain Trans-Encoder).
        bi_max_length, cross_max_length: a passage's tokens; a query's and a passage's
            together (documents are split into passages that fit ``bi_max_length``).
        cross_loss: how the cross-encoder learns the labels: ``listnet``, each query's
            candidates ranked together (ListNet over the group, labels divided by
            ``label_temperature``: :func:`~encodr.methods.reranker.method.listwise_stream`);
            ``bce``, each pair's label on its own (Trans-Encoder's Eq. 2).
        label_temperature: τ of ``listnet`` (the target is ``softmax(labels / τ)``).
        negative_ceiling: a mined negative must score below this share of the query's cosine
            with its positive (positive-aware mining, :func:`~encodr.methods.reranker.method.mine`); 0: off.
    """

    method: str = "reranker"
    queries: int = 1000
    candidates: int = 8
    ict_keep: float = 0.1
    positive_label: float = 1.0
    symmetric: bool = False
    bi_max_length: int = 256
    cross_max_length: int = 320
    cross_loss: str = "listnet"
    label_temperature: float = 0.05
    negative_ceiling: float = 0.0
    default_data: str = "none"

    RULES: ClassVar[Rules] = {
        **TransEncoderRecipe.RULES,
        "queries": (lambda v: v >= 2, "an integer ≥ 2"),
        "candidates": (lambda v: v >= 2, "an integer ≥ 2 (its passage and at least one other)"),
        "ict_keep": (lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "positive_label": (lambda v: v == -1 or 0 <= v <= 1, "a number in [0, 1], or -1 (none)"),
        "bi_max_length": (lambda v: v >= 16, "an integer ≥ 16"),
        "cross_loss": (lambda v: v in ("listnet", "bce"), "listnet | bce"),
        "label_temperature": (lambda v: v > 0, "a number > 0"),
        "negative_ceiling": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
        "default_data": (lambda v: v == "none", "none (pass your documents)"),
    }
