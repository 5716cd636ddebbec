"""The static-distillation recipe (model2vec's ``distill``): its fields, defaults and rules."""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import setting
from ..base import Recipe


@dataclass(frozen=True)
class StaticRecipe(Recipe):
    """Resolved distillation settings (bundled: ``static``): the shared fields
    (:class:`~encodr.methods.base.Recipe`) and model2vec's own, each declared with its meaning
    and rule. Nothing is trained by gradient descent, so there is no learning rate or batch."""

    method: str = "static"
    pca_dims: int = setting(
        256,
        "Dimensions of the token vectors after PCA (0: keep the model's own).",
        (lambda v: v >= 0, "an integer ≥ 0 (0: no PCA)"),
    )
    sif_coefficient: float = setting(
        1e-4,
        "SIF weighting a / (a + p(token)) of each token's vector, p from the token's rank (0: off).",
        (lambda v: 0 <= v < 1, "a number in [0, 1) (0: no weighting)"),
    )
