"""The commands: each takes its checked request (:mod:`.requests`; :mod:`.dispatch` checks it, once), runs it on the core
modules (:mod:`encodr.methods`, :mod:`encodr.index`, :mod:`encodr.evaluation`,
:mod:`encodr.registry`) and returns its result (:mod:`.results`). Long work reports through a
:data:`~encodr.progress.ProgressFn`; nothing here draws or prints.

The front ends reach these through :mod:`.dispatch` and only through it, so a rule, a default
or a table layout is written once.
"""

from __future__ import annotations

import base64
import contextlib
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import EncodrError, S
from ..progress import ProgressEvent, ProgressFn, silent
from .requests import (
    CompareRequest,
    DeleteRequest,
    DocumentIdsRequest,
    DocumentRequest,
    EmbedRequest,
    EvalRequest,
    IndexesRequest,
    IndexRequest,
    JudgeRequest,
    JudgmentsRequest,
    ModelsRequest,
    RecipesRequest,
    RerankRequest,
    RunRequest,
    RunsRequest,
    ScoreRequest,
    SearchRequest,
    ShowRequest,
    SyncRequest,
    TuneRequest,
    UnjudgeRequest,
    UpsertRequest,
    pcr_variant,
)
from .results import (
    CompareResult,
    DocumentLines,
    Embedding,
    EmbedResult,
    EvalResult,
    ListResult,
    Ranked,
    RecordResult,
    RerankResult,
    RunsResult,
    ScoreResult,
    SearchResult,
    TuneResult,
    Usage,
    short_path,
    sync_command,
)
from .session import SESSION

WarnFn = Callable[[str], None]


def open_searcher(request: SearchRequest):
    """The process's searcher for ``request``'s index, model and backend (:meth:`.session.Session.open`)."""
    return SESSION.open(request)


def open_reranker(spec: str | None):
    """The process's cross-encoder ``spec`` names, or None (:meth:`.session.Session.reranker`)."""
    return SESSION.reranker(spec)


def search(request: SearchRequest, searcher=None, reranker=None) -> SearchResult:
    """Top-k hits of each query (:meth:`.session.Session.search`, the process's session; a
    server passes the ``searcher`` and ``reranker`` its own session keeps)."""
    return SESSION.search(request, searcher, reranker)


def compare(request: CompareRequest, searcher=None) -> CompareResult:
    """``encodr compare A B --index IDX`` (:meth:`.session.Session.compare`)."""
    return SESSION.compare(request, searcher)


def rerank(request: RerankRequest, reranker) -> RerankResult:
    """Scores of ``request``'s texts against its query by a cross-encoder, best first
    (``top_n`` of them), in Cohere's shape.

    Args:
        reranker: the loaded cross-encoder (:class:`~encodr.models.CrossScorer`).
    """
    texts = request.candidates
    scores = reranker.query_scores(request.query, texts)
    order = sorted(range(len(texts)), key=lambda i: (-float(scores[i]), i))[: request.top_n]
    return RerankResult(
        model=request.model,
        results=[
            Ranked(index=i, relevance_score=float(scores[i]), document=texts[i] if request.return_documents else None)
            for i in order
        ],
    )


def load_scorer(spec: str, cross: bool, device: str | None = None, backend: str = "torch"):
    """A bi-encoder, or with ``cross`` a cross-encoder (both have ``pair_scores``).

    Raises:
        EncodrError: see :func:`encodr.models.load_encoder` and :func:`encodr.models.load_cross`.
    """
    from ..models import load_cross, load_encoder

    return load_cross(spec, device=device) if cross else load_encoder(spec, device=device, backend=backend)


def score(request: ScoreRequest, scorer=None) -> ScoreResult:
    """Cosine of two texts' vectors (bi-encoder) or σ of a cross-encoder's score, both orders averaged.

    Args:
        request: the texts and the model.
        scorer: a loaded model to use (the server's, kept warm); default: loaded for this request.
    """
    scorer = scorer or load_scorer(request.model, request.cross, request.device, request.backend)
    value = float(scorer.pair_scores([request.text_a], [request.text_b])[0])
    return ScoreResult(
        model=request.model,
        encoder="cross-encoder" if request.cross else "bi-encoder",
        metric="sigmoid score" if request.cross else "cosine",
        score=round(value, 4),
        text_a=request.text_a,
        text_b=request.text_b,
    )


def embed(
    request: EmbedRequest, encode: Callable[[list[str]], np.ndarray], dimension: int, count_tokens: Callable[[list[str]], int]
) -> EmbedResult:
    """OpenAI-compatible embeddings of ``request.input``.

    Args:
        request: the texts, the model's name and the encoding format.
        encode: texts → float32 (n, d) unit-norm vectors (the server's batcher).
        dimension: d; ``request.dimensions`` (at most d) keeps the first that many dimensions,
            renormalised (:func:`encodr.models.encoder.truncated`).
        count_tokens: texts → tokens read, for ``usage``.

    Returns:
        One :class:`Embedding` per text, in input order: floats, or with ``encoding_format``
        ``base64`` the base64 of the float32 little-endian bytes (as OpenAI's API does).

    Raises:
        EncodrError: blank or empty input; ``dimensions`` above the model's.
    """
    if request.dimensions is not None and request.dimensions > dimension:
        raise EncodrError(
            f"dimensions {request.dimensions}: model '{request.model}' gives {dimension}-dimensional vectors; "
            f"pass at most {dimension}, or leave dimensions out",
            field="dimensions",
        )
    texts = request.texts
    vectors = encode(texts)
    if request.dimensions is not None and request.dimensions < dimension:
        from ..models.encoder import truncated

        vectors = truncated(vectors, request.dimensions)
    vectors = np.asarray(vectors, dtype="<f4")
    if request.encoding_format == "base64":
        data = [Embedding(index=i, embedding=base64.b64encode(v.tobytes()).decode("ascii")) for i, v in enumerate(vectors)]
    else:
        data = [Embedding(index=i, embedding=v.tolist()) for i, v in enumerate(vectors)]
    tokens = count_tokens(texts)
    return EmbedResult(data=data, model=request.model, usage=Usage(prompt_tokens=tokens, total_tokens=tokens))


def index(request: IndexRequest, progress: ProgressFn = silent, warn: WarnFn = lambda line: None) -> RecordResult:
    """Build an index, or append to one (``add``): see :func:`encodr.index.build`. Each file
    of a folder left out (another kind, a damaged PDF, an empty document) is one ``warn`` line,
    then their count.

    Raises:
        EncodrError: see :meth:`IndexRequest.check` and :func:`encodr.index.build`.
    """
    from ..index.build import SUMMARY

    if request.upgrade is not None:
        from ..index.upgrade import upgrade

        done = upgrade(request.upgrade)
        title = f"upgraded → {done['path']}" if done["upgraded"] else f"already current → {done['path']}"
        return RecordResult(title=title, record=done, keys=["from", "to", "upgraded"])
    told, said = _telling(warn)
    built = index_with(request, None, progress, told)
    _remember(built["path"], warn)
    _say_skipped(built, said, warn)
    if built.get("skipped_files"):
        warn(f"{len(built['skipped_files'])} file(s) skipped (--json lists them); the others are indexed")
    from ..index.hints import model_language_hints

    for line in model_language_hints(built["model"], built.get("languages") or []):
        warn(line)
    keys = [*SUMMARY, "shards"] if "shards" in built else list(SUMMARY)  # a sharded index: how many
    return RecordResult(title=f"encodr index → {built['path']}", record=built, keys=keys)


def _telling(warn: WarnFn) -> tuple[WarnFn, set[str]]:
    """``warn`` that also keeps the lines it passed on, and the set it keeps them in."""
    said: set[str] = set()

    def told(line: str) -> None:
        said.add(line)
        warn(line)

    return told, said


def _say_skipped(built: dict, said: set[str], warn: WarnFn) -> None:
    """Warn the lines of a build's skipped files (:func:`~encodr.data.files.skipped_lines`) it did
    not say itself as it found them (its walk's; a Ray task's build says nothing here)."""
    from ..data.files import skipped_lines

    for line in skipped_lines(built.get("skipped_files", [])):
        if line not in said:
            warn(line)


def _remember(folder: str, warn: WarnFn) -> None:
    """Record the index in the registry (:func:`encodr.registry.remember_index`); a registry that
    cannot be written is one warning, the index stays built."""
    from .. import registry

    try:
        registry.remember_index(Path(folder))
    except EncodrError as exc:
        warn(f"encodr indexes will not list {folder}: {exc}")


def index_with(request: IndexRequest, encoder=None, progress: ProgressFn = silent, warn: WarnFn = lambda line: None) -> dict:
    """:func:`encodr.index.build` of ``request``, with ``encoder`` (a loaded model, the index's:
    a watcher's, loaded once) instead of ``request.model`` when given. Returns its summary."""
    from ..index import build

    return build(request.corpus, request.target(), request.options(encoder), progress=progress, warn=warn)


def interrupted_index(request: IndexRequest) -> str:
    """What an interrupted ``encodr index`` kept, in words: the index as it was (or none), and
    the encoded windows the same command will reuse."""
    from ..index.shards import Shards, shards_folder

    out = request.target()
    kept = (
        f"index {out} is unchanged (the previous generation stays current)" if out.exists() else f"no index was written at {out}"
    )
    finished, size = Shards.finished(shards_folder(out))
    if finished:
        kept += (
            f"; {finished} encoded piece(s) of it, {size / 2**20:.1f} MB, are kept in {shards_folder(out)}, and the "
            "same command reuses them"
        )
    return kept


def sync_line(synced: dict) -> str:
    """One line for a sync's counts (``encodr index --watch``, ``encodr serve --watch``), from
    the build's summary (:func:`encodr.index.build`)."""
    skipped = len(synced.get("skipped_files") or [])
    return (
        f"synced {synced['path']}: {synced['added']} added, {synced['updated']} updated, {synced['removed']} removed, "
        f"{synced['unchanged']} unchanged; {synced['encoded']} passages encoded in {synced['seconds']:.1f} s"
        + (f"; {skipped} file(s) skipped (warnings above)" if skipped else "")
    )


WATCH_DEBOUNCE_MS = 1000  # changes gathered for at most this long make one sync (watchfiles' debounce)…
WATCH_QUIET_MS = 300  # …and a batch closes sooner once no change came for this long (watchfiles' step)
WATCH_TICK_MS = 500  # how often an idle watcher wakes (to see ``stop``)


def watch(
    request: IndexRequest,
    on_sync: Callable[[str], None],
    warn: WarnFn,
    stop=None,
    lock=None,
    started: Callable[[], None] | None = None,
) -> int:
    """Sync ``request``'s index with its corpus on every change under it, until ``stop`` (a
    ``threading.Event``) is set or the caller is interrupted: changes are gathered by
    ``watchfiles`` (the OS's file events) and debounced (:data:`WATCH_DEBOUNCE_MS`), so a burst
    of edits (a ``git checkout``, a copy of 200 files) makes one sync or a few, not one each.

    Once the watcher is set up, one sync catches up with what changed before it was (after the
    ``encodr index`` that preceded it, say); ``started`` is called then. Each sync is
    :func:`index` with ``sync`` (only what changed is encoded; the model is loaded once),
    reported as one ``on_sync`` line (:func:`sync_line`; none for a catch-up that found
    nothing); a sync that fails (a bad file named directly, a full disk) is one ``warn`` line,
    and watching goes on. Changes inside the index folder, hidden files and files of kinds
    encodr does not read are ignored. ``lock``: held during each sync (a server's write lock).

    Returns:
        The number of syncs that changed something.
    """
    import contextlib
    import os

    from watchfiles import watch as changes

    from ..data.files import DOCUMENT_SUFFIXES, RECORD_SUFFIXES
    from ..data.walk import DEFAULT_IGNORED

    synced = request.model_copy(update={"write": "sync", "watch": False})
    out = os.path.realpath(synced.target())
    roots = [os.path.realpath(c) for c in request.corpus]
    encoder = None

    def relevant(change, path: str) -> bool:
        real = os.path.realpath(path)
        parts = real.split(os.sep)[1:]
        if real == out or real.startswith(out + os.sep) or any(part.startswith(".") for part in parts):
            return False
        root = next((r for r in roots if real.startswith(r + os.sep)), None)
        below = real[len(root) + 1 :].split(os.sep)[:-1] if root else []
        if not request.no_ignore and any(part in DEFAULT_IGNORED for part in below):
            return False
        return (
            True
            if request.glob
            else os.path.splitext(path)[1].lower() in RECORD_SUFFIXES + DOCUMENT_SUFFIXES or not os.path.splitext(path)[1]
        )

    def sync(catch_up: bool) -> bool:
        nonlocal encoder
        try:
            with lock or contextlib.nullcontext():
                if encoder is None and synced.target().exists():
                    from ..index.search import open_index
                    from ..models import load_encoder

                    with open_index(synced.target(), mmap=False) as index:
                        encoder = load_encoder(index.meta.model, backend=index.meta.backend)
                told, said = _telling(warn)
                done = index_with(synced, encoder, warn=told)
        except EncodrError as exc:
            warn(f"sync failed: {exc}; watching on")
            return False
        _say_skipped(done, said, warn)
        changed = any(done[k] for k in ("added", "updated", "removed")) or done.get("skipped_files")
        if changed or not catch_up:
            on_sync(sync_line(done))
        return bool(changed)

    count, first = 0, True
    for batch in changes(
        *synced.corpus,
        watch_filter=relevant,
        debounce=WATCH_DEBOUNCE_MS,
        step=WATCH_QUIET_MS,
        stop_event=stop,
        raise_interrupt=True,
        yield_on_timeout=True,
        rust_timeout=WATCH_TICK_MS,
    ):
        if first:  # the watcher is set up: catch up with what changed before
            first = False
            count += sync(catch_up=True)
            if started is not None:
                started()
        if batch:
            count += sync(catch_up=False)
    return count


def delete(request: DeleteRequest, warn: WarnFn = lambda line: None) -> RecordResult:
    """Delete documents from an index (:func:`encodr.index.delete.delete`); ids it lacks are one ``warn`` line.

    Raises:
        EncodrError: see :meth:`DeleteRequest.check` and :func:`encodr.index.delete.delete`.
    """
    from ..index.delete import delete as remove

    result = remove(request.index, request.ids, request.source or [], request.filters(), warn=warn)
    if result["not_found"]:
        warn(f"{len(result['not_found'])} id(s) not in the index (first: {result['not_found'][0]!r}); the others are deleted")
    return RecordResult(
        title=f"encodr delete → {result['path']}",
        record=result,
        keys=["removed", "deleted_texts", "tombstones", "compacted", "documents", "count"],
    )


def upsert(request: UpsertRequest, index: str, warn: WarnFn = lambda line: None, encoder=None) -> RecordResult:
    """Add or replace documents of ``index`` by id (:func:`encodr.index.build.upsert`), encoded
    by ``encoder`` (the index's model, loaded: a server's) or the model loaded for it.

    Raises:
        EncodrError: see :meth:`UpsertRequest.check` and :func:`encodr.index.build.upsert`.
    """
    from ..index.build import upsert as put

    done = put(index, request.records(), warn=warn, encoder=encoder)
    keys = ["added", "updated", "unchanged", "encoded", "documents", "count"]
    return RecordResult(title=f"upsert → {done['path']}", record={k: done.get(k) for k in keys}, keys=keys)


def delete_ids(request: DocumentIdsRequest, index: str) -> RecordResult:
    """Delete documents of ``index`` by id (``DELETE /v1/indexes/{name}/documents``)."""
    return delete(DeleteRequest(ids=request.ids, index=index))


def line_range(spec: str | None, field: str = "lines") -> tuple[int, int] | None:
    """``LINE`` or ``FIRST-LAST`` as (first, last), 1-based; None for None.

    Raises:
        EncodrError: another shape, or a range that ends before it starts, naming ``field``.
    """
    import re

    if spec is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", spec)
    if not m or int(m.group(1)) < 1 or (m.group(2) and int(m.group(2)) < int(m.group(1))):
        raise EncodrError(f"{field} {spec!r} is not LINE or FIRST-LAST (e.g. 12 or 12-40, from 1)", field=field)
    return int(m.group(1)), int(m.group(2) or m.group(1))


def _named_documents(index, target: str, field: str = "id", lines: tuple[int, int] | None = None) -> list[str]:
    """The ids of the documents of ``index`` that ``target`` (an id, a path as hits show it, a
    source) names: one, or the records of a one-record-a-line file (those on ``lines`` when given).

    Raises:
        EncodrError: none (404), naming ``field``.
    """
    found = index.find_documents(target, lines)
    if not found:
        raise EncodrError(
            f"index {index.path.name} has no document '{target}'"
            + (f" on line {'-'.join(dict.fromkeys(map(str, lines)))}" if lines and index.find_documents(target) else "")
            + "; a hit's document id or its path names one",
            field=field,
            status=404,
        )
    return found


def _one_document(index, target: str, field: str = "id") -> str:
    """The id of the one document of ``index`` that ``target`` names (:func:`_named_documents`).

    Raises:
        EncodrError: none (404), or several (naming them), naming ``field``.
    """
    found = _named_documents(index, target, field)
    if len(found) > 1:
        _refuse_several(target, found, field)
    return found[0]


def _refuse_several(target: str, found: list[str], field: str = "id") -> None:
    """Raise: ``target`` names several documents (``found``, the first three named)."""
    raise EncodrError(f"'{target}' names {len(found)} documents ({', '.join(found[:3])}); give one of their ids", field=field)


def document_lines(index, target: str, lines: tuple[int, int] | None) -> dict:
    """Document ``target`` of ``index`` (an :class:`~encodr.index.IndexReader`) as the index holds
    it: its id, path, title and its numbered lines (all, or ``lines``' range, clipped to the
    document) as ``[{"line": n, "text": …}]``, and ``changed``: ``edited`` or ``deleted`` where its
    file is no longer as the index read it (:func:`~encodr.index.documents.changed_documents`),
    else None. A range of a one-record-a-line file gives the records on it, each on its own line.

    Raises:
        EncodrError: see :func:`_one_document`.
    """
    found = _named_documents(index, target, lines=lines) if lines else [_one_document(index, target)]
    parts = [index.document_lines(doc) for doc in found]
    spans = sorted((p["first_line"], p["first_line"] + len(p["lines"]) - 1) for p in parts)
    if len(parts) > 1 and (
        len({p["path"] for p in parts}) > 1 or any(end >= start for (_, end), (start, _) in zip(spans, spans[1:]))
    ):  # several documents whose lines overlap: not one file's records
        _refuse_several(target, found)
    numbered = sorted((p["first_line"] + i, t) for p in parts for i, t in enumerate(p["lines"]))
    low, high = lines or (numbered[0][0] if numbered else 1, numbered[-1][0] if numbered else 0)
    head = {k: v for k, v in parts[0].items() if k not in ("first_line", "lines")}
    if len(parts) > 1:
        head = {**head, "id": target, "title": None}
    changed = _changed(index, found)
    return {**head, "lines": [{"line": n, "text": t} for n, t in numbered if low <= n <= high], "changed": changed}


def _changed(index, docs: list[str]) -> str | None:
    """``edited`` or ``deleted`` where the file of any of ``docs`` is no longer as ``index`` read
    it (:func:`~encodr.index.documents.changed_in`), else None."""
    from ..index.documents import changed_in

    return next(iter(changed_in(index, docs).values()), None)


def show(request: ShowRequest) -> DocumentLines:
    """``encodr show PATH[:LINE[-LAST]]``: a document's lines from the index (:func:`document_lines`).

    Raises:
        EncodrError: an index that cannot be opened; see :func:`document_lines` and :func:`line_range`.
    """
    import re

    from ..index import locate
    from ..index.search import open_index

    target, colon, spec = request.target.rpartition(":")
    if not colon or not re.fullmatch(r"\d+(?:-\d+)?", spec):  # no :LINE part (or a path with a colon of its own)
        target, spec = request.target, None
    lines = line_range(spec, "target")
    if lines and request.context and lines[0] == lines[1]:
        lines = (max(1, lines[0] - request.context), lines[1] + request.context)
    with open_index(locate(request.index)) as index:
        if spec is not None and index.find_documents(
            request.target
        ):  # an id that ends in :N itself (notes.txt:12, a record's id)
            target, lines = request.target, None
        found = document_lines(index, target, lines)
        hints = (
            [
                f"{found['path']} was {found['changed']} since the index read it: these are its lines as the index holds "
                f"them; read it again with: {sync_command(index)}"
            ]
            if found["changed"]
            else []
        )
        return DocumentLines(**found, hints=hints)


def hit_document(index, row: int) -> str:
    """The id of the document whose passage is a hit's ``id`` ``row`` in ``index``.

    Raises:
        EncodrError: no text of the index has that id (404, field ``id``).
    """
    import numpy as np

    from ..index.search import document_of

    found = index.rows(np.array([row], dtype=np.int64), ("ext_id", "source", "line")).get(row)
    if found is None:
        raise EncodrError(f"no hit of index {index.path} has id {row}; pass a hit's document or path", field="id", status=404)
    return document_of(found["ext_id"], found["source"], found["line"])


def document(request: DocumentRequest, searcher) -> RecordResult:
    """Document ``request.id`` of ``searcher``'s index (a served one), whole (:meth:`encodr.index.Index.document`),
    with ``changed`` (``edited``, ``deleted`` or None: its file since the index read it, :func:`_changed`).

    Raises:
        EncodrError: the index holds no such document (404), naming the field ``id``.
    """
    searcher.refresh()
    doc_id = request.id if isinstance(request.id, str) else hit_document(searcher.index, request.id)
    found = searcher.index.document(doc_id) if request.lines is None else None
    if found is None:  # lines asked for, or not an id: a path as hits show it (document_lines refuses what names no document)
        found = document_lines(searcher.index, doc_id, line_range(request.lines))
        keys = ["id", "path", "title", "lines", *(["changed"] if found["changed"] else [])]
        return RecordResult(title=f"document {found['path']}", record=found, keys=keys)
    found = {**found, "changed": _changed(searcher.index, [doc_id])}  # its file edited or deleted since: the agent is told
    return RecordResult(
        title=f"document {doc_id}",
        record=found,
        keys=[
            k
            for k in ("id", "title", "source", "lang", "modified", "changed", "text")
            if k in found and (k != "changed" or found[k])
        ],
    )


def sync_served(request: SyncRequest, index: str, encoder, warn: WarnFn = lambda line: None) -> RecordResult:
    """``encodr index CORPUS --out INDEX --sync`` for a served index, encoded by its loaded ``encoder``.

    Raises:
        EncodrError: see :meth:`SyncRequest.check` and :func:`encodr.index.build`.
    """
    done = index_with(IndexRequest(corpus=request.corpus, out=index, write="sync"), encoder=encoder, warn=warn)
    keys = ["added", "updated", "removed", "unchanged", "encoded", "documents", "count"]
    return RecordResult(title=f"sync → {done['path']}", record={k: done.get(k) for k in keys}, keys=keys)


@contextlib.contextmanager
def _current(spec: str, searcher=None):
    """The current generation of index ``spec``: ``searcher``'s (refreshed: a server's, kept
    warm), or one opened for the block and closed after it."""
    if searcher is not None:
        searcher.refresh()
        yield searcher.index
        return
    from ..index.search import open_index

    with open_index(spec, mmap=False) as index:
        yield index


JUDGMENT_KEYS = ["query", "doc", "grade", "fold", "status", "judgments"]


def judge(request: JudgeRequest, front: str, searcher=None) -> RecordResult:
    """Keep a judgment of ``request.doc`` for ``request.query`` with the index
    (:class:`encodr.index.judgments.Judgments`), replacing an earlier grade of the pair.

    Args:
        request: the query, document, grade and optional passage.
        front: the front end that made it (``cli``, ``tui``, ``http``, ``mcp``).
        searcher: the index's :class:`~encodr.index.Searcher` when a front end holds one.

    Raises:
        EncodrError: see :meth:`JudgeRequest.check`; a document the index lacks (404, field
            ``doc``: ``doc`` is a document's id, or its path as a hit shows it, or its source), or
            a path that names several; judgments that cannot be written (nothing is written).
    """
    from ..index.judgments import Judgment, Judgments

    with _current(request.index, searcher) as index:
        held = index.texts.document_hashes([request.doc])  # an id (a record's too, which has no path of its own)
        doc = request.doc if request.doc in held else _one_document(index, request.doc, "doc")
        held = held if doc in held else index.texts.document_hashes([doc])
        store = Judgments(index.path)
        judgment = Judgment(" ".join(request.query.split()), doc, request.grade, request.passage, front, doc_hash=held.get(doc))
        store.put([judgment])
        count = store.count()
    record = {**judgment.to_dict(), "judgments": count}
    return RecordResult(title=f"judged → {index.path}", record=record, keys=JUDGMENT_KEYS)


def unjudge(request: UnjudgeRequest, index: str, searcher=None) -> RecordResult:
    """Delete the judgment of (``request.query``, ``request.doc``) of an index.

    Raises:
        EncodrError: no such judgment (404, field ``doc``); judgments that cannot be written.
    """
    from ..index.judgments import Judgments

    with _current(index, searcher) as current:
        store = Judgments(current.path)
        if not store.remove(request.query, request.doc):
            raise EncodrError(
                f"index {current.path.name} has no judgment of document '{request.doc}' for that query; GET its "
                "judgments to see them",
                field="doc",
                status=404,
            )
        count = store.count()
    return RecordResult(
        title=f"judgment deleted → {current.path}",
        record={"query": request.query, "doc": request.doc, "judgments": count},
        keys=["query", "doc", "judgments"],
    )


JUDGMENT_COLUMNS = ["query", "doc", "grade", "fold", "status", "front", "made"]


def judgments(request: JudgmentsRequest, searcher=None) -> ListResult | RecordResult:
    """An index's judgments with their folds and statuses (:func:`encodr.index.judgments.with_status`),
    or with ``import_from`` the judgments imported from a BEIR folder or files (all rows or none),
    or with ``export`` the BEIR folder written.

    Raises:
        EncodrError: see :meth:`JudgmentsRequest.check` and :func:`encodr.index.judgments.read_import`;
            an ``export`` target that exists (nothing is replaced).
    """
    from ..index.judgments import Judgment, Judgments, corpus_of, import_files, read_import, with_status, write_beir

    with _current(request.index, searcher) as index:
        store = Judgments(index.path)
        if request.import_from:
            queries, qrels = import_files(request.import_from, request.split)
            rows = read_import(queries, qrels, index.document_ids())
            held = index.texts.document_hashes({d for _, d, _ in rows})
            count = store.put([Judgment(q, d, g, None, "import", doc_hash=held.get(d)) for q, d, g in rows])
            record = {"imported": count, "queries": len({q for q, _, _ in rows}), "from": str(qrels), "judgments": store.count()}
            return RecordResult(title=f"judgments imported → {index.path}", record=record, keys=list(record))
        found = with_status(store.all(), index.texts)
        if request.export:
            from ..outputs import atomic_dir

            with atomic_dir(Path(request.export)) as tmp:
                counts = write_beir(corpus_of(index), found, tmp)
            record = {"out": request.export, **counts}
            return RecordResult(title=f"judgments exported → {request.export}", record=record, keys=list(record))
    rows = [j.to_dict() for j in found]
    return ListResult(title=f"judgments of {index.path}", columns=JUDGMENT_COLUMNS, rows=rows, where=judgment_counts(found))


def judgment_counts(found: list) -> str:
    """One line of counts: by status, and the current judgments by fold."""
    from ..index.judgments import CURRENT, EDITED, FOLDS, ORPHANED

    by = {s: sum(j.status == s for j in found) for s in (CURRENT, EDITED, ORPHANED)}
    folds = ", ".join(f"{f} {sum(j.status == CURRENT and j.fold == f for j in found)}" for f in FOLDS)
    return (
        f"{len(found)} judgment(s): {by[CURRENT]} current ({folds}), {by[EDITED]} edited (made on an earlier text; not used), "
        f"{by[ORPHANED]} orphaned (document gone; not used)"
    )


ESTIMATE_ABOVE = 20_000  # texts: an evaluation encoding more first says how long it will take


def _estimate(suite_tasks, scorers, limit: int | None, warn: WarnFn) -> None:
    """Warn with the expected duration when an evaluation encodes more than
    :data:`ESTIMATE_ABOVE` texts: the count times the rate of a 64-text trial batch here."""
    import time

    texts = sum(t.texts(limit) for t in suite_tasks) * len(scorers)
    encoders = [s for s in scorers if hasattr(s, "encode")]
    if texts <= ESTIMATE_ABOVE or not encoders:
        return
    trial = ["a short name of a disease or a sentence of ordinary length"] * 64
    started = time.perf_counter()
    encoders[0].encode(trial)
    rate = len(trial) / max(time.perf_counter() - started, 1e-6)
    warn(
        f"this evaluation encodes about {texts:,} texts: about {texts / rate / 60:.0f} min at {rate:.0f} texts/s here; "
        f"{S.limit} N scores only the first N items of each dataset"
    )


def evaluate(request: EvalRequest, progress: ProgressFn = silent, warn: WarnFn = lambda line: None) -> EvalResult:
    """Scores of ``request.model`` (and ``compare``) on a suite; with ``plot``, the PNG of
    their score distributions (Mirror-BERT §4, Fig. 7).

    Args:
        request: the suite, data, models and options.
        progress: receives one event per dataset and model as it starts and ends (:func:`encodr.evaluation.run`).

    Raises:
        EncodrError: see :meth:`EvalRequest.check` and :func:`encodr.evaluation.run`.
    """
    from .. import evaluation

    variant = pcr_variant(request.pcr, request.pcr_variant)
    options = {"pcr": variant} if variant else {}
    if request.limit:
        options["limit"] = request.limit
    if request.index:
        return _evaluate_index(request, progress)
    if request.suite == "retrieval":
        options.update(split=request.retrieval_split, searches=request.searches(), rerank=request.rerank, whole=request.whole)
    specs = [(request.model, request.cross, request.backend)] + (
        [(request.compare, request.compare_cross, "torch")] if request.compare else []
    )
    scorers = [
        load_scorer(spec, cross, request.device, backend) for spec, cross, backend in specs
    ]  # both load before either is scored
    data = request.data or None
    _estimate(evaluation.tasks_for(request.suite, data), scorers, request.limit, warn)
    if request.suite == "retrieval":
        options["cache"] = not request.no_cache
    reports = [evaluation.run(request.suite, scorer, data, progress=progress, **options) for scorer in scorers]
    if request.plot is not None:
        from pathlib import Path

        from ..plots import distribution_figure, save_png

        panels = [p for scorer in scorers for p in evaluation.score_distributions(request.suite, scorer, data)]
        save_png(
            distribution_figure(f"encodr eval {request.suite}: scores of high- and low-gold pairs", panels), Path(request.plot)
        )
    dicts = [{**r.to_dict(), "backend": backend} for r, (_, _, backend) in zip(reports, specs)]
    return EvalResult(suite=request.suite, primary=evaluation.tasks.PRIMARY[request.suite], reports=dicts)


def _evaluate_index(request: EvalRequest, progress: ProgressFn) -> EvalResult:
    """``eval retrieval --index``: the retrieval metrics of an index already built, over the
    given queries and qrels (:class:`encodr.evaluation.retrieval.IndexRetrievalEvaluator`);
    the mode defaults as search's does (hybrid where the index has a keyword index)."""
    from ..evaluation import Report
    from ..evaluation.retrieval import IndexRetrievalEvaluator
    from ..evaluation.tasks import PRIMARY
    from ..index.judgments import ALL_FOLDS, FOLDS
    from ..index.options import MODES, SearchOptions

    searches = request.searches()
    own = request.queries is None  # the index's own judgments: every mode unless some were asked for
    if own and "mode" not in request.model_fields_set:
        searches = tuple(
            SearchOptions(mode=m, fusion=o.fusion, rerank_weight=o.rerank_weight, filter=o.filter)
            for m in MODES
            for o in searches
        )
    split = request.split or "test"
    folds = FOLDS if split == ALL_FOLDS else (split,)
    evaluator = IndexRetrievalEvaluator(
        request.index, request.queries, request.qrels, request.limit, searches, request.rerank, folds
    )
    try:
        label = f"eval retrieval · {evaluator.name} · {evaluator.model_name}"
        progress(ProgressEvent(label, 0, 1))
        report = Report(evaluator.model_name, "retrieval", evaluator.evaluate(None))
        progress(ProgressEvent(label, 1, 1))
    finally:
        evaluator.close()
    return EvalResult(
        suite="retrieval",
        primary=PRIMARY["retrieval"],
        reports=[{**report.to_dict(), "backend": evaluator.searcher.index.meta.backend}],
    )


def tuned_models(request: TuneRequest) -> list[str]:
    """The models a tune starts from: ``request.model``; with ``--index`` and no ``--model``, the
    model the index was built with (the judgments were made on its hits).

    Raises:
        EncodrError: the index cannot be found or read.
    """
    if request.index is None or "model" in request.model_fields_set:
        return list(request.model)
    from ..index import locate
    from ..index.manifest import current_meta

    meta = current_meta(locate(request.index))
    return [meta.model] if meta is not None else list(request.model)  # else the recipe's own check names the fault


def prepare_tune(
    request: TuneRequest,
    progress: ProgressFn = silent,
    warn: WarnFn = lambda line: None,
    announce: WarnFn | None = None,
    on_step=None,
):
    """Check a tune request before any work and return what :func:`tune` runs: (recipe, job).

    Raises:
        EncodrError: a bad recipe field, device, precision, an input the recipe's method does
            not take, or a registry that cannot be written (:func:`encodr.methods.check_request`).
    """
    from ..methods import TuneJob, check_request, load_recipe

    recipe = load_recipe(request.recipe, request.overrides())
    job = TuneJob(
        out=request.target(recipe.name),
        data=request.file,
        models=tuned_models(request),
        overwrite=request.overwrite,
        device=request.device,
        dev=request.dev,
        bitext=list(request.bitext),
        limit=request.limit,
        progress=progress,
        warn=warn,
        announce=announce,
        on_step=on_step,
        index=request.index,
        no_dev=request.no_dev,
    )
    check_request(recipe, job)
    return recipe, job


def tune(recipe, job) -> TuneResult | None:
    """Train (see :func:`encodr.methods.tune`) what :func:`prepare_tune` checked.

    Returns:
        The result in the main process; ``None`` in the other processes of a launch (they
        print nothing: the trainer decides which process is the main one).
    """
    from ..methods import tune as run_tune

    summary = run_tune(recipe, job)
    if summary is None:
        return None
    shown = summary.pop("shown")
    return TuneResult(summary=summary, out=str(summary["out"]), run_ids=list(summary["run_ids"]), shown=shown)


INDEX_COLUMNS = (
    "name",
    "model",
    "backend",
    "index_type",
    "count",
    "documents",
    "bytes_per_vector",
    "pcr",
    "languages",
    "sources",
    "updated",
    "error",
)
INDEX_TABLE = (
    "name",
    "model",
    "index_type",
    "count",
    "documents",
    "languages",
    "updated",
    "error",
)  # what the table shows at 80 columns


def indexes(request: IndexesRequest) -> ListResult:
    """The indexes in ``request.path`` (default: the workspace), and where it looked."""
    from pathlib import Path

    from .. import registry
    from ..index import list_indexes
    from ..paths import home

    root = Path(request.path) if request.path else home() / "indexes"
    if request.path and not root.is_dir():
        raise EncodrError(f"{S.path} {root}: no such folder; pass the folder that holds your indexes", field="path")
    rows = list_indexes(root)
    if not request.path:  # the workspace, and every index the registry has seen built elsewhere
        listed = {str(Path(r["path"]).resolve()) for r in rows}
        try:
            seen = registry.seen_indexes()
        except EncodrError:
            seen = []
        for folder in seen:
            if str(folder) not in listed and folder.parent.is_dir():
                rows += [{**r, "name": str(folder)} for r in list_indexes(folder.parent) if Path(r["path"]).resolve() == folder]
    where = (
        f"in {root}"
        + (" and wherever the registry saw one built" if not request.path else "")
        + ("" if rows else " (none: build one with encodr index CORPUS, or look elsewhere with --path DIR)")
    )
    return ListResult(
        title="indexes (search one with --index NAME; --json: every field)", columns=list(INDEX_TABLE), rows=rows, where=where
    )


def models(request: ModelsRequest) -> ListResult:
    """Model aliases and the models in the local Hugging Face cache."""
    from ..models import list_models

    return ListResult(
        title="models", columns=["name", "source", "description", "path"], rows=list_models(), missing="(not installed)"
    )


def recipes(request: RecipesRequest) -> ListResult:
    """The bundled recipes and their main settings."""
    from ..methods import load_recipe
    from ..methods.recipe import available

    columns = ["name", "method", "temperature", "span_mask", "epochs", "batch_size", "lr", "default_data"]  # --json: every field
    return ListResult(title="recipes", columns=columns, rows=[load_recipe(name).to_dict() for name in available()], missing="–")


def runs(request: RunsRequest) -> RunsResult:
    """The newest ``request.limit`` recorded runs."""
    from ..registry import runs as list_runs

    return RunsResult(title="runs", columns=[], rows=list_runs(limit=request.limit))


def run(request: RunRequest) -> RecordResult:
    """One recorded run: its fields, recipe, loss log and dev curve; with ``plot``, a PNG of the curves.

    Raises:
        EncodrError: no such run; ``plot`` asked of a run with neither a loss log nor a dev curve.
    """
    from pathlib import Path

    from ..registry import get_run, run_log

    row = get_run(request.run_id)
    metrics = row.get("metrics") or {}
    log = run_log(row)
    curve = metrics.get("dev_curve") or []
    if request.plot is not None:
        if not log and not curve:
            raise EncodrError(
                f"run {request.run_id} has no loss log (its output {row.get('out')} is gone) and no dev curve; nothing to plot",
                field="plot",
            )
        from ..plots import run_figure, save_png

        title = f"run {request.run_id}: {row.get('recipe_name', '')} on {short_path(str(row.get('model', '')))}"
        save_png(
            run_figure(title, log, curve, f"{metrics.get('dev_metric', 'dev')} ({metrics.get('dev_set', 'dev')})"),
            Path(request.plot),
        )
    fields = [
        ("id", row["id"]),
        *([("unreadable", row["unreadable"])] if row.get("unreadable") else []),
        ("created", row.get("created")),
        ("run", row.get("kind")),
        ("model", row.get("model")),
        ("recipe", row.get("recipe_name")),
        ("data", row.get("data")),
        ("strings", row.get("strings")),
        ("seconds", row.get("duration_s")),
        ("out", row.get("out")),
    ]
    fields += [(k, v) for k, v in metrics.items() if not isinstance(v, (dict, list))]
    if curve:
        fields.append(("dev curve", " → ".join(f"{p['dev']:.2f} (step {p['step']})" for p in curve)))
    if log:
        fields.append(
            (
                "loss",
                f"{log[0]['loss']:.4f} (step {log[0]['step']}) → {log[-1]['loss']:.4f} (step {log[-1]['step']}), "
                f"{len(log)} points",
            )
        )
    if request.plot is not None:
        fields.append(("plot", request.plot))
    shown = {key: value for key, value in fields}
    recipe = row.get("recipe") or {}
    return RecordResult(
        title=f"run {request.run_id}",
        record={**row, "loss_log": log, "plot": request.plot},
        keys=[],
        caption="",
        extra=[{"title": f"run {request.run_id}", "record": shown}] + ([{"title": "recipe", "record": recipe}] if recipe else []),
    )
