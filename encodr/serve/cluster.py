"""``encodr serve --engine ray``: a sharded index (:mod:`encodr.index.sharded`) served on Ray Serve.

Deployments (one Ray Serve application, ``encodr``):

- ``shard-NNN``: one per shard, ``--replicas`` replicas each, placed by Ray on the cluster's
  nodes. A replica is a :class:`~encodr.index.scatter.LocalShard` of its shard and answers the
  scatter calls: dense and keyword candidates with their raw scores, the rows of the hits kept,
  a document by id. It follows the shard's new generations itself.
- ``ingress``: the HTTP routes of ``encodr serve`` (the same request and response schemas,
  :func:`~.app.create_app`), on Ray Serve's proxy. It loads the index's model once (on a GPU
  where the cluster has one), encodes each query once, fans the query out to every shard through
  their :class:`~ray.serve.handle.DeploymentHandle` s and fuses their candidates as one index
  fuses its own (:class:`~encodr.index.scatter.ShardedIndex` behind the ordinary
  :class:`~encodr.index.Searcher`). A shard that does not answer within ``--shard-timeout``
  is left out and the answer says so: ``partial: true`` and ``missing_shards``.

Every node that may hold a shard replica must see the index folder at the same path (a shared
file system, or a copy on each node): a replica opens the shard where the manifest says it is.
How ours differs from Elasticsearch and Vespa: shards are not moved or copied between nodes by
encodr (replicas share one copy of the files), and writes are not served here (``--writable``
is refused with ``--engine ray``): write with ``encodr index --add`` / ``--sync`` / ``encodr
delete`` on the folder, and each replica opens the shard's new generation on its next query.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Callable

from ..errors import EncodrError
from ..extras import need

SHARD_CPUS = 0.25  # the Ray CPUs a shard replica reserves (a replica mostly waits on FAISS and SQLite)
INGRESS_CPUS = 0.5  # … the ingress, which encodes the queries (a GPU replaces it where the cluster has one)


def handle_call(handle, name: str, args: tuple) -> Callable[[float | None], object]:
    """Send ``name(*args)`` to a shard deployment now; return the function that waits for its
    answer at most the deadline (seconds; :meth:`~ray.serve.handle.DeploymentResponse.result`).
    An :class:`EncodrError` the replica raised comes back as itself; anything else (a dead
    replica, a timeout) as Ray raised it."""
    response = getattr(handle, name).remote(*args)

    def wait(deadline: float | None):
        try:
            return response.result(timeout_s=deadline)
        except Exception as exc:  # the replica's own refusal (a bad filter) is the request's fault: raised as itself
            cause = getattr(exc, "cause", None)
            if isinstance(cause, EncodrError):
                raise EncodrError(str(cause), field=cause.field, status=cause.status) from None
            raise

    return wait


class Ingress:
    """The Ray Serve ingress: ``encodr serve``'s HTTP app over a sharded index whose shards are
    deployments (see the module docstring).

    Args:
        path: the sharded index folder; shards: each shard deployment's handle, in order;
        settings: ``limits`` (:class:`~encodr.core.limits.Limits`), ``api_key``,
            ``hosts``, ``origins`` and ``deadline`` (seconds a shard has to answer).
    """

    def __init__(self, path: str, shards: list, settings: dict):
        from ..index import Searcher
        from ..index.manifest import states_on_disk
        from ..index.scatter import ShardedIndex
        from .app import Served

        self.settings = settings
        self.served = Served(limits=settings["limits"], api_key=settings["api_key"])
        index = ShardedIndex(path, shards, handle_call, settings["deadline"], states_on_disk(path))  # no blocking call here
        self.served.searchers[Path(path).name] = Searcher(path, index=index)

    def __serve_build_asgi_app__(self):
        from .app import create_app

        return create_app(self.served, self.settings["hosts"], self.settings["origins"])


def check_servable(request) -> Path:
    """The one sharded index ``request`` (a :class:`~encodr.core.requests.ServeRequest` with
    ``engine`` ``ray``) can serve.

    Raises:
        EncodrError: not exactly one ``--index``, an index that is not sharded, ``--writable``
            or ``--watch`` (writes go to the folder), Ray Serve not installed.
    """
    from ..index import locate
    from ..index.manifest import read_manifest
    from ..index.sharded import is_sharded

    if len(request.index) != 1:
        raise EncodrError("--engine ray serves one sharded index: pass exactly one --index", field="index")
    path = locate(request.index[0])
    if not is_sharded(path):
        raise EncodrError(
            f"--engine ray serves a sharded index; {path} is not one: build one with encodr index DOCS --out NEW --shards N",
            field="index",
        )
    read_manifest(path)
    if request.writable or request.watch:
        raise EncodrError(
            "--engine ray serves searches; write with encodr index --add / --sync and encodr delete on the folder "
            "(each replica then opens the new generation): drop --writable and --watch",
            field="writable",
        )
    need("ray.serve", field="engine")
    return path


def application(path: Path, request, settings: dict):
    """The bound Ray Serve application: one deployment per shard (``request.replicas`` each) and the ingress."""
    import ray
    from ray import serve

    from ..index.manifest import shard_folders
    from ..index.scatter import LocalShard

    gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
    shards = [
        serve.deployment(LocalShard, name=f"shard-{i:03d}")  # a replica opens its shard as this process would
        .options(num_replicas=request.replicas, ray_actor_options={"num_cpus": SHARD_CPUS})
        .bind(str(folder.resolve()))
        for i, folder in enumerate(shard_folders(path))
    ]
    ingress = serve.deployment(serve.ingress()(Ingress), name="ingress").options(
        ray_actor_options={"num_cpus": INGRESS_CPUS, "num_gpus": gpus}
    )
    return ingress.bind(str(path.resolve()), shards, settings)


def serve_on_ray(request, settings: dict, announce: Callable[[str], None]) -> None:
    """Deploy ``request``'s sharded index on Ray Serve (local Ray, or ``request.address``), say
    where it listens, and serve until SIGTERM or Ctrl-C; then delete the application.

    Raises:
        EncodrError: see :func:`check_servable`; no Ray cluster at ``--address``; Ray Serve
            did not start (:func:`_deploy`).
    """
    from ..index.engines import check_engine, ray_session
    from ..index.manifest import shard_folders

    path = check_servable(request)
    serve = need("ray.serve", field="engine")
    check_engine("ray", request.address)
    with ray_session(request.address):
        _deploy(serve, application(path, request, settings), request)
        announce(
            f"serving sharded index {path.name} on Ray Serve: {len(shard_folders(path))} shard deployment(s) × "
            f"{request.replicas} replica(s) and an ingress"
        )
        announce(f"listening on http://{request.host}:{request.port} (POST /v1/search; GET /v1/indexes, /health)")
        stop = threading.Event()
        found = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            stop.wait()
        finally:
            for sig, handler in found.items():
                signal.signal(sig, handler)
            serve.delete("encodr")
            serve.shutdown()
    announce("stopped")


def _deploy(serve, app, request) -> None:
    """Start Ray Serve's HTTP proxy on ``request.host``:``request.port`` and run ``app`` as the
    application ``encodr``; what Ray raises when it cannot (a proxy or replica actor that died:
    the port taken, the machine out of memory or cores) is one line, after Serve is shut down.

    Raises:
        EncodrError: Ray Serve did not start, naming Ray's reason.
    """
    from ray.exceptions import RayError
    from ray.serve.exceptions import RayServeException

    try:
        serve.start(http_options={"host": request.host, "port": request.port})
        serve.run(app, name="encodr", route_prefix="/", blocking=False)
    except (RayError, RayServeException, RuntimeError, TimeoutError) as exc:
        reason = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        try:
            serve.shutdown()
        except Exception:  # noqa: BLE001 - the first failure is the one to report
            pass
        raise EncodrError(
            f"Ray Serve did not start on {request.host}:{request.port} ({reason[:200]}); check that the port is free "
            "and that Ray has the memory and cores for a proxy and a replica per shard, then run again",
            field="port",
        ) from None
