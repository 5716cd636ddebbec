"""The CMLM recipe (Yang et al. 2021, §2, §4.2, appendix C): fields, defaults, rules."""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import setting
from ..base import SingleRunRecipe


@dataclass(frozen=True)
class CMLMRecipe(SingleRunRecipe):
    """Settings of conditional masked language modelling plus bitext retrieval: the shared
    fields (an epoch is one pass over the CMLM pairs, over the bitext when there is no text;
    ``batch_size`` is adjacent-sentence pairs per CMLM step; ``mini_batch`` chunks the bitext
    stream) and CMLM's own, each declared with its meaning and rule."""

    method: str = "cmlm"
    bitext_batch_size: int = setting(
        64,
        "Translation pairs per bitext step, global (the paper uses 2,048, reachable through mini_batch).",
        ge=2,
    )
    max_length: int = setting(64, "Tokens per sentence, special tokens included (paper: 256).", ge=4)
    max_grad_norm: float = 1.0
    warmup: float = 0.1
    mask_rate: float = setting(
        0.3125,
        "Share of s2's tokens masked (paper: 80 of 256), replaced 80 % by the mask token, 10 % by a random "
        "token, 10 % unchanged, as in BERT.",
        (lambda v: 0 < v < 1, "a number in (0, 1)"),
    )
    projections: int = setting(15, "N, the vectors s1 is projected into (paper: 15), one of them s1's own.", ge=1)
    margin: float = setting(0.3, "m of the additive-margin softmax of bitext retrieval (paper: 0.3).", ge=0)
    scale: float = setting(
        20.0, "s, the cosine scale of that softmax (encodr.losses.AdditiveMarginLoss).", (lambda v: v > 0, "a number > 0")
    )
    cmlm_weight: float = setting(
        1.0,
        "Weight of L_CMLM in L = cmlm_weight · L_CMLM + bitext_weight · L_BR (paper: 1); 0: off.",
        (lambda v: v >= 0, "a number ≥ 0 (0: off)"),
    )
    bitext_weight: float = setting(
        0.2, "Weight of L_BR, bitext retrieval (paper: 0.2); 0: off.", (lambda v: v >= 0, "a number ≥ 0 (0: off)")
    )
    raw_pooling: str = "mean"
    bitext_dev: int = setting(
        500,
        "Without --dev, this many --bitext pairs (at most a tenth) are held out of training as the dev set, "
        "scored by acc@1 in both directions, so the run keeps its best checkpoint; 0: no dev set.",
        (lambda v: v >= 0, "an integer ≥ 0 (0: no dev set held out of --bitext)"),
    )
    default_data: str = setting(
        "none",
        "bible-sample (Mark 1–8 in 7 languages, used when neither TEXT nor --bitext is given) or none.",
        (lambda v: v in ("none", "bible-sample"), "none | bible-sample"),
    )
