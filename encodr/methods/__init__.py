"""Training methods, one package each (``encodr/methods/<name>/``), found by name.

A method package defines ``METHOD``, a :class:`Method` record: its recipe class (fields,
defaults, rules), its ``run(ctx) → Outcome`` (see :mod:`encodr.training.run`), and which
inputs of ``encodr tune`` it takes. A recipe's ``method:`` picks the package. Adding a
method is one package plus a YAML file in ``recipes/``: neither the CLI nor the trainer
changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import registry
from ..errors import EncodrError
from ..training.run import Outcome, RunCancelled, RunContext, TuneJob, run
from . import recipe as recipes

INPUTS = ("dev", "bitext", "report", "models")


@dataclass(frozen=True)
class Method:
    """One training method.

    Attributes:
        name: the value of ``method:`` in a recipe.
        config: its recipe dataclass (with ``RULES`` and ``to_dict()``).
        run: ``(ctx: RunContext) → Outcome``.
        inputs: which optional inputs of :class:`~encodr.training.run.TuneJob` it
            takes, among ``dev``, ``bitext``, ``report`` and ``models`` (several base
            models); a request using another is refused before any work.
        summary: one line for ``encodr recipes`` and the docs.
    """

    name: str
    config: type
    run: Callable[[RunContext], Outcome]
    inputs: tuple[str, ...] = ()
    summary: str = ""


def methods() -> dict[str, Method]:
    """Every method package under ``encodr/methods``, by name."""
    found = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.ispkg:
            method = importlib.import_module(f"{__name__}.{info.name}").METHOD
            found[method.name] = method
    return found


def recipe_classes() -> dict[str, type]:
    """Method name → recipe class."""
    return {name: m.config for name, m in methods().items()}


def load_recipe(spec: str, overrides: dict[str, Any] | None = None):
    """A validated recipe: a bundled name or a YAML path, with overrides (see
    :func:`encodr.methods.recipe.load`)."""
    return recipes.load(spec, overrides, recipe_classes())


def check_request(recipe, request: TuneJob) -> None:
    """Refuse, before any work, a device this machine lacks, a precision it cannot run, a
    request input the recipe's method does not take, or a run registry that cannot be written.

    Raises:
        EncodrError: naming the problem and the fix.
    """
    import torch

    from ..models import pick_device
    from ..training import mixed_precision

    mixed_precision(recipe.amp, torch.device(pick_device(request.device)).type)
    method = methods()[recipe.method]
    given = {"dev": request.dev, "bitext": request.bitext, "report": request.report, "models": len(request.models) > 1}
    for key in INPUTS:
        if given[key] and key not in method.inputs:
            what = {"dev": "--dev", "bitext": "--bitext", "report": "a report set", "models": "several --model values (mutual distillation)"}[key]
            takers = [m.name for m in methods().values() if key in m.inputs]
            raise EncodrError(f"recipe '{recipe.name}' (method {method.name}) does not take {what}; "
                              f"{'methods that do: ' + ', '.join(takers) if takers else 'no method does'}")  # fmt: skip
    registry.check_writable()  # a rolled-back write: harmless in every process of a launch


def load_dev(ctx: RunContext, spec: str | None, metric: str | None = None, role: str = "--dev"):
    """The evaluation set a method selects on (``role`` ``--dev``) or reports on.

    Args:
        ctx: the run (a one-line warning goes through it).
        spec: a bundled set name or a scored-pairs file; ``None`` gives ``None``.
        metric: the primary metric the method needs (e.g. ``spearman``), or ``None`` for any.
        role: how the error and warning name the set.

    Returns:
        An :class:`encodr.evaluation.DevSet` or ``None``. Selecting on a test set is allowed,
        with a warning that its score is then optimistic.

    Raises:
        EncodrError: see :func:`encodr.evaluation.dev_set`, or a set scored by another metric.
    """
    from ..evaluation import dev_set

    if not spec:
        return None
    found = dev_set(spec)
    if metric and found.metric != metric:
        raise EncodrError(f"{role} {spec} is scored by {found.metric}; recipe '{ctx.recipe.name}' selects on {metric}, e.g. stsb-dev or a scored-pairs file")
    if role == "--dev" and found.split == "test":
        ctx.warn(f"--dev {found.name} is a test set: selecting on it makes its score optimistic; report another set")
    return found


def fit_report(ctx: RunContext, result, dev) -> tuple[dict, dict, list[list[str]]]:
    """What a single-model method reports about its :class:`~encodr.training.TrainResult`, and
    the one-line warning when ``--dev`` selection kept the starting weights.

    Args:
        ctx: the run.
        result: the trainer's result.
        dev: the :class:`~encodr.evaluation.DevSet` selected on, or ``None``.

    Returns:
        (summary fields for ``encodr.json``, metrics for the registry row, the training rows
        of the CLI's field/value table: steps, time, loss and each stream's last loss,
        precision, device, processes, and with ``--dev`` the dev curve and the kept step).
    """
    if result.kept_start:
        ctx.warn(f"no training step beat the starting model on {ctx.request.dev} ({dev.metric} {result.dev_curve[0]['dev']:.2f}); "
                 "saved the starting weights unchanged")  # fmt: skip
    summary = {
        "steps": result.steps, "examples": result.examples, "train_seconds": round(result.seconds, 2), "eval_seconds": result.eval_seconds,
        "examples_per_s": round(result.examples_per_s, 2), "final_loss": round(result.final_loss, 5),
        "dev": ctx.request.dev, "dev_curve": result.dev_curve, "best": result.best,
    }  # fmt: skip
    streams = {k: round(v, 5) for k, v in (result.log[-1] if result.log else {}).items() if k.startswith("loss/")}
    metrics = {k: summary[k] for k in ("steps", "examples_per_s", "final_loss")}
    metrics.update(streams, precision=result.precision, device=result.device, processes=result.processes)
    rows = [[k, str(summary[k])] for k in ("steps", "train_seconds", "examples_per_s", "final_loss")]
    rows += [[k, f"{v:.4f}"] for k, v in streams.items()]
    rows += [["precision", result.precision], ["device", result.device], ["processes", str(result.processes)]]
    if dev:
        metrics.update(dev_set=ctx.request.dev, dev_metric=dev.metric, best=result.best, dev_curve=result.dev_curve)
        rows.append([f"dev {dev.metric} ({ctx.request.dev})", " → ".join(f"{p['dev']:.2f}" for p in result.dev_curve)])
        rows.append(["kept", "starting weights" if result.kept_start else f"step {result.best['step']}"])
    return summary, metrics, rows


def tune(recipe, request: TuneJob) -> dict | None:
    """Train with ``recipe``'s method through the shared run wrapper.

    Args:
        recipe: a recipe from :func:`load_recipe`.
        request: data, models, output and options.

    Returns:
        The run summary in the main process (``None`` in the others): the method's fields,
        ``out``, ``run_ids`` and ``table`` (how the CLI shows it).

    Raises:
        EncodrError: an input the method does not take, or any bad input.
    """
    check_request(recipe, request)
    return run(methods()[recipe.method].run, recipe, request)


__all__ = ["Method", "RunCancelled", "TuneJob", "check_request", "fit_report", "load_dev", "load_recipe", "methods", "recipe_classes", "tune"]
