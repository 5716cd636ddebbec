"""Where an index build does its work: ``local`` (this process, or sentence-transformers'
multi-process pool with ``--processes``) or ``ray`` (a local Ray or a cluster): the checks of
``--engine`` and ``--address``, one Ray session for a whole build (:func:`ray_session`), and
the on-disk IVF blocks added in Ray tasks (:func:`ray_adding`). Reading, splitting and encoding
on Ray are :mod:`.dataflow`'s Ray Data pipeline.

Guarantee: a build connects to Ray once, and a Ray it started is stopped when it ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from typing import Callable, Iterator

import numpy as np

from ..errors import EncodrError, S, one_of
from ..extras import need

ENGINES = ("local", "ray")


def check_engine(engine: str, address: str | None) -> None:
    """Refuse an unknown engine, ``address`` without Ray, or Ray not installed, before any work.

    Raises:
        EncodrError: naming the problem and the fix.
    """
    if engine not in ENGINES:
        one_of("engine", engine, ENGINES)
    if address and engine != "ray":
        raise EncodrError(f"{S.address} names a Ray cluster; pass {S.engine} ray too", field="address")
    if engine == "ray":
        need("ray.data", field="engine")  # Ray Data needs pyarrow: ray[data]
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
        raise EncodrError(
            f"{S.address} {address}: give HOST:PORT (the head's GCS, e.g. head:6379) or ray://HOST:PORT (Ray Client, "
            "e.g. ray://head:10001)",
            field="address",
        )
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise EncodrError(
            f"{S.address} {address}: no Ray cluster answers there ({exc.strerror or exc}); start one with ray start --head, "
            f"or drop {S.address} for a local Ray",
            field="address",
        ) from None


@contextlib.contextmanager
def ray_session(address: str | None):
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
        # the core worker's log lines (e.g. a warning on every Ray Data actor pool, Ray's issue #53727) are not
        # the user's either: failures reach the build as exceptions; RAY_BACKEND_LOG_LEVEL set by the user wins
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise EncodrError(
                f"{S.address} {address}: no Ray cluster answers there ({str(exc).splitlines()[0]}); start one with ray "
                "start --head, "
                f"or drop {S.address} for a local Ray",
                field="address",
            ) from None
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
    with ray_session(address) as ray:
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
