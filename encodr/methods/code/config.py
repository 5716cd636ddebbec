"""The code recipe: its fields, defaults and rules."""

from __future__ import annotations

from dataclasses import dataclass

from ...settings import setting
from ..base import SingleRunRecipe, grid_rule

QUERIES = ("summary", "docstring")


@dataclass(frozen=True)
class CodeRecipe(SingleRunRecipe):
    """Settings of the code recipe: the shared fields (``batch_size``: pairs per step, every other
    pair's code a negative; ``mini_batch``: sentence-transformers'
    ``CachedMultipleNegativesRankingLoss``) and the method's own, each declared with its meaning
    and rule."""

    method: str = "code"
    query: str = setting(
        "summary",
        "What of a definition's documentation is the query: summary, its first sentence (PEP 257's summary "
        "line; what a person types); docstring, all of it.",
        (lambda v: v in QUERIES, " | ".join(QUERIES)),
    )
    min_words: int = setting(3, 'A documentation whose query has fewer words is left out ("TODO", "Getter.").', ge=1)
    min_documented: int = setting(
        30,
        "Documented definitions needed to train with a dev fold; with fewer, the starting model is saved unchanged "
        "(--no-dev trains on them all, without selection).",
        ge=2,
    )
    dev_share: float = setting(
        0.2,
        "The share of documented definitions held out as the dev fold, by a hash of their path and qualified name "
        "(their documentation stays out of training; their code is searched without it).",
        (lambda v: 0 < v < 1, "a number in (0, 1)"),
    )
    hard_negatives: int = setting(
        1,
        "Negatives mined per pair with the starting model: the definitions of the same repository whose code it "
        "ranks highest for the query, leaving out the definition itself and those of the same name (overloads, "
        "overrides); 0: in-batch negatives only.",
        (lambda v: v in (0, 1), "0 or 1"),
    )
    scale: float = setting(
        20.0, "s = 1/τ of the InfoNCE softmax over cosines (sentence-transformers' MNRL: 20).", (lambda v: v > 0, "a number > 0")
    )
    query_max_length: int = setting(64, "Tokens of a query.", ge=4)
    max_length: int = setting(256, "Tokens of a definition's code (longer code is cut).", ge=16)
    fusion_weights: str = setting(
        "0.5,0.6,0.7,0.8,0.9,1",
        "The hybrid fusion weights α tried on the dev fold with the tuned model; one that beats the declared "
        "source-code α there is saved as the model's search.fusion_weight (encodr.json), which an index built with "
        "the model uses unless a search gives its own.",
        grid_rule(0, 1, "comma-separated numbers in [0, 1]"),
    )
    comments: int = setting(
        0,
        "Comment → block pairs from inside the definitions (a run of whole-line comments and the code lines "
        "right after it), at most this many, trained as a second stream beside the documented definitions; 0: off.",
        ge=0,
    )
    general: int = setting(
        0,
        "General English sentences (a sample of the bundled Wikipedia sentences) held where the starting model puts "
        "them while the code is learnt: each step adds general_weight × the mean 1 − cos between the model's vectors "
        "of a batch of them and the starting model's (learning without forgetting); 0: off.",
        ge=0,
    )
    general_weight: float = setting(
        1.0,
        "The weight of the general sentences' term in each step's loss (the code pairs' is 1).",
        (lambda v: v > 0, "a number > 0"),
    )
    batch_size: int = setting(32, rule=(lambda v: v >= 2, "an integer ≥ 2 (in-batch negatives)"))
    epochs: int = 3
    lr: float = 2e-5
    warmup: float = 0.1
    raw_pooling: str = "mean"
    default_data: str = setting("none", "None: pass a source folder.", (lambda v: v == "none", "none (pass a source folder)"))
