"""Evaluators share one interface: ``evaluate(encoder) -> list[Score]``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class Score:
    """One number: a dataset, a metric (``spearman``, ``acc@1``…), its value, and n items.

    ``value`` is in percent: Spearman ρ × 100, accuracy × 100.
    """

    dataset: str
    metric: str
    value: float
    n: int


class Evaluator(ABC):
    """Scores a model on one dataset: a bi-encoder (:class:`encodr.models.Encoder`), or for
    pair tasks anything with ``pair_scores`` (also :class:`encodr.models.CrossScorer`)."""

    name: str

    @abstractmethod
    def evaluate(self, encoder, progress: bool = False) -> list[Score]:
        """Return the scores of ``encoder``."""
