"""Where a query's time goes: each phase's wall time, collected only when a caller asks.

A front end that reports timings (``encodr search --timings``, ``"timings": true`` on
``/v1/search``, the TUI's status bar) opens :func:`collect`; the code of each phase runs inside
:func:`phase`, which adds its milliseconds to the open collection and costs nothing without one.
The collection follows the context (a :class:`contextvars.ContextVar`): each thread, and each
request a server handles, has its own. Elasticsearch's ``profile: true`` reports a query's
phases the same way.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

# The phases of a search, in the order a query goes through them (a phase may be absent: no
# keyword search in a dense one, no re-ranking without a re-ranker).
PHASES = ("language", "encode", "dense", "keyword", "fusion", "ranking", "rerank", "hits", "snippets", "highlights")

_open: ContextVar[dict[str, float] | None] = ContextVar("encodr_timings", default=None)


@contextmanager
def collect() -> Iterator[dict[str, float]]:
    """Collect the phases run inside the block: yields a dict, phase → milliseconds (float,
    wall time, summed over repeats), filled as they run; a ``total`` key is set when the block ends."""
    found: dict[str, float] = {}
    token = _open.set(found)
    started = time.perf_counter()
    try:
        yield found
    finally:
        found["total"] = (time.perf_counter() - started) * 1000
        _open.reset(token)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Add the block's wall time (ms) to phase ``name`` of the open collection, if any."""
    found = _open.get()
    if found is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        found[name] = found.get(name, 0.0) + (time.perf_counter() - started) * 1000
