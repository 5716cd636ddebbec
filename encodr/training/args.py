"""Optimisation settings shared by every method.

An :class:`OptimArgs` field, like a recipe's, is declared once with
:func:`encodr.settings.setting`: its default, what it means and what it accepts. The rules
``--set`` applies (:func:`~encodr.settings.field_rules`), the recipes reference and the TUI's
hints (:func:`~encodr.settings.described`) are read from that declaration, as
sentence-transformers reads its training arguments from ``field(default=…, metadata={"help": …})``.
A subclass that re-declares a field only to change its default (``epochs: int = 2``) keeps the
meaning and the rule of the class it extends.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..settings import setting

AMP_MODES = ("auto", "bf16", "fp16", "no")


@dataclass(frozen=True)
class OptimArgs:
    """What :meth:`encodr.training.Trainer.fit` needs to optimise one model; each field's
    meaning and rule are in its declaration."""

    lr: float = setting(2e-5, "AdamW learning rate.", (lambda v: 0 < v < 1, "a number in (0, 1)"))
    epochs: int = setting(1, "Passes over the (first stream's) data.", ge=1)
    batch_size: int = setting(
        32,
        "Global examples per optimizer step and stream (split over processes; a contrastive loss sees the whole "
        "global batch as candidates).",
        ge=2,
    )
    weight_decay: float = setting(0.01, "AdamW weight decay.", ge=0)
    max_grad_norm: float = setting(
        0.0, "Clip the global gradient L2 norm to this before each step (0: off).", (lambda v: v >= 0, "a number ≥ 0 (0: off)")
    )
    warmup: float = setting(
        0.0,
        "Fraction of steps with a linear learning-rate warm-up, then linear decay to 0 (0: constant).",
        (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    )
    seed: int = setting(42, "Seeds shuffling, masking, dropout and initialisation.")
    amp: str = setting(
        "auto",
        "Mixed precision: auto (bf16 on GPUs that have it, else fp16 with a gradient scaler; fp32 on CPU), bf16 "
        "(also on CPU), fp16 (CUDA only) or no.",
        choices=AMP_MODES,
    )
    grad_accum: int = setting(
        1,
        "Micro-batches per optimizer step, each a full batch (adds no negatives to a contrastive loss: see mini_batch).",
        ge=1,
    )
    mini_batch: int = setting(
        0,
        "With a contrastive loss, embed the batch in chunks of this many examples and cache the gradients "
        "(GradCache), so a batch of thousands needs the memory of one chunk; 0: off.",
        (lambda v: v >= 0, "an integer ≥ 0 (0: off)"),
    )

    @classmethod
    def of(cls, settings) -> "OptimArgs":
        """The optimisation fields of a recipe (any object with attributes of the same names;
        a field it lacks keeps its default)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls) if hasattr(settings, f.name)})
