"""What every method package shares: the :class:`Method` record it exports as ``METHOD``, the
dev set it selects on (:func:`load_dev`), and what a single-model method reports (:func:`fit_report`).
Method packages import these from here, never from :mod:`encodr.methods` (which imports them)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import EncodrError, S
from ..models.encoder import POOLINGS, RAW_POOLINGS
from ..settings import Rule, Rules, field_rules, like, setting
from ..training.args import OptimArgs
from ..training.run import Outcome, RunContext


def number_list(value: str) -> list[float]:
    """The numbers of a comma-separated grid (``"0.3,0.5,0.7"``), in order. Raises ValueError
    on a part that is not a number."""
    return [float(part) for part in str(value).replace(" ", "").split(",") if part]


def grid_rule(low: float, high: float | None, says: str) -> Rule:
    """The rule of a recipe setting that is a comma-separated grid (:func:`number_list`): at least
    one number, each in [``low``, ``high``] (``high`` None: no upper bound); ``says`` names it."""

    def ok(value: str) -> bool:
        try:
            found = number_list(value)
        except ValueError:
            return False
        return bool(found) and all(v >= low and (high is None or v <= high) for v in found)

    return (ok, says)


@dataclass(frozen=True)
class Recipe:
    """The fields every method's recipe has; a method's recipe class extends it (or
    :class:`SingleRunRecipe`) with its own fields, and re-declares a shared field to change its
    default. Each field is declared once (:func:`~encodr.settings.setting`): its default,
    meaning and rule; :meth:`rules` gathers the rules ``--set`` and a recipe file are checked by."""

    name: str = setting("custom", "Recipe name (the file's stem).")
    method: str = setting("", "The method package that runs the recipe.")
    weight_decay: float = like(OptimArgs, "weight_decay")
    max_grad_norm: float = like(OptimArgs, "max_grad_norm")
    warmup: float = like(OptimArgs, "warmup")
    eval_steps: int = setting(
        0,
        "With --dev, also evaluate every this many steps (0: the starting model and each epoch end only); the best "
        "checkpoint is kept.",
        (lambda v: v >= 0, "an integer ≥ 0 (0: only at epoch ends)"),
    )
    pooling: str = setting(
        "auto",
        "Sentence-vector pooling: cls, mean, or auto (the base model's own pooling when it has one, else raw_pooling).",
        choices=POOLINGS,
    )
    raw_pooling: str = setting("cls", "Pooling for a raw MLM that ships none.", choices=RAW_POOLINGS)
    seed: int = like(OptimArgs, "seed")
    amp: str = like(OptimArgs, "amp")
    default_data: str = setting("none", "Bundled training data used when no FILE is given.")
    description: str = setting("", "One line shown by encodr recipes.")

    @classmethod
    def rules(cls) -> Rules:
        """Field → ``(accepts, words)``: each rule of the class's declarations
        (:func:`~encodr.settings.field_rules`)."""
        return field_rules(cls)

    def to_dict(self) -> dict[str, Any]:
        """The recipe as a plain dict (what ``recipe.yaml`` in an output directory holds)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SingleRunRecipe(Recipe):
    """A recipe trained by one optimiser over the whole run (Mirror-BERT, CMLM; Trans-Encoder has
    one per phase): learning rate, epochs, batch size, accumulation, GradCache chunk, max length."""

    lr: float = like(OptimArgs, "lr")
    epochs: int = like(OptimArgs, "epochs")
    batch_size: int = like(OptimArgs, "batch_size")
    grad_accum: int = like(OptimArgs, "grad_accum")
    mini_batch: int = like(OptimArgs, "mini_batch")
    max_length: int = setting(64, "Maximum sequence length in tokens, special tokens included.", ge=3)

    def optim(self) -> OptimArgs:
        """The optimisation settings the trainer takes."""
        return OptimArgs.of(self)


@dataclass(frozen=True)
class Method:
    """One training method.

    Attributes:
        name: the value of ``method:`` in a recipe.
        config: its recipe dataclass (a :class:`Recipe`).
        run: ``(ctx: RunContext) → Outcome``.
        inputs: which optional inputs of :class:`~encodr.training.run.TuneJob` it
            takes, among ``dev``, ``bitext``, ``report`` and ``models`` (several base
            models); a request using another is refused before any work.
        summary: one line for ``encodr recipes`` and the docs.
        preflight: ``(recipe, job) → None``, the method's own checks of a request's inputs,
            run with :func:`encodr.methods.check_request` before any model loads; raises
            :class:`~encodr.errors.EncodrError`.
    """

    name: str
    config: type
    run: Callable[[RunContext], Outcome]
    inputs: tuple[str, ...] = ()
    summary: str = ""
    preflight: Callable[[Any, Any], None] | None = None


def load_dev(ctx: RunContext, spec: str | None, metric: str | None = None, role: str = S.dev):
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
        raise EncodrError(
            f"{role} {spec} is scored by {found.metric}; recipe '{ctx.recipe.name}' selects on {metric}, e.g. stsb-dev "
            "or a scored-pairs file"
        )
    if role == S.dev and found.split == "test":
        ctx.warn(f"{S.dev} {found.name} is a test set: selecting on it makes its score optimistic; report another set")
    return found


def batch_that_fits(ctx: RunContext, recipe, examples: int, what: str):
    """``recipe`` with ``batch_size`` cut to the ``examples`` there are (a multiple of the
    processes, at least 2) when there are fewer, said in one warning line naming ``what`` they
    are; ``ctx.recipe`` follows. ``recipe`` itself when they fill a batch."""
    if examples >= recipe.batch_size:
        return recipe
    size = max(2, examples - examples % ctx.trainer.world)
    ctx.warn(f"only {examples} {what}, fewer than batch_size {recipe.batch_size}: training with batch size {size}")
    ctx.recipe = dataclasses.replace(recipe, batch_size=size)
    return ctx.recipe


def fit_selected(ctx: RunContext, encoder, streams: list, recipe, dev, report):
    """Train ``encoder`` on ``streams`` (:meth:`~encodr.training.Trainer.fit`), scoring ``dev``
    (nothing without one) at the start, every ``eval_steps`` and each epoch's end, the best kept;
    a ``report`` set is scored at each of those too and its value put in each dev-curve point
    (``report``). Returns the trainer's result."""
    from ..training import FitOptions

    reported: list[float] = []

    def evaluate() -> float:
        if report is not None:
            reported.append(report.score(encoder))
        return dev.score(encoder)

    result = ctx.trainer.fit(
        encoder.module,
        streams,
        recipe.optim(),
        FitOptions(
            evaluate=evaluate if dev else None,
            dev_metric=dev.metric if dev else "dev",
            eval_steps=recipe.eval_steps,
            progress=ctx.progress,
            on_step=ctx.request.on_step,
        ),
    )
    for point, value in zip(result.dev_curve, reported):
        point["report"] = value
    return result


def fit_report(ctx: RunContext, result, dev) -> tuple[dict, dict, tuple[str, ...]]:
    """What a single-model method reports about its :class:`~encodr.training.TrainResult`, and
    the one-line warning when ``--dev`` selection kept the starting weights.

    Args:
        ctx: the run.
        result: the trainer's result.
        dev: the :class:`~encodr.evaluation.DevSet` selected on, or ``None``.

    Returns:
        (summary fields for ``encodr.json``, metrics for the registry row, the summary keys
        that sum the training up (:attr:`~encodr.training.run.Outcome.shown`): steps, time,
        loss and each stream's last loss, precision, device, processes, and with ``--dev`` the
        dev curve and the kept step).
    """
    given = ctx.request.dev
    named = given or (dev.name if dev else None)  # a method's own dev set (held-out bitext) when --dev is not given
    if result.kept_start:
        where = f"the label-free dev set ({S.dev} auto)" if given == "auto" else named
        ctx.warn(
            f"no training step beat the starting model on {where} ({dev.metric} {result.dev_curve[0]['dev']:.2f}); "
            "saved the starting weights unchanged"
        )
    summary = {
        "steps": result.steps,
        "examples": result.examples,
        "train_seconds": round(result.seconds, 2),
        "eval_seconds": result.eval_seconds,
        "examples_per_s": round(result.examples_per_s, 2),
        "final_loss": round(result.final_loss, 5),
        "dev": named,
        "dev_curve": result.dev_curve,
        "best": result.best,
    }
    streams = {k: round(v, 5) for k, v in (result.log[-1] if result.log else {}).items() if k.startswith("loss/")}
    summary.update(streams)
    metrics = {k: summary[k] for k in ("steps", "examples_per_s", "final_loss")}
    metrics.update(streams, precision=result.precision, device=result.device, processes=result.processes)
    shown = ("steps", "train_seconds", "examples_per_s", "final_loss", *streams, "precision", "device", "processes")
    if dev:
        summary["dev_metric"] = dev.metric
        metrics.update(dev_set=named, dev_metric=dev.metric, best=result.best, dev_curve=result.dev_curve)
        shown += ("dev_curve", "best")
    return summary, metrics, shown
