"""The Trans-Encoder recipe (Liu et al. 2022, §2.2–2.4): fields, defaults, rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...training.args import OptimArgs, Rules
from ..base import Recipe


@dataclass(frozen=True)
class TransEncoderRecipe(Recipe):
    """Settings of Trans-Encoder self- and mutual distillation (defaults: Table 16, STS,
    base models).

    Attributes:
        name: recipe name (file stem).
        method: always ``trans_encoder``.
        cycles: bi → cross → bi distillation cycles (paper: 3 for STS).
        cross_lr, cross_batch_size, cross_epochs, cross_max_length: the bi → cross step
            (BCE on soft labels, Eq. 2): 2e-5, 32 pairs (each read in both orders), 1
            epoch, 64 tokens for the concatenated pair.
        bi_lr, bi_batch_size, bi_epochs, bi_max_length: the cross → bi step (MSE on
            cosine, Eq. 3): 5e-5, 128 pairs, 10 epochs, 32 tokens per sentence.
        weight_decay: AdamW weight decay.
        warmup: fraction of each phase's steps with a linear learning-rate warm-up,
            followed by linear decay (the sentence-transformers ``fit`` schedule the
            paper's code uses).
        max_grad_norm: gradient clipping (sentence-transformers ``fit`` default 1.0).
        eval_steps: with ``--dev``, evaluate every this many steps and at each epoch end
            and keep the best checkpoint (paper §4: every 200 steps).
        mine_k: for plain-text input, neighbours searched per sentence with FAISS.
        mine_random: random pairs added, as a fraction of the mined ones, so pseudo-labels
            span the whole similarity range.
        max_pairs: keep at most this many pairs (seeded sample; 0: all).
        symmetric: the pairs are unordered (two sentences, as in STS): the cross-encoder
            learns each pair in both orders and labels it with both orders averaged (§2.2).
            ``false`` for ordered pairs (a query and a passage): one order only.
        pooling, raw_pooling: bi-encoder pooling (see the Mirror recipe).
        seed: random seed.
        amp: mixed precision (see :func:`encodr.training.mixed_precision`).
        default_data: bundled pairs used when no FILE is given.
        description: one line shown by ``encodr recipes``.
    """

    method: str = "trans_encoder"
    cycles: int = 3
    cross_lr: float = 2e-5
    cross_batch_size: int = 32
    cross_epochs: int = 1
    cross_max_length: int = 64
    bi_lr: float = 5e-5
    bi_batch_size: int = 128
    bi_epochs: int = 10
    bi_max_length: int = 32
    warmup: float = 0.1
    max_grad_norm: float = 1.0
    eval_steps: int = 200
    mine_k: int = 10
    mine_random: float = 0.25
    max_pairs: int = 0
    symmetric: bool = True
    default_data: str = "stsb-pairs"

    PHASES: ClassVar[tuple[str, ...]] = ("cross", "bi")
    RULES: ClassVar[Rules] = {
        **Recipe.RULES,
        "max_length": (lambda v: v >= 3, "an integer ≥ 3"),
        "cycles": (lambda v: v >= 1, "an integer ≥ 1"),
        "eval_steps": (lambda v: v >= 1, "an integer ≥ 1"),
        "mine_k": (lambda v: v >= 1, "an integer ≥ 1"),
        "mine_random": (lambda v: v >= 0, "a number ≥ 0"),
        "max_pairs": (lambda v: v >= 0, "an integer ≥ 0 (0: all)"),
        "default_data": (lambda v: v in ("stsb-pairs", "none"), "stsb-pairs | none"),
    }


    def phase(self, which: str) -> OptimArgs:
        """Optimiser settings of one phase, ``cross`` or ``bi``."""
        return OptimArgs(
            lr=getattr(self, f"{which}_lr"), epochs=getattr(self, f"{which}_epochs"), batch_size=getattr(self, f"{which}_batch_size"),
            weight_decay=self.weight_decay, max_grad_norm=self.max_grad_norm, seed=self.seed, amp=self.amp, warmup=self.warmup,
        )  # fmt: skip
