"""Searching a sharded index (:mod:`.sharded`): scatter a query to every shard, gather each
shard's candidates with their raw scores, merge them into the ranking one index would give.

:class:`ShardedIndex` stands where an :class:`~.reader.IndexReader` stands for
:class:`~.search.Searcher`: the searcher encodes each query once, asks the sharded index for its
dense and keyword candidates, fuses them and makes hits exactly as for one index (query then
fetch, as Elasticsearch: each shard returns its top ``depth`` ids and scores, the coordinator
merges them and fetches the rows of the candidates it keeps). What is merged and how:

- dense: each shard's top ``k`` by cosine (its own PCR applied to the query, where it has
  one); the merge keeps the best ``k`` of all. With exact (``flat``) shards this is exactly one
  index's top ``k`` over the same documents; with HNSW or IVF each shard's approximation is its own.
- keyword: each shard's top ``k`` by BM25 with the shard's own term statistics (document
  frequencies, average length), as Elasticsearch's default ``query_then_fetch``; a term rare in
  one shard scores higher there than it would in one index. The scores of documents spread
  evenly over the shards are close to one index's; ``bench/sharded.py`` reports the overlap.
  With ``keyword_stats = global`` a first round trip gathers every shard's statistics and each
  shard scores by their sum, so the merge is one index's ranking (Elasticsearch's
  ``dfs_query_then_fetch``; :mod:`.termstats`): one more round trip, and each shard scores
  every text matching the query rather than FTS5's top k.
- fusion, re-ranking, judgments (kept at the sharded folder), snippets: the searcher's own, on the merged lists.

A shard is a :class:`LocalShard` (this process) or anything with the same methods (a Ray Serve
deployment's handle, :mod:`encodr.serve.cluster`). A shard that fails or misses the deadline is
left out of the answer and named in :meth:`ShardedIndex.missing`, so a front end can say the
answer is partial (``partial: true``, Elasticsearch's ``_shards.failed``); never silently.

A hit's id is global: ``row × shards + shard`` (:func:`global_ids`), so a hit names its shard.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import EncodrError, S
from .manifest import joined, read_manifest, route, shard_folders
from .meta import IndexMeta
from .reader import IndexReader, QueryEncoding, locate
from .termstats import KeywordStats


class LocalShard:
    """One shard searched in this process: its :class:`~.reader.IndexReader` (memory-mapped),
    opened again when a write has made another generation current. Thread-safe.

    Args:
        folder: the shard's index folder.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.reader = IndexReader.open(self.folder, mmap=True)
        self._reopen = threading.Lock()

    def current(self) -> IndexReader:
        """The reader of the shard's current generation."""
        if self.reader.stale():
            with self._reopen:
                if self.reader.stale():
                    self.reader = IndexReader.open(self.folder, mmap=True)
        return self.reader

    def state(self) -> tuple[IndexMeta, int]:
        """(``index.json`` of the current generation, its ``keywords`` None where the generation
        has no keyword index; texts a search can return)."""
        reader = self.current()
        meta = (
            reader.meta if reader.has_keywords else dataclasses.replace(reader.meta, keywords=None)
        )  # read only: joined() copies
        return meta, len(reader)

    def search(self, vectors: np.ndarray, langs: list[str], k: int, where, nprobe, ef_search) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` by cosine of raw query vectors (float32 (q, d), before PCR, which the shard
        applies); (scores float32 (q, ≤k), local ids int64 (q, ≤k), −1 pads)."""
        reader = self.current()
        if len(reader) == 0:
            return _empty(len(vectors))
        return reader.search(reader.prepare_queries(vectors, langs), k, where, nprobe, ef_search)

    def keyword_search(
        self, queries: list[str], k: int, where, query_langs: list[str], stats="shard"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` by BM25 with this shard's statistics, or with ``stats`` gathered from every
        shard (:meth:`~.reader.IndexReader.keyword_search`)."""
        return self.current().keyword_search(queries, k, where, query_langs, stats)

    def keyword_stats(self, queries: list[str], query_langs: list[str]) -> KeywordStats:
        """This shard's term statistics for ``queries`` (:meth:`~.reader.IndexReader.keyword_stats`)."""
        return self.current().keyword_stats(queries, query_langs)

    def rows(self, ids: list[int], keys: tuple[str, ...] | None = None) -> dict[int, dict]:
        """Stored rows by local id (:meth:`~.reader.IndexReader.rows`)."""
        return self.current().rows(ids, keys)

    def sharers(self, ids: list[int]) -> dict[int, list[dict]]:
        """:meth:`~.reader.IndexReader.sharers` by local id."""
        return self.current().sharers(ids)

    def documents_passing(self, ids: list[str], filters) -> set[str] | None:
        """:meth:`~.reader.IndexReader.documents_passing` of documents held here."""
        return self.current().documents_passing(ids, filters)

    def document(self, ext_id: str) -> dict | None:
        """:meth:`~.reader.IndexReader.document`."""
        return self.current().document(ext_id)

    def document_lines(self, ext_id: str) -> dict:
        """:meth:`~.reader.IndexReader.document_lines`."""
        return self.current().document_lines(ext_id)

    def find_documents(self, path: str, lines: tuple[int, int] | None = None) -> list[str]:
        """:meth:`~.reader.IndexReader.find_documents`."""
        return self.current().find_documents(path, lines)

    def document_hashes(self, docs: list[str]) -> dict[str, str | None]:
        """:meth:`~.texts.TextStore.document_hashes`: the content hash of each of ``docs`` held here."""
        return self.current().texts.document_hashes(docs)

    def document_states(self, docs: list[str]) -> dict[str, tuple[str | None, str | None, int | None]]:
        """:meth:`~.texts.TextStore.document_states`: each of ``docs`` held here, its file as indexed."""
        return self.current().texts.document_states(docs)

    def first_passage(self, doc: str) -> int | None:
        """:meth:`~.texts.TextStore.first_passage`: the local id of ``doc``'s first passage."""
        return self.current().texts.first_passage(doc)

    def close(self) -> None:
        """Close the reader."""
        self.reader.close()


def _empty(q: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((q, 0), dtype=np.float32), np.zeros((q, 0), dtype=np.int64)


@dataclass(frozen=True)
class Prepared:
    """Queries ready for a sharded search: the raw vectors and their languages (each shard
    applies its own PCR: :meth:`ShardedIndex.prepare_queries`)."""

    vectors: np.ndarray
    langs: list[str]

    def __len__(self) -> int:
        return len(self.vectors)


def global_ids(ids: np.ndarray, shard: int, shards: int) -> np.ndarray:
    """Shard-local ids (int64, −1 pads) as global ids ``id × shards + shard`` (−1 stays)."""
    return np.where(ids >= 0, ids * shards + shard, -1)


def merged(found: list[tuple[np.ndarray, np.ndarray]], shards: list[int], n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of each query over the shards' (scores, local ids) lists.

    Args:
        found: per answering shard, float32 (q, kᵢ) scores and int64 (q, kᵢ) ids (−1 pads, −inf scores).
        shards: the shard number of each entry of ``found``; n: the number of shards.

    Returns:
        (scores float32 (q, ≤k), global ids int64 (q, ≤k)), best first; a tie keeps shard order.
    """
    scores = np.concatenate([s for s, _ in found], axis=1)
    ids = np.concatenate([global_ids(i, shard, n) for (_, i), shard in zip(found, shards)], axis=1)
    scores = np.where(ids >= 0, scores, -np.inf).astype(np.float32)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)


class ShardedIndex(QueryEncoding):
    """A sharded index searched as one: the surface of :class:`~.reader.IndexReader` that
    :class:`~.search.Searcher` uses, each call sent to the shards that hold what it asks.

    Args:
        path: the sharded index's folder.
        shards: one object per shard with :class:`LocalShard`'s methods, in shard order.
        call: how a shard's method is run: ``call(shard, name, args)`` → a function of the
            deadline in seconds that returns the result (the default runs it here, at once).
        deadline: seconds a shard has to answer (None: no limit).
        states: each shard's (``index.json``, size) to start from (:func:`states_on_disk`);
            default: asked of the shards now.

    Attributes:
        meta: shard 0's ``index.json`` with ``count``, ``documents`` and ``split_documents``
            summed, the languages joined and ``shards`` set.
    """

    def __init__(
        self,
        path: str | Path,
        shards: list,
        call: Callable | None = None,
        deadline: float | None = None,
        states: list | None = None,
    ):
        self.path = Path(path)
        self.shards = shards
        self.call = call or (lambda shard, name, args: lambda timeout: getattr(shard, name)(*args))
        self.deadline = deadline
        self._missing = threading.local()
        if states is None:
            self.refresh_state()
        else:
            self._take(states)

    # state ------------------------------------------------------------------------------
    def refresh_state(self) -> None:
        """Read every shard's ``index.json`` and size again (each shard follows its own writes);
        a shard that does not answer keeps the state it last gave (and is recorded missing).

        Raises:
            EncodrError: the shards were built with different models, or a shard that never answered does not answer.
        """
        known = getattr(self, "_states", [None] * len(self.shards))
        states = [now if now is not None else then for now, then in zip(self._all("state", ()), known)]
        if any(s is None for s in states):  # never answered: nothing is known of it (a later one keeps its last state)
            down = [i for i, s in enumerate(states) if s is None]
            raise EncodrError(f"sharded index {self.path}: shard(s) {down} do not answer; try again", field="index", status=503)
        self._take(states)

    def _take(self, states: list[tuple[dict, int]]) -> None:
        """Join the shards' (meta, size) ``states`` into :attr:`meta` and the size.

        Raises:
            EncodrError: the shards were built with different models.
        """
        self._states = list(states)
        metas = [m for m, _ in states]
        if len({m.fingerprint for m in metas}) > 1:
            raise EncodrError(
                f"sharded index {self.path}: its shards hold vectors of different models; rebuild it with "
                f"{S('write', 'overwrite')}",
                field="index",
            )
        self._counts = [n for _, n in states]
        self.meta = joined(metas, sum(self._counts))

    def stale(self) -> bool:
        """Always False: each shard opens its own new generations (:meth:`LocalShard.current`);
        the joined ``meta`` and size are read again here, once per search."""
        self.refresh_state()
        return False

    def __len__(self) -> int:
        return sum(self._counts)

    @property
    def has_keywords(self) -> bool:
        return self.meta.has_keywords

    @property
    def texts(self) -> "ShardedTexts":
        """What judgments ask of an index's text store, asked of the shard each document routes to."""
        return ShardedTexts(self)

    def missing(self) -> list[int]:
        """The shards that did not answer a call of this thread since :meth:`reset_missing`."""
        return sorted(getattr(self._missing, "value", set()))

    def reset_missing(self) -> None:
        """Forget this thread's missing shards (a new search starts)."""
        self._missing.value = set()

    # fan-out ----------------------------------------------------------------------------
    def _all(self, name: str, args: tuple, shards: list[int] | None = None) -> list:
        """``name(*args)`` on each shard (all, or ``shards``), sent to all before any answer is
        awaited; a shard that raises or misses the deadline gives None and is recorded missing.
        An :class:`EncodrError` (a bad request) is raised as it is."""
        chosen = list(range(len(self.shards))) if shards is None else shards
        return self._awaited([(i, self.call(self.shards[i], name, args)) for i in chosen])

    def _awaited(self, pending: list) -> list:
        """The answers of ``pending`` (shard, wait) calls, in order (see :meth:`_all`)."""
        out = []
        for i, wait in pending:
            try:
                out.append(wait(self.deadline))
            except EncodrError:
                raise
            except Exception:  # a dead replica, a timeout: the answer is partial, and says so
                if not hasattr(self._missing, "value"):
                    self._missing.value = set()
                self._missing.value.add(i)
                out.append(None)
        return out

    # search -----------------------------------------------------------------------------
    def prepare_queries(self, vectors: np.ndarray, langs: list[str] | str | None = None) -> Prepared:
        """The raw vectors and languages, for each shard to apply its own PCR."""
        langs = [langs] * len(vectors) if isinstance(langs, str) or langs is None else list(langs)
        return Prepared(np.ascontiguousarray(vectors, dtype=np.float32), langs)

    def search(self, prepared: Prepared, k: int, where=None, nprobe: int | None = None, ef_search: int | None = None):
        """The best ``k`` of every shard's top ``k`` by cosine: (scores, global ids) (q, ≤k)."""
        return self._gathered(
            self._all("search", (prepared.vectors, prepared.langs, k, where, nprobe, ef_search)), len(prepared), k
        )

    def keyword_search(self, queries: list[str], k: int, where=None, query_langs: list[str] | None = None, stats: str = "shard"):
        """The best ``k`` of every shard's top ``k`` by BM25: (scores, global ids) (q, ≤k).

        Args:
            stats: ``shard``: each shard scores by its own term statistics (one round trip);
                ``global``: a first round trip gathers every shard's statistics
                (:meth:`LocalShard.keyword_stats`), summed, and each shard scores by them, so
                the merged ranking is one index's (Elasticsearch's ``dfs_query_then_fetch``,
                :mod:`.termstats`).
        """
        if stats == "global":
            gathered = [s for s in self._all("keyword_stats", (queries, query_langs)) if s is not None]
            stats = sum(gathered[1:], gathered[0]) if gathered else "shard"
        return self._gathered(self._all("keyword_search", (queries, k, where, query_langs, stats)), len(queries), k)

    def _gathered(self, found: list, q: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        answered = [(i, f) for i, f in enumerate(found) if f is not None]
        if not answered:
            return _empty(q)
        return merged([f for _, f in answered], [i for i, _ in answered], len(self.shards), k)

    def rows(self, ids, keys: tuple[str, ...] | None = None) -> dict[int, dict]:
        """Stored rows by global id (each ``id`` field global too), all their fields or ``id``
        and ``keys``; negative ids skipped."""
        n = len(self.shards)
        wanted: dict[int, list[int]] = {}
        for gid in (int(i) for i in ids if i >= 0):
            wanted.setdefault(gid % n, []).append(gid // n)
        out: dict[int, dict] = {}
        shards = sorted(wanted)
        pending = [(shard, self.call(self.shards[shard], "rows", (wanted[shard], keys))) for shard in shards]
        for shard, rows in zip(shards, self._awaited(pending)):
            for local, row in (rows or {}).items():
                out[local * n + shard] = {**row, "id": local * n + shard}
        return out

    def sharers(self, ids) -> dict[int, list[dict]]:
        """The other documents holding each of global ``ids`` (:meth:`~.reader.IndexReader.sharers`,
        asked of the shards that hold them; a document and the texts it holds share a shard)."""
        n = len(self.shards)
        wanted: dict[int, list[int]] = {}
        for gid in (int(i) for i in ids if i >= 0):
            wanted.setdefault(gid % n, []).append(gid // n)
        shards = sorted(wanted)
        pending = [(shard, self.call(self.shards[shard], "sharers", (wanted[shard],))) for shard in shards]
        return {
            local * n + shard: held
            for shard, found in zip(shards, self._awaited(pending))
            for local, held in (found or {}).items()
        }

    def documents_passing(self, ids: list[str], filters) -> set[str] | None:
        """Those of document ``ids`` that pass ``filters``, each asked of the shard it routes to
        (None: no filter on documents)."""
        n, by_shard = len(self.shards), {}
        for doc in ids:
            by_shard.setdefault(route(doc, n), []).append(doc)
        shards = sorted(by_shard)
        pending = [(shard, self.call(self.shards[shard], "documents_passing", (by_shard[shard], filters))) for shard in shards]
        answers = self._awaited(pending)
        return None if all(a is None for a in answers) else set().union(*(a or set() for a in answers))

    def _one(self, shard: int, name: str, args: tuple):
        return self._all(name, args, [shard])[0]

    # documents --------------------------------------------------------------------------
    def document(self, ext_id: str) -> dict | None:
        """Document ``ext_id`` whole, from the shard it routes to."""
        return self._one(route(ext_id, len(self.shards)), "document", (ext_id,))

    def document_lines(self, ext_id: str) -> dict:
        """Document ``ext_id``'s lines, from the shard it routes to."""
        found = self._one(route(ext_id, len(self.shards)), "document_lines", (ext_id,))
        return found or {"id": ext_id, "path": ext_id, "title": None, "first_line": 1, "lines": []}

    def find_documents(self, path: str, lines: tuple[int, int] | None = None) -> list[str]:
        """The ids of the documents at ``path``, over every shard (``lines``: see
        :meth:`~.reader.IndexReader.find_documents`)."""
        return sorted({doc for found in self._all("find_documents", (path, lines)) for doc in (found or [])})

    def __enter__(self) -> "ShardedIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close local shards."""
        for shard in self.shards:
            if hasattr(shard, "close"):
                shard.close()


class ShardedTexts:
    """The part of :class:`~.texts.TextStore` that judgments use (:mod:`.judgments`,
    :meth:`~.search.Searcher.judged`), over a sharded index: each document asked of its shard.
    The judgments themselves are kept at the sharded index's folder, as one index keeps them."""

    def __init__(self, index: ShardedIndex):
        self.index = index

    def document_hashes(self, docs) -> dict[str, str | None]:
        """The content hash of each of ``docs`` that a shard holds (see :meth:`LocalShard.document_hashes`)."""
        return self._routed("document_hashes", docs)

    def document_states(self, docs) -> dict[str, tuple[str | None, str | None, int | None]]:
        """The file, as indexed, of each of ``docs`` that a shard holds (see :meth:`LocalShard.document_states`)."""
        return self._routed("document_states", docs)

    def _routed(self, name: str, docs) -> dict:
        """``name`` asked of the shard each of ``docs`` routes to, the answers merged (a shard that
        does not answer adds nothing)."""
        n, wanted = len(self.index.shards), {}
        for doc in docs:
            wanted.setdefault(route(doc, n), []).append(doc)
        held: dict = {}
        for shard, asked in wanted.items():
            held.update(self.index._one(shard, name, (asked,)) or {})
        return held

    def first_passage(self, doc: str) -> int | None:
        """The global id of document ``doc``'s first passage, None when its shard holds none."""
        n = len(self.index.shards)
        shard = route(doc, n)
        local = self.index._one(shard, "first_passage", (doc,))
        return None if local is None else local * n + shard


def open_sharded(spec: str | Path) -> ShardedIndex:
    """The sharded index ``spec`` with each shard opened here (:class:`LocalShard`).

    Raises:
        EncodrError: see :func:`~.sharded.read_manifest` and :meth:`~.reader.IndexReader.open`.
    """
    root = locate(spec)
    read_manifest(root)
    return ShardedIndex(root, [LocalShard(folder) for folder in shard_folders(root)])
