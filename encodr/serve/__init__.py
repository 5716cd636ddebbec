"""``encodr serve``: models and indexes over HTTP (:mod:`.app`), with dynamic batching
(:mod:`.batcher`). Needs the ``serve`` extra (FastAPI, uvicorn)."""

from __future__ import annotations

import dataclasses
import threading
from typing import Callable

from ..errors import EncodrError
from ..sockets import listening_socket
from .app import Limits, Served, create_app, served_hosts

__all__ = ["Limits", "Served", "create_app", "limits_of", "load", "serve"]


def load(
    models: list[str],
    indexes: list[str],
    limits: Limits = Limits(),
    api_key: str | None = None,
    announce: Callable[[str], None] = lambda line: None,
    backend: str = "torch",
) -> Served:
    """Load what a server serves, once: each model (a bi-encoder behind a
    :class:`~.batcher.DynamicBatcher`, or a cross-encoder), and each index with a searcher
    whose queries go through its model's batcher (an index's model is served too, under the
    name it was built with).

    Args:
        models: model specs (alias, directory, Hub id); default, with no index either: ``minilm``.
        indexes: index directories or workspace names; default, with no model either: every
            index of the workspace.
        backend: the forward pass of each bi-encoder in ``models`` (``torch``, ``onnx``,
            ``onnx-int8``); an index's model runs on the backend a search of that index takes
            (:func:`~encodr.index.search.query_encoder`: ONNX float32 for a torch float32 index
            on a CPU, else the backend the index was built with).

    Raises:
        EncodrError: a model or index that cannot be loaded, or an unknown backend (one line,
            before the server binds).
    """
    from ..core.served import workspace_indexes
    from ..index.search import query_encoder
    from ..models import load_cross, load_encoder, resolve
    from ..models.encoder import check_backend
    from .batcher import BatchedEncoder, DynamicBatcher

    check_backend(backend)

    if not models and not indexes:
        models = ["minilm"]
        indexes = workspace_indexes()
    served = Served(limits=limits, api_key=api_key)

    def add_model(spec: str, backend: str = "torch", built: str | None = None) -> None:
        """Serve ``spec`` on ``backend``; or, for an index built with ``built``, on the backend a
        search of that index takes (:func:`~encodr.index.search.query_encoder`, as ``encodr search``)."""
        if spec in served.models:
            return
        if resolve(spec).encoder_type == "cross":
            served.models[spec] = (load_cross(spec), None)
        else:
            encoder = query_encoder(spec, None, built) if built else load_encoder(spec, backend=backend)
            batcher = DynamicBatcher(
                encoder, limits.batch_wait_ms / 1000, limits.batch_tokens, not limits.no_batching, limits.workers
            )
            served.models[spec] = (BatchedEncoder(encoder, batcher), batcher)
        announce(f"serving model {spec}")

    for spec in models:
        add_model(spec, backend)

    def encoder_for(model: str, built: str):
        add_model(model, built=built)
        scorer, batcher = served.models[model]
        if batcher is None:
            raise EncodrError(
                f"an index names model '{model}', a cross-encoder: it gives no vectors to search with", field="index"
            )
        return scorer

    if indexes:
        served.open_indexes(indexes, announce, encoder_for)
    return served


def limits_of(request) -> Limits:
    """The :class:`Limits` a :class:`~encodr.core.requests.ServeRequest` asks for."""
    return Limits(**{f.name: getattr(request, f.name) for f in dataclasses.fields(Limits)})


def serve(request, announce: Callable[[str], None] = lambda line: None) -> None:
    """Serve ``request`` (a checked :class:`~encodr.core.requests.ServeRequest`): load what it
    names (:func:`load`) and serve until SIGTERM or Ctrl-C: then the server stops accepting,
    lets the requests in flight finish (uvicorn's graceful shutdown), stops the batchers and returns.
    With ``request.watch``, a thread syncs the served index with those folders on every change
    (:func:`encodr.core.dispatch.watch`), one ``announce`` line a sync.

    Raises:
        EncodrError: see :func:`load`; the port is taken.
    """
    api_key, host, port = request.key(), request.host, request.port
    if request.engine == "ray":
        from .cluster import serve_on_ray

        settings = dict(
            limits=limits_of(request),
            api_key=api_key,
            hosts=served_hosts(host, request.allow_host),
            origins=request.allow_origin,
            deadline=request.shard_timeout,
        )
        return serve_on_ray(request, settings, announce)
    import asyncio
    import signal

    import uvicorn

    sock = listening_socket(host, port)
    try:
        served = load(request.model, request.index, limits_of(request), api_key, announce, request.backend)
        served.writable = request.writable
        served.warm()
    except BaseException:
        sock.close()
        raise
    stop = threading.Event()
    if request.watch:
        from ..core import dispatch
        from ..core.requests import IndexRequest

        searcher = next(iter(served.searchers.values()))
        sync = IndexRequest(corpus=list(request.watch), out=str(searcher.index.path), write="sync")
        threading.Thread(
            target=dispatch.watch,
            name="encodr-watch",
            daemon=True,
            args=(sync, announce, lambda line: announce(f"warning: {line}"), stop, served.write_lock),
        ).start()
    config = uvicorn.Config(
        create_app(served, served_hosts(host, request.allow_host), request.allow_origin),
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=60,
        lifespan="off",
    )
    writes = "; POST and DELETE /v1/indexes/NAME/documents" if request.writable else ""
    listening = (
        f"listening on http://{host}:{port} (POST /v1/embeddings, /v1/search, /v1/score, /v1/rerank; GET /v1/models, "
        "/v1/indexes, /v1/runs, "
        f"/health{writes})" + ("; requests need the API key" if api_key else "")
    )
    lines = [listening] + (
        [f"warning: --no-auth: anyone who can reach {host}:{port} can read the served indexes"]
        if not api_key and request.no_auth
        else []
    )

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if self.started:  # listening: say so (tests and scripts wait for this line)
                for line in lines:
                    announce(line)

    # uvicorn catches SIGTERM and SIGINT while it serves (stop accepting, finish what is in flight), then
    # restores the handlers it found and raises the signal again: ignored here, so serve returns normally.
    found = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with asyncio.Runner(
            loop_factory=config.get_loop_factory()
        ) as runner:  # uvicorn's own choice of loop (uvloop where installed)
            runner.run(Server(config).serve(sockets=[sock]))
    finally:
        stop.set()
        for sig, handler in found.items():
            signal.signal(sig, handler)
        served.close()
    announce("stopped: the requests in flight were answered")
