"""The CMLM recipe (Yang et al. 2021, §2, §4.2, appendix C): fields, defaults, rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...training.args import Rules
from ..base import SingleRunRecipe


@dataclass(frozen=True)
class CMLMRecipe(SingleRunRecipe):
    """Settings of conditional masked language modelling plus bitext retrieval.

    Attributes:
        name: recipe name (file stem).
        method: always ``cmlm``.
        lr, epochs, weight_decay, max_grad_norm, warmup, seed, amp, grad_accum: optimisation
            (:class:`~encodr.training.OptimArgs`); an epoch is one pass over the CMLM pairs
            (over the bitext when there is no text).
        batch_size: adjacent-sentence pairs per CMLM step (global).
        bitext_batch_size: translation pairs per bitext step (global; the paper uses 2,048,
            reachable through ``mini_batch``).
        mini_batch: GradCache chunk size for the bitext stream (0: off).
        eval_steps: with a dev set, also evaluate every this many steps (0: epoch ends only).
        bitext_dev: without ``--dev``, this many ``--bitext`` pairs (at most a tenth) are held
            out of training as the dev set (:func:`~encodr.data.bitext.hold_out`), scored by
            acc@1 in both directions, so the run keeps its best checkpoint; 0: no dev set.
        max_length: tokens per sentence, special tokens included (paper: 256).
        mask_rate: share of s2's tokens masked (paper: 80 of 256 = 0.3125), replaced 80 % by
            the mask token, 10 % by a random token, 10 % unchanged, as in BERT.
        projections: N, the vectors s1 is projected into (paper: 15), one of them s1's own.
        margin: m of the additive-margin softmax (paper: 0.3).
        scale: s, the cosine scale of that softmax (see :class:`~encodr.losses.AdditiveMarginLoss`).
        cmlm_weight, bitext_weight: L = cmlm_weight · L_CMLM + bitext_weight · L_BR (paper: 1
            and 0.2); 0 switches a part off.
        pooling, raw_pooling: sentence-vector pooling (the paper: mean).
        default_data: ``bible-sample`` (Mark 1–8 in 7 languages, used when neither TEXT nor
            ``--bitext`` is given) or ``none`` (pass TEXT and/or ``--bitext``).
        description: one line shown by ``encodr recipes``.
    """

    method: str = "cmlm"
    bitext_batch_size: int = 64
    max_grad_norm: float = 1.0
    warmup: float = 0.1
    mask_rate: float = 0.3125
    projections: int = 15
    margin: float = 0.3
    scale: float = 20.0
    cmlm_weight: float = 1.0
    bitext_weight: float = 0.2
    raw_pooling: str = "mean"
    bitext_dev: int = 500

    RULES: ClassVar[Rules] = {
        **SingleRunRecipe.RULES,
        "bitext_batch_size": (lambda v: v >= 2, "an integer ≥ 2"),
        "max_length": (lambda v: v >= 4, "an integer ≥ 4"),
        "mask_rate": (lambda v: 0 < v < 1, "a number in (0, 1)"),
        "projections": (lambda v: v >= 1, "an integer ≥ 1"),
        "margin": (lambda v: v >= 0, "a number ≥ 0"),
        "scale": (lambda v: v > 0, "a number > 0"),
        "cmlm_weight": (lambda v: v >= 0, "a number ≥ 0 (0: off)"),
        "bitext_weight": (lambda v: v >= 0, "a number ≥ 0 (0: off)"),
        "bitext_dev": (lambda v: v >= 0, "an integer ≥ 0 (0: no dev set held out of --bitext)"),
        "default_data": (lambda v: v in ("none", "bible-sample"), "none | bible-sample"),
    }


