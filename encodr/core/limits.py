"""What one request to a server may ask, and how its requests are batched: the one declaration of
the server's limits (``encodr serve``'s options take their defaults from it)."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import check, setting


@dataclass(frozen=True)
class Limits:
    """What one request may ask, and how requests are batched; each field's meaning and range
    are in its declaration (``encodr serve``'s options are these fields)."""

    max_texts: int = setting(2048, "Texts per request at most (413 above).", ge=1)
    max_chars: int = setting(20_000, "Characters per text at most (413 above).", ge=1)
    batch_wait_ms: float = setting(
        10.0,
        "Dynamic batching: how long the first request of a batch waits for others while requests are concurrent (ms).",
        ge=0,
    )
    batch_tokens: int = setting(8192, "Dynamic batching: tokens per forward pass at most (padded length × texts).", ge=1)
    no_batching: bool = setting(False, "Turn dynamic batching of concurrent requests off: one forward pass per request.")
    workers: int | None = setting(
        None,
        "Forward passes a model runs at once, each on its share of the CPU cores (default: 2 on a CPU, 1 on a GPU).",
        ge=1,
    )

    def __post_init__(self):
        check(self)
