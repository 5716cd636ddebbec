"""The retrieval recipe: its fields, defaults and rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...training.args import Rules
from ...errors import EncodrError
from ..base import SingleRunRecipe

SIGNALS = ("ict", "crop", "title")


def dims_list(value: str) -> list[int]:
    """The dimensions of a ``matryoshka_dims`` field (``"256,128,64"``), in the order given;
    ``[]`` for ``""``. Raises ValueError on a part that is not an integer."""
    return [int(part) for part in value.replace(" ", "").split(",") if part]


def check_dims(dims: list[int], full: int) -> None:
    """Refuse ``matryoshka_dims`` above the model's dimension ``full``.

    Raises:
        EncodrError: naming the field, the dimensions and ``full``.
    """
    if dims and max(dims) > full:
        raise EncodrError(f"matryoshka_dims {','.join(map(str, dims))}: the model gives {full} dimensions; list dimensions of at most {full}")


def _dims_ok(value: str) -> bool:
    try:
        return all(d >= 1 for d in dims_list(value))
    except ValueError:
        return False


def signal_list(value: str) -> list[str]:
    """The signals of a ``signals`` field (``ict``, ``ict+crop``…), in order."""
    return [s.strip() for s in value.split("+") if s.strip()]


@dataclass(frozen=True)
class RetrievalRecipe(SingleRunRecipe):
    """Settings of label-free retrieval training on a user's documents.

    Attributes:
        name: recipe name (file stem).
        method: always ``retrieval``.
        signals: how a (query, positive) pair is made from a passage, ``+``-joined and drawn
            in turn: ``ict`` — a sentence is the query, its passage without it the positive
            (inverse cloze task, ORQA §5); ``crop`` — two independent random spans of the
            passage, each ``crop_min``–``crop_max`` of its words (Contriever §3.1); ``title`` —
            the document's title is the query for its passage (documents without a title
            fall back to the next signal).
        ict_keep: the share of ICT pairs whose positive keeps the query sentence (ORQA: 0.1),
            so the model also learns to match words that do appear.
        crop_min, crop_max: bounds of a crop's share of the passage's words.
        scale: s = 1/τ of the InfoNCE softmax over cosines (sentence-transformers' MNRL: 20).
        query_max_length: tokens of a query; ``max_length``: tokens of a passage (documents are
            split into passages that fit it).
        batch_size: pairs per step over all processes; every other pair's passage is a
            negative (gathered across processes).
        mini_batch: GradCache chunk (sentence-transformers' ``CachedMultipleNegativesRankingLoss``;
            0: off).
        matryoshka_dims: comma-separated dimensions (``"256,128,64"``; ``""``: off): the loss
            becomes sentence-transformers' ``MatryoshkaLoss`` over the full dimension and each of
            these prefixes, weight 1 each (Kusupati et al. 2022, §3), so that ``encodr index
            --dim N`` loses little for N among them.
        dev_queries: pseudo-queries ``--dev auto`` holds out (:func:`encodr.evaluation.pseudo.pseudo_dev`).
        dev_documents: documents ``--dev auto`` searches at each evaluation (0: all); the
            pseudo-queries' own are always among them.
        dev_holdout: what ``--dev auto`` keeps out of training: ``sentences`` — only each
            pseudo-query's sentence (its document, without it, is trained on: the dev set then
            also rewards remembering the training documents); ``documents`` — each pseudo-query's
            whole document (searched by the dev set, never trained on: the dev set measures
            how the model does on text it has not seen, as a user's real queries on new documents).
        eval_steps: with ``--dev``, also evaluate every this many steps (0: epoch ends only).
        lr, epochs, weight_decay, max_grad_norm, warmup, seed, amp, grad_accum: optimisation.
        pooling, raw_pooling: sentence-vector pooling.
        default_data, description: none (pass your documents); one line for ``encodr recipes``.
    """

    method: str = "retrieval"
    signals: str = "ict"
    ict_keep: float = 0.1
    crop_min: float = 0.1
    crop_max: float = 0.5
    scale: float = 20.0
    query_max_length: int = 64
    max_length: int = 256
    batch_size: int = 64
    lr: float = 2e-5
    warmup: float = 0.1
    dev_queries: int = 200
    dev_documents: int = 5000
    dev_holdout: str = "sentences"
    matryoshka_dims: str = ""
    raw_pooling: str = "mean"

    RULES: ClassVar[Rules] = {
        **SingleRunRecipe.RULES,
        "signals": (lambda v: bool(signal_list(v)) and all(s in SIGNALS for s in signal_list(v)), "one or more of ict, crop, title joined by +"),
        "ict_keep": (lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "crop_min": (lambda v: 0 < v <= 1, "a number in (0, 1]"),
        "crop_max": (lambda v: 0 < v <= 1, "a number in (0, 1], at least crop_min"),
        "scale": (lambda v: v > 0, "a number > 0"),
        "query_max_length": (lambda v: v >= 4, "an integer ≥ 4"),
        "max_length": (lambda v: v >= 16, "an integer ≥ 16"),
        "batch_size": (lambda v: v >= 2, "an integer ≥ 2 (in-batch negatives)"),
        "dev_queries": (lambda v: v >= 1, "an integer ≥ 1"),
        "dev_documents": (lambda v: v >= 0, "an integer ≥ 0 (0: all)"),
        "dev_holdout": (lambda v: v in ("sentences", "documents"), "sentences or documents"),
        "matryoshka_dims": (_dims_ok, "comma-separated dimensions ≥ 1, e.g. 256,128,64 (empty: off)"),
        "default_data": (lambda v: v == "none", "none (pass your documents)"),
    }
