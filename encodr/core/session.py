"""One search session for every front end: :class:`Session`.

A session holds the searchers (:class:`encodr.index.Searcher`) and re-rankers a process keeps
open, with one cache and one invalidation rule (:meth:`Session.keep`), and it answers a search
(:meth:`Session.search`: hits, judgments, snippets, hints and caption, timings in the result)
and a comparison (:meth:`Session.compare`) from their requests. The CLI and the TUI share the
process's session (:data:`SESSION`, through :mod:`.dispatch`); a server (:class:`.served.Served`)
holds its own, keyed by the names it serves. This is txtai's ``Embeddings`` as one object over
an index's life, with the HTTP routes, MCP tools, CLI and TUI thin over it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import EncodrError
from .requests import CompareRequest, SearchRequest
from .results import CompareResult, QueryHits, SearchResult, short_path, sync_command


class Session:
    """The searchers and re-rankers one front end keeps open, and the searches it answers.

    Attributes:
        searchers: key → :class:`~encodr.index.Searcher` (the CLI and the TUI key by index folder,
            model and backend; a server by the index's name).
        openers: key → how that searcher is opened again (:meth:`keep`).
        rerankers: (spec, its folder's modification time) → the cross-encoder loaded.
    """

    def __init__(self, searchers: dict | None = None):
        self.searchers: dict = dict(searchers or {})
        self.openers: dict[object, Callable] = {}
        self.rerankers: dict[tuple, object] = {}

    def keep(self, key, opener: Callable | None = None):
        """The searcher kept under ``key``, brought to its index's current generation
        (:meth:`~encodr.index.Searcher.refresh`); opened by ``opener`` (or the one registered
        with the key before) when there is none, or when the index was rebuilt with another
        model or removed (its refresh refuses). The one rule by which every front end's
        searchers follow their index.

        Raises:
            EncodrError: the opener's refusal; without one, the refresh's.
        """
        opener = opener or self.openers.get(key)
        if opener is not None:
            self.openers[key] = opener
        searcher = self.searchers.get(key)
        if searcher is not None:
            try:
                searcher.refresh()
                return searcher
            except EncodrError:
                if opener is None:
                    raise
                self.searchers.pop(key, None)
        if opener is None:
            raise KeyError(key)
        searcher = self.searchers[key] = opener()
        return searcher

    def open(self, request: SearchRequest):
        """A searcher for ``request``'s index, model and backend (its search settings travel with
        each query: :meth:`SearchRequest.options`), kept under (folder, model, backend): a caller
        that does not keep it (a batch of searches, the library) gets the one opened before, at
        the index's current generation (:meth:`keep`).

        Raises:
            EncodrError: see :class:`~encodr.index.Searcher`; a setting the index cannot serve
                (:func:`~encodr.index.search.check_languages`), before any model loads.
        """
        from ..index import Searcher, locate
        from ..index.reader import peek_meta
        from ..index.search import check_languages

        options = request.options()
        key = (str(locate(request.index).resolve()), request.model, request.backend)

        def opened():
            preload_languages(peek_meta(request.index), request.lang, request.mode)  # on another core while the model loads
            return Searcher(request.index, request.model, backend=request.backend, options=options)  # refusals first

        searcher = self.keep(key, opened)
        check_languages(searcher.index, options.for_index(searcher.index.has_keywords))
        return searcher

    def reranker(self, spec: str | None):
        """The cross-encoder ``spec`` names (a search request's ``rerank``; a
        :class:`~encodr.models.CrossScorer`), or None without one: loaded once, and again when
        its folder was written since (a re-trained re-ranker).

        Raises:
            EncodrError: see :func:`encodr.models.load_cross` (a path or Hub id that cannot be had).
        """
        from ..models import load_cross

        if not spec:
            return None
        try:
            written = Path(spec).expanduser().stat().st_mtime_ns
        except OSError:  # an alias or a Hub id
            written = None
        key = (spec, written)
        if key not in self.rerankers:
            self.rerankers[key] = load_cross(spec)
        return self.rerankers[key]

    def search(self, request: SearchRequest, searcher=None, reranker=None) -> SearchResult:
        """Top-k hits of each query, best first (dense, keyword or hybrid: ``request.mode``), with
        the judged documents moved (unless ``no_judgments``), snippets, context lines, the hint
        lines and the caption every front end shows, and with ``timings`` the time of each phase.

        Args:
            request: the queries, the index and the search settings.
            searcher: the searcher to use (a server's, by name); default: :meth:`open`.
            reranker: the cross-encoder ``request.rerank`` names; default: :meth:`reranker`.

        Raises:
            EncodrError: see :meth:`SearchRequest.check` and :meth:`encodr.index.Searcher.query`.
        """
        from .. import timing
        from ..index.hints import language_hints
        from ..index.options import DENSE
        from ..index.upgrade import keywords_stale

        searcher = searcher or self.open(request)
        reranker = reranker if reranker is not None else self.reranker(request.rerank)
        searcher.index.reset_missing()  # a sharded index: the shards that did not answer are counted from here
        with timing.collect() as spent:
            langs, results, changed = fresh_hits(searcher, request, reranker)
            results = searcher.snippets(request.query, langs, results)
            if request.context:
                results = searcher.context(results, request.context)
            with timing.phase("language"):
                hints = language_hints(request.query, searcher.index.meta)
        down = searcher.index.missing()
        hints += [empty_line(searcher.index.path)] if len(searcher.index) == 0 else []
        hints += (
            [stale_keywords_line(searcher.index.path)] if request.mode != DENSE and keywords_stale(searcher.index.meta) else []
        )
        hints += [partial_line(down, searcher.index.meta.shards)] if down else []
        hints += [changed_line(changed, searcher.index)] if changed else []
        stage = searcher.index.meta.stage or FULL
        hints += [fast_stage_line(searcher.index.meta.full_model)] if stage != FULL else []
        shown = {name: round(spent[name], 3) for name in (*timing.PHASES, "total") if name in spent}
        return SearchResult(
            index=str(searcher.index.path),
            model=searcher.index.meta.model,
            caption=caption(searcher.index, request.passages),
            stage=stage,
            hints=hints,
            timings=shown if request.timings else None,
            max_tokens=request.max_tokens,
            partial=bool(down),
            missing_shards=down,
            results=[QueryHits(query=q, lang=code, hits=hits) for q, code, hits in zip(request.query, langs, results)],
        )

    def compare(self, request: CompareRequest, searcher=None) -> CompareResult:
        """``encodr compare A B --index IDX``: the cosine of two texts by the index's model and
        each one's nearest passages (:meth:`encodr.index.Searcher.compare`).

        Args:
            searcher: an opened searcher of ``request.index``; default: :meth:`open`'s.

        Raises:
            EncodrError: an index that cannot be opened; see :meth:`encodr.index.Searcher.compare`.
        """
        searcher = searcher or self.open(SearchRequest(index=request.index, query=[request.a], lang=request.lang))
        cosine, langs, near = searcher.compare(request.a, request.b, request.k, request.lang)
        return CompareResult(
            index=str(searcher.index.path),
            model=searcher.index.meta.model,
            cosine=cosine,
            results=[QueryHits(query=q, lang=code, hits=hits) for q, code, hits in zip((request.a, request.b), langs, near)],
        )


SESSION = Session()  # the process's session: the CLI's and the TUI's (a server holds its own)


def settle() -> None:
    """Tell Python's cyclic garbage collector that what the process holds now, it holds for its
    life: collect once, then move every object still alive to the permanent generation
    (:func:`gc.freeze`), which no later collection walks. A front end that keeps warm searchers
    (the TUI, ``encodr serve``, ``encodr mcp``) holds a few hundred thousand such objects (its
    models', indexes' and widgets' Python objects), and a full collection walks every one of them,
    in the middle of whichever query set it off; after this it walks only what came since. Called
    again (another index opened), it unfreezes first, so that what was held before and no longer
    is can be collected."""
    import gc

    gc.unfreeze()
    gc.collect()
    gc.freeze()


FRESH_ROUNDS = 4  # searches, ever deeper, that fresh_hits makes at most to find k hits of unchanged files


def fresh_hits(searcher, request: SearchRequest, reranker=None):
    """``request``'s hits, with the judged documents moved (unless ``no_judgments``), and
    without the hits of documents whose file was edited or deleted since the index read it
    (:meth:`encodr.index.Searcher.changed`): their stored text is no longer the file's, so no
    front end shows it. The search is run again, deeper by the hits left out, until each query
    has ``k`` hits, no new document is found changed, or :data:`FRESH_ROUNDS` searches ran.

    Returns:
        (the queries' languages, their hit lists (at most k each, ranks from 1), document id →
        (its path as hits show it, ``edited`` or ``deleted``) for the documents left out).
    """
    from dataclasses import replace

    options, k, changed = request.options(), request.k, {}
    for _ in range(FRESH_ROUNDS):
        langs, results = searcher.query(request.query, options, reranker)
        if not request.no_judgments:
            results = searcher.judged(request.query, results, options.k)
        found = searcher.changed(results)
        new = found.keys() - changed.keys()
        shown = {h.document: h.path or h.document for hits in results for h in hits}
        changed.update({doc: (shown[doc], what) for doc, what in found.items() if doc in new})
        kept = [[h for h in hits if h.document not in changed] for hits in results]
        if not new or all(len(hits) >= k for hits in kept):
            break
        options = replace(options, k=options.k + max(len(r) - len(h) for r, h in zip(results, kept)))
    return langs, [[h.at(rank) for rank, h in enumerate(hits[:k], 1)] for hits in kept], changed


def changed_line(changed: dict[str, tuple[str, str]], index) -> str:
    """The one line every front end shows when a search left out hits of files edited or deleted
    since ``index`` read them (:func:`fresh_hits`): the first few documents, and the command that
    reads them again; when that is every document the index holds, it says so."""
    named = [f"{path} {what}" for path, what in sorted(changed.values())[:3]]
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    if len(changed) >= (getattr(index.meta, "documents", 0) or len(changed) + 1):
        return (
            f"every document of this index changed since it was read ({', '.join(named)}{more}): "
            f"nothing left to answer from; read them again with: {sync_command(index)}"
        )
    return (
        f"left out {len(changed)} document(s) changed since the index read them ({', '.join(named)}{more}); "
        f"read them again with: {sync_command(index)}"
    )


def caption(index, passages: bool) -> str:
    """The line above a search's hits of an index of split documents ranked by document (empty
    otherwise, and with ``passages``)."""
    n = index.meta.split_documents or 0
    if not n or passages or len(index) == 0:
        return ""
    return (
        f"documents ranked by their best passage ({n:,} document{' is' if n == 1 else 's are'} split into passages; "
        "--passages ranks passages)"
    )


FULL = "full"  # SearchResult.stage of an index searched with its own model's vectors


def fast_stage_line(full_model: str | None) -> str:
    """The one line every front end shows for an answer from an index's fast stage (:mod:`encodr.index.stages`)."""
    return f"fast stage (static {full_model}): full quality once encodr index is done"


def partial_line(missing: list[int], shards: int) -> str:
    """The one line every front end shows for an answer without some shards of a sharded index."""
    return (
        f"partial answer: shard{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} of {shards} did not answer "
        "in time; their documents are left out (ask again)"
    )


def empty_line(path) -> str:
    """The one line every front end shows for a search of an index that holds no document."""
    return (
        f"index {short_path(str(path))} is empty (no documents); add some with: encodr index DOCS --out "
        f"{short_path(str(path))} --add"
    )


def stale_keywords_line(path) -> str:
    """The one line every front end shows for a search of an index whose keyword index an older
    analysis made (:func:`encodr.index.upgrade.keywords_stale`)."""
    shown = short_path(str(path))
    return f"index {shown}'s keywords were analysed by an older encodr; update them with: encodr index --upgrade {shown}"


def preload_languages(meta, lang: str | None, mode: str) -> None:
    """Start loading the language detectors a search of the index whose ``index.json`` is
    ``meta`` (an :class:`~encodr.index.meta.IndexMeta`, or None where it cannot be read) will run
    (:func:`encodr.data.language.preload`): among the index's languages where the search detects
    among several (:func:`~encodr.index.search.detected_among`; never with ``lang`` given), and
    among all for the English-only model's hint (:func:`encodr.index.hints.language_hints`)."""
    from ..data.language import preload
    from ..index.hints import hint_applies
    from ..index.search import detected_among

    if meta is None:
        return
    languages = detected_among(meta, mode) if lang is None else []
    if len(languages) > 1:
        preload(languages)
    if hint_applies(meta.model, meta.languages):
        preload(None)
