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
from pathlib import Path
from typing import Any

from ..errors import EncodrError, S
from ..training.run import RunCancelled, TuneJob, run
from . import recipe as recipes
from .base import Method, fit_report, load_dev

INPUTS = ("dev", "bitext", "report", "models", "index", "no_dev")


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
    """Refuse, before any work, a device this machine lacks, a precision it cannot run, or a
    request input the recipe's method does not take. (A run registry that cannot be written
    does not stop a run: :func:`encodr.training.run.run` warns that it will not be recorded.)

    Raises:
        EncodrError: naming the problem and the fix.
    """
    import torch

    from ..models import pick_device
    from ..training import mixed_precision

    mixed_precision(recipe.amp, torch.device(pick_device(request.device)).type)
    method = methods()[recipe.method]
    given = {
        "dev": request.dev,
        "bitext": request.bitext,
        "report": request.report,
        "models": len(request.models) > 1,
        "index": request.index,
        "no_dev": request.no_dev,
    }
    for key in INPUTS:
        if given[key] and key not in method.inputs:
            what = {
                "dev": S.dev,
                "bitext": S.bitext,
                "report": "a report set",
                "models": f"several {S.model} values (mutual distillation)",
                "index": f"{S.index} (an index's judgments)",
                "no_dev": S.no_dev,
            }[key]
            takers = [m.name for m in methods().values() if key in m.inputs]
            raise EncodrError(
                f"recipe '{recipe.name}' (method {method.name}) does not take {what}; "
                f"{'methods that do: ' + ', '.join(takers) if takers else 'no method does'}"
            )
    if method.preflight is not None:
        method.preflight(recipe, request)


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


__all__ = [
    "Method",
    "RunCancelled",
    "TuneJob",
    "check_request",
    "fit_report",
    "load_dev",
    "load_recipe",
    "methods",
    "recipe_classes",
    "tune",
]
