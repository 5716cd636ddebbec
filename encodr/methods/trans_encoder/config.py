"""The Trans-Encoder recipe (Liu et al. 2022, §2.2–2.4): fields, defaults, rules."""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import described, setting
from ...training.args import OptimArgs
from ..base import Recipe

LENGTH = 3  # the fewest tokens of a sequence: [CLS], one token, [SEP]


def _step(name: str, default, help_text: str):
    """A phase's optimisation field (``cross_lr``…): its own default and meaning, the rule of
    :class:`OptimArgs`'s field ``name``."""
    return setting(default, help_text, described(OptimArgs, name)[1])


@dataclass(frozen=True)
class TransEncoderRecipe(Recipe):
    """Settings of Trans-Encoder self- and mutual distillation (defaults: Table 16, STS, base
    models): the shared fields and Trans-Encoder's own, each declared with its meaning and rule."""

    method: str = "trans_encoder"
    cycles: int = setting(3, "bi → cross → bi distillation cycles (paper: 3 for STS).", ge=1)
    cross_lr: float = _step("lr", 2e-5, "Learning rate of the bi → cross step (BCE on soft labels, Eq. 2).")
    cross_batch_size: int = _step(
        "batch_size", 32, "Pairs per step of the bi → cross step (a symmetric pair is read in both orders)."
    )
    cross_epochs: int = _step("epochs", 1, "Epochs of the bi → cross step.")
    cross_max_length: int = setting(64, "Tokens of the concatenated pair the cross-encoder reads.", ge=LENGTH)
    bi_lr: float = _step("lr", 5e-5, "Learning rate of the cross → bi step (MSE on cosine, Eq. 3).")
    bi_batch_size: int = _step("batch_size", 128, "Pairs per step of the cross → bi step.")
    bi_epochs: int = _step("epochs", 10, "Epochs of the cross → bi step (paper: 10).")
    bi_max_length: int = setting(32, "Tokens per sentence of the bi-encoder.", ge=LENGTH)
    warmup: float = setting(
        0.1,
        "Fraction of each phase's steps with a linear learning-rate warm-up, then linear decay (the schedule of "
        "sentence-transformers' fit, which the paper's code uses).",
    )
    max_grad_norm: float = setting(1.0, "Gradient clipping (sentence-transformers' fit default, 1.0; 0: off).")
    eval_steps: int = setting(
        200,
        "With --dev, evaluate every this many steps and at each epoch end and keep the best checkpoint (paper §4: "
        "every 200 steps).",
        ge=1,
    )
    mine_k: int = setting(10, "For plain-text input, neighbours searched per sentence with FAISS.", ge=1)
    mine_random: float = setting(
        0.25,
        "Random pairs added, as a fraction of the mined ones, so pseudo-labels span the whole similarity range.",
        ge=0,
    )
    max_pairs: int = setting(
        0, "Keep at most this many pairs (seeded sample; 0: all).", (lambda v: v >= 0, "an integer ≥ 0 (0: all)")
    )
    symmetric: bool = setting(
        True,
        "The pairs are unordered (two sentences, as in STS): the cross-encoder learns each pair in both orders "
        "and labels it with both orders averaged (§2.2); false for ordered pairs (a query and a passage).",
    )
    default_data: str = setting(
        "stsb-pairs", "Bundled pairs used when no FILE is given.", (lambda v: v in ("stsb-pairs", "none"), "stsb-pairs | none")
    )

    def phase(self, which: str) -> OptimArgs:
        """Optimiser settings of one phase, ``cross`` or ``bi``."""
        return OptimArgs(
            lr=getattr(self, f"{which}_lr"),
            epochs=getattr(self, f"{which}_epochs"),
            batch_size=getattr(self, f"{which}_batch_size"),
            weight_decay=self.weight_decay,
            max_grad_norm=self.max_grad_norm,
            seed=self.seed,
            amp=self.amp,
            warmup=self.warmup,
        )
