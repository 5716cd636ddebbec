"""The judged recipe: its fields, defaults and rules."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...training.args import OptimArgs, Rules
from ..base import SingleRunRecipe


def number_list(value: str) -> list[float]:
    """The numbers of a comma-separated grid (``"0.3,0.5,0.7"``), in order. Raises ValueError
    on a part that is not a number."""
    return [float(part) for part in str(value).replace(" ", "").split(",") if part]


def _grid(low: float, high: float | None):
    def ok(value: str) -> bool:
        try:
            found = number_list(value)
        except ValueError:
            return False
        return bool(found) and all(v >= low and (high is None or v <= high) for v in found)

    return ok


@dataclass(frozen=True)
class JudgedRecipe(SingleRunRecipe):
    """Settings of learning from relevance judgments.

    Attributes:
        name, method: recipe name; always ``judged``.
        negatives: hard negatives per (query, relevant passage) pair for the bi-encoder, mined
            from the corpus by the starting model (sentence-transformers' ``mine_hard_negatives``),
            documents judged relevant to the query left out; documents judged not relevant
            (grade 0) come first.
        margin: a mined negative must score below (1 − margin) × the positive's cosine
            (``relative_margin``): near-duplicates of the positive are skipped.
        scale: s = 1/τ of MNRL's softmax over cosines (sentence-transformers: 20).
        query_max_length, max_length: tokens of a query and of a passage.
        lr, epochs, batch_size, mini_batch, warmup…: the bi-encoder's optimisation
            (``mini_batch`` > 0: ``CachedMultipleNegativesRankingLoss``, GradCache).
        min_queries: judged queries (with a relevant document) needed to hold out a dev fold;
            with fewer, the start model is kept unless ``--no-dev``.
        significance: a component is kept only when its per-query dev nDCG@10 beats what it
            replaces with a one-sided paired randomization test's p below this
            (:mod:`encodr.evaluation.significance`); 1: any gain on average.
        cross: train a re-ranker (a cross-encoder from the base model's transformer) on the
            judged pairs and mined negatives, kept when it beats no re-ranking on dev.
        cross_negatives: negatives per judged pair for the cross-encoder.
        cross_lr, cross_epochs, cross_batch_size, cross_max_length: its optimisation.
        distill: the seeds' loop (AugSBERT / Trans-Encoder §2.3): the cross-encoder labels
            unjudged (query, passage) pairs and the bi-encoder learns the margins (MarginMSE),
            kept when it beats the bi-encoder before it on dev.
        distill_queries: pseudo-queries cut from the corpus's passages (inverse cloze) added to
            the judged queries for the loop.
        distill_candidates: passages per query the bi-encoder retrieves for the cross-encoder to label.
        distill_lr, distill_epochs: the loop's optimisation of the bi-encoder.
        fusion_weights: the convex fusion weights α tried on dev (the declared default among them).
        rerank_depths, rerank_weights: the re-ranker's depths and weights tried on dev.
    """

    method: str = "judged"
    negatives: int = 1
    margin: float = 0.05
    scale: float = 20.0
    query_max_length: int = 64
    max_length: int = 256
    epochs: int = 2
    batch_size: int = 32
    lr: float = 2e-5
    warmup: float = 0.1
    min_queries: int = 20
    significance: float = 0.05
    cross: bool = True
    cross_negatives: int = 4
    cross_lr: float = 2e-5
    cross_epochs: int = 1
    cross_batch_size: int = 16
    cross_max_length: int = 320
    distill: bool = True
    distill_queries: int = 500
    distill_candidates: int = 8
    distill_lr: float = 1e-5
    distill_epochs: int = 1
    fusion_weights: str = "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1"
    rerank_depths: str = "10,20,50"
    rerank_weights: str = "0.25,0.5,0.75,1"
    raw_pooling: str = "mean"

    RULES: ClassVar[Rules] = {
        **SingleRunRecipe.RULES,
        "negatives": (lambda v: v >= 0, "an integer ≥ 0"),
        "margin": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
        "scale": (lambda v: v > 0, "a number > 0"),
        "query_max_length": (lambda v: v >= 4, "an integer ≥ 4"),
        "max_length": (lambda v: v >= 16, "an integer ≥ 16"),
        "min_queries": (lambda v: v >= 2, "an integer ≥ 2"),
        "significance": (lambda v: 0 < v <= 1, "a number in (0, 1]"),
        "cross_negatives": (lambda v: v >= 1, "an integer ≥ 1"),
        "cross_lr": (lambda v: 0 < v < 1, "a number in (0, 1)"),
        "cross_epochs": (lambda v: v >= 1, "an integer ≥ 1"),
        "cross_batch_size": (lambda v: v >= 1, "an integer ≥ 1"),
        "cross_max_length": (lambda v: v >= 16, "an integer ≥ 16"),
        "distill_queries": (lambda v: v >= 0, "an integer ≥ 0"),
        "distill_candidates": (lambda v: v >= 2, "an integer ≥ 2"),
        "distill_lr": (lambda v: 0 < v < 1, "a number in (0, 1)"),
        "distill_epochs": (lambda v: v >= 1, "an integer ≥ 1"),
        "fusion_weights": (_grid(0, 1), "comma-separated numbers in [0, 1]"),
        "rerank_depths": (_grid(1, None), "comma-separated integers ≥ 1"),
        "rerank_weights": (_grid(0, 1), "comma-separated numbers in [0, 1]"),
        "default_data": (lambda v: v == "none", "none (pass an index with --index, or a BEIR folder)"),
    }

    def cross_optim(self) -> OptimArgs:
        """The cross-encoder's optimisation settings."""
        return replace(OptimArgs.of(self), lr=self.cross_lr, epochs=self.cross_epochs, batch_size=self.cross_batch_size, mini_batch=0)

    def distill_optim(self) -> OptimArgs:
        """The bi-encoder's optimisation settings in the distillation loop."""
        return replace(OptimArgs.of(self), lr=self.distill_lr, epochs=self.distill_epochs)
