"""Progress reporting shared by every long job (training, labelling, indexing).

The core never draws anything: it calls a :data:`ProgressFn` with :class:`ProgressEvent`
records. The CLI turns them into a rich bar (``encodr.cli``), the TUI into its own widget.
Under several processes only the main process reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class ProgressEvent:
    """Where one task stands.

    Attributes:
        task: a stable label naming the task, e.g. ``"training"`` or
            ``"cycle 1/3 · train cross"``; a new label starts a new bar.
        completed: units done so far (steps, pairs, texts).
        total: units in all, or ``None`` when unknown.
        fields: numbers to show beside the bar, e.g. ``{"loss": 0.71, "ex/s": 212.0}``; a dev
            score comes as ``dev`` with ``dev_metric``, the one string, naming what it measures.
    """

    task: str
    completed: int
    total: int | None = None
    fields: dict = field(default_factory=dict)


ProgressFn = Callable[[ProgressEvent], None]


def silent(event: ProgressEvent) -> None:
    """A :data:`ProgressFn` that shows nothing."""
