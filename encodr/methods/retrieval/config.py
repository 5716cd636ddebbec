"""The retrieval recipe: its fields, defaults and rules."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import EncodrError
from ...settings import setting
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
        raise EncodrError(
            f"matryoshka_dims {','.join(map(str, dims))}: the model gives {full} dimensions; list dimensions of at most {full}"
        )


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
    """Settings of label-free retrieval training on a user's documents: the shared fields
    (``batch_size``: pairs per step over all processes, every other pair's passage a negative,
    gathered across processes; ``mini_batch``: sentence-transformers'
    ``CachedMultipleNegativesRankingLoss``) and the method's own, each declared with its meaning
    and rule."""

    method: str = "retrieval"
    signals: str = setting(
        "ict",
        "How a (query, positive) pair is made from a passage, +-joined and drawn in turn: ict, a sentence is the "
        "query and its passage without it the positive (inverse cloze task, ORQA §5); crop, two independent "
        "random spans of the passage, each crop_min–crop_max of its words (Contriever §3.1); title, the "
        "document's title is the query for its passage (documents without one fall back to the next signal).",
        (
            lambda v: bool(signal_list(v)) and all(s in SIGNALS for s in signal_list(v)),
            "one or more of ict, crop, title joined by +",
        ),
    )
    ict_keep: float = setting(
        0.1,
        "The share of ICT pairs whose positive keeps the query sentence (ORQA: 0.1), so the model also learns to "
        "match words that do appear.",
        ge=0,
        le=1,
    )
    crop_min: float = setting(
        0.1, "Lower bound of a crop's share of the passage's words.", (lambda v: 0 < v <= 1, "a number in (0, 1]")
    )
    crop_max: float = setting(
        0.5,
        "Upper bound of a crop's share of the passage's words.",
        (lambda v: 0 < v <= 1, "a number in (0, 1], at least crop_min"),
    )
    scale: float = setting(
        20.0, "s = 1/τ of the InfoNCE softmax over cosines (sentence-transformers' MNRL: 20).", (lambda v: v > 0, "a number > 0")
    )
    query_max_length: int = setting(64, "Tokens of a query.", ge=4)
    max_length: int = setting(256, "Tokens of a passage (documents are split into passages that fit it).", ge=16)
    batch_size: int = setting(64, rule=(lambda v: v >= 2, "an integer ≥ 2 (in-batch negatives)"))
    lr: float = 2e-5
    warmup: float = 0.1
    dev_queries: int = setting(200, "Pseudo-queries --dev auto holds out (encodr.evaluation.pseudo.pseudo_dev).", ge=1)
    dev_documents: int = setting(
        5000,
        "Documents --dev auto searches at each evaluation (0: all); the pseudo-queries' own are always among them.",
        (lambda v: v >= 0, "an integer ≥ 0 (0: all)"),
    )
    dev_holdout: str = setting(
        "sentences",
        "What --dev auto keeps out of training: sentences, only each pseudo-query's sentence (its document, "
        "without it, is trained on: the dev set then also rewards remembering the training documents); "
        "documents, each pseudo-query's whole document (searched by the dev set, never trained on: the "
        "dev set measures the model on text it has not seen).",
        (lambda v: v in ("sentences", "documents"), "sentences or documents"),
    )
    matryoshka_dims: str = setting(
        "",
        "Comma-separated dimensions (256,128,64; empty: off): the loss becomes sentence-transformers' "
        "MatryoshkaLoss over the full dimension and each of these prefixes, weight 1 each (Kusupati et al. "
        "2022, §3), so that encodr index --dim N loses little for N among them.",
        (_dims_ok, "comma-separated dimensions ≥ 1, e.g. 256,128,64 (empty: off)"),
    )
    raw_pooling: str = "mean"
    default_data: str = setting("none", "None: pass your documents.", (lambda v: v == "none", "none (pass your documents)"))
