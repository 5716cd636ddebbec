"""The MCP server (``encodr mcp``): the fourth front end of the core (:mod:`encodr.core`), for AI agents.

Built on the official ``mcp`` SDK's low-level :class:`mcp.server.lowlevel.Server`, not its
decorator API: a tool's input schema is the JSON schema of a core request's fields
(:func:`encodr.core.fields.schema`), the same generator that writes the HTTP API's request
bodies, so a field means and defaults to the same thing on every front end. Each tool builds
its request with :func:`encodr.core.fields.build`, runs the core's command in a worker thread
and answers with the result's JSON (what ``--json`` prints and HTTP returns) as text and as
structured content; a refused request is a tool error worded with field names
(:func:`encodr.core.fields.words`).

Tools: ``search``, ``get_document``, ``list_indexes``; with ``--writable`` also
``add_documents``, ``sync_index``, ``delete_documents`` and ``judge``; with ``--server URL``,
``search`` and ``list_indexes`` forwarded to a running ``encodr serve`` (its Ray Serve deployment
too), nothing opened here. Transports: stdio (an agent starts
``encodr mcp``), or streamable HTTP on 127.0.0.1 with ``--port``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from . import __version__
from .core import dispatch
from .core import requests as rq
from .core.fields import schema, words
from .core.served import Served
from .errors import EncodrError


@dataclass(frozen=True)
class Tool:
    """One MCP tool: its request class (``None``: no input) and what it tells an agent."""

    request: type | None
    description: str
    writes: bool = False


TOOLS = {
    "search": Tool(
        rq.SearchRequest,
        "Search an index for the passages and documents nearest to one or more queries (dense, keyword or hybrid "
        "search, filters, languages, re-ranking). Each hit has its document id, title, source and text; with "
        "max_tokens, its path:first-last › symbol and a snippet trimmed to the budget. With defined, only the code "
        "that defines the name asked for (where is NAME defined).",
    ),
    "get_document": Tool(
        rq.DocumentRequest,
        "Get one document of an index whole, by the document id a search hit gives: its text, title, source, file and metadata.",
    ),
    "list_indexes": Tool(
        None, "List the indexes this server searches, with their model, languages, document and text counts, and sources."
    ),
    "add_documents": Tool(
        rq.UpsertRequest,
        "Add documents to an index, or replace those with the same id (each document: id, text, optional "
        "title, metadata and lang).",
        writes=True,
    ),
    "sync_index": Tool(
        rq.SyncRequest,
        "Bring an index in step with files and folders on the server's machine: add new documents, re-encode "
        "changed ones, remove those whose file is gone.",
        writes=True,
    ),
    "delete_documents": Tool(rq.DocumentIdsRequest, "Delete documents from an index by id.", writes=True),
    "judge": Tool(
        rq.JudgeRequest,
        "Say whether a search hit helped: grade how relevant a document (a hit's path or document id) is to the query "
        "it was found for (0 not relevant, 1 relevant, 2 highly relevant); encodr measures and tunes the index "
        "on these judgments.",
        writes=True,
    ),
}


@dataclass
class Agents:
    """An MCP server: what it serves (:class:`~encodr.core.served.Served`, shared with the HTTP
    server) and the tools it offers over it."""

    served: Served = field(default_factory=Served)
    remote: str | None = None  # a running encodr serve's URL: searches are forwarded there (``encodr mcp --server``)

    def tools(self) -> dict[str, Tool]:
        """The tools offered: every reading tool, and the writing ones when served writable; with
        :attr:`remote`, the tools its HTTP routes answer (:data:`FORWARDED`)."""
        if self.remote:
            return {name: TOOLS[name] for name in FORWARDED}
        return {name: tool for name, tool in TOOLS.items() if self.served.writable or not tool.writes}

    def call(self, name: str, arguments: dict) -> dict:
        """Run tool ``name`` with ``arguments``; its result's JSON.

        Raises:
            EncodrError: an unknown tool, a refused request (naming the field), or the command's own errors.
        """
        tools = self.tools()
        if name not in tools:
            raise EncodrError(f"no tool '{name}'; this server offers {', '.join(tools)}", field="name", status=404)
        tool = tools[name]
        if self.remote:
            return self._forwarded(name, tool, arguments)
        if tool.request is None:
            if arguments:
                raise EncodrError(f"{name} takes no arguments; got {', '.join(arguments)}", field=next(iter(arguments)))
            return {"indexes": self.served.index_rows()}
        served = self.served
        if "index" not in arguments and "index" in tool.request.model_fields and len(served.searchers) == 1:
            arguments = {**arguments, "index": next(iter(served.searchers))}  # the one index served
        request = dispatch.prepare(tool.request, arguments, "mcp")
        searcher = served.searcher(request.index)
        if tool.writes and name != "judge":  # documents: one write at a time, then the searcher opens the new generation
            same = (
                searcher.encoder.backend == searcher.index.meta.backend
            )  # a torch index's queries may run on onnx: its documents stay on torch
            encoder = {"encoder": searcher.encoder} if name != "delete_documents" and same else {}
            return served.write(request.index, request, "mcp", **encoder).payload()
        context = {"reranker": served.reranker(request.rerank)} if name == "search" else {}
        return dispatch.run(request, "mcp", searcher=searcher, **context).payload()

    def _forwarded(self, name: str, tool: Tool, arguments: dict) -> dict:
        """Tool ``name`` answered by the server at :attr:`remote` (:func:`encodr.core.remote.ask`):
        the request checked here, its HTTP fields sent, the server's JSON returned as it is."""
        from .core.fields import fields_for
        from .core.remote import ask

        route = FORWARDED[name]
        if tool.request is None:
            return {"indexes": ask(self.remote, route)}
        request = dispatch.prepare(tool.request, arguments, "mcp")
        return ask(self.remote, route, request.model_dump(include=set(fields_for(tool.request, "http")), exclude_none=True))


FORWARDED = {"search": "/v1/search", "list_indexes": "/v1/indexes"}  # tool → the route that answers it (POST, GET without input)


def input_schemas(agents: Agents) -> dict[str, dict]:
    """Each offered tool's input schema, as ``tools/list`` answers it: the fields its request
    declares for MCP (:func:`encodr.core.fields.schema`); a tool without a request takes nothing.
    Where one index is served, ``index`` may be left out (:meth:`Agents.call` fills it in)."""
    out = {}
    one = not agents.remote and len(agents.served.searchers) == 1
    for name, tool in agents.tools().items():
        found = schema(tool.request, "mcp") if tool.request is not None else {"type": "object", "properties": {}}
        if one and "index" in found.get("required", []):
            found = {**found, "required": [f for f in found["required"] if f != "index"]}
        out[name] = found
    return out


def server(agents: Agents):
    """The MCP :class:`~mcp.server.lowlevel.Server` over ``agents``: ``tools/list`` lists
    :meth:`Agents.tools` with schemas from the requests' declarations, ``tools/call`` runs one."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx, params) -> types.ListToolsResult:
        tools = agents.tools()
        return types.ListToolsResult(
            tools=[types.Tool(name=n, description=tools[n].description, input_schema=s) for n, s in input_schemas(agents).items()]
        )

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            payload = await anyio.to_thread.run_sync(agents.call, params.name, dict(params.arguments or {}))
        except EncodrError as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=words(exc, "mcp"))], is_error=True)
        except OSError as exc:
            from .outputs import os_fault

            return types.CallToolResult(content=[types.TextContent(type="text", text=str(os_fault(exc)))], is_error=True)
        text = json.dumps(payload, default=str)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=json.loads(text))

    return Server(
        "encodr",
        version=__version__,
        instructions="Search the user's indexed documents: list_indexes, then search; get_document reads a hit's whole document.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def run(request, announce: Callable[[str], None] = lambda line: None) -> None:
    """Serve ``request`` (:class:`encodr.core.requests.McpRequest`) until the client leaves
    (stdio) or Ctrl-C (``--port``).

    Raises:
        EncodrError: an index that cannot be opened (before anything is served); the port is taken.
    """
    import anyio

    served = Served(writable=request.writable)
    if request.server:  # searches forwarded to a running server: nothing is opened here, the server is asked once now
        from .core.remote import ask

        ask(request.server, "/health")
        announce(f"forwarding searches to {request.server}")
    else:
        served.open_indexes(request.index, announce)
        served.warm()
    agents = Agents(served, remote=request.server)
    app = server(agents)
    if request.port is None:
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read, write):
                await app.run(read, write, app.create_initialization_options())

        anyio.run(main)
        return
    import uvicorn

    from .sockets import listening_socket

    sock = listening_socket(request.host, request.port)
    announce(f"MCP over streamable HTTP at http://{request.host}:{request.port}/mcp (Ctrl-C stops)")
    uvicorn.Server(uvicorn.Config(app.streamable_http_app(host=request.host), log_level="warning")).run(sockets=[sock])
