"""Search over an index: the core that ``encodr search`` and the TUI share.

text → model (:class:`~encodr.models.Encoder`) → vector → PCR (optional) → FAISS → rows.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, TypeVar

import numpy as np

from ..data.language import UNDETERMINED, check_code, detect_languages
from ..errors import EncodrError, S, Said
from ..models import Encoder, load_encoder
from ..timing import phase
from .adapter import read_adapter
from .filters import Where
from .fusion import FAST_STAGE_ALPHA, Weights, fuse_arrays, interpolate
from .meta import FAST, IndexMeta
from .options import DENSE, HYBRID, HYBRID_DEPTH, KEYWORD, MODES, PASSAGES_PER_DOCUMENT, SearchOptions
from .reader import IndexReader
from .snippets import SentenceVectors

__all__ = ["MODES", "Hit", "SearchOptions", "Searcher", "best_passages", "rerank_hits"]


@contextlib.contextmanager
def one_faiss_thread():
    """Run the FAISS searches inside on one OpenMP thread of the calling thread, and restore
    the calling thread's OpenMP thread count on the way out, even on an error.

    A query at a time gains nothing from FAISS threads, and two OpenMP pools spinning in turn slow
    a warm query many times over on few cores (``bench/search.py``). FAISS and torch share the
    process's OpenMP runtime (``torch.get_num_threads`` reads the same count), so the setting
    must not outlive the search: a process that goes on to encode or train (a dev evaluation
    between training steps, ``encodr eval retrieval`` over several models) keeps all its threads.
    """
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


@functools.cache
def _keyword_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(thread_name_prefix="encodr-keyword")  # Python's default size: min(32, CPUs + 4)


os.register_at_fork(after_in_child=_keyword_pool.cache_clear)  # a forked child has none of the parent's threads


def beside(keyword_search: Callable, *args) -> Future:
    """Start ``keyword_search(*args)`` (:meth:`IndexReader.keyword_search`) on a worker thread and
    return its future, timed as the ``keyword`` phase of the caller's collection
    (:mod:`encodr.timing`, whose context the thread runs in).

    A hybrid search's BM25 half (SQLite, which lets go of the GIL while a query runs) then
    overlaps its dense half (the query's forward pass and FAISS, which do too), as a search
    engine runs a query's independent clauses at once; on one core they take turns, as before.
    A server's concurrent searches share one pool of the standard library's default size
    (min(32, CPUs + 4)): beyond it, keyword halves wait their turn. The caller waits for the
    future before it returns, an error's included."""
    import contextvars

    def timed():
        with phase("keyword"):
            return keyword_search(*args)

    return _keyword_pool().submit(contextvars.copy_context().run, timed)


T = TypeVar("T")


def best_passages(hits: list[Hit], k: int) -> list[Hit]:
    """The first ``k`` documents of a passage ranking, each at its best (first) passage,
    ranks renumbered."""
    return [hit.at(rank) for rank, hit in enumerate(first_of_each(hits, lambda hit: hit.document, k), 1)]


def first_of_each(items: Iterable[T], key: Callable[[T], str], k: int) -> list[T]:
    """The first ``k`` of ``items`` (in rank order) whose ``key`` (the document) is not an
    earlier one's: a passage ranking collapsed to documents, on hits (:func:`best_passages`) or
    on row ids before any hit is made."""
    seen: set[str] = set()
    out: list[T] = []
    for item in items:
        owner = key(item)
        if owner not in seen:
            seen.add(owner)
            out.append(item)
            if len(out) == k:
                break
    return out


def document_of(ext_id: str | None, source: str | None, line: int | None) -> str:
    """The id of the document a stored text belongs to: its id, else ``source:line``."""
    return ext_id or f"{source}:{line}"


def rerank_hits(query: str, hits: list[Hit], reranker, k: int, weight: float) -> list[Hit]:
    """The top ``k`` of ``hits`` by a cross-encoder's score of (query, hit text), ranks renumbered
    and each score replaced by the one they are ranked by (ties keep the first-stage order).

    With ``weight`` w < 1 the score is the two stages' interpolation,
    ``w · ŝ_cross + (1 − w) · ŝ_first`` (:func:`.fusion.interpolate`); w = 0 keeps the
    first-stage order.

    Args:
        query: the query text.
        hits: the first stage's hits, best first (their scores are the first stage's).
        reranker: anything with ``query_scores(query, texts) -> float array`` (a
            :class:`~encodr.models.CrossScorer`).
        k: hits kept.
        weight: w in [0, 1].
    """
    scores = interpolate(
        [float(s) for s in reranker.query_scores(query, [h.text for h in hits])], [h.score for h in hits], weight
    )
    order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))[:k]
    return [replace(hits[i], rank=r, score=float(scores[i])) for r, i in enumerate(order, 1)]


def check_languages(index: IndexReader, options: SearchOptions) -> None:
    """Refuse languages an index cannot serve, from the index alone (no model needed).

    Raises:
        EncodrError: a ``hit_lang`` code the index has no text in; a query ``lang`` where it
            changes nothing (an index without PCR searched densely, or without a keyword index);
            a code that is not ISO 639-3.
    """
    stored = index.meta.languages
    for code in options.hit_lang:
        check_code(code, "hit_lang")
    missing = [c for c in options.hit_lang if c not in stored]
    if missing:
        raise EncodrError(
            f"{S.hit_lang} {','.join(missing)}: index {index.path} has no texts in that language; it has {', '.join(stored)}",
            field="hit_lang",
        )
    if options.lang is not None:
        check_code(options.lang)
        if not index.components and (options.mode == DENSE or not index.has_keywords):
            raise EncodrError(
                f"index {index.path} was built without {S.pcr}, so a query language changes nothing in {options.mode} search; "
                f"drop {S.lang}, or search with {S.mode} keyword or hybrid",
                field="lang",
            )


@dataclass(frozen=True)
class Hit:
    """One search result: rank (1-based), cosine score, the text and where it came from."""

    rank: int
    score: float
    text: str
    source: str
    line: int
    id: int
    lang: str | None = None
    ext_id: str | None = None
    title: str | None = None
    start: int | None = None  # a passage's character offset in its document
    section: str | None = None  # its heading path under the document's title ("Install › GPU"), where the document has headings
    end_line: int | None = None  # the file line where the passage ends (``line``: where it starts), 1-based
    page: int | None = None  # a PDF's page, 1-based
    path: str | None = None  # the document's path relative to the folder indexed (a file given alone: its name)
    snippet: str | None = None  # the passage's sentences that best answer the query (:meth:`Searcher.snippets`)
    snippet_line: int | None = None  # the file line where the snippet starts
    snippet_column: int | None = None  # its column on that line, 1-based
    context: list[tuple[int, str]] | None = None  # with -C N: (file line, its text) around the snippet (:meth:`Searcher.context`)
    judged: int | None = None  # the grade of the judgment that moved it (:meth:`Searcher.judged`), None when none did

    @property
    def document(self) -> str:
        """The id of the document this text belongs to (:func:`document_of`)."""
        return document_of(self.ext_id, self.source, self.line)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def made(cls, rank: int, score: float, fields: dict) -> "Hit":
        """A hit at ``rank`` with ``score`` and every other field from ``fields`` (all of them, as
        :func:`_stored_fields` gives them, or another hit's ``__dict__``), set without the frozen
        dataclass's ``__init__`` (a setattr a field): a search at evaluation depth makes hundreds
        of hits a query."""
        values = fields.copy()  # one allocation of the right size; filling an empty __dict__ grows it several times
        values["rank"], values["score"] = rank, score
        made = object.__new__(cls)
        object.__setattr__(made, "__dict__", values)  # a frozen dataclass is set through object, as its own __init__ does
        return made

    def at(self, rank: int) -> "Hit":
        """This hit at ``rank``: ``dataclasses.replace(self, rank=rank)`` without its per-call
        look at every field (itself, where the rank is already ``rank``); a ranking of documents
        at evaluation depth renumbers hundreds of passages a query."""
        return self if rank == self.rank else self.made(rank, self.score, self.__dict__)


RANKED_KEYS = ("source", "path", "section")  # what the code-ranking stage reads of each candidate
CODE_CANDIDATES = 160  # passages each list gives the code-ranking stage of a document search, in one round


def code_ranked(index: IndexReader, options: SearchOptions) -> bool:
    """Whether a search of ``index`` with ``options`` runs the code-ranking stage: asked for
    (``code_ranking``, or ``defined``, which keeps only its definitions) and an index that holds
    source code, or may (made before it was recorded). ``defined`` on an index without code
    finds nothing, as no passage of it defines a name."""
    return options.defined or (options.code_ranking and index.meta.code is not False)


def identifier_alpha(query: str) -> float | None:
    """The dense weight of source code in a hybrid search of ``query``: the code-ranking stage's
    :attr:`~.ranking.CodeWeights.identifier_alpha` for an identifier-shaped query, else None
    (the fusion's own)."""
    from .ranking import WEIGHTS, read_query

    return WEIGHTS.identifier_alpha if read_query(query).identifier else None


@functools.lru_cache(maxsize=4096)
def _is_code(source: str | None) -> bool:
    """Whether a stored text's ``source`` is a file of source code (by its suffix); a fusion asks
    it of every candidate, most of them from a few files."""
    from ..data.code import CODE_SUFFIXES

    return os.path.splitext(source or "")[1].lower() in CODE_SUFFIXES


_UNSET = {"snippet": None, "snippet_line": None, "snippet_column": None, "context": None, "judged": None}


def _document(fields: dict) -> str:
    """The document a hit's fields name (:func:`document_of`)."""
    return document_of(fields["ext_id"], fields["source"], fields["line"])


def _each_file(fields: dict, sharers: list[dict] | None, passing: set[str] | None = None) -> list[dict]:
    """A stored text's hit fields, then the same text as each other document that holds it
    (:meth:`~.reader.IndexReader.sharers`) shows it: its id, path, title and line; only the
    documents in ``passing`` (a filter's: it kept the text for one of them, maybe not the first)."""
    if not sharers:
        return [fields]
    every = [fields, *({**fields, **s, "title": s["title"] or fields["title"]} for s in sharers)]
    return every if passing is None else [f for f in every if f["ext_id"] in passing]


def _stored_fields(row: dict) -> dict:
    """The :class:`Hit` fields of a stored row (:meth:`IndexReader.rows`), those a search
    fills later (snippet, context, judgment) unset; for :meth:`Hit.made`."""
    return {
        "text": row["text"],
        "source": row["source"],
        "line": row["line"],
        "id": row["id"],
        "lang": row["lang"],
        "ext_id": row["ext_id"],
        "title": row["title"],
        "start": row["start"],
        "section": row["section"],
        "end_line": row["end_line"],
        "page": row["page"],
        "path": row["path"] or row["source"],
        **_UNSET,
    }


def tuned_search(index: IndexReader) -> dict:
    """The search settings learned on judgments for ``index``'s model (``encodr tune --recipe
    judged``): those stored with the index for its model's weights (:func:`.judgments.read_tuned`),
    else those stored with the model (``search`` in its ``encodr.json``, when the index's model is
    a local folder); empty when there are none."""
    import json

    from .judgments import read_tuned

    found = read_tuned(index.path, index.meta.fingerprint or "")
    if found:
        return found
    try:
        record = json.loads((Path(index.meta.model) / "encodr.json").read_text())
    except (OSError, ValueError):
        return {}
    return dict(record.get("search") or {}) if isinstance(record, dict) else {}


def detected_among(meta: IndexMeta, mode: str) -> list[str]:
    """The languages a query is detected among, in a search of ``mode`` without ``lang`` of the
    index whose ``index.json`` is ``meta``: the index's languages (``und`` left out), or none
    where nothing is detected — an index built with a default language (``--lang``), one whose
    texts have no determined language, and a ``dense`` search of an index without PCR, where
    nothing the search does depends on the language. (With one language, that one: detection
    among one returns it without a detector.)"""
    languages = [c for c in meta.languages if c != UNDETERMINED]
    if meta.default_lang or (mode == DENSE and not meta.pcr):
        return []
    return languages


def query_encoder(model: str, asked: str | None, built: str) -> Encoder:
    """The encoder a search's queries go through: the backend ``asked`` for; else, for an index
    built in torch (``torch`` or ``torch-bf16``) and searched on a CPU, the backend ``auto``
    takes on this CPU where it runs the model's ONNX export (:func:`~encodr.models.encoder.choose_backend`:
    ``openvino`` on an AMX CPU, else ``onnx``, float32), whose vectors are refused unless within
    cosine :data:`~encodr.models.onnx.AGREEMENT` (0.9999) of torch's float32 ones (a
    ``torch-bf16`` index's are as close), and which encodes a short query several times as fast
    as torch (``bench/latency.py``); else the index's own ``built`` backend. The first search of
    a torch-built index exports the model once (cached), and any refusal falls back to ``built``.

    Raises:
        EncodrError: ``model`` cannot be loaded with ``asked`` or ``built``.
    """
    if asked in (None, "torch") and built == "torch":
        from ..models.loading import table_encoder

        table = table_encoder(model)  # a static model: its table, no torch
        if table is not None:
            return table
    if asked is None and built in ("torch", "torch-bf16"):
        from ..models import pick_device
        from ..models.encoder import AUTO_BACKEND, choose_backend, is_onnx

        fast = choose_backend(AUTO_BACKEND, pick_device())
        if is_onnx(fast):
            from ..models.onnx import NotExportable

            try:
                return load_encoder(model, backend=fast)
            except NotExportable as exc:  # a static model: the torch model its refusal loaded
                if exc.encoder is not None and built == "torch":
                    return exc.encoder
            except EncodrError:
                pass
    return load_encoder(model, backend=asked or built)


def open_index(spec: str | Path, mmap: bool = True):
    """The index ``spec`` names, opened (``mmap``: its vectors memory-mapped): an :class:`~.reader.IndexReader`, or for a
    sharded index (:mod:`.sharded`) a :class:`~.scatter.ShardedIndex` of its shards opened here.

    Raises:
        EncodrError: see :meth:`IndexReader.open` and :func:`~.sharded.read_manifest`.
    """
    from .sharded import is_sharded

    if is_sharded(spec):
        from .scatter import open_sharded

        return open_sharded(spec)
    return IndexReader.open(spec, mmap=mmap)


class Searcher:
    """An opened index plus the model it was built with.

    Args:
        index_dir: the index directory.
        model: optional model spec; refused unless its weights match the index's model.
        encoder: the encoder to query through, or a function of the index's model name and
            backend that gives it (a server's shared, batched encoder); ``None``: load the index's model.
        backend: one of :data:`~encodr.models.BACKENDS` for the queries (default: the backend
            the index was built with). Another backend than the index's works — the vectors
            agree within the quality cost ``bench/encode_speed.py`` measures — and adds a
            line to :attr:`warnings`.
        options: the searches to come, checked against the index before the model loads
            (:func:`check_languages`); each query still takes its own (``nprobe``, ``ef_search`` too).
        index: the index already opened (a sharded index whose shards are served elsewhere:
            :class:`~.scatter.ShardedIndex`); default: ``index_dir`` opened (:func:`open_index`).

    Attributes:
        warnings: one-line notes for the user (``encodr search`` prints them).
        tuned: the search settings learned on judgments for the index's model (:func:`tuned_search`).
        sentence_encoder: what encodes the sentences a snippet is chosen among: the query
            encoder, or after :meth:`warm` its int8 twin.

    Raises:
        EncodrError: the index cannot be opened (see :meth:`IndexReader.open`), or ``model``
            differs from the index's model.
    """

    def __init__(
        self,
        index_dir: str | Path,
        model: str | None = None,
        encoder: Encoder | Callable[[str, str], Encoder] | None = None,
        backend: str | None = None,
        options: SearchOptions | None = None,
        index=None,
    ):
        self._open = dict(mmap=True)  # memory-mapped: opening a large index reads only what searches touch
        self.index = index if index is not None else open_index(index_dir)
        if options is not None:  # what the index alone can refuse, before the model loads (seconds)
            try:
                check_languages(self.index, options.for_index(self.index.has_keywords))
            except EncodrError:
                self.index.close()
                raise
        meta = self.index.meta
        built = meta.backend
        self.warnings: list[str] = []
        if encoder is None and backend is not None and backend != built:
            self.warnings.append(
                Said(
                    f"index {self.index.path} was built with {S.backend} {built}; searching it with {backend} "
                    "gives slightly different vectors, so scores and ranks may move a little"
                )
            )
        if callable(encoder) and not hasattr(encoder, "encode"):  # a function that gives the encoder
            encoder = encoder(meta.model, built)
        self.encoder = encoder or query_encoder(model or meta.model, backend, built)
        self.fingerprint = self.encoder.fingerprint
        if self.fingerprint != meta.fingerprint:
            self.index.close()
            raise EncodrError(
                f"model '{model or meta.model}' is not the model index {index_dir} was built with "
                f"({meta.model}, pooling {meta.pooling}); search it without {S.model}, or rebuild the index"
            )
        self.tuned = tuned_search(self.index)
        self.adapter = read_adapter(self.index.path, self.fingerprint)  # a query adapter learned on judgments (:mod:`.adapter`)
        self._reopen = threading.Lock()
        self._last_queries = threading.local()  # each thread's last queries and their vectors (:meth:`_encode_queries`)
        self._judged_cache: dict = {}  # (model, judged query) → its vector (:meth:`_judged_vectors`)
        self.sentence_encoder = self.encoder  # what encodes the snippets' sentences (:meth:`warm` may set a faster one)
        self.sentences = SentenceVectors()  # their vectors, a passage's together, kept for the next searches (:meth:`snippets`)

    def refresh(self) -> bool:
        """Open the index again when another generation has become current (an ``--add`` or
        ``--overwrite`` since it was opened); :meth:`search` and :meth:`compare` call it first,
        so a long-running searcher (the TUI) sees every write whole. Returns True when it
        reopened.

        Thread-safe: one thread reopens while the others go on with the generation they hold;
        the old generation is closed (and released to writers) when the last search using it
        drops it (:meth:`IndexReader.__del__`), not under a search still reading it.

        Raises:
            EncodrError: the index was rebuilt with another model (search it anew), or the new
                generation cannot be opened (:meth:`IndexReader.open`).
        """
        if not self.index.stale():
            return False
        with self._reopen:
            if not self.index.stale():  # another thread reopened it meanwhile
                return False
            fresh = IndexReader.open(self.index.path, **self._open)
            if fresh.meta.fingerprint != self.fingerprint:
                fresh.close()
                raise EncodrError(
                    f"index {self.index.path} was rebuilt with another model ({fresh.meta.model}); open it again to search it"
                )
            self.index = fresh  # the old reader closes when its last reader drops it
            self.tuned = tuned_search(fresh)
            self.adapter = read_adapter(fresh.path, self.fingerprint)
        return True

    def query_languages(
        self, queries: list[str], lang: str | None = None, index: IndexReader | None = None, mode: str = DENSE
    ) -> list[str]:
        """Each query's language: ``lang`` when given; otherwise the index's default language
        when it was built with one (``--lang``); otherwise, where the search uses it, detected
        among the languages of the index (:func:`encodr.data.language.detect_languages`; with
        one language, that one without detection). The language picks the query's PCR
        component and, in ``keyword`` and ``hybrid`` ``mode``, its stemmer and the fusion's
        language-aware step; a ``dense`` search of an index without PCR uses none, and its
        queries are ``und`` (not determined), with no detector loaded.

        Raises:
            EncodrError: ``lang`` given where it would change nothing: an index built without
                PCR, searched densely or without a keyword index.
        """
        index = index or self.index
        if lang is not None:
            check_languages(index, SearchOptions(lang=lang, mode=mode))
            return [lang] * len(queries)
        languages = detected_among(index.meta, mode)
        if not languages:
            return [index.meta.default_lang or UNDETERMINED] * len(queries)
        return detect_languages(queries, languages)

    def warm(self) -> None:
        """Make this searcher ready for a front end that keeps it (the TUI, ``encodr serve``,
        ``encodr mcp``): its snippets' sentences are encoded by the query encoder's int8 twin
        (:func:`~encodr.models.onnx.quantised_twin`; where there is none, by the query encoder),
        which a one-off ``encodr search`` does not load; then one throwaway query runs through
        every phase a default search takes (the model's first forward pass, the language
        detector, FAISS's and SQLite's first reads), so that the first query a person types is
        as fast as the next ones. Its hits are dropped. The language detectors' models are all
        read first (:func:`~encodr.data.language.load_models`), so that the first query in
        another script does not wait for them either."""
        from ..data.language import load_models
        from ..models.onnx import quantised_twin
        from .hints import hint_applies

        self.sentence_encoder = quantised_twin(self.encoder) or self.encoder
        meta = self.index.meta
        load_models(detected_among(meta, HYBRID))  # the query's language, and the hint's detector: every model
        if hint_applies(meta.model, meta.languages):
            load_models(None)
        self.query(["warm up"], SearchOptions(k=1))

    def search(self, queries: list[str], options: SearchOptions = SearchOptions(), reranker=None) -> list[list[Hit]]:
        """Top-k hits for each query (highest score first): :meth:`query` without the queries'
        languages; see it for the arguments and errors. The front ends search through
        :func:`encodr.core.commands.search`, which adds judgments, snippets and hints."""
        return self.query(queries, options, reranker)[1]

    def query(
        self, queries: list[str], options: SearchOptions = SearchOptions(), reranker=None
    ) -> tuple[list[str], list[list[Hit]]]:
        """Each query's language and its top-k hits (highest score first). Thread-safe: it
        reads one generation of the index throughout, the current one when it starts.

        ``options.mode``: ``dense`` ranks by the cosine of the vectors; ``keyword`` by BM25 over
        the keyword index (:meth:`Index.keyword_search`; the score is BM25's); ``hybrid`` fuses
        the top :meth:`SearchOptions.depth` of each by ``options.fusion`` (:mod:`.fusion`; the
        score is the fused one). In an index of documents split into passages
        (``index.json``'s ``split_documents``) each document appears once, at its best passage
        (:func:`best_passages`), unless ``options.passages``. Filters are applied inside FAISS
        and the FTS5 query, so k hits come back whenever k pass.

        Args:
            queries: q texts.
            options: the search's settings (:class:`~.options.SearchOptions`).
            reranker: a cross-encoder (:class:`~encodr.models.CrossScorer`) that re-scores the
                first ``max(k, rerank_depth)`` hits (:func:`rerank_hits`); the score is then the
                cross-encoder's, or with ``rerank_weight`` < 1 its interpolation with the first stage's.

        Returns:
            (q language codes, q lists of at most k :class:`Hit` s).

        Raises:
            EncodrError: a ``hit_lang`` code the index has no text in, a keyword mode on an
                index without a keyword index; see :meth:`query_languages` and
                :meth:`IndexReader.prepare_queries`.
        """
        self.refresh()
        index = self.index
        options = self.resolve(options.for_index(index.has_keywords), reranker)
        check_languages(index, options)
        if len(index) == 0:  # every document deleted: nothing to find, and FAISS refuses k = 0
            return [index.meta.default_lang or UNDETERMINED] * len(queries), [[] for _ in queries]
        return self._query(index, queries, options, reranker)

    def resolve(self, options: SearchOptions, reranker=None) -> SearchOptions:
        """``options`` with the settings left ``None`` filled (:meth:`SearchOptions.resolved`):
        the fusion weight tuned on judgments for this index's model (:attr:`tuned`), the depth
        and weight tuned with ``reranker`` (its ``tuned``, :func:`encodr.models.load_cross`)."""
        return options.resolved(self.tuned, getattr(reranker, "tuned", None))

    def _query(
        self, index: IndexReader, queries: list[str], options: SearchOptions, reranker
    ) -> tuple[list[str], list[list[Hit]]]:
        """:meth:`query` on one generation, its options checked."""
        if not options.passages and index.meta.split_documents:
            return self._documents(index, queries, options, reranker)
        if reranker is not None:
            k = options.k
            langs, first = self._query(index, queries, replace(options, k=max(k, options.rerank_depth), passages=True), None)
            with phase("rerank"):
                return langs, [rerank_hits(q, hits, reranker, k, options.rerank_weight) for q, hits in zip(queries, first)]
        langs, scores, ids = self._ranked(index, queries, options)
        return langs, self._rows_to_hits(index, scores, ids, filters=options.filter)

    def _ranked(self, index: IndexReader, queries: list[str], options: SearchOptions) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The top ``options.k`` passages of each query by ``options.mode``, before any
        re-ranker: (q language codes, float32 (q, k) scores, int64 (q, k) row ids, −1 where
        there is no hit)."""
        where, ranked = Where(options.hit_lang, options.filter), code_ranked(index, options)
        k = max(options.k, options.depth()) if ranked else options.k  # candidates for the code-ranking stage
        with phase("language"):
            langs = self.query_languages(queries, options.lang, index, options.mode)
        if options.mode == KEYWORD:
            with phase("keyword"):
                scores, ids = index.keyword_search(queries, k, where, langs, options.keyword_stats)
            return langs, *self._code_ranked(index, queries, scores, ids, options)
        if options.mode == DENSE:
            with phase("encode"):
                encoded = self._encode_queries(index, queries)
            scores, ids = self._dense_rows(encoded, langs, index, replace(options, k=k))
            return langs, *self._code_ranked(index, queries, scores, ids, options)
        depth = options.depth()
        keyword = beside(index.keyword_search, queries, depth, where, langs, options.keyword_stats)
        try:
            with phase("encode"):
                vectors = index.prepare_queries(self._encode_queries(index, queries), langs)
            with phase("dense"), one_faiss_thread():
                d_scores, d_ids = index.search(vectors, depth, where, options.nprobe, options.ef_search)
        finally:
            wait([keyword])  # the keyword half never outlives the search, an error's included
        k_scores, k_ids = keyword.result()
        with phase("fusion"):
            *fused, rows = self._fused(index, queries, langs, (d_scores, d_ids), (k_scores, k_ids), options, ranked)
        return langs, *self._code_ranked(index, queries, *fused, options, rows)

    @staticmethod
    def _code_ranked(
        index: IndexReader,
        queries: list[str],
        scores: np.ndarray,
        ids: np.ndarray,
        options: SearchOptions,
        rows: dict[int, dict] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The first ``options.k`` of each query's candidates ((q, n) scores and ids, −1: none)
        after the code-ranking stage (:func:`.ranking.rank_code`), where it applies
        (:func:`code_ranked`) and a query's candidates hold source code; else as given, cut to k.
        ``rows``: the candidates' stored rows with :data:`RANKED_KEYS`, where already read."""
        k = options.k
        if not code_ranked(index, options):
            return scores[:, :k], ids[:, :k]
        from .ranking import rank_code

        with phase("ranking"):
            rows = rows if rows is not None else index.rows(np.unique(ids), RANKED_KEYS)
            out_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
            out_ids = np.full((len(queries), k), -1, dtype=np.int64)
            for q, query in enumerate(queries):
                found = ids[q] >= 0
                ranked_ids, ranked_scores = rank_code(
                    query, ids[q][found], scores[q][found], rows, _is_code, only_definitions=options.defined
                )
                n = min(k, len(ranked_ids))
                out_ids[q, :n], out_scores[q, :n] = ranked_ids[:n], ranked_scores[:n]
        return out_scores, out_ids

    def _documents(
        self, index: IndexReader, queries: list[str], options: SearchOptions, reranker
    ) -> tuple[list[str], list[list[Hit]]]:
        """The top ``options.k`` documents of each query, each at its best passage: passages
        fetched ever deeper (×4 a round) until k distinct documents are among them or the
        index has no more, as Elasticsearch's ``collapse`` fetches until it has k groups.
        Without a re-ranker the passages are collapsed by their row ids, and a :class:`Hit` is
        made only for a passage kept."""
        k, depth, total = options.k, options.k * PASSAGES_PER_DOCUMENT, len(index)
        if code_ranked(index, options):  # the stage ranks this many candidates a list, in one round
            depth = max(depth, CODE_CANDIDATES)
        while True:
            deeper = replace(options, k=depth, passages=True)
            if reranker is None:
                langs, scores, ids = self._ranked(index, queries, deeper)
                kept = self._rows_to_hits(index, scores, ids, documents=k, filters=options.filter)
                found = (ids >= 0).sum(axis=1).tolist()
            else:
                langs, hits = self._query(index, queries, deeper, reranker)
                with phase("hits"):
                    kept, found = [best_passages(row, k) for row in hits], [len(row) for row in hits]
            if all(len(docs) >= k or n < depth for docs, n in zip(kept, found)) or depth >= total:
                return langs, kept
            depth = min(depth * 4, total)

    @staticmethod
    def _fused(
        index: IndexReader,
        queries: list[str],
        langs: list[str],
        dense: tuple[np.ndarray, np.ndarray],
        keyword: tuple[np.ndarray, np.ndarray],
        options: SearchOptions,
        ranked: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, dict[int, dict]]:
        """(q, k) fused scores and ids of the dense and keyword (scores, ids) lists
        (:func:`~.fusion.fuse_arrays`; id −1: no hit), and the candidates' rows as read (with
        :data:`RANKED_KEYS` when ``ranked``); with ``ranked`` (the code-ranking stage follows),
        every candidate of both lists, and an identifier-shaped query's source code fused with
        :attr:`.ranking.CodeWeights.identifier_alpha` (its keywords lead). An index at its fast
        stage (:mod:`.stages`) fuses with :data:`~.fusion.FAST_STAGE_ALPHA` unless a weight is given."""
        (d_scores, d_ids), (k_scores, k_ids) = dense, keyword
        weight = options.fusion_weight
        if weight is None and index.meta.stage == FAST:
            weight = FAST_STAGE_ALPHA
        k = d_ids.shape[1] + k_ids.shape[1] if ranked else options.k
        keys = ("lang", *RANKED_KEYS) if ranked else ("lang", "source")
        rows = index.rows(np.unique(np.concatenate([d_ids.ravel(), k_ids.ravel()])), keys)
        lang_of = {i: r["lang"] for i, r in rows.items()}
        code = frozenset(i for i, r in rows.items() if _is_code(r["source"]))  # source code: its own weight
        present = set(lang_of.values()) - {None, UNDETERMINED}  # one language, the query's: no candidate is in another
        fused_scores = np.full((len(langs), k), -np.inf, dtype=np.float32)
        fused_ids = np.full((len(langs), k), -1, dtype=np.int64)
        for q in range(len(langs)):
            d, kw = d_ids[q] >= 0, k_ids[q] >= 0
            ids, scores = fuse_arrays(
                (d_ids[q][d], d_scores[q][d]),
                (k_ids[q][kw], k_scores[q][kw]),
                options.fusion,
                langs[q],
                lang_of if present - {langs[q]} else None,
                Weights(weight, code, identifier_alpha(queries[q]) if ranked else None),
                CODE_CANDIDATES if ranked else HYBRID_DEPTH,  # normalised as a first round's: scores do not move with k
            )
            n = min(k, len(ids))
            fused_ids[q, :n], fused_scores[q, :n] = ids[:n], scores[:n]
        return fused_scores, fused_ids, rows

    def _hits(
        self,
        query_vectors: np.ndarray,
        langs: list[str],
        index: IndexReader | None = None,
        options: SearchOptions = SearchOptions(),
    ) -> list[list[Hit]]:
        """Hits for already-encoded queries (float32 (q, d), unit norm, before PCR) in ``index``
        (default: the current one), ``options.k`` each, in its languages and filters."""
        index = index or self.index
        return self._rows_to_hits(index, *self._dense_rows(query_vectors, langs, index, options), filters=options.filter)

    @staticmethod
    def _dense_rows(
        query_vectors: np.ndarray, langs: list[str], index: IndexReader, options: SearchOptions
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_hits`' (q, k) scores and row ids (−1: no hit), before they are made hits."""
        with phase("encode"):  # PCR, where the index has it, is part of making the query's vector
            vectors = index.prepare_queries(query_vectors, langs)
        with phase("dense"), one_faiss_thread():
            return index.search(vectors, options.k, Where(options.hit_lang, options.filter), options.nprobe, options.ef_search)

    @staticmethod
    def _rows_to_hits(
        index: IndexReader, scores: np.ndarray, ids: np.ndarray, documents: int | None = None, filters: tuple = ()
    ) -> list[list[Hit]]:
        """:class:`Hit` lists from (q, k) score and id arrays (id −1: no hit); with ``documents``,
        each query's first ``documents`` documents, each at its first (best) passage, ranks
        counted among them (:func:`best_passages` on the rows: no hit is made for a passage
        left out)."""
        with phase("hits"):
            stored = {i: _stored_fields(r) for i, r in index.rows(np.unique(ids)).items()}
            shared = index.sharers(list(stored))  # a text two files hold: a hit for each file, the first's first
            holders = {stored[i]["ext_id"] for i in shared} | {h["ext_id"] for held in shared.values() for h in held}
            passing = index.documents_passing(sorted(holders), filters) if holders and filters else None
            results = []
            for qs, qi in zip(scores.tolist(), ids.tolist()):
                found = [
                    (s, fields) for s, i in zip(qs, qi) if i >= 0 for fields in _each_file(stored[i], shared.get(i), passing)
                ]
                if documents is not None:
                    found = first_of_each(found, lambda row: _document(row[1]), documents)
                results.append([Hit.made(rank, s, fields) for rank, (s, fields) in enumerate(found, 1)])
            return results

    def _encode_queries(self, index: IndexReader, queries: list[str]) -> np.ndarray:
        """:meth:`IndexReader.encode_queries` with this searcher's encoder, kept for this thread's
        next call with the same queries on an index of the same prompt and dimension (the
        snippets of the search it just ran: :meth:`snippets`), so a query is encoded once. The
        index's query adapter (:attr:`adapter`, :mod:`.adapter`), when it has one, maps them."""
        key = (index.query_prompt, index.meta.dimension, tuple(queries))
        last = getattr(self._last_queries, "value", None)
        if last is not None and last[0] == key:
            return last[1]
        vectors = index.encode_queries(self.encoder, queries)
        if self.adapter is not None:
            vectors = self.adapter.apply(vectors)
        self._last_queries.value = (key, vectors)
        return vectors

    def snippets(self, queries: list[str], langs: list[str], results: list[list[Hit]]) -> list[list[Hit]]:
        """``results`` with each hit's ``snippet``, ``snippet_line`` and ``snippet_column``
        filled (:mod:`.snippets`): the sentences of its passage that best answer its query, by
        keyword matches and, where they do not decide (:func:`~.snippets.decided`) and the passage
        is prose (source code: its words alone, else its first lines), the cosine
        of the query's vector and each sentence's, for the first such hit of each query and the
        next ones within a budget of tokens (:func:`~.snippets.within_budget`; a forward pass a
        hit, by :attr:`sentence_encoder`, for the passages this searcher has not met before:
        :attr:`sentences`; the queries' vectors are the search's own where it made them:
        :meth:`_encode_queries`).

        Args:
            queries: q texts; langs: their q languages; results: q hit lists.
        """
        from ..data.code import code_language
        from ..data.files import reads_as_markdown
        from .snippets import choose, decided, keyword_scores, line_and_column, sentence_spans, within_budget

        index = self.index
        spans = [[sentence_spans(h.text, wrapped=not code_language(h.source or "")) for h in hits] for hits in results]
        kws = [
            [keyword_scores(queries[q], h.text, spans[q][i], langs[q] if langs else h.lang) for i, h in enumerate(hits)]
            for q, hits in enumerate(results)
        ]
        cosines: dict[tuple[int, int], list[float]] = {}
        undecided = [
            (q, i)
            for q, kw in enumerate(kws)
            for i, scores in enumerate(kw)
            if len(scores) > 1 and not decided(scores) and not _is_code(results[q][i].source)
        ]  # source code's lines are chosen by the query's words alone: no sentence is encoded for it
        wanted = within_budget(undecided, spans)
        if wanted:
            with phase("snippets"):
                passages = [tuple(results[q][i].text[s:e] for s, e in spans[q][i]) for q, i in wanted]
                vectors = self.sentences.encode(index, self.sentence_encoder, passages)
                asked = self._encode_queries(index, queries)
            for (q, i), sentences in zip(wanted, vectors):
                cosines[(q, i)] = [float(x) for x in sentences @ asked[q]]
        out = []
        for q, hits in enumerate(results):
            shown = []
            for i, h in enumerate(hits):
                kw = kws[q][i]
                cos = cosines.get((q, i), [0.0] * len(kw))
                start, end = choose(h.text, spans[q][i], [a + b for a, b in zip(kw, cos)], markdown=reads_as_markdown(h.source))
                line, column = line_and_column(h.text, h.line, start)
                shown.append(replace(h, snippet=h.text[start:end], snippet_line=line, snippet_column=column))
            out.append(shown)
        return out

    def changed(self, results: list[list[Hit]]) -> dict[str, str]:
        """The documents among ``results``' hits whose file was edited or deleted since the index
        read it (:func:`~.documents.changed_documents`): document id → ``edited`` or ``deleted``.
        One read of the store and one ``stat`` a file, for the hits' documents only. The reader
        is handed over whole, so it is held while its store is read: a store reached through
        ``self.index.texts`` alone is closed under the read when a concurrent :meth:`refresh`
        drops the last reference to its reader (a served index written while it is searched)."""
        from .documents import changed_in

        return changed_in(self.index, (h.document for hits in results for h in hits))

    def judged(self, queries: list[str], results: list[list[Hit]], k: int) -> list[list[Hit]]:
        """``results`` with the index's judgments applied at once (:mod:`.pinning`): each query's
        judged documents moved, grade 2 and 1 up (fetched when the search missed them), grade 0
        down; a judgment of a document edited or deleted since is left out, and an unreadable
        ``judgments.db`` leaves the hits as they are. The front ends' search calls this;
        evaluation does not.

        Args:
            queries: q texts; results: their hit lists; k: hits wanted per query.
        """
        from .judgments import CURRENT, Judgments, with_status
        from .pinning import judged_for, pinned

        index = self.index
        try:
            judgments = Judgments(index.path).all()
        except (
            EncodrError
        ):  # an unreadable judgments.db: the search goes on as the index ranks (encodr judgments names the fault)
            return results
        if not judgments:
            return results
        asked = self._encode_queries(index, queries)
        out = []
        for q, hits in enumerate(results):
            found = judged_for(queries[q], asked[q], judgments, lambda keys: self._judged_vectors(index, keys))
            grades = {j.doc: j.grade for j in with_status(found, index.texts) if j.status == CURRENT}
            out.append(pinned(hits, grades, k, lambda doc: self._first_passage(index, doc)))
        return out

    def _judged_vectors(self, index: IndexReader, keys: list[str]) -> np.ndarray:
        """The vectors of judged queries (n, d), encoded once per model and prompt and kept."""
        model = (index.meta.fingerprint, index.query_prompt)
        missing = [key for key in keys if (model, key) not in self._judged_cache]
        if missing:
            for key, vector in zip(missing, index.encode_queries(self.encoder, missing)):
                self._judged_cache[(model, key)] = vector
        return np.stack([self._judged_cache[(model, key)] for key in keys])

    @staticmethod
    def _first_passage(index: IndexReader, doc: str) -> Hit | None:
        """Document ``doc``'s first passage as a hit (score 0), or None when the index holds no text of it."""
        found = index.texts.first_passage(doc)
        if found is None:
            return None
        return Searcher._rows_to_hits(index, np.array([[0.0]], dtype=np.float32), np.array([[found]], dtype=np.int64))[0][0]

    def context(self, results: list[list[Hit]], around: int) -> list[list[Hit]]:
        """``results`` with each hit's ``context``: the lines of its document from ``around``
        lines before its snippet's first line to ``around`` after its last (grep's ``-C``), as
        (file line, text), read from the index (:meth:`IndexReader.document_lines`), so they are
        the text the hit was found in. A hit whose document's lines are not known keeps None."""
        documents: dict[str, dict] = {}
        out = []
        for hits in results:
            shown = []
            for h in hits:
                doc = documents.get(h.document) or documents.setdefault(h.document, self.index.document_lines(h.document))
                first = h.snippet_line or h.line
                last = first + (h.snippet or h.text).count("\n")
                lines, base = doc["lines"], doc["first_line"]
                picked = [
                    (n, lines[n - base])
                    for n in range(max(base, first - around), last + around + 1)
                    if 0 <= n - base < len(lines)
                ]
                shown.append(replace(h, context=picked or None))
            out.append(shown)
        return out

    def document(self, hit: Hit) -> tuple[str, int]:
        """The whole document a hit belongs to (:meth:`IndexReader.document`) and where the hit starts
        in it: (text, offset). A text that was not split is its own document."""
        if hit.start is None or hit.ext_id is None:
            return hit.text, 0
        found = self.index.document(hit.ext_id)
        return (found["text"], hit.start) if found else (hit.text, 0)

    def compare(self, a: str, b: str, k: int = 5, lang: str | None = None) -> tuple[float, list[str], list[list[Hit]]]:
        """The cosine of two texts as this index's model encodes its queries (its query prompt
        and dimension), and each text's ``k`` nearest passages as a dense search ranks them (the
        index's query adapter applied, where it has one).

        Returns:
            (cosine in [−1, 1], the two texts' languages, [a's hits, b's hits]).

        Raises:
            EncodrError: see :meth:`refresh` and :meth:`query_languages`.
        """
        self.refresh()
        index = self.index
        raw = index.encode_queries(self.encoder, [a, b])
        langs = self.query_languages([a, b], lang, index)
        near = self._hits(self._encode_queries(index, [a, b]), langs, index, SearchOptions(k=k, mode=DENSE, passages=True))
        return float(raw[0] @ raw[1]), langs, near
