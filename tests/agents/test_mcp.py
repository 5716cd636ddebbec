"""``encodr mcp``: an agent, through the official SDK's stdio client, lists the tools, searches an
index and reads a hit's document; the tools' input schemas are the HTTP request bodies'."""

from __future__ import annotations

import json
import os
import sys

import pytest

mcp = pytest.importorskip("mcp")

from encodr.core import commands  # noqa: E402
from encodr.core import requests as rq  # noqa: E402
from encodr.core.fields import schema  # noqa: E402
from encodr.core.requests import IndexRequest  # noqa: E402
from encodr.core.served import Served  # noqa: E402
from encodr.core.session import Session  # noqa: E402
from encodr.mcp import TOOLS, Agents  # noqa: E402


@pytest.fixture
def kb(tmp_path, tiny_model):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.md").write_text("---\nteam: ops\n---\n# Pump\n\nThe pump pressure must stay below 4 bar.\n")
    (docs / "valve.md").write_text("# Valve\n\nValve maintenance: grease the stem every month.\n")
    commands.index(IndexRequest(corpus=[str(docs)], model=str(tiny_model), out=str(tmp_path / "kb"), lang="eng"))
    return tmp_path / "kb"


async def test_an_agent_lists_the_tools_searches_and_reads_a_hits_document(kb):
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "encodr", "mcp", "--index", str(kb)], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"search", "get_document", "list_indexes"}  # no writing tool without --writable
            search_schema = tools["search"].input_schema
            assert search_schema["properties"]["mode"]["enum"] == ["dense", "keyword", "hybrid"]

            listed = await session.call_tool("list_indexes", {})
            assert not listed.is_error and json.loads(listed.content[0].text)["indexes"][0]["name"] == "kb"

            found = await session.call_tool("search", {"index": "kb", "query": "pump pressure", "mode": "keyword", "k": 1})
            assert not found.is_error, found.content[0].text
            hit = found.structured_content["results"][0]["hits"][0]
            assert "4 bar" in hit["text"]

            doc = await session.call_tool("get_document", {"index": "kb", "id": hit["ext_id"]})
            assert not doc.is_error, doc.content[0].text
            record = json.loads(doc.content[0].text)
            assert record["id"] == hit["ext_id"] and "4 bar" in record["text"] and record["metadata"]["team"] == "ops"

            bad = await session.call_tool("search", {"index": "kb", "query": "pump", "mode": "hybird"})
            assert bad.is_error and bad.content[0].text == "mode: 'hybird' is not one of dense, keyword, hybrid"


def test_each_tools_input_schema_is_the_http_bodys_for_the_fields_they_share():
    http = schema(rq.SearchRequest, "http")
    tool = schema(TOOLS["search"].request, "mcp")
    shared = set(http["properties"]) & set(tool["properties"])
    assert shared == set(http["properties"])  # every search field of the API is a tool argument
    assert {n: tool["properties"][n] for n in shared} == {n: http["properties"][n] for n in shared}
    for name in ("add_documents", "delete_documents"):
        model = TOOLS[name].request
        http, tool = schema(model, "http"), schema(model, "mcp")
        assert {n: tool["properties"][n] for n in http["properties"]} == http["properties"]
        assert set(tool["properties"]) - set(http["properties"]) == {"index"}  # over HTTP the index is the path's NAME


def test_writing_tools_need_writable_and_change_what_search_sees(kb, tiny_model):
    from encodr.index import Searcher

    reading = Agents(Served(Session({"kb": Searcher(kb)})))
    with pytest.raises(Exception, match="no tool 'add_documents'"):
        reading.call("add_documents", {"index": "kb", "documents": [{"id": "n1", "text": "night shift pump manual"}]})
    agents = Agents(Served(Session({"kb": Searcher(kb)}), writable=True))
    added = agents.call("add_documents", {"index": "kb", "documents": [{"id": "n1", "text": "night shift pump manual"}]})
    assert added["added"] == 1
    hits = agents.call("search", {"index": "kb", "query": "night shift", "mode": "keyword"})["results"][0]["hits"]
    assert [h["ext_id"] for h in hits] == ["n1"]
    assert agents.call("delete_documents", {"index": "kb", "ids": ["n1"]})["removed"] == 1
    assert agents.call("search", {"index": "kb", "query": "night shift", "mode": "keyword"})["results"][0]["hits"] == []


def test_refused_tool_calls_name_the_field_in_the_apis_words(kb, tmp_path):
    from encodr.core.fields import words
    from encodr.errors import EncodrError
    from encodr.index import Searcher

    agents = Agents(Served(Session({"kb": Searcher(kb)}), writable=True))
    cases = [
        (("get_document", {"index": "kb", "id": "nowhere.md"}), "id", 404, "has no document 'nowhere.md'"),
        (("get_document", {"index": "kb", "id": "pump.md", "lines": "9-2"}), "lines", 422, "'9-2' is not LINE or FIRST-LAST"),
        (("search", {"index": "elsewhere", "query": "pump"}), "index", 404, "served: kb"),
        (("list_indexes", {"index": "kb"}), "index", 422, "list_indexes takes no arguments"),
        (("sync_index", {"index": "kb", "corpus": []}), "corpus", 422, "corpus is empty"),
        (("search", {"index": "kb", "query": "pump", "k": 0}), "k", 422, "k: 0 must be 1 or more"),
        (
            ("search", {"index": "kb", "query": "pump", "colour": "red"}),
            "colour",
            422,
            "colour: 'red' is not a field of this request",
        ),
    ]
    for (tool, arguments), field, status, message in cases:
        with pytest.raises(EncodrError) as caught:
            agents.call(tool, arguments)
        assert (caught.value.field, caught.value.status) == (field, status) and message in words(caught.value, "mcp"), (
            tool,
            words(caught.value, "mcp"),
        )
        assert "--" not in words(caught.value, "mcp")


def test_with_one_index_served_an_agent_may_leave_it_out_and_read_a_hit_by_its_own_id(kb):
    from encodr.errors import EncodrError
    from encodr.index import Searcher
    from encodr.mcp import input_schemas

    agents = Agents(Served(Session({"kb": Searcher(kb)})))
    assert "index" not in input_schemas(agents)["search"].get("required", [])
    hit = agents.call("search", {"query": "pump pressure", "mode": "keyword"})["results"][0]["hits"][0]
    assert isinstance(hit["id"], int) and "4 bar" in hit["text"]
    record = agents.call("get_document", {"id": hit["id"]})
    assert record["id"] == hit["ext_id"] and "4 bar" in record["text"]
    with pytest.raises(EncodrError, match="no hit of index .* has id 999"):
        agents.call("get_document", {"id": 999})
    two = Agents(Served(Session({"kb": Searcher(kb), "kb2": Searcher(kb)})))
    assert "index" in input_schemas(two)["search"]["required"]
    with pytest.raises(EncodrError, match="index"):
        two.call("search", {"query": "pump"})


def test_get_document_reads_the_lines_a_hit_names_by_its_path(kb):
    from encodr.index import Searcher

    agents = Agents(Served(Session({"kb": Searcher(kb)})))
    hit = agents.call("search", {"index": "kb", "query": "pump pressure", "mode": "keyword"})["results"][0]["hits"][0]
    assert (hit["path"], hit["snippet_line"]) == ("pump.md", 6)  # the file's line, front matter counted
    found = agents.call("get_document", {"index": "kb", "id": hit["path"], "lines": str(hit["snippet_line"])})
    assert found["lines"] == [{"line": 6, "text": "The pump pressure must stay below 4 bar."}]


def test_an_agent_is_never_answered_with_a_files_old_text_and_is_told_when_it_reads_one(kb, tmp_path):
    from encodr.index import Searcher

    agents = Agents(Served(Session({"kb": Searcher(kb)})))
    (tmp_path / "docs" / "valve.md").write_text("# Valve\n\nValve maintenance: replace the whole valve.\n")
    found = agents.call("search", {"index": "kb", "query": "valve stem", "mode": "keyword"})
    assert found["results"][0]["hits"] == [] and "valve.md edited" in found["hints"][0]
    doc = agents.call("get_document", {"index": "kb", "id": "valve.md", "lines": "3"})
    assert doc["changed"] == "edited" and doc["lines"] == [{"line": 3, "text": "Valve maintenance: grease the stem every month."}]


def test_sync_index_brings_a_served_index_in_step_with_its_folder(kb, tmp_path):
    from encodr.index import Searcher

    agents = Agents(Served(Session({"kb": Searcher(kb)}), writable=True))
    docs = tmp_path / "docs"
    (docs / "valve.md").unlink()
    (docs / "fan.md").write_text("# Fan\n\nClean the fan blades every week.\n")
    done = agents.call("sync_index", {"index": "kb", "corpus": [str(docs)]})
    assert (done["added"], done["removed"], done["documents"]) == (1, 1, 2)
    found = agents.call("search", {"index": "kb", "query": "valve stem", "mode": "keyword"})["results"][0]["hits"]
    assert found == []  # the deleted file's text is never answered


def test_an_agent_judges_a_hit_with_writable_and_encodr_judgments_lists_it(kb):
    served = Served(writable=True)
    served.open_indexes([str(kb)])  # as encodr mcp --index KB opens it
    agents = Agents(served)
    hit = agents.call("search", {"index": "kb", "query": "pump pressure", "mode": "keyword", "k": 1})["results"][0]["hits"][0]
    judged = agents.call(
        "judge", {"index": "kb", "query": "pump pressure", "doc": hit["ext_id"], "grade": 2, "passage": hit["text"]}
    )
    assert judged["front"] == "mcp" and judged["judgments"] == 1
    other = next(
        h
        for h in agents.call("search", {"index": "kb", "query": "pump pressure", "mode": "dense", "k": 2})["results"][0]["hits"]
        if h["ext_id"] != hit["ext_id"]
    )
    agents.call("judge", {"index": "kb", "query": "pump pressure", "doc": other["ext_id"], "grade": 2})
    again = agents.call("search", {"index": "kb", "query": "pump pressure", "mode": "keyword", "k": 2})["results"][0]["hits"]
    assert {(h["ext_id"], h["judged"]) for h in again} == {
        (hit["ext_id"], 2),
        (other["ext_id"], 2),
    }  # both moved up at once, marked
    listed = commands.judgments(rq.JudgmentsRequest(index=str(kb))).payload()
    assert [(r["doc"], r["grade"], r["front"]) for r in listed] == [(hit["ext_id"], 2, "mcp"), (other["ext_id"], 2, "mcp")]
    assert "judge" not in Agents(Served(served.session, writable=False)).tools()


def test_mcp_over_http_beyond_this_machine_needs_no_auth_said_outright():
    from encodr.core.dispatch import prepare
    from encodr.core.fields import build
    from encodr.core.requests import McpRequest
    from encodr.errors import EncodrError

    with pytest.raises(
        EncodrError, match="--host 0.0.0.0 serves the indexes beyond this machine and the MCP server asks no key"
    ) as refused:
        prepare(McpRequest, {"port": 8765, "host": "0.0.0.0"}, "cli")  # the CLI's words
    assert refused.value.field == "host"
    build(McpRequest, {"port": 8765, "host": "0.0.0.0", "no_auth": True}).check()
    build(McpRequest, {"port": 8765}).check()  # 127.0.0.1
    build(McpRequest, {"host": "0.0.0.0"}).check()  # stdio: no address bound


def test_mcp_forwarding_to_a_server_is_refused_in_one_line_when_it_cannot_be(capsys, monkeypatch):
    from encodr.core.dispatch import prepare
    from encodr.core.requests import McpRequest
    from encodr.errors import EncodrError
    from tests.conftest import run_cli

    with pytest.raises(EncodrError, match="drop --index and --writable") as refused:
        prepare(McpRequest, {"server": "http://127.0.0.1:9", "writable": True}, "cli")
    assert refused.value.field == "server"
    code, _, err = run_cli(["mcp", "--server", "http://127.0.0.1:9"], capsys, monkeypatch)  # nothing listens on port 9
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "--server http://127.0.0.1:9: no encodr server answers there" in lines[0], err


@pytest.fixture
def repo_index(tmp_path, tiny_model):
    repo = tmp_path / "repo"
    repo.mkdir()
    doc = " ".join(["Keeps a pool of open sockets to each host until they expire."] * 6)
    (repo / "connector.py").write_text(f'class TCPConnector:\n    """{doc}"""\n\n    limit = 100\n')
    (repo / "client.py").write_text("from connector import TCPConnector\n\n\ndef session():\n    return TCPConnector()\n")
    commands.index(IndexRequest(corpus=[str(repo)], model=str(tiny_model), out=str(tmp_path / "code")))
    return tmp_path / "code"


def test_an_agent_asks_where_a_name_is_defined_within_a_token_budget(repo_index):
    from encodr.index import Searcher

    agents = Agents(Served(Session({"code": Searcher(repo_index)})))
    found = agents.call("search", {"index": "code", "query": "TCPConnector", "defined": True, "max_tokens": 40})
    hits = found["results"][0]["hits"]
    assert [h["ref"] for h in hits] == ["connector.py:1-4 › TCPConnector"]  # the definition alone, not its use
    assert set(hits[0]) == {"ref", "id", "score", "text"} and len(hits[0]["text"]) <= 40 * 4 and hits[0]["text"].endswith("…")
    whole = agents.call("search", {"index": "code", "query": "TCPConnector"})["results"][0]["hits"]
    assert len(whole) == 2 and "snippet" in whole[0]  # without them: every hit, the full payload
