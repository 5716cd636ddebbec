"""Optimisation settings shared by every method, and the rules that validate them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

AMP_MODES = ("auto", "bf16", "fp16", "no")


@dataclass(frozen=True)
class OptimArgs:
    """What :meth:`encodr.training.Trainer.fit` needs to optimise one model.

    Attributes:
        lr: AdamW learning rate.
        epochs: passes over the first stream's data.
        batch_size: *global* examples per optimizer step and stream (split over processes;
            a contrastive loss sees the whole global batch as candidates).
        weight_decay: AdamW weight decay.
        max_grad_norm: clip the global gradient L2 norm to this (0: off).
        warmup: fraction of steps with a linear learning-rate warm-up, then linear decay to 0
            (0: constant learning rate).
        seed: seeds shuffling, masking, dropout and initialisation.
        amp: ``auto`` (bf16 on GPUs that have it, else fp16 with a gradient scaler; fp32 on
            CPU), ``bf16`` (also on CPU), ``fp16`` (CUDA only) or ``no``.
        grad_accum: micro-batches per optimizer step; each micro-batch is a full batch of
            ``batch_size`` examples. For a contrastive loss this does *not* add negatives
            (use ``mini_batch`` for that).
        mini_batch: with a contrastive loss, embed the batch in chunks of this many examples
            and cache the gradients (GradCache), so a batch of thousands needs the memory of
            one chunk; 0: off.
    """

    lr: float = 2e-5
    epochs: int = 1
    batch_size: int = 32
    weight_decay: float = 0.01
    max_grad_norm: float = 0.0
    warmup: float = 0.0
    seed: int = 42
    amp: str = "auto"
    grad_accum: int = 1
    mini_batch: int = 0

    @classmethod
    def of(cls, settings) -> "OptimArgs":
        """The optimisation fields of a recipe (any object with attributes of the same names;
        a field it lacks keeps its default)."""
        from dataclasses import fields

        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls) if hasattr(settings, f.name)})


# key → (accepts the coerced value?, what is allowed, as an error message says it)
Rules = dict[str, tuple[Callable[[Any], bool], str]]

OPTIM_RULES: Rules = {
    "lr": (lambda v: 0 < v < 1, "a number in (0, 1)"),
    "epochs": (lambda v: v >= 1, "an integer ≥ 1"),
    "batch_size": (lambda v: v >= 2, "an integer ≥ 2"),
    "weight_decay": (lambda v: v >= 0, "a number ≥ 0"),
    "max_grad_norm": (lambda v: v >= 0, "a number ≥ 0 (0: off)"),
    "warmup": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "amp": (lambda v: v in AMP_MODES, " | ".join(AMP_MODES)),
    "grad_accum": (lambda v: v >= 1, "an integer ≥ 1"),
    "mini_batch": (lambda v: v >= 0, "an integer ≥ 0 (0: off)"),
    "eval_steps": (lambda v: v >= 0, "an integer ≥ 0 (0: only at epoch ends)"),
}
