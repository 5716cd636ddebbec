"""Recipes: declarative training settings read from YAML (``recipes/*.yaml``).

A recipe names a method (``loss``) and its hyper-parameters. Bundled recipes reproduce
the Mirror-BERT paper (§3 "Training Setup and Details", appendix D): ``word``, ``phrase``,
``sentence``. Users pass ``--recipe NAME`` or ``--recipe path/to/mine.yaml`` and may
override any field from the command line. Unknown keys and bad values raise
:class:`~encodr.errors.EncodrError` naming the key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

import yaml

from .errors import EncodrError
from .paths import recipes_dir

POOLINGS = ("auto", "cls", "mean")
RAW_POOLINGS = ("cls", "mean")
AMP_MODES = ("auto", "bf16", "fp16", "no")
LOSSES = ("mirror_infonce",)
DEFAULT_DATA = ("words", "mesh", "wiki", "stsb-train", "stsb-pairs", "none")
METHODS = ("mirror", "trans_encoder")


@dataclass(frozen=True)
class Recipe:
    """Resolved training settings.

    Attributes:
        name: recipe name (file stem).
        method: ``mirror`` (this class); ``trans_encoder`` recipes are
            :class:`TransEncoderRecipe`.
        loss: training objective; ``mirror_infonce`` is Mirror-BERT Eq. 1.
        temperature: InfoNCE temperature τ (dimensionless, > 0).
        span_mask: k, number of consecutive *tokens* replaced by the tokenizer's mask
            token in one of the two views (0 disables span masking).
        max_length: maximum sequence length in tokens, special tokens included.
        epochs: passes over the deduplicated strings.
        batch_size: distinct strings per step (the loss sees 2× as many views).
        lr: AdamW learning rate.
        weight_decay: AdamW weight decay.
        max_grad_norm: clip the gradient's global L2 norm to this value before each step
            (0: no clipping; the paper is silent. The Hugging Face trainer uses 1.0, and so
            does the bundled ``word`` recipe, chosen on the WordSim-353 dev set).
        dropout: probability of every ``nn.Dropout`` in the encoder during training.
        drophead: probability of dropping a whole attention head (Zhou et al. 2020);
            0 disables it.
        false_negative_cos: in-batch false-negative filter (not in the paper; 0 disables
            it). Before training, the frozen base model embeds every string; two strings
            of a batch whose base-model cosine (with the pooling being trained) is ≥ this
            value are not used as each other's negatives in Eq. 1, so near-synonyms already
            close in the base model are not pushed apart. In [0, 1]. Calibrate it to the
            pooling: raw-MLM [CLS] vectors all have high cosines (anisotropy).
        pooling: ``cls``, ``mean`` or ``auto`` (the base model's own pooling when it has
            one, else ``raw_pooling``).
        raw_pooling: pooling for a raw MLM that ships none (``cls`` or ``mean``); the
            paper uses [CLS], except mean for BERT sentence models (appendix B).
        seed: random seed for shuffling, masking, dropout and initialisation.
        amp: mixed precision on CUDA: ``auto`` (bf16 where supported, else fp16),
            ``bf16``, ``fp16``, ``no``. Always fp32 on CPU.
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
    dropout: float = 0.1
    drophead: float = 0.0
    false_negative_cos: float = 0.0
    pooling: str = "auto"
    raw_pooling: str = "cls"
    seed: int = 42
    amp: str = "auto"
    default_data: str = "none"
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The recipe as a plain dict (what ``recipe.yaml`` in an output directory holds)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class TransEncoderRecipe:
    """Settings of Trans-Encoder self- and mutual distillation (Liu et al. 2022, §2.2–2.4;
    defaults: Table 16, STS, base models).

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
        pooling, raw_pooling: bi-encoder pooling (see :class:`Recipe`).
        seed: random seed.
        amp: mixed precision on CUDA (see :class:`Recipe`).
        default_data: bundled pairs used when no FILE is given.
        description: one line shown by ``encodr recipes``.
    """

    name: str = "custom"
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
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_grad_norm: float = 1.0
    eval_steps: int = 200
    mine_k: int = 10
    mine_random: float = 0.25
    max_pairs: int = 0
    pooling: str = "auto"
    raw_pooling: str = "cls"
    seed: int = 42
    amp: str = "auto"
    default_data: str = "stsb-pairs"
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The recipe as a plain dict."""
        return dataclasses.asdict(self)

    def phase(self, which: str) -> "Optim":
        """Optimiser settings of one phase, ``cross`` or ``bi``."""
        return Optim(
            lr=getattr(self, f"{which}_lr"), epochs=getattr(self, f"{which}_epochs"), weight_decay=self.weight_decay,
            max_grad_norm=self.max_grad_norm, seed=self.seed, amp=self.amp, warmup=self.warmup,
        )  # fmt: skip


@dataclass(frozen=True)
class Optim:
    """What the training loop (:func:`encodr.train.fit`) needs: AdamW learning rate, epochs,
    weight decay, clipping, seed, mixed precision, and the warm-up fraction (0: constant
    learning rate; > 0: linear warm-up then linear decay)."""

    lr: float
    epochs: int
    weight_decay: float
    max_grad_norm: float
    seed: int
    amp: str
    warmup: float = 0.0


_CLASSES = {"mirror": Recipe, "trans_encoder": TransEncoderRecipe}


def _check(key: str, value: Any, cls: type = Recipe) -> Any:
    """Coerce and validate one field of ``cls``; raise EncodrError naming the key on a bad value."""
    types = {f.name: f.type for f in fields(cls)}
    if key not in types:
        known = ", ".join(sorted(types))
        raise EncodrError(f"unknown recipe key '{key}' for method '{cls().method}'; known keys: {known}")
    kind = types[key]
    try:
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            value = int(value)
        elif kind == "float":
            if isinstance(value, bool):
                raise ValueError
            value = float(value)
        else:
            value = str(value)
    except (TypeError, ValueError):
        raise EncodrError(f"recipe key '{key}' must be a{'n' if kind == 'int' else ''} {kind}, got {value!r}") from None
    rule = _RULES.get(key)
    prefix, _, suffix = key.partition("_")
    if rule is None and prefix in ("cross", "bi"):
        rule = _RULES.get(suffix)  # cross_lr, bi_batch_size…: the checks of their Mirror namesakes
    if rule is not None and not rule[0](value):
        raise EncodrError(f"recipe key '{key}' must be {rule[1]}, got {value!r}")
    return value


# key → (accepts the coerced value?, what is allowed, as the error message says it)
_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "temperature": (lambda v: 0 < v <= 10, "a number in (0, 10]"),
    "span_mask": (lambda v: v >= 0, "an integer ≥ 0"),
    "max_length": (lambda v: v >= 3, "an integer ≥ 3"),
    "epochs": (lambda v: v >= 1, "an integer ≥ 1"),
    "batch_size": (lambda v: v >= 2, "an integer ≥ 2"),
    "lr": (lambda v: 0 < v < 1, "a number in (0, 1)"),
    "weight_decay": (lambda v: v >= 0, "a number ≥ 0"),
    "max_grad_norm": (lambda v: v >= 0, "a number ≥ 0 (0: off)"),
    "dropout": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "drophead": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "false_negative_cos": (lambda v: 0 <= v <= 1, "a number in [0, 1] (0: off)"),
    "pooling": (lambda v: v in POOLINGS, " | ".join(POOLINGS)),
    "raw_pooling": (lambda v: v in RAW_POOLINGS, " | ".join(RAW_POOLINGS)),
    "amp": (lambda v: v in AMP_MODES, " | ".join(AMP_MODES)),
    "loss": (lambda v: v in LOSSES, " | ".join(LOSSES)),
    "default_data": (lambda v: v in DEFAULT_DATA, " | ".join(DEFAULT_DATA)),
    "method": (lambda v: v in METHODS, " | ".join(METHODS)),
    "cycles": (lambda v: v >= 1, "an integer ≥ 1"),
    "warmup": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "eval_steps": (lambda v: v >= 1, "an integer ≥ 1"),
    "mine_k": (lambda v: v >= 1, "an integer ≥ 1"),
    "mine_random": (lambda v: v >= 0, "a number ≥ 0"),
    "max_pairs": (lambda v: v >= 0, "an integer ≥ 0 (0: all)"),
}


def available() -> dict[str, Path]:
    """Bundled recipes by name → YAML path."""
    return {p.stem: p for p in sorted(recipes_dir().glob("*.yaml"))}


def load(spec: str, overrides: dict[str, Any] | None = None) -> Recipe | TransEncoderRecipe:
    """Load a recipe by bundled name or YAML path and apply overrides.

    Args:
        spec: a bundled recipe name (``word``, ``phrase``, ``sentence``…) or a path
            to a YAML mapping of recipe keys.
        overrides: field → value; ``None`` values are ignored (unset CLI options).

    Returns:
        The validated :class:`Recipe`, or :class:`TransEncoderRecipe` when the file says
        ``method: trans_encoder``.

    Raises:
        EncodrError: unknown recipe, unreadable or malformed YAML, unknown key, bad value.
    """
    bundled = available()
    path = Path(spec)
    if spec in bundled:
        path = bundled[spec]
    elif not (spec.endswith((".yaml", ".yml")) or path.exists()):
        raise EncodrError(
            f"unknown recipe '{spec}'; choose one of {', '.join(bundled)} or pass a path to a .yaml file"
        )
    if path.is_dir():
        raise EncodrError(f"recipe '{spec}' is a directory; pass a .yaml file or a bundled name")
    if not path.is_file():
        raise EncodrError(f"recipe file '{spec}' does not exist; pass an existing .yaml file or a bundled name")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise EncodrError(f"recipe file '{path}' is not valid YAML{where}; fix the syntax") from None
    except UnicodeDecodeError:
        raise EncodrError(f"recipe file '{path}' is not UTF-8 text; save it as UTF-8") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise EncodrError(f"recipe file '{path}' must be a YAML mapping of key: value, got {type(data).__name__}")
    cls = _CLASSES[_check("method", data.get("method", "mirror"))]
    values = {"name": path.stem}
    for key, value in data.items():
        values[str(key)] = _check(str(key), value, cls)
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = _check(key, value, cls)
    return cls(**values)
