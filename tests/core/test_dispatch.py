"""The one dispatcher (encodr.core.dispatch): every command is reached through it, each request
is checked once, and a refusal is worded in the front end's vocabulary."""

from __future__ import annotations

import pytest

from encodr.core import dispatch
from encodr.core import requests as rq
from encodr.errors import EncodrError

FRONT_END_ONLY = {rq.ServeRequest, rq.McpRequest, rq.TuiRequest}  # they start a front end; no command answers them


def test_every_request_has_its_command():
    requests = {
        cls for cls in vars(rq).values() if isinstance(cls, type) and issubclass(cls, rq.Request) and cls is not rq.Request
    }
    assert requests - FRONT_END_ONLY - set(dispatch.COMMANDS) == set()


def test_a_request_is_checked_once(monkeypatch):
    seen = []
    monkeypatch.setattr(rq.RunsRequest, "check", lambda self: seen.append(self))
    result = dispatch.call(rq.RunsRequest, {"limit": 3}, "cli")
    assert len(seen) == 1 and result.rows is not None


@pytest.mark.parametrize(
    ("front", "said"),
    [("cli", "--mode hybird: not one of"), ("http", "mode: 'hybird' is not one of"), ("mcp", "mode: 'hybird' is not one of")],
)
def test_a_bad_choice_is_worded_in_each_front_ends_words(front, said):
    with pytest.raises(EncodrError) as refused:
        dispatch.prepare(rq.SearchRequest, {"index": "kb", "query": ["q"], "mode": "hybird"}, front)
    assert str(refused.value).startswith(said) and refused.value.field == "mode"


def test_a_check_refusal_names_the_field_as_the_front_end_does():
    values = {"index": "kb", "query": "pump", "doc": "d1"}
    with pytest.raises(EncodrError, match="--grade") as cli:
        dispatch.prepare(rq.JudgeRequest, {**values, "grade": 5}, "cli")
    with pytest.raises(EncodrError, match="^grade: 5") as http:
        dispatch.prepare(rq.JudgeRequest, {**values, "grade": 5}, "http")
    assert cli.value.field == http.value.field == "grade"


def test_the_front_end_is_handed_to_a_command_that_records_it(monkeypatch):
    given = {}
    monkeypatch.setitem(
        dispatch.COMMANDS, rq.JudgeRequest, lambda request, front, searcher=None: given.update(front=front, doc=request.doc)
    )
    dispatch.call(rq.JudgeRequest, {"index": "kb", "query": "pump", "doc": "d1"}, "mcp")
    assert given == {"front": "mcp", "doc": "d1"}


def test_a_search_without_a_kept_searcher_reuses_the_one_opened_before_and_follows_the_index(
    tmp_path, tiny_model, tiny_roberta, monkeypatch
):
    import shutil

    import encodr.index.search as search_module
    from encodr.index import BuildOptions, build

    corpus, out = tmp_path / "c.txt", tmp_path / "idx"
    corpus.write_text("the pump moves water\nthe valve stops water\n")
    build([str(corpus)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    loads = []
    real = search_module.load_encoder
    monkeypatch.setattr(search_module, "load_encoder", lambda *a, **k: loads.append(a) or real(*a, **k))

    def texts(query):
        return [
            h.text
            for h in dispatch.call(rq.SearchRequest, {"index": str(out), "query": [query], "mode": "keyword"}, "cli")
            .results[0]
            .hits
        ]

    assert texts("pump") == ["the pump moves water"] and texts("valve") == ["the valve stops water"]
    assert len(loads) == 1  # the second search used the searcher the first one opened
    shutil.rmtree(out)  # deleted and built again under the same name: the kept searcher must not answer from the old one
    corpus.write_text("the boiler heats water\n")
    build([str(corpus)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    assert texts("pump") == [] and texts("boiler") == ["the boiler heats water"]
    build(
        [str(corpus)], out, BuildOptions(model=str(tiny_roberta), lang="eng", write="overwrite")
    )  # another model: a new searcher
    assert texts("boiler") == ["the boiler heats water"] and len(loads) == 2
