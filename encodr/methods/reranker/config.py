"""The re-ranker recipe: Trans-Encoder's fields, with the pair mining's."""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import setting
from ..trans_encoder.config import TransEncoderRecipe


@dataclass(frozen=True)
class RerankerRecipe(TransEncoderRecipe):
    """Settings of the self-trained re-ranker: Trans-Encoder's (:class:`TransEncoderRecipe`),
    with ordered pairs (``symmetric`` false: a query, then a passage) and the pair mining's,
    each declared with its meaning and rule."""

    method: str = "reranker"
    queries: int = setting(
        1000,
        "Inverse-cloze pseudo-queries drawn from the passages (a seeded sample; each is a sentence cut out of its "
        "passage, ORQA §5).",
        ge=2,
    )
    candidates: int = setting(
        8,
        "Pairs per query: its passage (the sentence removed, or kept at probability ict_keep) and the "
        "candidates − 1 other passages the starting bi-encoder ranks highest for it (exact search, FAISS).",
        (lambda v: v >= 2, "an integer ≥ 2 (its passage and at least one other)"),
    )
    ict_keep: float = setting(0.1, "The share of positives that keep the query sentence (ORQA: 0.1).", ge=0, le=1)
    positive_label: float = setting(
        1.0,
        "The label every labelling gives a query's own passage (it is known relevant); -1: none, the passage "
        "is labelled like any pair (plain Trans-Encoder).",
        (lambda v: v == -1 or 0 <= v <= 1, "a number in [0, 1], or -1 (none)"),
    )
    symmetric: bool = False
    bi_max_length: int = setting(256, "A passage's tokens (documents are split into passages that fit it).", ge=16)
    cross_max_length: int = setting(320, "A query's and a passage's tokens together.")
    cross_loss: str = setting(
        "listnet",
        "How the cross-encoder learns the labels: listnet, each query's candidates ranked together (ListNet "
        "over the group, labels divided by label_temperature); bce, each pair's label on its own (Eq. 2).",
        (lambda v: v in ("listnet", "bce"), "listnet | bce"),
    )
    label_temperature: float = setting(
        0.05, "τ of listnet (the target is softmax(labels / τ)).", (lambda v: v > 0, "a number > 0")
    )
    negative_ceiling: float = setting(
        0.0,
        "A mined negative must score below this share of the query's cosine with its positive (positive-aware mining); 0: off.",
        (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    )
    default_data: str = setting("none", "None: pass your documents.", (lambda v: v == "none", "none (pass your documents)"))
