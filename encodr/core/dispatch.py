"""The one way a front end runs a command: values → request → check (once) → command → result,
with every refusal worded in that front end's vocabulary.

The CLI (``cli``), the TUI (``tui``), the HTTP API (``http``) and the MCP server (``mcp``) call
:func:`prepare` to turn what a person or a client gave into a checked request, and :func:`run`
to answer it; :func:`call` does both. The commands (:mod:`.commands`) take checked requests and
do not check again. A refusal is an :class:`~encodr.errors.EncodrError` whose message names
the field as the front end names it: ``--mode hybird: not one of …`` on the CLI,
``mode: 'hybird' is not one of …`` over HTTP and MCP (:func:`encodr.core.fields.words`).

What else a front end needs of the core, it finds here too (the searcher and re-ranker it keeps
warm, the watch loop, the wording of an interrupted index), so that no front end imports
:mod:`.commands`.
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any, Callable

from ..errors import EncodrError, render, written
from . import commands
from . import requests as rq
from .fields import build, namer, words

# request class → the command that answers it
COMMANDS: dict[type, Callable] = {
    rq.TuneRequest: commands.prepare_tune,  # → (recipe, job); then tune()
    rq.EvalRequest: commands.evaluate,
    rq.ScoreRequest: commands.score,
    rq.EmbedRequest: commands.embed,
    rq.RerankRequest: commands.rerank,
    rq.IndexRequest: commands.index,
    rq.DeleteRequest: commands.delete,
    rq.SearchRequest: commands.search,
    rq.CompareRequest: commands.compare,
    rq.UpsertRequest: commands.upsert,
    rq.DocumentIdsRequest: commands.delete_ids,
    rq.SyncRequest: commands.sync_served,
    rq.DocumentRequest: commands.document,
    rq.ShowRequest: commands.show,
    rq.JudgeRequest: commands.judge,
    rq.UnjudgeRequest: commands.unjudge,
    rq.JudgmentsRequest: commands.judgments,
    rq.IndexesRequest: commands.indexes,
    rq.ModelsRequest: commands.models,
    rq.RecipesRequest: commands.recipes,
    rq.RunsRequest: commands.runs,
    rq.RunRequest: commands.run,
}

# what front ends use beside the commands (see the module docstring)


def open_searcher(request, front: str = "cli"):
    """The process's searcher for a checked search ``request`` (:meth:`.session.Session.open`).

    Raises:
        EncodrError: an index that cannot be opened, in ``front``'s words.
    """
    try:
        return commands.open_searcher(request)
    except EncodrError as exc:
        raise refusal(exc, front, type(request)) from None


def open_reranker(spec: str | None, front: str = "cli"):
    """The process's cross-encoder ``spec`` names, or None (:meth:`.session.Session.reranker`).

    Raises:
        EncodrError: a model that cannot be had, in ``front``'s words.
    """
    try:
        return commands.open_reranker(spec)
    except EncodrError as exc:
        raise refusal(exc, front, rq.SearchRequest) from None


watch = commands.watch
interrupted_index = commands.interrupted_index
tune = commands.tune


def recipe_fields(spec: str, overrides: dict[str, str] | None = None) -> dict:
    """The fields of recipe ``spec`` (a bundled name or a YAML path) and their values, with
    ``overrides`` applied and checked as ``--set`` checks them (the TUI's Train pane edits them).

    Raises:
        EncodrError: an unknown recipe, a key it lacks, a value its rule refuses.
    """
    from ..methods import load_recipe

    return load_recipe(spec, overrides).to_dict()


def recipe_notes(spec: str) -> dict[str, str]:
    """Each field of recipe ``spec`` → what it means and what it allows, from the field's one
    declaration (the TUI's Train pane shows it as the field's tooltip).

    Raises:
        EncodrError: an unknown recipe.
    """
    from ..methods import load_recipe
    from ..settings import described

    cls = type(load_recipe(spec))
    notes = {}
    for key in cls.__dataclass_fields__:
        meaning, rule = described(cls, key)
        notes[key] = f"{meaning} Allowed: {rule[1]}." if rule else meaning
    return notes


def dev_sets() -> list[str]:
    """The bundled dev sets ``encodr tune --dev`` takes by name."""
    from ..evaluation import TASKS

    return [name for name, task in TASKS.items() if task.split == "dev"]


def preview(path) -> tuple[int, list[str]]:
    """The number of distinct strings ``encodr tune`` would read from ``path``, and its first three.

    Raises:
        EncodrError: a file that cannot be read as training data.
    """
    from ..data.text import read_corpus

    corpus = read_corpus(path)
    return len(corpus.strings), list(corpus.strings[:3])


def cancelled() -> type:
    """The exception a run's step callback raises to stop it (Cancel)."""
    from ..methods import RunCancelled

    return RunCancelled


def refusal(exc: EncodrError, front: str, model: type | None = None) -> EncodrError:
    """``exc`` worded for front end ``front`` (its field, status and kind kept)."""
    worded = words(exc, front, model)
    if worded == str(exc):
        return exc
    return EncodrError(worded, field=exc.field, status=exc.status)


def prepare(model: type, values: dict, front: str):
    """A checked request of class ``model`` from front end ``front``'s ``values``: built
    (types, ranges, choices: :func:`encodr.core.fields.build`), then checked once (the
    request's own ``check()``: combinations, files, names).

    Raises:
        EncodrError: naming the field at fault in ``front``'s words.
    """
    try:
        request = build(model, values)
        request.check()
    except EncodrError as exc:
        raise refusal(exc, front, model) from None
    return request


@lru_cache(maxsize=None)
def _takes(command: Callable) -> frozenset[str]:
    return frozenset(inspect.signature(command).parameters)


def run(request, front: str, **context: Any):
    """Answer a checked ``request`` (see :func:`prepare`) with its command.

    Args:
        request: a request of a class in :data:`COMMANDS`.
        front: ``cli``, ``tui``, ``http`` or ``mcp``: passed to a command that records it (a
            judgment's ``front``), and the vocabulary of a refusal.
        context: what the command takes beside the request: a warm ``searcher`` or
            ``reranker``, ``progress`` and ``warn`` callbacks, an ``index`` path…

    Raises:
        EncodrError: the command's refusals, in ``front``'s words.
    """
    command = COMMANDS[type(request)]
    if "front" in _takes(command):
        context["front"] = front
    if context.get("warn") is not None:  # a warning names settings as the refusals do
        told, say = context["warn"], namer(front, type(request))
        context["warn"] = lambda line: told(render(written(line), say))
    try:
        return command(request, **context)
    except EncodrError as exc:
        raise refusal(exc, front, type(request)) from None


def call(model: type, values: dict, front: str, **context: Any):
    """:func:`prepare`, then :func:`run`: a front end's values answered."""
    return run(prepare(model, values, front), front, **context)
