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
import typer.core
from rich.console import Console
from rich.table import Table

from .core import dispatch
from .core import requests as rq
from .core.fields import namer, rendering, words
from .errors import EncodrError, render, written
from .extras import need

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: a flag shows no value type, "[ray]" stays text, one "[default: …]" style
    help="Turn pretrained masked language models into strong encoders (Mirror-BERT, Trans-Encoder, CMLM), index and search your "
    "documents in any language, evaluate, and serve models and indexes over HTTP and to AI agents (MCP).",
)
# An argument's name (QUERY…) says what it takes: typer would add its Python type ("<list[str]>") beside it.
typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
out_console = Console()
err_console = Console(stderr=True)


def _warn(message: str) -> None:
    """Print a warning line, any setting it names written as its flag (:func:`encodr.core.fields.namer`)."""
    err_console.print(f"[yellow]encodr: warning:[/] {render(written(message), namer('cli'))}", highlight=False, soft_wrap=True)


def _emit_json(payload) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


def _interactive_threads() -> None:
    """Idle OpenMP threads sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``, unless the
    environment says otherwise): for query-at-a-time commands, so torch and FAISS do not steal
    each other's cores; for ``encodr index``, so a build beside another program does not wait
    on a spinning thread that has no core (torch's two threads lost several times their quiet
    speed there; docs/benchmarks/index_process.md). Must run before torch or faiss is imported."""
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class _Bars:
    """Draws :class:`~encodr.progress.ProgressEvent` s as rich bars on stderr, one bar per
    task label; nothing is drawn before the first event (so a bad-input error stays alone), and
    nothing when stderr is not a terminal: rich's live display would hold every warning printed
    under it until it stops (minutes of an index sent to a file with nothing in it)."""

    def __init__(self, enabled: bool = True):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bars = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err_console,
            disable=not enabled or not err_console.is_terminal,
        )
        self.tasks: dict[str, int] = {}

    def __call__(self, event) -> None:
        if not self.bars.live.is_started:
            self.bars.start()
        if event.task not in self.tasks:
            self.tasks[event.task] = self.bars.add_task(event.task, total=event.total, info="")
        shown = {k: v for k, v in event.fields.items() if k != "dev_metric"}
        dev = f"dev {event.fields.get('dev_metric', '')}".rstrip()
        info = "  ".join(
            f"{k} {v:.4f}" if k == "loss" else (f"{dev} {v:.2f}" if k == "dev" else f"{v:.3g} {k}") for k, v in shown.items()
        )
        self.bars.update(self.tasks[event.task], completed=event.completed, total=event.total, info=info)

    def __enter__(self) -> "_Bars":
        return self

    def __exit__(self, *exc) -> None:
        if self.bars.live.is_started:
            self.bars.stop()


SHORT = 24  # a column whose cells are all at most this wide is drawn whole (names, numbers, dates): never wrapped
SNIPPET_LINES = 3  # a hit's snippet fills at most this many lines of its column
FIRST_SNIPPET_LINES = 6  # the first hit's, the one read first: its answer often sits a sentence or two past the best one
MAIN = 60  # a table's main column gets at least this many characters a line, or the table prints as blocks
CARD_INDENT = 4  # a card's main text (a hit's snippet) starts this far in, under its heading line (:func:`_cards`)
CARD_TEXT = 40  # cards need this many characters a line for their main text; a narrower terminal prints blocks
CARD_WIDTH = 120  # cards are at most this wide: a wider terminal leaves the rest blank, a snippet's lines stay readable


def _card_line() -> int:
    """The terminal cells of a card's text line (:func:`_cards`: hits print as cards, their text
    indented under a heading, at most :data:`CARD_WIDTH` wide), at least :data:`CARD_TEXT`."""
    return max(CARD_TEXT, min(out_console.width, CARD_WIDTH) - CARD_INDENT)


def _show(result, as_json: bool) -> None:
    """A core result as JSON (``--json``: what the HTTP API returns too) or as rich tables that
    fit the terminal without breaking a word (:func:`_layout`)."""
    if as_json:
        _emit_json(result.payload())
        return
    for n, t in enumerate(result.tables()):
        if n:
            out_console.print()  # a blank line between two tables (two queries' hits, a search and its timings)
        out_console.print(_layout(t, out_console.width))


def _layout(t, width: int):
    """A rich renderable of core table ``t`` at most ``width`` columns wide, no word broken:

    1. a table with ``t.main`` and ``t.under`` (hits): one card a row (:func:`_cards`), a
       heading line, then the ``t.main`` cell over the width (at most :data:`CARD_WIDTH`), as
       ripgrep's ``--heading`` prints matches;
    2. else as a table, short columns (every cell ≤ :data:`SHORT` characters) whole and long
       ones wrapped at spaces, where that fits;
    3. else (a terminal too narrow for either) one small two-column block per row
       (``column  value``), as ``gh`` prints records.
    """
    from rich.console import Group
    from rich.text import Text

    def need(columns: list[int], rows: list[list[Text]]) -> int:
        total = 3 * len(columns) + 1  # borders and padding
        for c in columns:
            cells = [t.columns[c], *(row[c].plain for row in rows)]
            longest = max(len(x) for x in cells)
            words = max((len(w) for x in cells for w in x.split()), default=0)
            total += longest if longest <= SHORT else max(words, MAIN if t.columns[c] == t.main else 20)
        return total

    cells = [[Text(cell) for cell in row] for row in t.rows]  # plain text: a hit's "[…]" is not read as markup
    for (mr, mc), spans in t.marks.items():
        for start, end in spans:
            cells[mr][mc].stylize("bold yellow", start, end)
    every = list(range(len(t.columns)))
    if t.under and t.main in t.columns and width - CARD_INDENT >= CARD_TEXT:
        return _cards(t, cells, min(width, CARD_WIDTH))
    needed = need(every, cells)
    if needed <= width:
        if t.title and len(t.title) > needed - 4:  # a title wider than its table: its own lines, at spaces
            return Group(_title(t.title, width), _table(t, every, cells, titled=False))
        return _table(t, every, cells)
    blocks = [_title(t.title, width)] if t.title else []
    for row in cells:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for c in every:
            if row[c].plain:
                grid.add_row(t.columns[c], row[c])
        blocks += [grid, Text("")]
    if t.caption:
        blocks.append(Text(t.caption, style="dim"))
    return Group(*blocks)


def _cards(t, cells: list[list], width: int):
    """Core table ``t``'s rows (``cells``: rich Text, one list a row) as cards, one a row, a blank
    line between: a heading line with the first column (a hit's rank) at the left, the ``t.under``
    columns in their order joined by `` · `` (a hit's ``path:line``, title and language; the
    later ones clipped to keep the heading on one ``width``-column line, the first, a path,
    folded, never cut) and the other columns at the right (its score), then the ``t.main`` cell
    indented by :data:`CARD_INDENT` over the rest of the width, as ripgrep's ``--heading`` and
    qmd print matches: no borders or columns take width from a snippet. No rows: ``no hits``."""
    from rich.console import Group
    from rich.constrain import Constrain
    from rich.padding import Padding
    from rich.text import Text

    main = t.columns.index(t.main)
    under = [t.columns.index(name) for name in t.under if name in t.columns]
    side = [c for c in range(1, len(t.columns)) if c != main and c not in under]
    blocks = [Text(t.title, style="italic")] if t.title else []
    for row in cells:
        right = "  ".join(row[c].plain for c in side)
        parts = _fitted([row[c].plain for c in under], width - CARD_INDENT - len(right) - 2)
        heading = Table.grid(expand=True, padding=(0, 2))
        heading.add_column(justify="right", min_width=CARD_INDENT - 2, no_wrap=True, style="bold")
        heading.add_column(ratio=1, overflow="fold")
        heading.add_column(justify="right", no_wrap=True)
        meta = Text(" · ").join(Text(part, style="dim" if i else "magenta") for i, part in enumerate(parts) if part)
        heading.add_row(row[0], meta, Text(right, style="dim"))
        blocks += [heading, Padding(row[main], (0, 0, 0, CARD_INDENT)), Text("")]
    if not cells:
        blocks.append(Text("no hits", style="dim"))
    elif t.caption:  # how the hits were ranked: nothing to say of none
        blocks.append(Text(t.caption, style="dim"))
    else:  # the last card's blank line: the blank line between two tables (_show) follows
        blocks.pop()
    return Constrain(Group(*blocks), width)


def _fitted(parts: list[str], room: int) -> list[str]:
    """``parts`` (a heading's fields, the first a path) fitted to ``room`` terminal cells joined
    by `` · ``: the longest of the others is clipped (``…`` at the cut), or left out where fewer
    than 8 of its cells would stay, until they fit or only the first is left; then the first's
    section path (after `` › ``) is clipped so, or left out. A path still too long is shortened
    in its middle (:func:`_middle`): its line number stays on the heading's line, next to its
    file's name."""
    from rich.cells import cell_len, set_cell_size

    parts = list(parts)
    over = cell_len(" · ".join(p for p in parts if p)) - room  # terminal cells: a CJK character takes two
    while over > 0:
        longest = max(range(1, len(parts)), key=lambda i: cell_len(parts[i]), default=None)
        if longest is None or not parts[longest]:
            break
        keep = cell_len(parts[longest]) - over
        parts[longest] = set_cell_size(parts[longest], keep - 1).rstrip() + "…" if keep >= 8 else ""
        over = cell_len(" · ".join(p for p in parts if p)) - room
    if over > 0 and " › " in parts[0]:  # a long section path: clipped, or left out, after the path and line
        at, section = parts[0].split(" › ", 1)
        keep = cell_len(section) - over
        parts[0] = f"{at} › {set_cell_size(section, keep - 1).rstrip()}…" if keep >= 8 else at
    if cell_len(parts[0]) > room:
        parts[0] = _middle(parts[0], room)
    return parts


def _middle(at: str, room: int) -> str:
    """``at`` (``path:line``) shortened to ``room`` cells in its middle: the start of its folders,
    ``…``, then as much of its end as fits (``docs/en/…/deps/yield.md:66``); the file's name
    and line whole where they fit, else the end of the name."""
    from rich.cells import cell_len

    name = at.rsplit("/", 1)[-1]
    end = at[-len(name) - 1 :] if cell_len(name) + 2 <= room else at[-(room - 1) :]
    while cell_len(end) > room - 1:  # wide characters: take fewer
        end = end[1:]
    head, rest = "", at[: len(at) - len(end)]
    for ch in rest:  # the folders' start, as much as fits before the ellipsis
        if cell_len(head + ch + end) + 1 > room:
            break
        head += ch
    return head + "…" + end


def _title(title: str, width: int):
    """``title`` as lines of at most ``width`` cells broken at spaces, a word too long for a line
    (a path) shortened in its middle (:func:`_middle`), never broken inside."""
    from rich.cells import cell_len
    from rich.text import Text

    return Text(" ".join(w if cell_len(w) <= width else _middle(w, width) for w in title.split(" ")), style="italic")


def _table(t, columns: list[int], rows: list[list], titled: bool = True):
    """The rich table of ``t``'s ``columns`` with ``rows`` (rich Text cells): short columns whole,
    long ones wrapped at spaces; its title above it unless ``titled`` is False."""
    table = Table(title=t.title if titled else None, caption=t.caption or None)
    for c in columns:
        longest = max([len(t.columns[c]), *(len(row[c].plain) for row in rows)])
        short = longest <= SHORT
        floor = longest if short else (MAIN if t.columns[c] == t.main else None)  # the main column's lines are at least MAIN wide
        table.add_column(
            t.columns[c],
            justify="right" if t.columns[c] in t.right else "left",
            no_wrap=short,
            min_width=floor,
            overflow="ellipsis" if short else "fold",
        )
    for row in rows:
        table.add_row(*(row[c] for c in columns))
    return table


def _cli_type(annotation):
    """The Typer type of a request field's annotation (``X | None`` → ``Optional[X]``, ``list[X]`` → ``List[X]``)."""
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is list:
        return Optional[List[typing.get_args(annotation)[0]]]
    if args and len(args) < len(typing.get_args(annotation)):  # X | None
        return _cli_type(args[0]) if typing.get_origin(args[0]) is list else Optional[args[0]]
    return annotation


def _shown(value) -> str:
    """A default as help shows it: lists joined by spaces, numbers in their shortest form."""
    if isinstance(value, (list, tuple)):
        return " ".join(map(_shown, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def help_text(model, name: str) -> str:
    """A field's help as ``--help`` shows it: its sentence, then ``[default: …]`` when it has one
    (the only place the CLI states a default; the choices are the option's metavar)."""
    from .core.fields import default, help_words

    value = default(model, name)
    shown = (
        "" if value is None or value is False or value in ([], ()) else f" [default: {_shown(value)}]"
    )  # 0 is a default to state; False is not
    if (
        model is rq.TuneRequest and name in rq.OVERRIDES and value is None
    ):  # None keeps the recipe's value: show the default recipe's
        given = rq.TuneRequest.recipe_value(name)
        recipe = default(model, "recipe")
        shown = f" [the recipe's; {recipe}: {given}]" if given is not None else f" [the recipe's; {recipe}: its method's]"
    return help_words(model, name, "cli") + shown


def _metavar(model, name: str) -> str:
    """An option's value as help shows it: its choices (``[dense|keyword|hybrid]``), else its name (``--index INDEX``)."""
    choices = rendering(model, name).choices
    return f"[{'|'.join(choices)}]" if choices else name.upper()


CHOICE_FLAG = "__is_"  # a choice field's flag parameter: FIELD__is_VALUE (Rendering.choice_flags)


def _join_choice_flags(given: dict) -> None:
    """Set each choice field offered as flags (:data:`CHOICE_FLAG`) to the value whose flag was
    passed, in place; none passed leaves the field to its default.

    Raises:
        EncodrError: two flags of one field passed together.
    """
    chosen: dict[str, list[str]] = {}
    for key in [k for k in given if CHOICE_FLAG in k]:
        name, value = key.split(CHOICE_FLAG)
        if given.pop(key):
            chosen.setdefault(name, []).append(value)
    for name, values in chosen.items():
        if len(values) > 1:
            flags = " and ".join(f"--{v}" for v in values)
            raise EncodrError(f"{flags} are choices of one setting ({name}): pass one", field=name)
        given[name] = values[0]


def _params(model) -> list[inspect.Parameter]:
    """The Typer parameters of a request class: one per field the CLI offers
    (:func:`encodr.core.fields.fields_for`); an argument with flags is also taken as an option.
    Defaults and choices come from the declaration, so nothing here restates them."""
    from .core.fields import fields_for

    params = []
    for name in fields_for(model, "cli"):
        field, r = model.model_fields[name], rendering(model, name)
        kind = _cli_type(field.annotation)
        required = field.is_required() and not r.flags
        if r.argument:
            info = typer.Argument(
                ... if required else None, help=help_text(model, name), show_default=False, metavar=name.upper()
            )
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind))
            if r.flags:
                params.append(
                    inspect.Parameter(
                        f"{name}__option",
                        inspect.Parameter.KEYWORD_ONLY,
                        default=typer.Option(None, *r.flags, help=f"Same as {name.upper()}; repeatable.", metavar=name.upper()),
                        annotation=kind,
                    )
                )
            continue
        if r.choice_flags:  # one flag a value but the default: --add, --sync, --overwrite (cli_command joins them)
            for value, meaning in r.choice_flags.items():
                if value != field.default:
                    flag = typer.Option(False, f"--{value}", help=render(meaning, namer("cli", model)), show_default=False)
                    params.append(
                        inspect.Parameter(
                            f"{name}{CHOICE_FLAG}{value}", inspect.Parameter.KEYWORD_ONLY, default=flag, annotation=bool
                        )
                    )
            continue
        flags = r.flags or ("--" + name.replace("_", "-"),)
        if kind is bool:
            if field.default is True and not r.flags:  # on by default: the flag that turns it off too
                flags = (f"{flags[0]}/--no-{flags[0][2:]}",)
            info = typer.Option(field.default, *flags, help=help_text(model, name), show_default=False)
        else:
            info = typer.Option(
                ... if field.is_required() else None,
                *flags,
                help=help_text(model, name),
                show_default=False,
                metavar=_metavar(model, name),
            )
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind))
    return params


def command(
    target, model, name: str | None = None, json_flag: bool = True, extra: tuple[inspect.Parameter, ...] = (), register=None
):
    """Register ``render(request, as_json, **extra)`` as the CLI command for request class
    ``model``: its options are the request's fields (plus ``extra``, the CLI's own, and
    ``--json``), and its help is the request's docstring. ``register(target, function)``
    registers it otherwise than as ``target.command(name)`` (a group's callback)."""
    attach = register or (lambda group, fn: group.command(name)(fn))

    def wrap(render):
        params = _params(model) + list(extra)
        if json_flag:
            params.append(
                inspect.Parameter(
                    "as_json",
                    inspect.Parameter.KEYWORD_ONLY,
                    default=typer.Option(False, "--json", help="Print the result as JSON."),
                    annotation=bool,
                )
            )
        own = {p.name for p in extra}

        def cli_command(**given):
            as_json = given.pop("as_json", False)
            local = {k: given.pop(k) for k in own}
            _join_choice_flags(given)
            for key in [k for k in given if k.endswith("__option")]:
                extra_values = given.pop(key)
                base = key[: -len("__option")]
                if extra_values:
                    given[base] = [*(given.get(base) or []), *extra_values]
            values = {k: v for k, v in given.items() if v is not None}
            try:
                return render(values, as_json, **local)
            except EncodrError as exc:
                raise EncodrError(words(exc, "cli", model), field=exc.field) from None

        cli_command.__signature__ = inspect.Signature(params)
        cli_command.__annotations__ = {p.name: p.annotation for p in params}
        cli_command.__doc__ = " ".join(model.__doc__.split())
        cli_command.__name__ = name or model.__name__
        attach(target, cli_command)
        return render

    return wrap


SERVER = inspect.Parameter(
    "server",
    inspect.Parameter.KEYWORD_ONLY,
    annotation=Optional[str],
    default=typer.Option(
        None,
        "--server",
        help="Ask a running encodr serve at this URL (e.g. http://127.0.0.1:8000) instead of loading the model here; "
        "ENCODR_API_KEY is sent as its key.",
    ),
)


def _answer(model, values: dict, server: Optional[str], route: str, result_type, local):
    """Build and check a request of class ``model``; answer it through a running server at
    ``server`` (its HTTP fields POSTed to ``route``, the JSON read back as ``result_type``),
    or here with ``local(request)``."""
    from .core.fields import fields_for

    request = dispatch.prepare(model, values, "cli")
    if server:
        body = request.model_dump(include=set(fields_for(model, "http")), exclude_none=True)
        from .core.remote import ask

        return result_type.model_validate(ask(server, route, body))
    _interactive_threads()
    return local(request)


@command(app, rq.TuneRequest, "tune")
def tune(values: dict, as_json: bool) -> None:
    request = dispatch.prepare(rq.TuneRequest, values, "cli")
    bars = _Bars(enabled=not as_json)
    announce = lambda line: err_console.print(f"encodr: {line}", highlight=False)  # noqa: E731
    recipe, job = dispatch.run(
        request, "cli", progress=bars, warn=_warn, announce=announce
    )  # heavy imports before the start line
    try:  # from the start line on, Ctrl-C is reported as one line with exit status 2
        with bars:
            result = dispatch.tune(recipe, job)
    except KeyboardInterrupt as exc:
        raise EncodrError(
            f"{_interruption(exc)}; nothing was written to {job.out}, and the run is recorded as cancelled"
        ) from None
    if result is not None:  # None: not the main process, which prints nothing
        _show(result, as_json)


@command(app, rq.EvalRequest, "eval")
def evaluate(values: dict, as_json: bool) -> None:
    with _Bars(enabled=not as_json) as bars:
        result = dispatch.call(rq.EvalRequest, values, "cli", progress=bars, warn=_warn)
    _show(result, as_json)


@command(app, rq.ScoreRequest, "score", extra=(SERVER,))
def score(values: dict, as_json: bool, server: Optional[str]) -> None:
    from .core.results import ScoreResult

    _show(
        _answer(rq.ScoreRequest, values, server, "/v1/score", ScoreResult, lambda request: dispatch.run(request, "cli")), as_json
    )


@command(app, rq.IndexRequest, "index")
def index_cmd(values: dict, as_json: bool) -> None:
    _interactive_threads()
    request = dispatch.prepare(rq.IndexRequest, values, "cli")
    try:
        with _Bars(enabled=not as_json) as bars:
            result = dispatch.run(request, "cli", progress=bars, warn=_warn)
    except KeyboardInterrupt as exc:
        raise EncodrError(f"{_interruption(exc)}; {dispatch.interrupted_index(request)}") from None
    _show(result, as_json)
    if request.watch:
        err_console.print(f"encodr: watching {', '.join(request.corpus)} (Ctrl-C stops)", highlight=False)
        try:
            dispatch.watch(request, on_sync=lambda line: err_console.print(f"encodr: {line}", highlight=False), warn=_warn)
        except KeyboardInterrupt:
            err_console.print("encodr: stopped watching; the index holds the last sync", highlight=False)


@command(app, rq.DeleteRequest, "delete")
def delete_cmd(values: dict, as_json: bool) -> None:
    _show(dispatch.call(rq.DeleteRequest, values, "cli", warn=_warn), as_json)


@command(app, rq.SearchRequest, "search", extra=(SERVER,))
def search(values: dict, as_json: bool, server: Optional[str]) -> None:
    from .core.results import SearchResult

    def local(request):
        searcher = dispatch.open_searcher(request)
        for line in searcher.warnings:
            _warn(line)
        return dispatch.run(request, "cli", searcher=searcher, reranker=dispatch.open_reranker(request.rerank))

    if not values.get("query"):
        values["query"] = [line.strip() for line in sys.stdin if line.strip()]
    result = _answer(rq.SearchRequest, values, server, "/v1/search", SearchResult, local)
    result.snippet, result.first_snippet = (0, 0) if values.get("full") else (SNIPPET_LINES, FIRST_SNIPPET_LINES)
    result.line_width = _card_line()  # snippets wrap at this, a code hit's lines are cut to it
    for line in result.hints:
        err_console.print(f"[cyan]encodr: hint:[/] {line}", highlight=False, soft_wrap=True)
    form = (
        "grep" if values.get("context") and values.get("format", "table") == "table" else values.get("format", "table")
    )  # -C N: grep's form
    if form != "table" and not as_json:
        for line in result.lines(form):
            out_console.print(line, highlight=False, markup=False, emoji=False, soft_wrap=True)  # :100: is a line
        return
    _show(result, as_json)


@command(app, rq.CompareRequest, "compare")
def compare(values: dict, as_json: bool) -> None:
    result = dispatch.call(rq.CompareRequest, values, "cli")
    result.line_width = _card_line()  # nearest passages fill lines of their cards
    _show(result, as_json)


@command(app, rq.ShowRequest, "show")
def show(values: dict, as_json: bool) -> None:
    result = dispatch.call(rq.ShowRequest, values, "cli")
    for line in result.hints:
        err_console.print(f"[cyan]encodr: hint:[/] {line}", highlight=False, soft_wrap=True)
    _show(result, as_json)


@command(app, rq.JudgeRequest, "judge")
def judge(values: dict, as_json: bool) -> None:
    request = dispatch.prepare(rq.JudgeRequest, values, "cli")
    if request.delete:
        unjudge = dispatch.prepare(rq.UnjudgeRequest, {"query": request.query, "doc": request.doc}, "cli")
        _show(dispatch.run(unjudge, "cli", index=request.index), as_json)
        return
    _show(dispatch.run(request, "cli"), as_json)


@command(app, rq.JudgmentsRequest, "judgments")
def judgments(values: dict, as_json: bool) -> None:
    _show(dispatch.call(rq.JudgmentsRequest, values, "cli"), as_json)


@command(app, rq.IndexesRequest, "indexes")
def indexes(values: dict, as_json: bool) -> None:
    _show(dispatch.call(rq.IndexesRequest, values, "cli"), as_json)


@command(app, rq.TuiRequest, "tui", json_flag=False)
def tui(values: dict, as_json: bool) -> None:
    request = dispatch.prepare(rq.TuiRequest, values, "cli")
    _interactive_threads()
    from .tui import EncodrApp

    if request.index is not None:
        from .index import Index

        Index.open(request.index).close()  # report a broken index here, as a one-line error
    EncodrApp(Path(request.index) if request.index else None, rerank=request.rerank).run()


@command(app, rq.ModelsRequest, "models")
def models(values: dict, as_json: bool) -> None:
    _show(dispatch.call(rq.ModelsRequest, values, "cli"), as_json)


@command(app, rq.RecipesRequest, "recipes")
def list_recipes(values: dict, as_json: bool) -> None:
    _show(dispatch.call(rq.RecipesRequest, values, "cli"), as_json)


runs_app = typer.Typer(help=" ".join(rq.RunsRequest.__doc__.split()), no_args_is_help=False, rich_markup_mode=None)
app.add_typer(runs_app, name="runs")


def _runs_callback(values: dict, as_json: bool, ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        _show(dispatch.call(rq.RunsRequest, values, "cli"), as_json)


CONTEXT = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
command(runs_app, rq.RunsRequest, extra=(CONTEXT,), register=lambda target, fn: target.callback(invoke_without_command=True)(fn))(
    _runs_callback
)


@command(runs_app, rq.RunRequest, "show")
def runs_show(values: dict, as_json: bool) -> None:
    _show(dispatch.call(rq.RunRequest, values, "cli"), as_json)


@command(app, rq.ServeRequest, "serve", json_flag=False)
def serve(values: dict, as_json: bool) -> None:
    request = dispatch.prepare(rq.ServeRequest, values, "cli")
    _interactive_threads()  # the event loop, the batcher and FAISS share the cores with torch: idle OpenMP threads must sleep
    need("fastapi"), need("uvicorn")
    from .serve import serve as run_server

    run_server(request, announce=lambda line: err_console.print(f"encodr: {line}", highlight=False))


@command(app, rq.McpRequest, "mcp", json_flag=False)
def mcp_cmd(values: dict, as_json: bool) -> None:
    request = dispatch.prepare(rq.McpRequest, values, "cli")
    _interactive_threads()
    need("mcp")
    from .mcp import run as run_mcp

    run_mcp(request, announce=lambda line: err_console.print(f"encodr: {line}", highlight=False))


def _version(value: bool) -> None:
    if value:
        from . import __version__

        out_console.print(f"encodr {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", help="Print encodr's version and exit.", callback=_version, is_eager=True),
) -> None:
    """encodr's options that precede any command (--version)."""


def _interruption(exc: KeyboardInterrupt) -> str:
    """How a run was stopped: by Ctrl-C, or by a signal or a dead launcher (:mod:`encodr.signals`)."""
    from .signals import Terminated

    return f"stopped: {exc.reason}" if isinstance(exc, Terminated) else "interrupted by Ctrl-C"


def main() -> None:
    """Console-script entry point: user errors, OS faults (full disk, read-only…), Ctrl-C and
    SIGTERM → one line on stderr, exit status 2.

    The cyclic garbage collector is told to leave alone (``gc.freeze``) the objects that exist
    once the imports are done, and again once the command is done: the modules' objects are never
    garbage, yet every full collection, and the one at exit, would walk them all (most of a
    short command's collecting). Objects made by the command are collected as usual while it
    runs; at exit the process's memory goes back whole, and files are closed by then (``with``)."""
    import gc
    import os

    from .outputs import os_fault
    from .signals import install

    os.environ.setdefault(
        "TQDM_DISABLE", "1"
    )  # one progress style: encodr's bars (ProgressEvent), not sentence-transformers' unlabelled tqdm bars
    install()
    gc.freeze()
    try:
        code = app(standalone_mode=False, prog_name="encodr")  # Click's errors come back here, to be told in one line
        gc.freeze()
    except _CLICK_ERRORS[0] as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `encodr` alone: the help, as Click prints it
            exc.show()
            sys.exit(exc.exit_code)
        _fail(_usage(exc))
    except _CLICK_ERRORS[1] as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        _fail("aborted; nothing was written")
    except EncodrError as exc:
        _fail(words(exc, "cli"))
    except OSError as exc:
        _fail(str(os_fault(exc)))
    except KeyboardInterrupt as exc:
        _fail(f"{_interruption(exc)}; nothing was written")
    if code:  # typer.Exit(N), or Click's 130 for Ctrl-C
        sys.exit(code)


# Click's UsageError and ClickException, as the installed typer has them (its own copy of Click
# from 0.22 on, Click itself before): both are bases of typer.BadParameter.
_CLICK_ERRORS = tuple(next(c for c in typer.BadParameter.__mro__ if c.__name__ == n) for n in ("UsageError", "ClickException"))


def _usage(exc: Exception) -> str:
    """Click's usage error as one line: the problem, then where the help is (and, for
    ``--set a=1 b=2``, that each KEY=VALUE takes its own ``--set``)."""
    message = exc.format_message().rstrip(".")
    command = exc.ctx.command_path if exc.ctx is not None else "encodr"
    if "unexpected extra argument" in message and "=" in message:
        message += "; give each KEY=VALUE its own --set (--set a=1 --set b=2)"
    return f"{command}: {message[:1].lower()}{message[1:]}; see '{command} --help'"


def _fail(message: str) -> None:
    from rich.markup import escape

    err_console.print(
        f"[red]encodr: error:[/] {escape(message)}", highlight=False, soft_wrap=True
    )  # a message's "[serve]" is text, not markup
    sys.exit(2)
