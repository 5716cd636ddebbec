"""Writing documents over HTTP: upsert and delete by id (``--writable`` and the key only), each a
generation that searches never see half of."""

from __future__ import annotations

import threading

import pytest

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from encodr.core import commands  # noqa: E402
from encodr.core.requests import IndexRequest  # noqa: E402
from encodr.serve import Limits, create_app, load  # noqa: E402

KEY = {"Authorization": "Bearer s3cret"}


@pytest.fixture
def served(tmp_path, tiny_model):
    corpus = tmp_path / "kb.jsonl"
    corpus.write_text(
        '{"_id": "p1", "text": "The pump pressure must stay below 4 bar", "team": "ops"}\n'
        '{"_id": "v1", "text": "Valve maintenance: grease the stem", "team": "dev"}\n'
    )
    commands.index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(tmp_path / "kb"), lang="eng"))
    s = load([], [str(tmp_path / "kb")], Limits())
    s.api_key, s.writable = "s3cret", True
    yield s
    s.close()


@pytest.fixture
def client(served):
    return TestClient(create_app(served))


def texts(client, query, **extra):
    body = {"query": query, "index": "kb", "k": 10, "mode": "keyword", **extra}
    answer = client.post("/v1/search", json=body, headers=KEY)
    assert answer.status_code == 200, answer.text
    return [h["text"] for h in answer.json()["results"][0]["hits"]]


def test_an_upsert_is_seen_by_the_next_search_and_replaces_the_old_text(client):
    answer = client.post(
        "/v1/indexes/kb/documents",
        headers=KEY,
        json={
            "documents": [
                {"id": "p1", "text": "The pump pressure must stay below 9 bar", "metadata": {"team": "ops"}},
                {"id": "n1", "text": "New pump manual for the night shift", "title": "Manual", "metadata": {"team": "night"}},
            ]
        },
    )
    assert answer.status_code == 200, answer.text
    assert {k: answer.json()[k] for k in ("added", "updated", "encoded")} == {"added": 1, "updated": 1, "encoded": 2}
    found = texts(client, "pump")
    assert any("9 bar" in t for t in found) and not any("4 bar" in t for t in found) and any("night shift" in t for t in found)
    assert texts(client, "pump", filter={"team": "night"}) == ["Manual New pump manual for the night shift"]


def test_a_delete_is_never_seen_by_a_later_search(client):
    answer = client.request("DELETE", "/v1/indexes/kb/documents", headers=KEY, json={"ids": ["v1", "nope"]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["removed"] == 1 and answer.json()["not_found"] == ["nope"]
    assert texts(client, "valve") == []


def test_writes_need_writable_and_the_key(client, served):
    body = {"documents": [{"id": "x", "text": "x"}]}
    answer = client.post("/v1/indexes/kb/documents", json=body)
    assert answer.status_code == 401 and answer.json()["error"]["param"] == "authorization"
    served.writable = False
    for method in ("POST", "DELETE"):
        answer = client.request(
            method, "/v1/indexes/kb/documents", headers=KEY, json=body if method == "POST" else {"ids": ["p1"]}
        )
        assert answer.status_code == 403 and "started with --writable" in answer.json()["error"]["message"]
    assert len(texts(client, "pump")) == 1


def test_bad_documents_are_422_naming_the_field(client):
    for body, words in (
        ({"documents": []}, "documents is empty"),
        ({"documents": [{"id": "a", "text": " "}]}, "blank text"),
        ({"documents": [{"id": "a", "text": "t"}, {"id": "a", "text": "u"}]}, "appears twice"),
    ):
        answer = client.post("/v1/indexes/kb/documents", headers=KEY, json=body)
        assert (
            answer.status_code == 422
            and answer.json()["error"]["param"] == "documents"
            and words in answer.json()["error"]["message"]
        )
    answer = client.post("/v1/indexes/other/documents", headers=KEY, json={"documents": [{"id": "a", "text": "t"}]})
    assert answer.status_code == 404


def test_concurrent_searches_during_50_writes_see_no_error(client):
    errors, done = [], threading.Event()

    def search():
        while not done.is_set():
            answer = client.post("/v1/search", json={"query": "pump", "index": "kb", "k": 5, "mode": "hybrid"}, headers=KEY)
            if answer.status_code != 200 or not answer.json()["results"][0]["hits"]:
                errors.append(answer.text)

    readers = [threading.Thread(target=search) for _ in range(2)]
    for r in readers:
        r.start()
    try:
        for i in range(50):
            if i % 2:
                answer = client.request("DELETE", "/v1/indexes/kb/documents", headers=KEY, json={"ids": [f"w{i - 1}"]})
            else:
                answer = client.post(
                    "/v1/indexes/kb/documents",
                    headers=KEY,
                    json={"documents": [{"id": f"w{i}", "text": f"written pump note {i}"}]},
                )
            assert answer.status_code == 200, answer.text
    finally:
        done.set()
        for r in readers:
            r.join()
    assert errors == []
    assert texts(client, "written") == []


def test_a_writable_server_needs_a_key_and_watch_one_index(monkeypatch):
    monkeypatch.delenv("ENCODR_API_KEY", raising=False)
    from encodr.core.dispatch import prepare
    from encodr.core.fields import build
    from encodr.core.requests import ServeRequest
    from encodr.errors import EncodrError

    with pytest.raises(EncodrError, match="--writable lets clients change indexes: give it a key with --api-key") as refused:
        prepare(ServeRequest, {"index": ["kb"], "writable": True}, "cli")  # in the CLI's words
    assert refused.value.field == "writable"
    with pytest.raises(EncodrError, match="--watch syncs one index"):
        prepare(ServeRequest, {"index": ["a", "b"], "api_key": "k", "watch": ["docs"]}, "cli")
    build(
        ServeRequest, {"index": ["kb"], "api_key": "k", "writable": True, "watch": ["docs"]}
    ).check()  # both rules kept: accepted


def test_an_unknown_route_answers_in_the_apis_error_shape(client):
    answer = client.get("/v1/nothing", headers=KEY)
    assert (
        answer.status_code == 404
        and answer.json()["error"]["param"] == "path"
        and "no route GET /v1/nothing" in answer.json()["error"]["message"]
    )


def test_judgments_over_http_are_written_listed_and_deleted_with_writable_and_the_key(client, served):
    answer = client.post(
        "/v1/indexes/kb/judgments", headers=KEY, json={"query": "pump pressure", "doc": "p1", "grade": 2, "passage": "The pump…"}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["front"] == "http" and answer.json()["grade"] == 2
    listed = client.get("/v1/indexes/kb/judgments", headers=KEY).json()
    assert [(r["query"], r["doc"], r["grade"], r["status"]) for r in listed] == [("pump pressure", "p1", 2, "current")]
    for body, status, param in (
        ({"query": "pump", "doc": "nope"}, 404, "doc"),
        ({"query": "pump", "doc": "p1", "grade": 5}, 422, "grade"),
        ({"query": " ", "doc": "p1"}, 422, "query"),
        ({"query": "pump", "doc": "p1", "grade": 1, "idx": 1}, 422, "idx"),
    ):
        refused = client.post("/v1/indexes/kb/judgments", headers=KEY, json=body)
        assert refused.status_code == status and refused.json()["error"]["param"] == param, refused.text
    assert (
        "--"
        not in client.post("/v1/indexes/kb/judgments", headers=KEY, json={"query": "pump", "doc": "p1", "grade": 5}).json()[
            "error"
        ]["message"]
    )
    assert client.post("/v1/indexes/kb/judgments", json={"query": "pump", "doc": "p1"}).status_code == 401
    served.writable = False
    assert client.post("/v1/indexes/kb/judgments", headers=KEY, json={"query": "pump", "doc": "p1"}).status_code == 403
    assert (
        client.request(
            "DELETE", "/v1/indexes/kb/judgments", headers=KEY, json={"query": "pump pressure", "doc": "p1"}
        ).status_code
        == 403
    )
    served.writable = True
    gone = client.request("DELETE", "/v1/indexes/kb/judgments", headers=KEY, json={"query": "PUMP pressure", "doc": "p1"})
    assert gone.status_code == 200 and gone.json()["judgments"] == 0
    again = client.request("DELETE", "/v1/indexes/kb/judgments", headers=KEY, json={"query": "pump pressure", "doc": "p1"})
    assert again.status_code == 404 and again.json()["error"]["param"] == "doc"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "search.example.org"])
def test_serving_beyond_this_machine_needs_a_key_or_no_auth(monkeypatch, host):
    monkeypatch.delenv("ENCODR_API_KEY", raising=False)
    from encodr.core.dispatch import prepare
    from encodr.core.fields import build
    from encodr.core.requests import ServeRequest
    from encodr.errors import EncodrError

    with pytest.raises(
        EncodrError,
        match=r"serves the indexes beyond this machine: give a key with --api-key KEY \(or ENCODR_API_KEY\), "
        r"or pass --no-auth",
    ) as refused:
        prepare(ServeRequest, {"host": host}, "cli")
    assert refused.value.field == "host"
    build(ServeRequest, {"host": host, "api_key": "k"}).check()  # a key: accepted
    build(ServeRequest, {"host": host, "no_auth": True}).check()  # said outright: accepted
    monkeypatch.setenv("ENCODR_API_KEY", "k")
    build(ServeRequest, {"host": host}).check()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_needs_no_key(monkeypatch, host):
    monkeypatch.delenv("ENCODR_API_KEY", raising=False)
    from encodr.core.fields import build
    from encodr.core.requests import ServeRequest

    build(ServeRequest, {"host": host}).check()


def test_serve_on_all_addresses_without_a_key_is_one_line_exit_2(monkeypatch, capsys):
    from tests.conftest import run_cli

    monkeypatch.delenv("ENCODR_API_KEY", raising=False)
    code, _, err = run_cli(["serve", "--host", "0.0.0.0", "--model", "nowhere-model"], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "--api-key" in err and "ENCODR_API_KEY" in err and "--no-auth" in err


def test_a_judgment_over_http_moves_its_querys_hit_at_once(client):
    def ranked(**extra):
        answer = client.post(
            "/v1/search", json={"query": "valve grease", "index": "kb", "k": 2, "mode": "dense", **extra}, headers=KEY
        )
        assert answer.status_code == 200, answer.text
        return [(h["ext_id"], h["judged"]) for h in answer.json()["results"][0]["hits"]]

    last = ranked()[-1][0]
    assert (
        client.post("/v1/indexes/kb/judgments", headers=KEY, json={"query": "valve grease", "doc": last, "grade": 2}).status_code
        == 200
    )
    assert ranked()[0] == (last, 2)  # first at once, marked
    assert ranked(no_judgments=True)[-1] == (last, None)
