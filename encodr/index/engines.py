"""Where an index build encodes its texts: ``local`` (this process, or sentence-transformers'
multi-process pool with ``--processes``) or ``ray`` (a pool of Ray actors, on a local Ray or on
a cluster: Ray schedules the actors, restarts a killed one and reruns its task).

Guarantee: whichever engine encodes, a window's vectors come back in its texts' order, each
unit-norm float32, from the same model (every actor's fingerprint is checked against the
building process's before any text is sent).

The rest of a build (reading, passages, language detection, SQLite, FAISS) stays in the
building process: encoding is where the time goes. Unlike Ray Data's ``map_batches`` pipeline,
texts are sent window by window (``encodr.index.build``'s windows), so the build stores one
window while the actors encode the next, and a failed build leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from typing import Callable, Iterator

import numpy as np

from ..errors import EncodrError

ENGINES = ("local", "ray")
CHUNKS_PER_ACTOR = 4  # a window is cut into this many chunks per actor, so a slow actor holds back little

Encode = Callable[[list[str], "int | None", Callable[[int], None]], np.ndarray]


def check_engine(engine: str, address: str | None) -> None:
    """Refuse an unknown engine, ``address`` without Ray, or Ray not installed, before any work.

    Raises:
        EncodrError: naming the problem and the fix.
    """
    if engine not in ENGINES:
        raise EncodrError(f"unknown engine '{engine}'; choose one of {', '.join(ENGINES)}", field="engine")
    if address and engine != "ray":
        raise EncodrError("--address names a Ray cluster; pass --engine ray too", field="address")
    if engine == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise EncodrError("--engine ray needs Ray; install it with pip install 'encodr[ray]'", field="engine") from None
    if address and address not in ("auto", "local"):
        _check_reachable(address)


def _check_reachable(address: str) -> None:
    """Refuse, within seconds, a cluster address nothing answers at (``ray.init`` would retry
    for minutes): ``HOST:PORT`` (the head's GCS) or ``ray://HOST:PORT`` (Ray Client).

    Raises:
        EncodrError: a malformed address, or no TCP answer at it within 5 s.
    """
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        raise EncodrError(f"--address {address}: give HOST:PORT (the head's GCS, e.g. head:6379) or ray://HOST:PORT (Ray Client, e.g. ray://head:10001)",
                          field="address")  # fmt: skip
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise EncodrError(f"--address {address}: no Ray cluster answers there ({exc.strerror or exc}); start one with ray start --head, "
                          "or drop --address for a local Ray", field="address") from None  # fmt: skip


def _actor_class():
    """The Ray actor that encodes: one model, loaded once, kept warm; restarted by Ray when its
    process dies, its unfinished task rerun (``max_restarts``/``max_task_retries`` −1)."""
    import ray

    @ray.remote(max_restarts=-1, max_task_retries=-1)
    class EncodeActor:
        def __init__(self, model: str, backend: str, dim: int | None = None):
            from encodr.models import load_encoder

            self.encoder = load_encoder(model, backend=backend)
            self.encoder.truncate(dim)

        def fingerprint(self) -> str:
            return self.encoder.fingerprint

        def encode(self, texts: list[str], batch_size: int | None, prompt: str) -> np.ndarray:
            return self.encoder.encode(texts, batch_size, prompt=prompt)

    return EncodeActor


@contextlib.contextmanager
def ray_encoding(model: str, fingerprint: str, backend: str, actors: int, prompt: str = "", address: str | None = None,
                 dim: int | None = None) -> Iterator[Encode]:  # fmt: skip
    """``encode(texts, batch_size, on_batch) → float32 (N, d)`` on ``actors`` Ray actors, each
    holding ``model``; each text after ``prompt``.

    Connects to the cluster at ``address`` (else ``RAY_ADDRESS``, else starts a local Ray,
    stopped on exit), or uses the Ray this process already started (``ray.init`` beforehand,
    as tests do). An actor takes one GPU when the cluster has as many GPUs as actors, else an
    equal share of its CPUs. On a cluster, ``model`` must load on every node (a Hub id, a bundled
    alias, or a path every node has) and encodr must be installed there.

    Args:
        model: the model spec (alias, directory, Hub id) the actors load.
        fingerprint: the building process's model fingerprint (:attr:`Encoder.fingerprint`).
        backend: ``torch`` or an ONNX backend.
        actors: how many actors encode (``--processes``).
        prompt: the document prompt (E5: ``passage: ``).
        address: a Ray cluster's address.
        dim: Matryoshka truncation (:meth:`Encoder.truncate`); ``None``: the full vectors.

    Raises:
        EncodrError: no cluster at ``address``, or an actor loaded another model than the
            building process (a path that differs between nodes).
    """
    from ray.util import ActorPool

    with _ray_session(address) as ray:
        resources = ray.cluster_resources()
        if resources.get("GPU", 0) >= actors:
            options = {"num_gpus": 1}
        else:
            options = {"num_cpus": resources.get("CPU", 1) / actors}  # a share (fractional on a small machine)
        pool_actors = [_actor_class().options(**options).remote(model, backend, dim) for _ in range(actors)]
        found = set(ray.get([a.fingerprint.remote() for a in pool_actors]))
        if found != {fingerprint}:
            raise EncodrError(f"a Ray actor loaded another model than this process for '{model}'; give a path every node has, or a Hub id")
        pool = ActorPool(pool_actors)

        def encode(texts: list[str], batch_size: int | None, on_batch: Callable[[int], None]) -> np.ndarray:
            size = max(1, -(-len(texts) // (CHUNKS_PER_ACTOR * actors)))
            chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
            parts = []
            for vectors in pool.map(lambda actor, chunk: actor.encode.remote(chunk, batch_size, prompt), chunks):
                parts.append(np.asarray(vectors, dtype=np.float32))
                on_batch(len(vectors))
            return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)

        try:
            yield encode
        finally:  # an actor holds its CPUs until killed: the blocks' tasks after it need them
            for actor in pool_actors:
                ray.kill(actor)


@contextlib.contextmanager
def _ray_session(address: str | None):
    """Ray, connected: to the cluster at ``address`` (else ``RAY_ADDRESS``, else a local Ray of
    this process, stopped on exit), or the Ray this process already started.

    Raises:
        EncodrError: no cluster answers at ``address``.
    """
    import ray

    started = False
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS") or None
        if address is None:  # a local Ray of this process: its start-up notices are not the user's business
            logging.getLogger("ray").setLevel(logging.ERROR)
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)  # fmt: skip
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise EncodrError(f"--address {address}: no Ray cluster answers there ({str(exc).splitlines()[0]}); start one with ray start --head, "
                              "or drop --address for a local Ray", field="address") from None  # fmt: skip
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _add_task():
    import ray

    @ray.remote(max_retries=-1)  # a killed worker's block is added again: adding is deterministic
    def add_block(trained: np.ndarray, vectors: np.ndarray, first: int) -> np.ndarray:
        import faiss

        part = faiss.deserialize_index(trained)
        part.add_with_ids(vectors, np.arange(first, first + len(vectors), dtype=np.int64))
        return faiss.serialize_index(part)

    return add_block


@contextlib.contextmanager
def ray_adding(address: str | None = None) -> Iterator[Callable]:
    """``add_blocks(ivf, blocks) → iterator of IVF indexes`` for :func:`~.ondisk.add_on_disk`:
    each ``(first id, float32 (n, d) vectors)`` block added to a copy of the trained, empty
    ``ivf`` in a Ray task, the filled copies given back in the blocks' order. At most as many
    blocks are in flight as the cluster has CPUs, so the building process holds that many blocks
    of vectors and their copies at once. The tasks send their copies back through Ray's object
    store and the building process writes them: a cluster needs no shared file system, and only
    one process writes the index. Ray reruns the task of a killed worker.

    Raises:
        EncodrError: no Ray cluster answers at ``address``.
    """
    with _ray_session(address) as ray:
        add_block = _add_task()
        limit = max(1, int(ray.cluster_resources().get("CPU", 1)))

        def add_blocks(ivf, blocks):
            import faiss

            trained = ray.put(faiss.serialize_index(ivf))
            pending = []
            for first, vectors in blocks:
                pending.append(add_block.remote(trained, vectors, first))
                if len(pending) >= limit:
                    yield faiss.deserialize_index(ray.get(pending.pop(0)))
            while pending:
                yield faiss.deserialize_index(ray.get(pending.pop(0)))

        yield add_blocks
