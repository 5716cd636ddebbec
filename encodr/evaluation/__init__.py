"""Evaluation: tasks (declarative records in :mod:`.tasks`), evaluators sharing a base
class (:mod:`.base`), and this runner.

Protocol (as in the Mirror-BERT paper): cosine similarity; Spearman ρ × 100 per dataset,
then the unweighted mean over datasets; entity linking by acc@1 / acc@5.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import Evaluator, Score
from .tasks import PRIMARY, TASKS, Task, tasks_for

__all__ = ["Evaluator", "Report", "Score", "TASKS", "Task", "run", "tasks_for"]


@dataclass
class Report:
    """Scores of one model on a suite, plus the mean of the suite's primary metric."""

    model: str
    suite: str
    scores: list[Score] = field(default_factory=list)

    @property
    def mean(self) -> float | None:
        """Unweighted mean of the primary metric over datasets (``None`` for one dataset)."""
        values = [s.value for s in self.scores if s.metric == PRIMARY[self.suite]]
        return sum(values) / len(values) if len(values) > 1 else None

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "model": self.model,
            "suite": self.suite,
            "scores": [s.__dict__ for s in self.scores],
            "mean": self.mean,
        }


def run(suite: str, encoder, data: list[str] | None = None, progress: bool = False) -> Report:
    """Evaluate a model on a suite (``sts``, ``words``, ``linking``, ``pairs``).

    Args:
        suite: which evaluation.
        encoder: an :class:`encodr.models.Encoder`, or for ``sts`` and ``pairs`` a
            :class:`encodr.cross.CrossScorer`.
        data: files or bundled task names replacing the suite's defaults.
        progress: show encoding progress bars.

    Returns:
        A :class:`Report`.

    Raises:
        EncodrError: a cross-encoder on a suite that needs vectors (``words``, ``linking``).
    """
    from ..models import CrossScorer
    from ..errors import EncodrError
    from .tasks import CROSS_SUITES

    if isinstance(encoder, CrossScorer) and suite not in CROSS_SUITES:
        raise EncodrError(f"a cross-encoder scores pairs; it works with 'eval {' / '.join(CROSS_SUITES)}', not '{suite}'")
    report = Report(encoder.name, suite)
    for task in tasks_for(suite, data):
        report.scores.extend(task.evaluator().evaluate(encoder, progress=progress))
    return report
