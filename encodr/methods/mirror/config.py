"""The Mirror-BERT recipe (Liu et al. 2021, §2–3): its fields, defaults and rules."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from ...training.args import OPTIM_RULES, OptimArgs, Rules

POOLINGS = ("auto", "cls", "mean")
RAW_POOLINGS = ("cls", "mean")
LOSS_NAMES = ("mirror_infonce",)
DEFAULT_DATA = ("words", "mesh", "wiki", "stsb-train", "none")


@dataclass(frozen=True)
class MirrorRecipe:
    """Resolved Mirror-BERT settings (bundled: ``word``, ``phrase``, ``sentence``).

    Attributes:
        name: recipe name (file stem).
        method: always ``mirror``.
        loss: training objective; ``mirror_infonce`` is Mirror-BERT Eq. 1.
        temperature: InfoNCE temperature τ (dimensionless, > 0).
        span_mask: k, number of consecutive *tokens* replaced by the tokenizer's mask
            token in one of the two views (0 disables span masking).
        max_length: maximum sequence length in tokens, special tokens included.
        epochs: passes over the deduplicated strings.
        batch_size: distinct strings per step over all processes (the loss sees 2× as
            many views, all of them candidates for every anchor).
        lr: AdamW learning rate.
        weight_decay: AdamW weight decay.
        max_grad_norm: clip the gradient's global L2 norm to this value before each step
            (0: no clipping; the paper is silent).
        warmup: fraction of steps with linear warm-up then linear decay (0: constant lr).
        grad_accum: batches per optimizer step (adds no negatives; see ``mini_batch``).
        mini_batch: embed each batch in chunks of this many views with gradient caching
            (GradCache), so a batch of thousands fits in the memory of a chunk; 0: off.
        eval_steps: with ``--dev``, also evaluate every this many steps (0: only the
            starting model and each epoch end).
        dropout: probability of every ``nn.Dropout`` in the encoder during training.
        drophead: probability of dropping a whole attention head (Zhou et al. 2020);
            0 disables it.
        false_negative_cos: in-batch false-negative filter (not in the paper; 0 disables
            it): two strings of a batch whose frozen base-model cosine is ≥ this value are
            not used as each other's negatives in Eq. 1. In [0, 1].
        pooling: ``cls``, ``mean`` or ``auto`` (the base model's own pooling when it has
            one, else ``raw_pooling``).
        raw_pooling: pooling for a raw MLM that ships none (``cls`` or ``mean``).
        seed: random seed for shuffling, masking, dropout and initialisation.
        amp: mixed precision: ``auto`` (bf16 where the GPU has it, else fp16; fp32 on
            CPU), ``bf16`` (CPU too), ``fp16`` (CUDA), ``no``.
        default_data: bundled training data used when no FILE is given.
        description: one line shown by ``encodr recipes``.
    """

    name: str = "custom"
    method: str = "mirror"
    loss: str = "mirror_infonce"
    temperature: float = 0.04
    span_mask: int = 5
    max_length: int = 50
    epochs: int = 1
    batch_size: int = 200
    lr: float = 2e-5
    weight_decay: float = 0.01
    max_grad_norm: float = 0.0
    warmup: float = 0.0
    grad_accum: int = 1
    mini_batch: int = 0
    eval_steps: int = 0
    dropout: float = 0.1
    drophead: float = 0.0
    false_negative_cos: float = 0.0
    pooling: str = "auto"
    raw_pooling: str = "cls"
    seed: int = 42
    amp: str = "auto"
    default_data: str = "none"
    description: str = ""

    RULES: ClassVar[Rules] = {
        **OPTIM_RULES,
        "temperature": (lambda v: 0 < v <= 10, "a number in (0, 10]"),
        "span_mask": (lambda v: v >= 0, "an integer ≥ 0"),
        "max_length": (lambda v: v >= 3, "an integer ≥ 3"),
        "dropout": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
        "drophead": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
        "false_negative_cos": (lambda v: 0 <= v <= 1, "a number in [0, 1] (0: off)"),
        "pooling": (lambda v: v in POOLINGS, " | ".join(POOLINGS)),
        "raw_pooling": (lambda v: v in RAW_POOLINGS, " | ".join(RAW_POOLINGS)),
        "loss": (lambda v: v in LOSS_NAMES, " | ".join(LOSS_NAMES)),
        "default_data": (lambda v: v in DEFAULT_DATA, " | ".join(DEFAULT_DATA)),
    }

    def to_dict(self) -> dict[str, Any]:
        """The recipe as a plain dict (what ``recipe.yaml`` in an output directory holds)."""
        return dataclasses.asdict(self)

    def optim(self) -> OptimArgs:
        """The optimisation settings the trainer takes."""
        return OptimArgs.of(self)
