"""Optimisation settings shared by every method, and the one way a setting is declared.

A setting (an :class:`OptimArgs` field, a recipe's field) is declared once, with
:func:`setting`: its default, what it means and what it accepts. The rules ``--set`` applies
(:func:`field_rules`), the recipes reference and the TUI's hints (:func:`described`) are read
from that declaration, as sentence-transformers reads its training arguments from
``field(default=…, metadata={"help": …})``. A subclass that re-declares a field only to change
its default (``epochs: int = 2``) keeps the meaning and the rule of the class it extends.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable

AMP_MODES = ("auto", "bf16", "fp16", "no")

# (accepts the coerced value?, what is allowed, as an error message says it)
Rule = tuple[Callable[[Any], bool], str]
# key → its rule
Rules = dict[str, Rule]


def setting(default: Any, help: str = "", rule: Rule | None = None) -> Any:
    """The one declaration of a setting: a dataclass field with its ``default``, its meaning
    (``help``: one or more sentences, shown by the recipes reference and the TUI) and its
    ``rule`` (``(accepts, words)``: ``accepts(value)`` after type coercion, ``words`` what an
    error says is allowed). ``help`` and ``rule`` may be left out to keep those of the class the
    field's class extends."""
    return field(default=default, metadata={"help": help, "rule": rule})


def described(cls: type, name: str) -> tuple[str, Rule | None]:
    """Field ``name``'s meaning and rule: each from the nearest class of ``cls``'s MRO whose
    declaration gives one (``("", None)`` for a field declared without them)."""
    help_text, rule = "", None
    for klass in cls.__mro__:
        declared = getattr(klass, "__dataclass_fields__", {}).get(name)
        if declared is None:
            continue
        help_text = help_text or declared.metadata.get("help", "")
        rule = rule or declared.metadata.get("rule")
        if help_text and rule:
            break
    return help_text, rule


def field_rules(cls: type) -> Rules:
    """Every field of dataclass ``cls`` that has a rule (:func:`described`) → that rule."""
    found = {f.name: described(cls, f.name)[1] for f in fields(cls)}
    return {name: rule for name, rule in found.items() if rule is not None}


def like(cls: type, name: str, default: Any = None) -> Any:
    """A field declared as ``cls``'s field ``name`` is (meaning and rule), with its default or
    ``default``: a recipe's ``lr`` is :class:`OptimArgs`'s ``lr``."""
    declared = cls.__dataclass_fields__[name]
    help_text, rule = described(cls, name)
    return setting(declared.default if default is None else default, help_text, rule)


@dataclass(frozen=True)
class OptimArgs:
    """What :meth:`encodr.training.Trainer.fit` needs to optimise one model; each field's
    meaning and rule are in its declaration."""

    lr: float = setting(2e-5, "AdamW learning rate.", (lambda v: 0 < v < 1, "a number in (0, 1)"))
    epochs: int = setting(1, "Passes over the (first stream's) data.", (lambda v: v >= 1, "an integer ≥ 1"))
    batch_size: int = setting(
        32,
        "Global examples per optimizer step and stream (split over processes; a contrastive loss sees the whole "
        "global batch as candidates).",
        (lambda v: v >= 2, "an integer ≥ 2"),
    )
    weight_decay: float = setting(0.01, "AdamW weight decay.", (lambda v: v >= 0, "a number ≥ 0"))
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
        (lambda v: v in AMP_MODES, " | ".join(AMP_MODES)),
    )
    grad_accum: int = setting(
        1,
        "Micro-batches per optimizer step, each a full batch (adds no negatives to a contrastive loss: see mini_batch).",
        (lambda v: v >= 1, "an integer ≥ 1"),
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
