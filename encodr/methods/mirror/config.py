"""The Mirror-BERT recipe (Liu et al. 2021, §2–3): its fields, defaults and rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...training.args import Rules
from ..base import SingleRunRecipe

LOSS_NAMES = ("mirror_infonce",)
DEFAULT_DATA = ("words", "mesh", "wiki", "stsb-train", "none")


@dataclass(frozen=True)
class MirrorRecipe(SingleRunRecipe):
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

    method: str = "mirror"
    loss: str = "mirror_infonce"
    temperature: float = 0.04
    span_mask: int = 5
    max_length: int = 50
    batch_size: int = 200
    dropout: float = 0.1
    drophead: float = 0.0
    false_negative_cos: float = 0.0

    RULES: ClassVar[Rules] = {
        **SingleRunRecipe.RULES,
        "temperature": (lambda v: 0 < v <= 10, "a number in (0, 10]"),
        "span_mask": (lambda v: v >= 0, "an integer ≥ 0"),
        "max_length": (lambda v: v >= 3, "an integer ≥ 3"),
        "dropout": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
        "drophead": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
        "false_negative_cos": (lambda v: 0 <= v <= 1, "a number in [0, 1] (0: off)"),
        "loss": (lambda v: v in LOSS_NAMES, " | ".join(LOSS_NAMES)),
        "default_data": (lambda v: v in DEFAULT_DATA, " | ".join(DEFAULT_DATA)),
    }


