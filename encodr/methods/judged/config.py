"""The judged recipe: its fields, defaults and rules."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...settings import Rule, setting
from ...training.args import OptimArgs
from ..base import SingleRunRecipe, grid_rule


def _length(low: int) -> Rule:
    return (lambda v: v >= low, f"an integer ≥ {low}")


@dataclass(frozen=True)
class JudgedRecipe(SingleRunRecipe):
    """Settings of learning from relevance judgments: the shared fields (the bi-encoder's
    optimisation; ``mini_batch`` > 0: ``CachedMultipleNegativesRankingLoss``, GradCache) and the
    method's own, each declared with its meaning and rule."""

    method: str = "judged"
    negatives: int = setting(
        1,
        "Hard negatives per (query, relevant passage) pair for the bi-encoder, mined from the corpus by the starting "
        "model (sentence-transformers' mine_hard_negatives), documents judged relevant to the query left out; "
        "documents judged not relevant (grade 0) come first.",
        ge=0,
    )
    margin: float = setting(
        0.05,
        "A mined negative must score below (1 − margin) × the positive's cosine (relative_margin): near-duplicates "
        "of the positive are skipped.",
        (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    )
    scale: float = setting(
        20.0, "s = 1/τ of MNRL's softmax over cosines (sentence-transformers: 20).", (lambda v: v > 0, "a number > 0")
    )
    query_max_length: int = setting(64, "Tokens of a query.", _length(4))
    max_length: int = setting(256, "Tokens of a passage.", _length(16))
    epochs: int = 1  # with folds 2, the whole run on SciFact's judgments fits issue 63's 20 minutes on 2 CPU cores
    batch_size: int = 32
    lr: float = 2e-5
    warmup: float = 0.1
    min_queries: int = setting(
        20,
        "Judged queries (with a relevant document) needed to cross-validate; with fewer, the start model is kept "
        "unless --no-dev.",
        ge=2,
    )
    folds: int = setting(
        2,
        "Folds of the cross-validation over the judged queries (a hash of the query text; queries that share a "
        "relevant document in one fold): each component is trained folds + 1 times, on the other folds and then on "
        "every query.",
        ge=2,
    )
    significance: float = setting(
        0.1,
        "A component is kept when its cross-validated nDCG@10 gain over what it replaces is positive with a "
        "one-sided paired randomization test's p below this (encodr.evaluation.significance): lenient, since a few "
        "hundred queries cannot give p < 0.05 for a gain of a point, yet strict enough that judgments without "
        "signal (random grades, shuffled qrels) seldom keep anything; 1: any gain.",
        (lambda v: 0 < v <= 1, "a number in (0, 1]"),
    )
    cross: bool = setting(
        False,
        "Train a re-ranker (a cross-encoder from the base model's transformer) on the judged pairs and mined "
        "negatives, kept when it beats no re-ranking in cross-validation. Off by default: it multiplies the run's "
        "time, and on SciFact's judgments it did not pass (bench/notes/judged.md).",
    )
    cross_negatives: int = setting(4, "Negatives per judged pair for the cross-encoder.", ge=1)
    cross_lr: float = setting(2e-5, "The cross-encoder's learning rate.", (lambda v: 0 < v < 1, "a number in (0, 1)"))
    cross_epochs: int = setting(1, "The cross-encoder's epochs.", ge=1)
    cross_batch_size: int = setting(16, "The cross-encoder's pairs per step.", ge=1)
    cross_max_length: int = setting(
        320, "Tokens of a query and a passage together, as the cross-encoder reads them.", _length(16)
    )
    distill: bool = setting(
        True,
        "The seeds' loop (AugSBERT / Trans-Encoder §2.3), with cross: the cross-encoder labels unjudged (query, "
        "passage) pairs and the bi-encoder learns the margins (MarginMSE), kept when it beats the bi-encoder before "
        "it in cross-validation; on SciFact's judgments it did not pass (bench/notes/judged.md).",
    )
    distill_queries: int = setting(
        500,
        "Pseudo-queries cut from the corpus's passages (inverse cloze) added to the judged queries for the loop.",
        ge=0,
    )
    distill_candidates: int = setting(8, "Passages per query the bi-encoder retrieves for the cross-encoder to label.", ge=2)
    distill_lr: float = setting(1e-5, "The loop's learning rate for the bi-encoder.", (lambda v: 0 < v < 1, "a number in (0, 1)"))
    distill_epochs: int = setting(1, "The loop's epochs.", ge=1)
    fusion_weights: str = setting(
        "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
        "The hybrid fusion weights α tried, one α for every text, against the fusion's declared weights (each "
        "fold's queries ranked with the α best on the other folds).",
        grid_rule(0, 1, "comma-separated numbers in [0, 1]"),
    )
    rerank_depths: str = setting("10,20,50", "The re-ranker's depths tried.", grid_rule(1, None, "comma-separated integers ≥ 1"))
    rerank_weights: str = setting(
        "0.25,0.5,0.75,1", "The re-ranker's weights tried.", grid_rule(0, 1, "comma-separated numbers in [0, 1]")
    )
    adapter: bool = setting(
        True,
        "Learn a query adapter (a low-rank map on query vectors, encodr.index.adapter) from every judged query, "
        "stored with the index and applied at search time (no re-index); kept when its "
        "cross-validated nDCG@10 (the index's default search, on the recipe's folds) beats the model alone (see "
        "adapter_keep_p).",
    )
    adapter_rank: int = setting(
        1,
        "The rank r of the adapter's correction (U Vᵀ, each d × r): higher ranks learn the judged documents rather than "
        "the kind of query (bench/notes/query_adapter.md).",
        ge=1,
    )
    adapter_keep_p: float = setting(
        0.1,
        "The adapter is kept when its cross-validated gain is positive with a one-sided paired randomization test's p "
        "below this: lenient, as significance is, since a few hundred queries cannot give p < 0.05 for a gain of "
        "a point, yet random judgments (no gain) are seldom kept.",
        (lambda v: 0 < v <= 1, "a number in (0, 1]"),
    )
    raw_pooling: str = "mean"
    default_data: str = setting(
        "none",
        "None: pass an index with --index, or a BEIR folder.",
        (lambda v: v == "none", "none (pass an index with --index, or a BEIR folder)"),
    )

    def cross_optim(self) -> OptimArgs:
        """The cross-encoder's optimisation settings."""
        return replace(
            OptimArgs.of(self), lr=self.cross_lr, epochs=self.cross_epochs, batch_size=self.cross_batch_size, mini_batch=0
        )

    def distill_optim(self) -> OptimArgs:
        """The bi-encoder's optimisation settings in the distillation loop."""
        return replace(OptimArgs.of(self), lr=self.distill_lr, epochs=self.distill_epochs)
