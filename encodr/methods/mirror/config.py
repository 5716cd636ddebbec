"""The Mirror-BERT recipe (Liu et al. 2021, §2–3): its fields, defaults and rules."""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import setting
from ..base import SingleRunRecipe

LOSS_NAMES = ("mirror_infonce",)
DEFAULT_DATA = ("words", "mesh", "wiki", "stsb-train", "none")


@dataclass(frozen=True)
class MirrorRecipe(SingleRunRecipe):
    """Resolved Mirror-BERT settings (bundled: ``word``, ``phrase``, ``sentence``): the shared
    fields (:class:`~encodr.methods.base.SingleRunRecipe`) and Mirror-BERT's own, each declared
    with its meaning and rule."""

    method: str = "mirror"
    loss: str = setting(
        "mirror_infonce",
        "Training objective; mirror_infonce is Mirror-BERT Eq. 1.",
        (lambda v: v in LOSS_NAMES, " | ".join(LOSS_NAMES)),
    )
    temperature: float = setting(
        0.04, "InfoNCE temperature τ (dimensionless) of Eq. 1.", (lambda v: 0 < v <= 10, "a number in (0, 10]")
    )
    span_mask: int = setting(
        5,
        "k, consecutive tokens replaced by the mask token in one of the two views (0: no span masking).",
        ge=0,
    )
    max_length: int = 50
    batch_size: int = setting(
        200,
        "Distinct strings per step over all processes (the loss sees 2× as many views, all of them candidates for every anchor).",
        ge=2,
    )
    dropout: float = setting(
        0.1, "Probability of every nn.Dropout in the encoder during training.", (lambda v: 0 <= v < 1, "a number in [0, 1)")
    )
    drophead: float = setting(
        0.0,
        "Probability of dropping a whole attention head (Zhou et al. 2020); 0: off.",
        (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    )
    false_negative_cos: float = setting(
        0.0,
        "In-batch false-negative filter (not in the paper; 0: off): two strings of a batch whose frozen "
        "base-model cosine is at least this are not each other's negatives in Eq. 1.",
        (lambda v: 0 <= v <= 1, "a number in [0, 1] (0: off)"),
    )
    default_data: str = setting("none", rule=(lambda v: v in DEFAULT_DATA, " | ".join(DEFAULT_DATA)))
