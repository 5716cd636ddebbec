"""The ``encodr`` command line (Typer): one front end of the core (:mod:`encodr.core`).

Each command's options are rendered from its request's declaration
(:func:`encodr.core.fields.option`); the command builds the request, calls the core and draws
the result's tables with rich, or prints its JSON with ``--json``. No rule, default or table
layout lives here.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from .core import commands
from .core import requests as rq
from .core.fields import build, rendering
from .errors import EncodrError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Turn pretrained masked language models into strong encoders (Mirror-BERT, Trans-Encoder, CMLM), "
    "index and search text, evaluate, and serve models and indexes over HTTP (OpenAI-compatible embeddings).",
)
out_console = Console()
err_console = Console(stderr=True)


def _warn(message: str) -> None:
    err_console.print(f"[yellow]encodr: warning:[/] {message}", highlight=False, soft_wrap=True)


def _emit_json(payload) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


def _interactive_threads() -> None:
    """For query-at-a-time commands: idle OpenMP threads sleep instead of spinning, so torch and
    FAISS do not steal each other's cores. Must run before torch or faiss is imported."""
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class _Bars:
    """Draws :class:`~encodr.progress.ProgressEvent` s as rich bars on stderr, one bar per
    task label; nothing is drawn before the first event (so a bad-input error stays alone)."""

    def __init__(self, enabled: bool = True):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bars = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                             TimeElapsedColumn(), TimeRemainingColumn(), console=err_console, disable=not enabled)  # fmt: skip
        self.tasks: dict[str, int] = {}

    def __call__(self, event) -> None:
        if not self.bars.live.is_started:
            self.bars.start()
        if event.task not in self.tasks:
            self.tasks[event.task] = self.bars.add_task(event.task, total=event.total, info="")
        shown = {k: v for k, v in event.fields.items() if k != "dev_metric"}
        dev = f"dev {event.fields.get('dev_metric', '')}".rstrip()
        info = "  ".join(f"{k} {v:.4f}" if k == "loss" else (f"{dev} {v:.2f}" if k == "dev" else f"{v:.3g} {k}") for k, v in shown.items())
        self.bars.update(self.tasks[event.task], completed=event.completed, total=event.total, info=info)

    def __enter__(self) -> "_Bars":
        return self

    def __exit__(self, *exc) -> None:
        if self.bars.live.is_started:
            self.bars.stop()


def _show(result, as_json: bool) -> None:
    """A core result as JSON (``--json``: what the HTTP API returns too) or as rich tables."""
    if as_json:
        _emit_json(result.payload())
        return
    from rich.text import Text

    for t in result.tables():
        table = Table(title=t.title, caption=t.caption or None)
        for col in t.columns:
            table.add_column(col, justify="right" if col in t.right else "left", overflow="fold")
        for r, row in enumerate(t.rows):
            cells = [Text(cell) for cell in row]  # plain text: a hit's "[…]" is not read as markup
            for (mr, mc), spans in t.marks.items():
                if mr == r:
                    for start, end in spans:
                        cells[mc].stylize("bold yellow", start, end)
            table.add_row(*cells)
        out_console.print(table)


def _cli_type(annotation):
    """The Typer type of a request field's annotation (``X | None`` → ``Optional[X]``, ``list[X]`` → ``List[X]``)."""
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is list:
        return Optional[List[typing.get_args(annotation)[0]]]
    if args and len(args) < len(typing.get_args(annotation)):  # X | None
        return _cli_type(args[0]) if typing.get_origin(args[0]) is list else Optional[args[0]]
    return annotation


def _params(model) -> list[inspect.Parameter]:
    """The Typer parameters of a request class: one per field the CLI offers
    (:func:`encodr.core.fields.fields_for`); an argument with flags is also taken as an option."""
    from .core.fields import fields_for

    params = []
    for name in fields_for(model, "cli"):
        field, r = model.model_fields[name], rendering(model, name)
        kind = _cli_type(field.annotation)
        required = field.is_required() and not r.flags
        if r.argument:
            info = typer.Argument(... if required else None, help=field.description, show_default=False)
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind))
            if r.flags:
                params.append(inspect.Parameter(f"{name}__option", inspect.Parameter.KEYWORD_ONLY, default=typer.Option(None, *r.flags, help=f"Same as {name.upper()}; repeatable."), annotation=kind))
            continue
        flags = r.flags or ("--" + name.replace("_", "-"),)
        if kind is bool:
            info = typer.Option(field.default, *flags, help=field.description)
        else:
            default = ... if field.is_required() else None
            shown = field.default if field.default not in (None, [], ...) else None
            info = typer.Option(default, *flags, help=field.description + (f" (default: {', '.join(map(str, shown)) if isinstance(shown, list) else shown})" if shown is not None else ""), show_default=False)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind))
    return params


def command(target, model, name: str | None = None, json_flag: bool = True, extra: tuple[inspect.Parameter, ...] = ()):
    """Register ``render(request, as_json, **extra)`` as the CLI command for request class
    ``model``: its options are the request's fields (plus ``extra``, the CLI's own, and
    ``--json``), and its help is the request's docstring."""

    def register(render):
        params = _params(model) + list(extra)
        if json_flag:
            params.append(inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=typer.Option(False, "--json", help="Print the result as JSON."), annotation=bool))
        own = {p.name for p in extra}

        def cli_command(**given):
            as_json = given.pop("as_json", False)
            local = {k: given.pop(k) for k in own}
            for key in [k for k in given if k.endswith("__option")]:
                extra_values = given.pop(key)
                base = key[: -len("__option")]
                if extra_values:
                    given[base] = [*(given.get(base) or []), *extra_values]
            values = {k: v for k, v in given.items() if v is not None}
            return render(values, as_json, **local)

        cli_command.__signature__ = inspect.Signature(params)
        cli_command.__annotations__ = {p.name: p.annotation for p in params}
        cli_command.__doc__ = " ".join(model.__doc__.split())
        cli_command.__name__ = name or model.__name__
        target.command(name)(cli_command)
        return render

    return register


SERVER = inspect.Parameter("server", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
                           default=typer.Option(None, "--server", help="Ask a running encodr serve at this URL (e.g. http://127.0.0.1:8000) instead of loading the model here; ENCODR_API_KEY is sent as its key."))  # fmt: skip


def _remote(url: str, route: str, body: dict):
    """POST ``body`` to a running ``encodr serve``; its JSON answer, or its error as one line."""
    import os
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if os.environ.get("ENCODR_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['ENCODR_API_KEY']}"
    req = urllib.request.Request(url.rstrip("/") + route, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = json.loads(exc.read()).get("error", {}).get("message", "")
        except ValueError:
            detail = ""
        raise EncodrError(f"{url}{route} answered {exc.code}: {detail or exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise EncodrError(f"no encodr server at {url} ({getattr(exc, 'reason', exc)}); start one with encodr serve, or drop --server") from None


def _answer(model, values: dict, server: Optional[str], route: str, result_type, local):
    """Build and check a request of class ``model``; answer it through a running server at
    ``server`` (its HTTP fields POSTed to ``route``, the JSON read back as ``result_type``),
    or here with ``local(request)``."""
    from .core.fields import fields_for

    request = build(model, values)
    request.check()
    if server:
        body = request.model_dump(include=set(fields_for(model, "http")), exclude_none=True)
        return result_type.model_validate(_remote(server, route, body))
    _interactive_threads()
    return local(request)


@command(app, rq.TuneRequest, "tune")
def tune(values: dict, as_json: bool) -> None:
    request = build(rq.TuneRequest, values)
    bars = _Bars(enabled=not as_json)
    announce = lambda line: err_console.print(f"encodr: {line}", highlight=False)  # noqa: E731
    recipe, job = commands.prepare_tune(request, progress=bars, warn=_warn, announce=announce)  # heavy imports before the start line
    try:  # from the start line on, Ctrl-C is reported as one line with exit status 2
        with bars:
            result = commands.tune(recipe, job)
    except KeyboardInterrupt as exc:
        raise EncodrError(f"{_interruption(exc)}; nothing was written to {job.out}, and the run is recorded as cancelled") from None
    if result is not None:  # None: not the main process, which prints nothing
        _show(result, as_json)


@command(app, rq.EvalRequest, "eval")
def evaluate(values: dict, as_json: bool) -> None:
    request = build(rq.EvalRequest, values)
    with _Bars(enabled=not as_json) as bars:
        result = commands.evaluate(request, progress=bars, warn=_warn)
    _show(result, as_json)


@command(app, rq.ScoreRequest, "score", extra=(SERVER,))
def score(values: dict, as_json: bool, server: Optional[str]) -> None:
    from .core.results import ScoreResult

    _show(_answer(rq.ScoreRequest, values, server, "/v1/score", ScoreResult, commands.score), as_json)


@command(app, rq.IndexRequest, "index")
def index_cmd(values: dict, as_json: bool) -> None:
    request = build(rq.IndexRequest, values)
    request.check()
    try:
        with _Bars(enabled=not as_json) as bars:
            result = commands.index(request, progress=bars, warn=_warn)
    except KeyboardInterrupt as exc:
        raise EncodrError(f"{_interruption(exc)}; {commands.interrupted_index(request)}") from None
    _show(result, as_json)
    if request.watch:
        err_console.print(f"encodr: watching {', '.join(request.corpus)} (Ctrl-C stops)", highlight=False)
        try:
            commands.watch(request, on_sync=lambda line: err_console.print(f"encodr: {line}", highlight=False), warn=_warn)
        except KeyboardInterrupt:
            err_console.print("encodr: stopped watching; the index holds the last sync", highlight=False)


@command(app, rq.DeleteRequest, "delete")
def delete_cmd(values: dict, as_json: bool) -> None:
    _show(commands.delete(build(rq.DeleteRequest, values), warn=_warn), as_json)


@command(app, rq.SearchRequest, "search", extra=(SERVER,))
def search(values: dict, as_json: bool, server: Optional[str]) -> None:
    from .core.results import SearchResult

    def local(request):
        searcher = commands.open_searcher(request)
        for line in searcher.warnings:
            _warn(line)
        return commands.search(request, searcher, commands.open_reranker(request))

    if not values.get("query"):
        values["query"] = [line.strip() for line in sys.stdin if line.strip()]
    _show(_answer(rq.SearchRequest, values, server, "/v1/search", SearchResult, local), as_json)


@command(app, rq.IndexesRequest, "indexes")
def indexes(values: dict, as_json: bool) -> None:
    _show(commands.indexes(build(rq.IndexesRequest, values)), as_json)


@app.command()
def tui(index: Optional[Path] = typer.Option(None, "--index", "-i", help="Index directory or workspace index name (default: pick one)."),
        rerank: Optional[str] = typer.Option(None, "--rerank", help="Search re-ranked by this CrossEncoder (the Search tab's re-rank box; blank there: none).")) -> None:
    """Interactive terminal UI: Search, Compare, Workspace (indexes, models, runs), Train, Index and Eval panes."""
    _interactive_threads()
    from .tui import EncodrApp

    if index is not None:
        from .index import Index

        Index.open(index).close()  # report a broken index here, as a one-line error
    EncodrApp(index, rerank=rerank).run()


@command(app, rq.ModelsRequest, "models")
def models(values: dict, as_json: bool) -> None:
    _show(commands.models(build(rq.ModelsRequest, values)), as_json)


@command(app, rq.RecipesRequest, "recipes")
def list_recipes(values: dict, as_json: bool) -> None:
    _show(commands.recipes(build(rq.RecipesRequest, values)), as_json)


runs_app = typer.Typer(help="Recorded training runs: list them, newest first, or show one (encodr runs show ID).", no_args_is_help=False)
app.add_typer(runs_app, name="runs")


@runs_app.callback(invoke_without_command=True)
def runs(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
         limit: int = typer.Option(50, min=1, help=rq.RunsRequest.model_fields["limit"].description)) -> None:  # fmt: skip
    """List recorded training runs, newest first (encodr runs show ID: one run, its curves)."""
    if ctx.invoked_subcommand is None:
        _show(commands.runs(build(rq.RunsRequest, {"limit": limit})), as_json)


@command(runs_app, rq.RunRequest, "show")
def runs_show(values: dict, as_json: bool) -> None:
    _show(commands.run(build(rq.RunRequest, values)), as_json)


@app.command()
def serve(
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="A model to serve (alias, directory, Hub id); repeatable. Default: minilm, and each --index's model."),
    index: Optional[List[str]] = typer.Option(None, "--index", "-i", help="An index to serve (directory or workspace name); repeatable. Default: every index in the workspace."),
    host: str = typer.Option("127.0.0.1", help="Address to bind (127.0.0.1: this machine only)."),
    port: int = typer.Option(8000, help="Port to bind."),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="ENCODR_API_KEY", help="Require 'Authorization: Bearer KEY' (or set ENCODR_API_KEY).", show_envvar=False),
    batch_wait_ms: float = typer.Option(10.0, help="Dynamic batching: how long the first request of a batch waits for others while requests are concurrent (ms)."),
    batch_tokens: int = typer.Option(8192, min=1, help="Dynamic batching: tokens per forward pass at most (padded length × texts)."),
    max_texts: int = typer.Option(2048, min=1, help="Texts per request at most (413 above)."),
    max_chars: int = typer.Option(20000, min=1, help="Characters per text at most (413 above)."),
    batching: bool = typer.Option(True, "--batching/--no-batching", help="Dynamic batching of concurrent requests (off: one forward pass per request)."),
    workers: Optional[int] = typer.Option(None, min=1, help="Forward passes a model runs at once, each on its share of the CPU cores (default: 2 on a CPU, 1 on a GPU)."),
    backend: str = typer.Option("torch", help="Forward pass of each --model bi-encoder: torch, torch-bf16 (bfloat16 matrix products), onnx or onnx-int8 (onnxruntime on the CPU); an index's model runs on its index's backend."),
    writable: bool = typer.Option(False, "--writable", help="Let clients upsert and delete documents (POST / DELETE /v1/indexes/NAME/documents); needs --api-key."),
    watch: Optional[List[str]] = typer.Option(None, "--watch", help="Sync the one served --index with this folder on every change (debounced); repeatable."),
) -> None:
    """Serve models and indexes over HTTP: OpenAI-compatible POST /v1/embeddings, POST /v1/search, POST /v1/score, POST /v1/rerank,
    GET /v1/models, /v1/indexes, /v1/runs, /health; with --writable, POST and DELETE /v1/indexes/NAME/documents. Models and indexes are loaded once and kept warm."""
    _interactive_threads()  # the event loop, the batcher and FAISS share the cores with torch: idle OpenMP threads must sleep
    try:
        from .serve import Access, Limits, serve as run_server
    except ImportError as exc:
        raise EncodrError(f"encodr serve needs the serve extra ({exc.name} is missing): pip install 'encodr[serve]'") from None

    run_server(model or [], index or [], host, port, Access(api_key, writable, tuple(watch or ())), Limits(max_texts, max_chars, batch_wait_ms / 1000, batch_tokens, batching, workers), announce=lambda line: err_console.print(f"encodr: {line}", highlight=False),
               backend=backend)  # fmt: skip


def _interruption(exc: KeyboardInterrupt) -> str:
    """How a run was stopped: by Ctrl-C, or by a signal or a dead launcher (:mod:`encodr.signals`)."""
    from .signals import Terminated

    return f"stopped: {exc.reason}" if isinstance(exc, Terminated) else "interrupted by Ctrl-C"


def main() -> None:
    """Console-script entry point: user errors, OS faults (full disk, read-only…), Ctrl-C and
    SIGTERM → one line on stderr, exit status 2."""
    import os

    from .outputs import os_fault
    from .signals import install

    os.environ.setdefault("TQDM_DISABLE", "1")  # one progress style: encodr's bars (ProgressEvent), not sentence-transformers' unlabelled tqdm bars
    install()
    try:
        app()
    except EncodrError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(str(os_fault(exc)))
    except KeyboardInterrupt as exc:
        _fail(f"{_interruption(exc)}; nothing was written")


def _fail(message: str) -> None:
    err_console.print(f"[red]encodr: error:[/] {message}", highlight=False, soft_wrap=True)
    sys.exit(2)
