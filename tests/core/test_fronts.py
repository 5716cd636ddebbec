"""One declaration, three front ends: every field a request declares for a front end is one
that front end renders — the CLI's options (derived from the declaration), the HTTP API's
body schema, the TUI panes' forms. The check is shown to fail on a front end that lacks a field."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from encodr.core import requests as rq
from encodr.core.fields import default, fields_for, option, rendering

# command → (CLI path, request class)
CLI_COMMANDS = {
    ("tune",): rq.TuneRequest,
    ("eval",): rq.EvalRequest,
    ("score",): rq.ScoreRequest,
    ("index",): rq.IndexRequest,
    ("search",): rq.SearchRequest,
    ("indexes",): rq.IndexesRequest,
    ("models",): rq.ModelsRequest,
    ("recipes",): rq.RecipesRequest,
    ("runs",): rq.RunsRequest,
    ("runs", "show"): rq.RunRequest,
    ("delete",): rq.DeleteRequest,
    ("serve",): rq.ServeRequest,
    ("mcp",): rq.McpRequest,
    ("tui",): rq.TuiRequest,
    ("judge",): rq.JudgeRequest,
    ("judgments",): rq.JudgmentsRequest,
    ("show",): rq.ShowRequest,
    ("compare",): rq.CompareRequest,
}
HTTP_ROUTES = {
    "/v1/embeddings": rq.EmbedRequest,
    "/v1/search": rq.SearchRequest,
    "/v1/score": rq.ScoreRequest,
    "/v1/rerank": rq.RerankRequest,
    "/v1/indexes/{name}/documents": rq.UpsertRequest,
    "DELETE /v1/indexes/{name}/documents": rq.DocumentIdsRequest,
    "/v1/indexes/{name}/judgments": rq.JudgeRequest,
    "DELETE /v1/indexes/{name}/judgments": rq.UnjudgeRequest,
}


def mcp_tools() -> dict:
    """MCP tool → request class (``encodr.mcp.TOOLS``; tools without input left out)."""
    from encodr.mcp import TOOLS

    return {name: tool.request for name, tool in TOOLS.items() if tool.request is not None}


def missing(model, front: str, rendered: set[str]) -> list[str]:
    """The fields ``model`` declares for ``front`` that ``rendered`` lacks."""
    return [name for name in fields_for(model, front) if name not in rendered]


def cli_command(path: tuple[str, ...]):
    from encodr.cli import app

    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def cli_params(path: tuple[str, ...]) -> set[str]:
    """The fields the CLI command renders: a choice field offered as flags (``--add``) by its name."""
    from encodr.cli import CHOICE_FLAG

    return {p.name.split(CHOICE_FLAG)[0] for p in cli_command(path).params}


def http_fields(route: str) -> set[str]:
    """The body fields of ``route`` (``"DELETE /path"`` for another method than POST) in the server's OpenAPI."""
    from encodr.serve import Served, create_app

    method, _, path = route.rpartition(" ")
    schema = create_app(Served()).openapi()
    return set(
        schema["paths"][path][(method or "post").lower()]["requestBody"]["content"]["application/json"]["schema"]["properties"]
    )


def tui_fields(model) -> set[str]:
    """The fields of ``model`` that a TUI pane has a widget for: its widget id
    (:func:`encodr.tui.forms.widget_id`, derived from the field) among the ids the panes compose,
    read from their source: ``id=widget_id(Request, "field")``, ``choice_select(R, "field")``,
    ``field_input(R, "field", …)`` (``R`` as the function names it), or a shared widget's ``id="…"``."""
    import ast

    import encodr.tui
    from encodr.core import requests
    from encodr.tui.forms import forms, widget_id

    composed = set()
    for path in Path(encodr.tui.__file__).parent.glob("*.py"):
        for function in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)):
            aliases = {
                t.id: n.value.id
                for n in ast.walk(function)
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)
                for t in n.targets
                if isinstance(t, ast.Name)
            }
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
                name = getattr(call.func, "id", getattr(call.func, "attr", ""))
                composed |= {k.value.value for k in call.keywords if k.arg == "id" and isinstance(k.value, ast.Constant)}
                if name in ("widget_id", "choice_select", "field_input") and len(call.args) >= 2:
                    owner, field = call.args[0], call.args[1]
                    if isinstance(owner, ast.Name) and isinstance(field, ast.Constant):
                        composed.add(widget_id(getattr(requests, aliases.get(owner.id, owner.id)), field.value))
    return {name for name, widget in forms()[model].items() if widget in composed}


@pytest.mark.parametrize("path", list(CLI_COMMANDS), ids=" ".join)
def test_the_cli_renders_every_field(path):
    assert missing(CLI_COMMANDS[path], "cli", cli_params(path)) == []


@pytest.mark.parametrize("route", list(HTTP_ROUTES))
def test_the_http_api_renders_every_field(route):
    model = HTTP_ROUTES[route]
    assert missing(model, "http", http_fields(route)) == []
    assert http_fields(route) == set(fields_for(model, "http"))  # and no field another front end alone takes


TUI_REQUESTS = [
    cls for cls in vars(rq).values() if isinstance(cls, type) and issubclass(cls, rq.Request) and fields_for(cls, "tui")
]


@pytest.mark.parametrize("model", TUI_REQUESTS, ids=lambda m: m.__name__)
def test_the_tui_renders_every_field(model):
    assert missing(model, "tui", tui_fields(model)) == []


@pytest.mark.parametrize("tool", list(mcp_tools()))
def test_mcp_renders_every_field(tool):
    from encodr.core.served import Served
    from encodr.mcp import Agents, input_schemas

    listed = input_schemas(Agents(Served(writable=True)))  # what tools/list answers
    assert missing(mcp_tools()[tool], "mcp", set(listed[tool]["properties"])) == []


def test_every_request_is_rendered_by_some_front_end():
    requests = {
        cls for cls in vars(rq).values() if isinstance(cls, type) and issubclass(cls, rq.Request) and cls is not rq.Request
    }
    assert requests == set(CLI_COMMANDS.values()) | set(HTTP_ROUTES.values()) | set(mcp_tools().values())


# --- drift: no front end states a default or a choice of its own ---------------------------------


def cli_drift(model, path: tuple[str, ...]) -> list[str]:
    """The fields of ``model`` whose option in CLI command ``path`` states a default or choices
    other than the declaration's: a default of its own, a help "[default: …]" that differs, a
    metavar or click.Choice with other choices."""
    import re

    from encodr.cli import _shown

    params = {p.name: p for p in cli_command(path).params}
    drift = []
    from encodr.cli import CHOICE_FLAG

    for name in fields_for(model, "cli"):
        r = rendering(model, name)
        if r.choice_flags:  # one flag a value but the default, each off by default
            flags = {p.name.split(CHOICE_FLAG)[1]: p for p in params.values() if p.name.startswith(name + CHOICE_FLAG)}
            if set(flags) != set(r.choices) - {default(model, name)} or any(p.default for p in flags.values()):
                drift.append(name)
            continue
        p, declared, choices = params[name], default(model, name), r.choices
        option = p.param_type_name == "option"  # typer vendors click: duck-typed, not isinstance
        said = re.search(r"\[default: ([^\]]*)\]", p.help or "") if option else None
        if option and p.is_flag:
            wrong = bool(p.default) != bool(declared)
        else:
            wrong = p.default not in (None, ()) and p.default != declared
            wrong |= (said.group(1) if said else None) != (None if declared in (None, [], ()) else _shown(declared))
        if choices:
            wrong |= option and p.metavar != f"[{'|'.join(choices)}]"
        if hasattr(getattr(p, "type", None), "choices"):
            wrong |= tuple(p.type.choices) != choices
        if wrong:
            drift.append(name)
    return drift


def tui_drift(app, model) -> list[str]:
    """The fields of ``model`` whose TUI widget (``tui/forms.py``) states a default or choices
    other than the declaration's: a Select's options or initial value, an Input's initial text."""
    from textual.widgets import Input, Select

    from encodr.tui.forms import forms

    drift = []
    for name, widget_id in forms()[model].items():
        widget, declared = app.query_one(f"#{widget_id}"), default(model, name)
        first = declared[0] if isinstance(declared, list) and declared else declared
        if isinstance(widget, Select):
            blank = getattr(Select, "NULL", Select.BLANK)
            offered = tuple(value for _, value in widget._options if value is not blank)
            value = None if widget.value is blank else widget.value
            choices = rendering(model, name).choices  # none declared: an open value, the widget's list only suggests
            if (choices and offered != choices) or value != first:
                drift.append(name)
        elif isinstance(widget, Input) and widget.value not in ("", None):
            drift.append(name)  # a pre-filled text is a default the form states itself: blank leaves it to the request
    return drift


def http_drift(route: str) -> list[str]:
    """Fields whose OpenAPI property states another default or enum than the declaration's."""
    from encodr.serve import Served, create_app

    model = HTTP_ROUTES[route]
    method, _, path = route.rpartition(" ")
    props = create_app(Served()).openapi()["paths"][path][(method or "post").lower()]["requestBody"]["content"][
        "application/json"
    ]["schema"]["properties"]
    drift = []
    for name, prop in props.items():
        declared, choices = default(model, name), list(rendering(model, name).choices)
        enum = (
            prop.get("enum")
            or next((b.get("enum") for b in prop.get("anyOf", []) if "enum" in b), None)
            or prop.get("items", {}).get("enum")
        )
        if prop.get("default", declared) != declared or (choices and enum != choices):
            drift.append(name)
    return drift


@pytest.mark.parametrize("path", list(CLI_COMMANDS), ids=" ".join)
def test_the_cli_states_no_default_or_choice_of_its_own(path):
    assert cli_drift(CLI_COMMANDS[path], path) == []


@pytest.mark.parametrize("route", list(HTTP_ROUTES))
def test_the_http_api_states_no_default_or_choice_of_its_own(route):
    assert http_drift(route) == []


async def test_the_tui_states_no_default_or_choice_of_its_own():
    from encodr.tui import EncodrApp
    from encodr.tui.forms import forms

    app = EncodrApp()
    async with app.run_test(size=(180, 60)):
        assert {model.__name__: tui_drift(app, model) for model in forms()} == {model.__name__: [] for model in forms()}
        mode = app.query_one("#search-mode")
        assert (
            mode.value == default(rq.SearchRequest, "mode")
            and tuple(v for _, v in mode._options) == rendering(rq.SearchRequest, "mode").choices
        )


def test_the_drift_checks_fail_when_a_front_end_restates_a_default(monkeypatch):
    """A front end that states the mode's default itself ("dense") drifts from the declaration ("hybrid")."""

    class Drifted(rq.SearchRequest):
        mode: str = option("dense", rq.SearchRequest.model_fields["mode"].description, choices=("dense", "keyword", "hybrid"))

    assert cli_drift(Drifted, ("search",)) == ["mode"]  # the CLI's help says [default: hybrid]: not this declaration's
    HTTP_ROUTES["/v1/search"], saved = Drifted, HTTP_ROUTES["/v1/search"]
    try:
        assert http_drift("/v1/search") == ["mode"]
    finally:
        HTTP_ROUTES["/v1/search"] = saved


def test_the_check_fails_when_a_front_end_lacks_a_field():
    class Probe(rq.SearchRequest):
        colour: str = option("red", "A field no front end renders yet.")

    assert missing(Probe, "cli", cli_params(("search",))) == ["colour"]
    assert missing(Probe, "http", http_fields("/v1/search")) == ["colour"]

    class TuiProbe(rq.IndexRequest):
        probe_option: int = option(1, "A new index option.", fronts=("cli", "tui"))

    assert missing(TuiProbe, "tui", tui_fields(rq.IndexRequest)) == ["probe_option"]
    assert missing(TuiProbe, "http", http_fields("/v1/search")) == []  # not declared for HTTP: not asked of it


def test_a_cli_option_is_derived_from_its_declaration(capsys, monkeypatch):
    from encodr.cli import app
    from tests.conftest import run_cli

    search = typer.main.get_command(app).commands["search"]
    k = next(p for p in search.params if p.name == "k")
    assert k.opts == ["-k"] and k.help.startswith(rq.SearchRequest.model_fields["k"].description)
    code, _, err = run_cli(
        ["search", "cats", "--index", "nowhere", "-k", "0"], capsys, monkeypatch
    )  # the declaration's ge=1, as one line
    assert code == 2 and err.strip() == "encodr: error: -k 0: must be 1 or more"
