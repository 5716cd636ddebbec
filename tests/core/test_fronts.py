"""One declaration, three front ends: every field a request declares for a front end is one
that front end renders — the CLI's options (derived from the declaration), the HTTP API's
body schema, the TUI panes' forms. The check is shown to fail on a front end that lacks a field."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from encodr.core import requests as rq
from encodr.core.fields import fields_for, option

# command → (CLI path, request class)
CLI_COMMANDS = {
    ("tune",): rq.TuneRequest, ("eval",): rq.EvalRequest, ("score",): rq.ScoreRequest, ("index",): rq.IndexRequest,
    ("search",): rq.SearchRequest, ("indexes",): rq.IndexesRequest, ("models",): rq.ModelsRequest, ("recipes",): rq.RecipesRequest,
    ("runs",): rq.RunsRequest, ("runs", "show"): rq.RunRequest, ("delete",): rq.DeleteRequest,
}  # fmt: skip
HTTP_ROUTES = {"/v1/embeddings": rq.EmbedRequest, "/v1/search": rq.SearchRequest, "/v1/score": rq.ScoreRequest, "/v1/rerank": rq.RerankRequest,
               "/v1/indexes/{name}/documents": rq.UpsertRequest, "DELETE /v1/indexes/{name}/documents": rq.DocumentIdsRequest}  # fmt: skip


def missing(model, front: str, rendered: set[str]) -> list[str]:
    """The fields ``model`` declares for ``front`` that ``rendered`` lacks."""
    return [name for name in fields_for(model, front) if name not in rendered]


def cli_params(path: tuple[str, ...]) -> set[str]:
    from encodr.cli import app

    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {p.name for p in command.params}


def http_fields(route: str) -> set[str]:
    """The body fields of ``route`` (``"DELETE /path"`` for another method than POST) in the server's OpenAPI."""
    from encodr.serve import Served, create_app

    method, _, path = route.rpartition(" ")
    schema = create_app(Served()).openapi()
    return set(schema["paths"][path][(method or "post").lower()]["requestBody"]["content"]["application/json"]["schema"]["properties"])


def tui_fields(model) -> set[str]:
    """The fields of ``model`` that a TUI pane has a widget for: mapped in ``tui/forms.py`` to a
    widget id that a pane composes."""
    import re

    import encodr.tui
    from encodr.tui.forms import FORMS

    source = "".join(p.read_text() for p in Path(encodr.tui.__file__).parent.glob("*.py"))
    composed = set(re.findall(r'id="([a-z-]+)"', source))
    return {name for name, widget in FORMS[model].items() if widget in composed}


@pytest.mark.parametrize("path", list(CLI_COMMANDS), ids=" ".join)
def test_the_cli_renders_every_field(path):
    assert missing(CLI_COMMANDS[path], "cli", cli_params(path)) == []


@pytest.mark.parametrize("route", list(HTTP_ROUTES))
def test_the_http_api_renders_every_field(route):
    model = HTTP_ROUTES[route]
    assert missing(model, "http", http_fields(route)) == []
    assert http_fields(route) == set(fields_for(model, "http"))  # and no field another front end alone takes


@pytest.mark.parametrize("model", [rq.IndexRequest, rq.EvalRequest, rq.TuneRequest], ids=lambda m: m.__name__)
def test_the_tui_renders_every_field(model):
    assert missing(model, "tui", tui_fields(model)) == []


def test_every_request_is_rendered_by_some_front_end():
    requests = {cls for cls in vars(rq).values() if isinstance(cls, type) and issubclass(cls, rq.Request) and cls is not rq.Request}
    assert requests == set(CLI_COMMANDS.values()) | set(HTTP_ROUTES.values())


def test_the_check_fails_when_a_front_end_lacks_a_field():
    class Probe(rq.SearchRequest):
        colour: str = option("red", "A field no front end renders yet.")

    assert missing(Probe, "cli", cli_params(("search",))) == ["colour"]
    assert missing(Probe, "http", http_fields("/v1/search")) == ["colour"]

    class TuiProbe(rq.IndexRequest):
        shards: int = option(1, "A new index option.", fronts=("cli", "tui"))

    assert missing(TuiProbe, "tui", tui_fields(rq.IndexRequest)) == ["shards"]
    assert missing(TuiProbe, "http", http_fields("/v1/search")) == []  # not declared for HTTP: not asked of it


def test_a_cli_option_is_derived_from_its_declaration(capsys, monkeypatch):
    from tests.conftest import run_cli

    from encodr.cli import app

    search = typer.main.get_command(app).commands["search"]
    k = next(p for p in search.params if p.name == "k")
    assert k.opts == ["-k"] and k.help.startswith(rq.SearchRequest.model_fields["k"].description)
    code, _, err = run_cli(["search", "cats", "--index", "nowhere", "-k", "0"], capsys, monkeypatch)  # the declaration's ge=1, as one line
    assert code == 2 and err.strip() == "encodr: error: -k 0: give 1 or more"
