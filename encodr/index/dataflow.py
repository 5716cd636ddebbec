"""``encodr index --engine ray``: reading, splitting and encoding on a Ray cluster, as a Ray Data
pipeline.

Guarantee: the building process gets every work item's records and vectors in the items'
order — the records :func:`~encodr.data.files.iter_records` gives, each with the float32 unit
vector of its text from the building process's model (every row carries its actor's model
fingerprint, checked) — so the index equals a local build's; and an item whose shard a crashed
build finished is not read or encoded again.

Work items are made by the building process from line counts: each file is cut into ranges of
``window`` lines (a document file — Markdown, HTML, PDF, Office, EPUB — is one item). The pipeline
(``ray.data``, streaming, in item order):

1. ``map``: Ray tasks read an item's lines and split long texts into passages (the model's
   Rust tokenizer counts the tokens), one row per item with its records as JSON;
2. ``map_batches``: an actor pool of ``--processes`` encoders (one GPU an actor where the
   cluster has a GPU for each, else an equal share of its CPUs) adds the vectors;
3. the building process writes each row as a shard (vectors ``.npy``, records ``.json``;
   :class:`~.shards.Shards`) and stores it.

Only the building process writes: the shards come back through Ray's object store, so a
cluster needs no shared file system for them, though every node must read the input paths (a
shared or copied folder). Fault tolerance is Ray's: a killed actor is restarted and its item
rerun (Ray Data's actor pool sets ``max_restarts``/``max_task_retries`` −1), a read task is
retried; encodr retries nothing itself. Unlike autofaiss and clip-retrieval, whose workers write embedding files that a
second job indexes, this keeps one writer and one metadata store, at the cost of sending the
vectors to the building process (4·d bytes a text).

A file is read by one task an item, each reading its file from the start up to its own lines:
reading a file of L lines in items of W costs about L²/(2W) lines read. Give a big export as
many files (``split -l``) rather than one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..data.files import Skipped, reads_as_document
from ..data.records import Layout, Record
from ..errors import EncodrError
from .shards import Shards, digest

LAST = 2**62  # a document file's one item covers all its (one) lines


@dataclass(frozen=True)
class Item:
    """A file's records whose line is in ``[first, last]``; ``found``: the file was found in a
    folder, so an unreadable document is skipped with a warning rather than refused."""

    n: int
    path: str
    first: int
    last: int
    found: bool = False

    def key(self) -> str:
        """A digest of the item and its file's size and modification time: a shard is used only
        for the same lines of the same file."""
        stat = Path(self.path).stat()
        return digest([self.path, str(self.first), str(self.last), str(stat.st_size), str(stat.st_mtime_ns)])


def items(files: list[str], lines: list[int], window: int, found: list[str] = (), layout: Layout = Layout()) -> list[Item]:
    """The work items of ``files`` with ``lines[i]`` lines each: ranges of ``window`` lines of a
    record file, one item for a document file; numbered in order."""
    out: list[Item] = []
    for path, count in zip(files, lines):
        if reads_as_document(path, path in found, layout):
            ranges = [(1, LAST)]
        else:
            ranges = [(first, first + window - 1) for first in range(1, max(1, count) + 1, window)]
        base = len(out)
        out.extend(Item(base + i, path, a, b, path in found) for i, (a, b) in enumerate(ranges))
    return out


def read_item(row: dict, lang: str | None, tokenizer: str | None, room: int, layout: dict) -> dict:
    """Ray task (stage 1): the records of one item (a row of :func:`items`' fields) as JSON,
    split into passages of at most ``room`` tokens by the Rust tokenizer serialised in
    ``tokenizer`` (None: whole texts). A file that cannot be read comes back as ``error`` (or,
    found in a folder, as ``skipped``), not raised, so Ray does not retry it."""
    from types import SimpleNamespace

    from ..data.files import iter_records, passage_splitter

    split = None
    if tokenizer is not None:
        from tokenizers import Tokenizer

        split = passage_splitter(SimpleNamespace(backend_tokenizer=Tokenizer.from_str(tokenizer)), room)
    skipped: list[Skipped] = []
    records, error = [], ""
    try:
        for record in iter_records(
            row["path"], lang, split, skipped if row["found"] else None, Layout(**layout), in_folder=row["found"]
        ):
            if record.line > row["last"]:
                break
            if record.line >= row["first"]:
                records.append(dataclasses.asdict(record))
    except EncodrError as exc:
        error = str(exc)
    return {
        "n": row["n"],
        "records": json.dumps(records),
        "error": error,
        "skipped": json.dumps([[s.path, s.reason] for s in skipped]),
    }


class EncodeRows:
    """Ray Data actor (stage 2): one model, loaded once, adds each row's vectors (float32 bytes)
    and its fingerprint."""

    def __init__(self, model: str, backend: str, dim: int | None, prompt: str, batch_size: int | None = None):
        from encodr.models import load_encoder

        self.encoder = load_encoder(model, backend=backend)
        self.encoder.truncate(dim)
        self.prompt, self.batch_size = prompt, batch_size
        self.fingerprint = self.encoder.fingerprint

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = []
        for records in batch["records"]:
            texts = [r["text"] for r in json.loads(records)]
            encoded = (
                self.encoder.encode(texts, self.batch_size, prompt=self.prompt)
                if texts
                else np.zeros((0, self.encoder.dimension), np.float32)
            )
            vectors.append(np.ascontiguousarray(encoded, dtype=np.float32).tobytes())
        n = len(batch["records"])
        return {
            **batch,
            "vectors": np.array(vectors, dtype=object),
            "fingerprint": np.array([self.fingerprint] * n, dtype=object),
        }


def _options(ray, actors: int) -> tuple[dict, float]:
    """The actors' resources (one GPU each where the cluster has one for each, else an equal
    share of its CPUs less the readers') and a read task's CPUs."""
    resources = ray.cluster_resources()
    cpus = resources.get("CPU", 1)
    reader = min(1.0, 0.1 * cpus)
    if resources.get("GPU", 0) >= actors:
        return {"num_gpus": 1}, reader
    return {"num_cpus": (cpus - reader) / actors}, reader


@dataclass(frozen=True)
class ActorModel:
    """What each Ray Data encoder actor loads, and how it encodes.

    Attributes:
        model: the model spec the actors load (a path every node has, a Hub id or an alias).
        fingerprint: the building process's model fingerprint (an actor that loads another is refused).
        backend, dim, prompt: as the building process's encoder (``--backend``, ``--dim``, the document prompt).
        actors: how many encoder actors.
        batch_size: texts per forward pass in the actors (default: the backend's).
    """

    model: str
    fingerprint: str
    backend: str
    actors: int
    dim: int | None
    prompt: str
    batch_size: int | None = None


@dataclass(frozen=True)
class Splitting:
    """How a Ray task reads an item's files into records.

    Attributes:
        tokenizer: the model's Rust tokenizer as JSON, for passages of ``room`` tokens; None: whole texts.
        room: tokens a passage may hold.
        lang, layout: as :func:`~encodr.data.files.iter_records`.
    """

    tokenizer: str | None
    room: int
    lang: str | None
    layout: Layout


def ray_windows(
    work: list[Item], shards: Shards, actor: ActorModel, splitting: Splitting, on_row: Callable[[int], None] | None = None
) -> Iterator[tuple[Item, list[Record], np.ndarray, list[Skipped]]]:
    """Each item's records, vectors and skipped files, in the items' order: from its shard when a
    crashed build finished it, else through the Ray Data pipeline (module docstring) on the Ray
    this process is connected to, then kept as a shard.

    Args:
        work: the items (:func:`items`).
        shards: where finished items are kept (written here only).
        actor: what the encoder actors load and how they encode (:class:`ActorModel`).
        splitting: how the reading tasks make records (:class:`Splitting`).
        on_row: called with each item's record count as it arrives.

    Yields:
        ``(item, records, float32 (len(records), d) vectors, skipped files)``.

    Raises:
        EncodrError: an input file cannot be read, or an actor loaded another model.
    """
    import ray

    keys = {item.n: item.key() for item in work}  # each file's stat, once
    done = {item.n: _finished(shards, item.n, keys[item.n]) for item in work}
    pending = [item for item in work if done[item.n] is None]
    rows = _pipeline(ray, pending, actor, splitting) if pending else iter(())
    for item in work:
        if done[item.n] is not None:
            vectors, records = done[item.n]
            if on_row is not None:
                on_row(len(records))
            yield item, records, vectors, []
            continue
        row = next(rows)
        if row["error"]:
            raise EncodrError(row["error"])
        if row["fingerprint"] != actor.fingerprint:
            raise EncodrError(
                f"a Ray actor loaded another model than this process for '{actor.model}'; give a path every node has, or a Hub id"
            )
        raw = json.loads(row["records"])
        vectors = np.frombuffer(row["vectors"], dtype=np.float32).reshape(len(raw), -1) if raw else np.zeros((0, 0), np.float32)
        shards.put(item.n, keys[item.n], vectors, records=raw)
        if on_row is not None:
            on_row(len(raw))
        yield item, [Record(**r) for r in raw], vectors, [Skipped(p, reason) for p, reason in json.loads(row["skipped"])]


def _finished(shards: Shards, n: int, key: str) -> tuple[np.ndarray, list[Record]] | None:
    """The vectors and records a crashed build kept for item ``n`` with :meth:`Item.key` ``key``;
    None when either is missing, damaged, or they do not match."""
    return shards.get_with_records(n, key, lambda raw: [Record(**r) for r in raw])


def _pipeline(ray, pending: list[Item], actor: ActorModel, splitting: Splitting) -> Iterator[dict]:
    """The rows of ``pending``'s items, in their order, from the Ray Data pipeline."""
    import ray.data

    logging.getLogger("ray.data").setLevel(logging.ERROR)
    context = ray.data.DataContext.get_current()
    saved = (context.execution_options.preserve_order, context.enable_progress_bars)
    context.execution_options.preserve_order = True  # rows in the items' order: the store's ids as a local build's
    context.enable_progress_bars = False  # the build reports progress through its callback
    try:
        resources, reader = _options(ray, actor.actors)
        rows = ray.data.from_items([dataclasses.asdict(item) for item in pending], override_num_blocks=len(pending))
        rows = rows.map(
            read_item,
            fn_kwargs={
                "lang": splitting.lang,
                "tokenizer": splitting.tokenizer,
                "room": splitting.room,
                "layout": dataclasses.asdict(splitting.layout),
            },
            num_cpus=reader,
        )
        # Ray Data's actor pool restarts a killed actor and reruns its item (its defaults: max_restarts, max_task_retries −1)
        rows = rows.map_batches(
            EncodeRows,
            fn_constructor_args=(actor.model, actor.backend, actor.dim, actor.prompt, actor.batch_size),
            batch_size=1,
            batch_format="numpy",
            concurrency=actor.actors,
            **resources,
        )
        yield from rows.iter_rows()
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = saved
