"""Training shared by every method: optimisation settings (:mod:`.args`), the one trainer
(:mod:`.trainer`) and the run wrapper (:mod:`.run`). Nothing here knows a method.

The names below load their module when first used (PEP 562), so that reading a declaration of
:mod:`.args` (the front ends' choices, at start-up) does not import torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .args import OptimArgs
    from .run import Outcome, RunCancelled, RunContext, TuneJob, run
    from .trainer import FitOptions, ShardedBatchSampler, Stream, Trainer, TrainResult, mixed_precision, to_device

_HOMES = {
    "OptimArgs": ".args",
    **dict.fromkeys(("Outcome", "RunCancelled", "RunContext", "TuneJob", "run"), ".run"),
    **dict.fromkeys(
        ("FitOptions", "ShardedBatchSampler", "Stream", "Trainer", "TrainResult", "mixed_precision", "to_device"), ".trainer"
    ),
}

__all__ = [
    "FitOptions",
    "OptimArgs",
    "Outcome",
    "RunCancelled",
    "RunContext",
    "ShardedBatchSampler",
    "Stream",
    "TrainResult",
    "Trainer",
    "TuneJob",
    "mixed_precision",
    "run",
    "to_device",
]  # each loaded from its module in _HOMES on first use


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name], __name__), name)
