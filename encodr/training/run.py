"""The run wrapper every method goes through: preflight checks, one :class:`Trainer`, an
atomic output directory, ``recipe.yaml``, ``encodr.json``, ``train_log.jsonl`` and the
run-registry rows. Under several processes only the main process writes any of them.

A method supplies one function, ``run(ctx: RunContext) -> Outcome``; it trains through
``ctx.trainer`` and saves its models with :meth:`RunContext.save`.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from .. import registry, signals
from ..errors import EncodrError, Said
from ..outputs import atomic_dir, check_target, os_fault
from ..progress import ProgressFn, silent
from .trainer import Trainer


@dataclass
class TuneJob:
    """What the user asked ``encodr tune`` for, independent of the method.

    Attributes:
        out: output directory; it appears only when the run succeeded.
        data: the training file, or data a method already read (a Mirror
            :class:`~encodr.data.text.Corpus`); ``None``: the recipe's bundled default.
        models: base model specs (several: Trans-Encoder mutual distillation).
        overwrite: replace an existing ``out``.
        device: ``cpu``, ``cuda``, ``cuda:N``, ``mps``; ``None``: CUDA when available.
        dev: a bundled evaluation set (``stsb-dev``, ``mesh-dev``, ``wordsim353``…) or a
            scored-pairs file, to keep the best checkpoint by.
        bitext: translation-pair files (``source<TAB>target``), for methods that take them.
        report: scored pairs evaluated after each phase, for reporting only.
        limit: use only the first N training items.
        progress: receives progress events (main process only).
        warn: receives one-line warnings (main process only).
        on_step: ``(step, loss)`` after every optimizer step; may raise to stop.
        announce: receives the one start line (``tuning MODEL with recipe NAME → OUT``), in
            the main process only, once the processes are up.
        index: an index whose judgments a method learns from (the ``judged`` recipe).
        no_dev: train without selection: no cross-validation (the ``judged`` recipe) or dev fold (``code``).
    """

    out: Path
    data: Any = None
    models: list[str] = field(default_factory=lambda: ["minilm"])
    overwrite: bool = False
    device: str | None = None
    dev: str | None = None
    bitext: list[str] = field(default_factory=list)
    report: str | None = None
    limit: int | None = None
    progress: ProgressFn = silent
    warn: Callable[[str], None] = print
    on_step: Callable[[int, float], None] | None = None
    announce: Callable[[str], None] | None = None
    index: str | None = None
    no_dev: bool = False


@dataclass
class RunContext:
    """What a method's ``run`` gets: the request, its recipe, the trainer and where to save."""

    request: TuneJob
    recipe: Any  # a method that adjusts its recipe (e.g. a batch size cut to the data) stores it back here
    trainer: Trainer
    output: Path | None  # the temporary output directory; None outside the main process

    def warn(self, message: str) -> None:
        """A one-line warning, shown once (by the main process)."""
        if self.trainer.is_main:
            self.request.warn(Said(message))

    def progress(self, event) -> None:
        """Forward a progress event (main process only)."""
        if self.trainer.is_main:
            self.request.progress(event)

    def save(self, name: str, saver: Callable[[Path], None]) -> None:
        """Write ``output/name`` with ``saver(path)``, in the main process only (``"."``: the
        output directory itself).

        Raises:
            EncodrError: the file system refused the write (full, read-only…), safetensors'
                errors included; the temporary output is removed by the run wrapper.
        """
        if self.output is None:
            return
        from safetensors import SafetensorError

        try:
            saver(self.output / name)
        except (OSError, SafetensorError) as exc:
            raise os_fault(exc, Path(self.request.out), kept="nothing was written there") from None

    def out_path(self, name: str = ".") -> str:
        """The absolute final path of ``out/name``, as the summary and registry give it."""
        return str((Path(self.request.out) / name).resolve())


@dataclass
class Outcome:
    """What a method reports back to the run wrapper.

    Attributes:
        summary: the method's fields of ``encodr.json`` (JSON-ready).
        rows: run-registry rows: ``kind``, ``model``, ``data``, ``data_sha256``,
            ``strings``, ``out`` (a name inside the output directory), ``metrics``.
        log: per-step training log, written as ``train_log.jsonl`` (optional).
        shown: the ``summary`` keys that sum the run up for people, in order (the core lays
            them out: :class:`encodr.core.results.TuneResult`); the method draws nothing.
    """

    summary: dict
    rows: list[dict]
    log: list[dict] | None = None
    shown: tuple[str, ...] = ()


class RunCancelled(Exception):
    """Raised by a run's ``progress`` or ``on_step`` callback (the TUI's Cancel) to stop it:
    the temporary output is removed, nothing appears at ``out``, and the registry records the
    run with ``status: cancelled``."""


def _summary(recipe, outcome: Outcome, trainer: Trainer, started: float) -> dict:
    """The run summary written as ``encodr.json``: the method's, with the recipe, device and duration."""
    return {
        "encodr_version": __import__("encodr").__version__,
        "method": recipe.method,
        **outcome.summary,
        "recipe": recipe.to_dict(),
        "device": trainer.device,
        "precision": trainer.precision,
        "processes": trainer.world,
        "duration_s": round(time.time() - started, 2),
    }


def _write_run_files(tmp: Path, recipe, outcome: Outcome, summary: dict) -> None:
    """``recipe.yaml``, ``train_log.jsonl`` (when the method logged steps) and ``encodr.json`` in the output's temporary
    folder."""
    (tmp / "recipe.yaml").write_text(yaml.safe_dump(recipe.to_dict(), sort_keys=False))
    if outcome.log is not None:
        (tmp / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in outcome.log))
    (tmp / "encodr.json").write_text(json.dumps(summary, indent=2, default=float))


def _record_cancelled(request: TuneJob, recipe, started: float) -> None:
    """A registry row with ``status: cancelled`` (a failing registry is not what to report then)."""
    with contextlib.suppress(EncodrError):
        registry.record(
            {
                "kind": "tune",
                "status": "cancelled",
                "model": request.models[0],
                "recipe_name": recipe.name,
                "recipe": recipe.to_dict(),
                "data": str(getattr(request.data, "source", request.data) or "(bundled default)"),
                "duration_s": round(time.time() - started, 2),
                "out": str(Path(request.out).resolve()),
            }
        )


def run(method_run: Callable[[RunContext], Outcome], recipe, request: TuneJob) -> dict | None:
    """Run a method: preflight, train, write the output atomically, record the run.

    Args:
        method_run: the method's ``run(ctx) → Outcome``.
        recipe: the method's resolved recipe (a dataclass with ``to_dict()``, ``name``,
            ``amp``).
        request: a :class:`TuneJob`.

    Returns:
        The run summary (also in ``out/encodr.json``) with ``out``, ``run_ids`` and
        ``shown`` (:attr:`Outcome.shown`) added; ``None`` in processes other than the main one.

    A registry that cannot be written (read-only, locked, a read-only workspace) does not stop
    the run: one ``warn`` line says it will not be recorded, and the model is trained and saved.

    Raises:
        EncodrError: bad input, raised before training where it can be checked then.
        RunCancelled, KeyboardInterrupt (Ctrl-C, or :class:`encodr.signals.Terminated`: SIGTERM,
            SIGHUP, a dead launcher): pass through with nothing written at ``out``; the
            registry gets a row with ``status: cancelled``.
        EncodrError: an OS-level write failure (full disk, read-only…), with nothing written
            at ``out``; or a registry that fails after training, saying where the model is.
    """
    out = Path(request.out)
    source = getattr(request.data, "source", request.data)
    inputs = [str(p) for p in [source, *request.bitext] if isinstance(p, (str, Path)) and Path(p).exists()]
    check_target(out, request.overwrite, inputs=inputs, kind="model")
    unrecorded = ""  # why the run cannot be recorded: the model is what the user asked for, so it is trained and saved anyway
    try:
        registry.check_writable()  # a read-only, locked or broken registry is known now, not after training
    except EncodrError as exc:
        unrecorded = str(exc)
    recorded = not unrecorded
    started = time.time()
    with Trainer(request.device, recipe.amp) as trainer:
        main = trainer.is_main
        if main and not recorded:
            request.warn(f"this run will not be recorded: {unrecorded}")
        if main and request.announce is not None:
            request.announce(f"tuning {' + '.join(request.models)} with recipe '{recipe.name}' → {out}")
        try:
            with atomic_dir(out, request.overwrite) if main else contextlib.nullcontext(None) as tmp:
                ctx = RunContext(request, recipe, trainer, tmp)
                outcome = method_run(ctx)
                recipe = ctx.recipe  # as the method ran it (e.g. a batch size cut to the data)
                summary = _summary(recipe, outcome, trainer, started)
                if tmp is not None:
                    _write_run_files(tmp, recipe, outcome, summary)
        except BaseException as exc:
            # a signal (or a dead launcher) may surface as another error first: a collective
            # whose peer has already left; either way the run was cancelled, never a success
            if not isinstance(exc, (RunCancelled, KeyboardInterrupt)) and not signals.received():
                if isinstance(exc, OSError):  # recipe.yaml, encodr.json, train_log.jsonl, or the folder's rename
                    raise os_fault(exc, out, kept="nothing was written there") from None
                raise
            if main and recorded:
                _record_cancelled(request, recipe, started)
            if isinstance(exc, (RunCancelled, KeyboardInterrupt)):
                raise
            raise signals.Terminated(f"terminated ({type(exc).__name__} after the signal)") from None
        trainer.wait()  # the other processes leave once the output is in place
    if not main:
        return None
    summary["out"] = str(out.resolve())
    try:
        summary["run_ids"] = (
            []
            if not recorded
            else [
                registry.record(
                    {
                        **row,
                        "recipe_name": recipe.name,
                        "recipe": recipe.to_dict(),
                        "duration_s": summary["duration_s"],
                        "out": str((out / row.get("out", ".")).resolve()),
                    }
                )
                for row in outcome.rows
            ]
        )
    except EncodrError as exc:
        raise EncodrError(f"the model was saved to {summary['out']}, but the run was not recorded: {exc}") from None
    summary["shown"] = list(outcome.shown)
    return summary
