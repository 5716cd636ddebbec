"""What one request to a server may ask, and how its requests are batched: the one declaration of
the server's limits (``encodr serve``'s options take their defaults from it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """What one request may ask, and how requests are batched.

    Attributes:
        max_texts: texts per request (413 above).
        max_chars: characters per text (413 above).
        batch_wait: seconds the first request of a batch waits for others.
        batch_tokens: estimated tokens per forward pass.
        batching: False: every request runs its own forward pass.
        workers: forward passes a model runs at once, each on its share of the CPU cores
            (``None``: :func:`~.batcher.default_workers`).
    """

    max_texts: int = 2048
    max_chars: int = 20_000
    batch_wait: float = 0.010
    batch_tokens: int = 8192
    batching: bool = True
    workers: int | None = None
