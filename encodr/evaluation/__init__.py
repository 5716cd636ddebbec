"""Evaluation: tasks (declarative records in :mod:`.tasks`), evaluators sharing a base
class (:mod:`.base`), and this runner.

Protocol (as in the Mirror-BERT paper): cosine similarity; Spearman ρ × 100 per dataset,
then the unweighted mean over datasets; entity linking by acc@1 / acc@5.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import S
from ..progress import ProgressEvent, ProgressFn
from .base import Evaluator, Score
from .tasks import PRIMARY, TASKS, Task, tasks_for

__all__ = ["DevSet", "Evaluator", "Report", "Score", "TASKS", "Task", "dev_set", "run", "score_distributions", "tasks_for"]


@dataclass
class Report:
    """Scores of one model on a suite, plus the mean of the suite's primary metric."""

    model: str
    suite: str
    scores: list[Score] = field(default_factory=list)

    @property
    def mean(self) -> float | None:
        """Unweighted mean of the primary metric over datasets (``None`` for one dataset). Where a
        dataset is scored several ways (``eval retrieval``'s rankings, ``scifact · hybrid·zscore``),
        over the datasets of the first ranking only: a mean across rankings means nothing."""
        primary = [s for s in self.scores if s.metric == PRIMARY[self.suite]]
        ranking = lambda s: s.dataset.partition(" · ")[2]  # noqa: E731
        values = [s.value for s in primary if ranking(s) == ranking(primary[0])] if primary else []
        return sum(values) / len(values) if len(values) > 1 else None

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "model": self.model,
            "suite": self.suite,
            "scores": [s.__dict__ for s in self.scores],
            "mean": self.mean,
        }


def run(suite: str, encoder, data: list[str] | None = None, progress: bool | ProgressFn = False, **options) -> Report:
    """Evaluate a model on a suite (``sts``, ``words``, ``linking``, ``pairs``, ``bitext``).

    Args:
        suite: which evaluation.
        encoder: an :class:`encodr.models.Encoder`, or for ``sts`` and ``pairs`` a
            :class:`encodr.models.CrossScorer`.
        data: files or bundled task names replacing the suite's defaults.
        progress: a :data:`~encodr.progress.ProgressFn` receives one event per dataset as it
            starts and ends (task ``eval SUITE · DATASET · MODEL``), and nothing else draws; ``True``
            shows the encoders' own tqdm bars instead (the bench scripts).
        options: passed to each task's evaluator (``pcr="centred"`` for bitext); ``cache=True``
            keeps and reuses a retrieval set's index (:meth:`~.retrieval.RetrievalEvaluator.cached_index`).

    Returns:
        A :class:`Report`.

    Raises:
        EncodrError: a cross-encoder on a suite that needs vectors (``words``, ``linking``).
    """
    from ..errors import EncodrError
    from ..models import CrossScorer
    from .tasks import CROSS_SUITES

    if isinstance(encoder, CrossScorer) and suite not in CROSS_SUITES:
        raise EncodrError(f"a cross-encoder scores pairs; it works with 'eval {' / '.join(CROSS_SUITES)}', not '{suite}'")
    cache = options.pop("cache", False)
    report = Report(encoder.name, suite)
    report_to = progress if callable(progress) else None
    for task in tasks_for(suite, data):
        label = f"eval {suite} · {task.name} · {encoder.name}"
        if report_to:
            report_to(ProgressEvent(label, 0, 1))
        evaluator = task.evaluator(**options)
        evaluator.cache = cache  # retrieval keeps the index it builds (RetrievalEvaluator.cached_index); others ignore it
        report.scores.extend(evaluator.evaluate(encoder, progress=progress is True))
        if report_to:
            report_to(ProgressEvent(label, 1, 1))
    return report


def score_distributions(suite: str, scorer, data: list[str] | None = None, progress: bool = False) -> list[dict]:
    """For each dataset of a pair suite, the model's scores of its high-gold and low-gold
    pairs: the anisotropy picture of Mirror-BERT §4 (Fig. 7), drawn by
    :func:`encodr.plots.distribution_figure`.

    Args:
        suite: ``sts``, ``words`` or ``pairs``.
        scorer: a bi-encoder (cosines) or a cross-encoder (σ scores).
        data: files or bundled task names replacing the suite's defaults.

    Returns:
        ``{"dataset", "model", "high", "low", "high_label", "low_label"}`` per dataset;
        ``high`` and ``low`` are lists of floats. STS and word sets split at the gold
        score's quartiles; binary pairs by label.

    Raises:
        EncodrError: a suite whose items are not scored pairs (``linking``, ``bitext``).
    """
    from ..errors import EncodrError
    from .similarity import _PairEvaluator

    panels = []
    for task in tasks_for(suite, data):
        evaluator = task.evaluator()
        if not isinstance(evaluator, _PairEvaluator):
            raise EncodrError(
                f"{S.plot} draws the scores of gold-scored pairs; it works with eval sts, words and pairs, not '{suite}'"
            )
        scores = np.asarray(evaluator.predict(scorer, progress), dtype=np.float64)
        high, low, high_label, low_label = evaluator.gold_groups()
        panels.append(
            {
                "dataset": task.name,
                "model": scorer.name,
                "high": scores[high].tolist(),
                "low": scores[low].tolist(),
                "high_label": high_label,
                "low_label": low_label,
            }
        )
    return panels


@dataclass
class DevSet:
    """A dataset to select checkpoints on: its name, evaluator and primary metric.

    Attributes:
        name: the bundled task name or the file given.
        evaluator: scores a model (a bi-encoder, or for pair sets also a cross-encoder).
        metric: the score used for selection, higher is better (``spearman``, ``acc@1``…).
        split: ``dev``, ``test`` or ``user``.
    """

    name: str
    evaluator: Evaluator
    metric: str
    split: str

    def score(self, model) -> float:
        """The primary metric of ``model`` (× 100), e.g. Spearman ρ × 100 or acc@1 × 100."""
        return next(s.value for s in self.evaluator.evaluate(model) if s.metric == self.metric)


def dev_set(spec: str) -> DevSet:
    """The ``--dev`` set: a bundled task by name (``stsb-dev``, ``mesh-dev``, ``wordsim353``…),
    a user's scored-pairs file (any STS layout, scored by Spearman ρ), or a BEIR-layout folder
    (search scored by nDCG@10 on its ``dev`` qrels, else ``train``; never ``test``).

    Raises:
        EncodrError: neither a bundled task nor an existing file, or a file that cannot be
            scored (see the readers and :class:`~.similarity.PairSimilarityEvaluator`).
    """
    from pathlib import Path

    from ..errors import EncodrError

    if spec in TASKS:
        task = TASKS[spec]
    elif Path(spec).is_dir():
        from ..data.beir import read_retrieval, splits
        from .retrieval import RetrievalEvaluator

        there = splits(spec)
        split = next((s for s in ("dev", "train") if s in there), None)
        if split is None:
            raise EncodrError(
                f"{S.dev} {spec}: a BEIR folder selects checkpoints on qrels/dev.tsv or qrels/train.tsv, never a test split; "
                f"it has {', '.join(there) or 'none'}"
            )
        name = Path(spec).name
        return DevSet(name, RetrievalEvaluator(name, read_retrieval(spec), split=split), "ndcg@10", split)
    else:
        p = Path(spec)
        if not p.is_file():
            dev = ", ".join(n for n, t in TASKS.items() if t.split == "dev")
            auto = f" ({S.dev} auto works with the retrieval recipe only)" if spec == "auto" else ""
            raise EncodrError(
                f"{S.dev} {spec}: no such file or bundled evaluation set{auto}; pass a scored-pairs file, a BEIR "
                f"folder or one of: {dev}"
            )
        task = Task(p.name, "", "sts", str(p.resolve()), "user", str(p))
    return DevSet(task.name, task.evaluator(), PRIMARY[task.type], task.split)
