"""The HTTP API (FastAPI): the third front end of the core (:mod:`encodr.core`).

Routes render the core's requests and results: a body is validated by the request's own
declaration (unknown or badly typed fields: 422 naming the field), checked by its
``check()``, answered through :mod:`encodr.core.dispatch`, and returned as the
result's JSON — the same JSON ``--json`` prints. Errors have OpenAI's shape:
``{"error": {"message", "type", "param", "code"}}``.

Only what the server was started with can be named: a model or index outside that set is a
404 listing the served ones, whatever path the request gives.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect

from ..core import dispatch
from ..core import requests as rq
from ..core.fields import fields_for, schema, words
from ..core.limits import Limits
from ..core.served import Served as CoreServed
from ..errors import EncodrError


@dataclass
class Served(CoreServed):
    """What an HTTP server holds warm (:class:`encodr.core.served.Served`: models, searchers,
    the write lock), with its request limits and API key."""

    limits: Limits = field(default_factory=Limits)
    api_key: str | None = None


def error(status: int, message: str, param: str | None = None) -> JSONResponse:
    """An error answer in OpenAI's shape, naming the field at fault (``param``)."""
    kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error", 413: "request_too_large"}.get(
        status, "invalid_request_error"
    )
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": status}}, status_code=status)


def answer(result) -> Response:
    """A 200 with ``result``'s JSON (:meth:`~encodr.core.results.Result.payload_json`)."""
    return Response(result.payload_json(), media_type="application/json")


def http_schema(model) -> dict:
    """The JSON schema of the fields of request class ``model`` that the HTTP API takes (:func:`encodr.core.fields.schema`)."""
    return schema(model, "http")


def _body_doc(model) -> dict:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": http_schema(model)}}}}


async def parse(request: Request, model, path: dict | None = None):
    """The body of ``request`` as a checked request of class ``model`` (:func:`encodr.core.dispatch.prepare`),
    HTTP fields only, with ``path``'s values (the route's ``{name}``) added.

    Raises:
        EncodrError: not JSON (400), not an object, a field the API does not take, or a bad value (422).
    """
    try:
        raw = await request.body()
    except ClientDisconnect:  # the client left mid-body: nothing to answer, nothing to log
        raise EncodrError("the client left before sending its whole body", field="body", status=400) from None
    try:
        body = json.loads(raw or b"null")
    except ValueError as exc:
        raise EncodrError(f"the body is not valid JSON ({exc}); send a JSON object", field="body", status=400) from None
    if not isinstance(body, dict):
        raise EncodrError("the body must be a JSON object", field="body")
    allowed = fields_for(model, "http")
    unknown = [k for k in body if k not in allowed]
    if unknown and model.model_config.get("extra") == "forbid":
        raise EncodrError(f"unknown field '{unknown[0]}'; this route takes {', '.join(allowed)}", field=unknown[0])
    return dispatch.prepare(model, {**{k: v for k, v in body.items() if k in allowed}, **(path or {})}, "http")


class _Guard:
    """What every route checks of a request beside its body: the API key, the sizes, and the
    models and indexes named (:class:`Served`)."""

    def __init__(self, served: Served):
        self.served, self.limits = served, served.limits

    def check_key(self, request: Request) -> None:
        """Raises EncodrError (401, field ``authorization``) unless the request carries the server's key (when it has one)."""
        if self.served.api_key is None:
            return
        if request.headers.get("authorization", "") != f"Bearer {self.served.api_key}":
            raise EncodrError(
                "missing or wrong API key; send 'Authorization: Bearer KEY' with the key the server was started with",
                field="authorization",
                status=401,
            )

    def sized(self, texts: list[str], name: str) -> None:
        """Raises EncodrError (413, naming ``name``) for more than ``max_texts`` texts or one over ``max_chars`` characters."""
        limits = self.limits
        if len(texts) > limits.max_texts:
            raise EncodrError(
                f"{name} holds {len(texts)} texts; the limit is {limits.max_texts} a request (max_texts): send fewer",
                field=name,
                status=413,
            )
        longest = max((len(t) for t in texts), default=0)
        if longest > limits.max_chars:
            raise EncodrError(
                f"{name} holds a text of {longest} characters; the limit is {limits.max_chars} (max_chars): shorten or split it",
                field=name,
                status=413,
            )

    def cross_named(self, name: str, field_name: str):
        """The served cross-encoder ``name``. Raises EncodrError: not served (404), or a bi-encoder."""
        scorer, batcher = self.served.model(name, field_name)
        if batcher is not None:
            raise EncodrError(
                f"model '{name}' is a bi-encoder; re-ranking needs a served cross-encoder (encodr serve --model CROSS_ENCODER)",
                field=field_name,
            )
        return scorer


def create_app(served: Served, hosts: list[str] | None = None, origins: list[str] = ()) -> FastAPI:
    """The FastAPI application over ``served`` (see the module docstring for the routes): the
    error handlers, then the routes of each group under ``/v1`` behind the API key.

    Args:
        hosts: the ``Host`` header values answered (Starlette's ``TrustedHostMiddleware``; any
            other gets 400), which is what defeats DNS rebinding: a web page whose own name
            resolves to 127.0.0.1 still sends that name; None answers any (an application
            embedded in a test or another server).
        origins: the browser origins whose cross-origin requests are answered (FastAPI's CORS
            settings); a request whose ``Origin`` is another site's gets 403.
    """
    app = FastAPI(
        title="encodr", description="Embeddings (OpenAI-compatible), search and scoring with encodr models and indexes."
    )
    _error_handlers(app)
    _browser_guard(app, hosts, list(origins))
    guard = _Guard(served)
    api = APIRouter(prefix="/v1", dependencies=[Depends(guard.check_key)])
    for routes in (_model_routes, _document_routes, _judgment_routes, _listing_routes):
        routes(api, served, guard)
    app.include_router(api)

    @app.get("/health")
    async def health():
        """Liveness, and what is served: models (with forward passes and texts so far) and indexes."""
        return {
            "status": "ok",
            "models": {n: {"passes": b.passes, "texts": b.texts} if b else {} for n, (_, b) in served.models.items()},
            "indexes": list(served.searchers),
        }

    return app


def served_hosts(host: str, allowed: list[str] = ()) -> list[str]:
    """The ``Host`` names a server bound to ``host`` answers: the loopback names when it serves
    this machine only, the address itself, and the names the user ``allowed`` (``*``: any)."""
    from ..core.requests import loopback

    names = ["127.0.0.1", "localhost", "::1", "[::1]"] if loopback(host) else []
    return list(dict.fromkeys([*names, host, *allowed]))


def _browser_guard(app: FastAPI, hosts: list[str] | None, origins: list[str]) -> None:
    """Requests a web page in a browser could send on its own are refused: another ``Host``
    (DNS rebinding) and another site's ``Origin``, unless allowed (see :func:`create_app`)."""
    from fastapi.middleware.cors import CORSMiddleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    if origins:
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["*"], allow_headers=["*"])
    app.add_middleware(_SameOrigin, origins=origins)
    if hosts is not None and "*" not in hosts:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts)


class _SameOrigin:
    """ASGI middleware: a request whose ``Origin`` is another site's than its ``Host`` gets 403,
    unless the origin is one of ``origins`` (``*``: any). A plain ASGI class rather than
    ``@app.middleware("http")``, whose request and response wrappers every request would pay for."""

    def __init__(self, app, origins: list[str]):
        self.app, self.origins = app, origins

    async def __call__(self, scope, receive, send) -> None:
        headers = Headers(scope=scope) if scope["type"] == "http" else {}
        origin = headers.get("origin")
        if (
            origin
            and "*" not in self.origins
            and origin not in self.origins
            and urlsplit(origin).netloc != headers.get("host", "")
        ):
            refused = error(
                403,
                f"Origin {origin} is another site's: encodr serve answers a browser only from its own origin, "
                "or from one given with --allow-origin",
                "Origin",
            )
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _error_handlers(app: FastAPI) -> None:
    """Every error in OpenAI's shape: a refusal (its field in the API's words), an unknown route or method, a body FastAPI
    cannot validate."""

    @app.exception_handler(EncodrError)
    async def refused(_, exc: EncodrError):
        return error(exc.status, words(exc, "http"), exc.field)

    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(StarletteHTTPException)
    async def not_found(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 404:
            return error(404, f"no route {request.method} {request.url.path}; see GET /docs for the routes", "path")
        if exc.status_code == 405:
            return error(405, f"{request.method} is not allowed on {request.url.path}; see GET /docs", "method")
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(_, exc: RequestValidationError):
        first = exc.errors()[0]
        name = str(first["loc"][-1]) if first.get("loc") else None
        return error(422, f"{name}: {first['msg'].lower()}", name)


def _model_routes(api: APIRouter, served: Served, guard: _Guard) -> None:
    """POST /v1/embeddings, /v1/search, /v1/rerank and /v1/score."""
    sized, model_named, searcher_named, cross_named = guard.sized, served.model, served.searcher, guard.cross_named

    @api.post("/embeddings", openapi_extra=_body_doc(rq.EmbedRequest))
    async def embeddings(request: Request):
        """OpenAI-compatible embeddings: ``input`` a string or a list, ``encoding_format`` float or base64."""
        req = await parse(request, rq.EmbedRequest)
        scorer, batcher = model_named(req.model)
        if batcher is None:
            raise EncodrError(
                f"model '{req.model}' is a cross-encoder: it scores pairs (POST /v1/score) but gives no embeddings", field="model"
            )
        sized(req.texts, "input")
        vectors = await asyncio.wrap_future(batcher.submit(req.texts))  # encoded off the event loop, batched with other requests
        result = dispatch.run(req, "http", encode=lambda _: vectors, dimension=scorer.dimension, count_tokens=batcher.tokens)
        return answer(result)

    @api.post("/search", openapi_extra=_body_doc(rq.SearchRequest))
    async def search(request: Request):
        """Top-k hits of each query in a served index; every option of ``encodr search``."""
        req = await parse(request, rq.SearchRequest)
        sized(req.query, "query")
        searcher = searcher_named(req.index)
        if req.model is not None and req.model != searcher.index.meta.model:
            raise EncodrError(
                f"index '{req.index}' is searched with model '{searcher.index.meta.model}', not '{req.model}'; leave model out",
                field="model",
            )
        built = searcher.index.meta.backend
        if req.backend is not None and req.backend != built:
            raise EncodrError(f"index '{req.index}' is served with backend {built}; leave backend out", field="backend")
        reranker = cross_named(req.rerank, "rerank") if req.rerank else None
        result = await run_in_threadpool(lambda: dispatch.run(req, "http", searcher=searcher, reranker=reranker))
        return answer(result)

    @api.post("/rerank", openapi_extra=_body_doc(rq.RerankRequest))
    async def rerank(request: Request):
        """Scores of ``documents`` (or ``texts``) against ``query`` by a served cross-encoder, best first (Cohere's shape)."""
        req = await parse(request, rq.RerankRequest)
        reranker = cross_named(req.model, "model")
        sized(req.candidates, "documents" if req.documents is not None else "texts")
        result = await run_in_threadpool(lambda: dispatch.run(req, "http", reranker=reranker))
        return answer(result)

    @api.post("/score", openapi_extra=_body_doc(rq.ScoreRequest))
    async def score(request: Request):
        """Cosine (bi-encoder) or σ score (cross-encoder, ``cross: true``) of two texts."""
        req = await parse(request, rq.ScoreRequest)
        sized([req.text_a, req.text_b], "text_a")
        scorer, batcher = model_named(req.model)
        if req.cross != (batcher is None):
            raise EncodrError(
                f"model '{req.model}' is a {'cross' if batcher is None else 'bi'}-encoder; "
                f"{'pass' if batcher is None else 'leave out'} cross: true",
                field="cross",
            )
        result = await run_in_threadpool(lambda: dispatch.run(req, "http", scorer=scorer))
        return answer(result)


def _document_routes(api: APIRouter, served: Served, guard: _Guard) -> None:
    """POST and DELETE /v1/indexes/{name}/documents (with --writable and the key)."""
    sized, searcher_named, writable = guard.sized, served.searcher, served.require_writable

    @api.post("/indexes/{name}/documents", openapi_extra=_body_doc(rq.UpsertRequest))
    async def upsert_documents(name: str, request: Request):
        """Add or replace documents by id (txtai's document shape: ``id``, ``text``, optional ``title``,
        ``metadata``, ``lang``; Qdrant's resource path). Needs --writable and the API key."""
        writable()
        searcher = searcher_named(name)
        req = await parse(request, rq.UpsertRequest)
        sized([d.text for d in req.documents], "documents")
        result = await run_in_threadpool(lambda: served.write(name, req, "http", encoder=searcher.encoder))
        return answer(result)

    @api.delete("/indexes/{name}/documents", openapi_extra=_body_doc(rq.DocumentIdsRequest))
    async def delete_documents(name: str, request: Request):
        """Delete documents by id (``{"ids": [...]}``); ids the index lacks are listed in ``not_found``. Needs --writable
        and the API key."""
        writable()
        searcher_named(name)
        req = await parse(request, rq.DocumentIdsRequest)
        result = await run_in_threadpool(lambda: served.write(name, req, "http"))
        return answer(result)


def _judgment_routes(api: APIRouter, served: Served, guard: _Guard) -> None:
    """POST, GET and DELETE /v1/indexes/{name}/judgments (writes with --writable and the key)."""
    sized, searcher_named, writable = guard.sized, served.searcher, served.require_writable

    @api.post("/indexes/{name}/judgments", openapi_extra=_body_doc(rq.JudgeRequest))
    async def judge(name: str, request: Request):
        """Judge a hit: ``query``, ``doc`` (its path as a hit shows it, or its id), ``grade`` (0, 1, 2) and optional
        ``passage``, kept with the index; judging the pair again replaces the grade. Needs --writable and the API key."""
        writable()
        searcher = searcher_named(name)
        req = await parse(request, rq.JudgeRequest, {"index": name})
        sized([req.query], "query")
        sized([req.passage or ""], "passage")
        return answer(await run_in_threadpool(lambda: dispatch.run(req, "http", searcher=searcher)))

    @api.get("/indexes/{name}/judgments")
    async def list_judgments(name: str):
        """The index's judgments, each with its fold and status (``encodr judgments --json``)."""
        searcher = searcher_named(name)
        req = dispatch.prepare(rq.JudgmentsRequest, {"index": name}, "http")
        return answer(await run_in_threadpool(lambda: dispatch.run(req, "http", searcher=searcher)))

    @api.delete("/indexes/{name}/judgments", openapi_extra=_body_doc(rq.UnjudgeRequest))
    async def unjudge(name: str, request: Request):
        """Delete the judgment of ``query`` and ``doc``. Needs --writable and the API key."""
        writable()
        searcher = searcher_named(name)
        req = await parse(request, rq.UnjudgeRequest)
        return answer(await run_in_threadpool(lambda: dispatch.run(req, "http", index=name, searcher=searcher)))


def _listing_routes(api: APIRouter, served: Served, guard: _Guard) -> None:
    """GET /v1/models, /v1/indexes and /v1/runs."""

    @api.get("/models")
    async def models():
        """The served models, OpenAI's shape."""
        data = [
            {
                "id": name,
                "object": "model",
                "owned_by": "encodr",
                "encoder": "bi-encoder" if b is not None else "cross-encoder",
                "dimension": s.dimension if b is not None else None,
            }
            for name, (s, b) in served.models.items()
        ]
        return {"object": "list", "data": data}

    @api.get("/indexes")
    async def indexes():
        """The served indexes: the fields of ``encodr indexes`` of each one's current generation."""
        return await run_in_threadpool(served.index_rows)

    @api.get("/runs")
    async def runs(limit: int | None = None):
        """Recorded training runs, newest first (``encodr runs --json``); ``limit`` defaults to the request's declaration."""
        given = {} if limit is None else {"limit": limit}
        return JSONResponse(json.loads(json.dumps(dispatch.call(rq.RunsRequest, given, "http").payload(), default=str)))
