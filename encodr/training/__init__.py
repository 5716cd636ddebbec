"""Training shared by every method: optimisation settings (:mod:`.args`), the one trainer
(:mod:`.trainer`) and the run wrapper (:mod:`.run`). Nothing here knows a method."""

from .args import OptimArgs
from .run import Outcome, RunCancelled, RunContext, TuneJob, run
from .trainer import FitOptions, ShardedBatchSampler, Stream, Trainer, TrainResult, mixed_precision, to_device

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
]
