"""Writing an index: read → deduplicate → encode → store, atomically (see :mod:`.index`), for a
new index, ``--add`` and ``--sync`` (which documents change: :mod:`.documents`), and the deletes,
removals and compactions that keep deleted text out of every search (:func:`delete`,
:func:`remove_texts`, :func:`compact`)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from ..data.files import DOCUMENT_SUFFIXES, EMPTY, expand, passage_splitter, skipped_lines
from ..data.language import SMALL_CORPUS
from ..data.language_worker import WORKER_BYTES, LanguageWorker
from ..data.records import Record, read_records
from ..errors import EncodrError, S, Said
from ..models.encoder import AUTO_BACKEND, Encoder, choose_backend
from ..outputs import check_target, generation, os_fault, sweep_generations, written_by_encodr
from ..progress import ProgressEvent, ProgressFn, silent
from .dataflow import ActorModel, Splitting, items, ray_windows
from .delete import remove_texts
from .documents import Reconcile, file_state, unchanged_files
from .engines import ray_adding, ray_session
from .faiss_types import write_faiss
from .ingest import (
    IndexSpec,
    Ingest,
    count_lines,
    encoding,
    extended_on_disk,
    new_index,
    read_windows,
    settle_languages,
    text_hash,
)
from .keywords import ANALYZER, KEYWORD_TOKENIZER
from .lock import index_lock
from .meta import FAST, IndexMeta
from .ondisk import ONDISK_FILE
from .options import UPDATES, BuildOptions
from .quantized import RESCORE_FILE
from .reader import META_FILE, PCR_FILE, STORE_FILE, VECTORS_FILE, IndexReader, locate
from .sharded import build_sharded, is_sharded, upsert_sharded
from .shards import Shards, digest, shards_folder
from .stages import fast_plan, fast_spec, full_spec, wants_fast_stage

# The fields of build()'s result that `encodr index` and the TUI's Index pane show.
SUMMARY = (
    "model",
    "pooling",
    "dimension",
    "backend",
    "index_type",
    "quantize",
    "bytes_per_vector",
    "count",
    "documents",
    "added",
    "updated",
    "removed",
    "unchanged",
    "encoded",
    "skipped_duplicates",
    "empty_files",
    "resumed",
    "passages",
    "split_documents",
    "pcr",
    "languages",
    "seconds",
)


def build(
    files: list[str],
    out: str | Path,
    options: BuildOptions = BuildOptions(),
    progress: ProgressFn = silent,
    warn: Callable[[str], None] = lambda line: None,
) -> dict:
    """Build an index of ``files`` with ``model`` in ``out``, append to it (``add``), or bring it
    in step with ``files`` (``sync``).

    Texts stream through in windows of ``window`` texts: read → deduplicate (a text already
    in the index is stored once) → encode, longest first in batches of ``batch_size`` (so a
    batch is mostly real tokens, not padding) → store. Storing runs in a second thread: a
    window's language detection and SQLite rows while it is encoded, its vectors while the next is.

    Memory is bounded whatever the corpus size: two windows at most are alive (one encoding,
    one being stored), about ``2 × window × (4·d + text bytes)`` — 30 MB for MiniLM (d = 384)
    with the default window; the vectors of a new index go to a file on disk until the end.
    What stays in memory at the end is the FAISS index itself: 4·d bytes per vector for
    ``flat`` and ``hnsw`` (plus HNSW's links), the PQ code size for ``ivfpq``
    (:func:`~.faiss_types.pq_codes` bytes) plus its 8-bit re-ranking copy (d bytes), and a training sample
    (:func:`training_sample`).

    The index type follows the size (exact ``flat`` up to :data:`FLAT_MAX` vectors, ``hnsw``
    up to :data:`HNSW_MAX`, ``ivfpq`` above) unless given. With
    ``pcr``, the first principal component of each language's vectors is fitted and
    removed (CMLM §5.2). ``--add`` keeps the index type, model and PCR components.

    Languages: a ``lang`` column wins, then ``lang``. Without either, each text's language is
    detected (:mod:`encodr.data.language`): first among all languages (high-accuracy mode up to
    10,000 lines; a new index whose corpus is one window finds its languages on an evenly spaced
    sample and labels its texts among them, :func:`~encodr.data.language.sampled_languages`), then, once the whole
    corpus is in, again among the languages that make up at least 1 % of it, which undoes
    most of the detector's mistakes on short texts. ``--add`` detects among the languages
    the index already has.

    Args:
        files: corpus files and folders (:func:`encodr.data.files.expand`).
        out: index directory (with ``add`` or ``sync``, also the name of a workspace index).
        options: how (:class:`BuildOptions`).
        progress: receives ``ProgressEvent("indexing", lines done, lines in all)``: first with
            0 once the inputs are checked and the model is loaded, then after each batch, and
            with all of them once every input is read.
        warn: called with one line for what the user should know but is not an error.

    Documents: each stored document keeps its id, file, content hash and metadata
    (:mod:`.documents`); a text held by several documents is stored once and goes with the
    last of them. Removed texts leave a flat or IVF index at once; other types keep their
    vectors as tombstones, left out of searches, until :data:`COMPACT_AT` of the vectors are
    dead and the write compacts the index.

    Files and folders: a folder is read recursively; a file in it that encodr cannot read (another
    kind, a damaged PDF, an empty document) is skipped and listed in ``skipped_files``, while
    the same fault in a file named on the command line is an error.

    Returns:
        The index metadata (``index.json``) plus, in documents, ``added``, ``updated``,
        ``removed``, ``unchanged`` and ``failed`` (files that could not be read, their documents
        kept), and in texts ``encoded`` (new texts encoded) and ``skipped_duplicates``.

    Raises:
        EncodrError: bad input files, an unknown index type, backend or engine, a ``dim`` the
            model cannot give or that differs from the index's on ``--add``, ``processes``
            with an ONNX backend (local engine), ``address`` without Ray or unreachable, a model
            that differs from the index's, an existing output without ``overwrite``/``add``; an
            OS-level failure (full disk, read-only, a locked ``texts.db``), naming the file, with
            the previous index unchanged.

    A build or ``--add`` writes a new generation of the index and makes it current in one
    atomic step (:func:`encodr.outputs.generation`): readers see the old index or the new one,
    and SIGKILL at any moment leaves the previous one usable.

    Two builds of the same index (two ``--add`` runs, say) take turns: each holds an
    exclusive lock on ``.NAME.lock`` beside the index from before it reads the index until
    its output is renamed into place, so the second sees what the first added.
    """
    o = options
    if o.write == "sync" and not Path(locate(out)).exists():  # a sync builds a missing index: that write is a new one
        o = replace(o, write="new")
    update = o.write in UPDATES
    out = locate(out) if update else Path(out)
    sharded = update and is_sharded(out)
    if o.shard is None and (o.shards is not None or sharded):
        if update and not sharded and written_by_encodr(out) == "index":
            raise EncodrError(
                f"{S.shards}: index {out} is one index, not sharded; rebuild it sharded with {S('write', 'overwrite')} "
                f"{S.shards} {o.shards}",
                field="shards",
            )
        if not update and o.engine == "local" and not isinstance(o.model, Encoder) and files:
            check_target(out, o.write == "overwrite", inputs=files, kind="index")  # before the model loads (seconds)
            # what a model is chosen by, when none is named (_chosen_model)
            expanded = expand(list(files), o.glob, o.no_ignore, o.max_file_size)[0]
            loading = IndexSpec(expanded, out, o, warn, [f for f in expanded if f not in files])
            o = replace(o, model=_encoder_for(loading, None, _backend(loading, None))[0])  # loaded once, for every shard
        return build_sharded(files, out, o, progress, warn, build)
    if not files:
        raise EncodrError("no corpus file given; pass one or more text, TSV, CSV or JSONL files")
    if update and o.on_disk:
        raise EncodrError(
            f"{S.on_disk} is chosen when an index is built; {S('write', 'add')} keeps the index's own layout: drop {S.on_disk}",
            field="on_disk",
        )
    if update:
        _check_updatable(out, files, o.write == "sync")
    else:
        check_target(out, o.write == "overwrite", inputs=files, kind="index")
    given = [f for f in files if Path(f).is_file()]
    given_paths = list(files)
    files, skipped = expand(list(files), o.glob, o.no_ignore, o.max_file_size)
    for line in skipped_lines([{"path": s.path, "reason": s.reason} for s in skipped if s.reason != EMPTY]):
        warn(line)  # now, not after minutes of encoding
    firsts = [
        next(iter(read_records(f, None, o.layout)), None) for f in given if Path(f).suffix.lower() not in DOCUMENT_SUFFIXES
    ]  # fail before any work
    if not update and firsts and len(firsts) == len(files) and all(r is None for r in firsts):
        raise EncodrError(f"{', '.join(files)}: no text to index (all lines blank)")
    with index_lock(out):
        if not update:
            check_target(
                out, o.write == "overwrite", inputs=files, kind="index"
            )  # again: another build may have made it while this one waited
        spec = IndexSpec(
            list(files),
            out,
            o,
            warn,
            [f for f in files if f not in given],
            skipped,
            roots=[os.path.abspath(f) for f in given_paths],
        )
        try:
            return _build_locked(spec, progress)
        except (OSError, sqlite3.OperationalError) as exc:  # full disk, read-only, locked: the new generation is gone
            where = getattr(exc, "filename", None) or out
            kept = "the previous index is unchanged" if out.exists() else "no index was written"
            finished, size = Shards.finished(shards_folder(out))  # only whole shards: a partial one is deleted there
            if finished:
                kept += (
                    f"; {finished} encoded piece(s) of it, {size / 2**20:.1f} MB, are kept in {shards_folder(out)}, and "
                    "the same command reuses them"
                )
            raise os_fault(exc, where, kept=kept) from None


def _check_updatable(out: Path, inputs: list[str], sync: bool) -> None:
    """Refuse ``--add`` / ``--sync`` into a folder that is not an encodr index, or that holds
    one of the inputs (its generations would sit among the documents).

    Raises:
        EncodrError: naming the folder and what to do instead.
    """
    from ..outputs import check_inputs_outside, written_by_encodr

    flag = S("write", "sync") if sync else S("write", "add")
    if not out.exists():
        raise EncodrError(
            f"index {out} does not exist (nor in the workspace, see encodr indexes); build it first with encodr index "
            f"CORPUS --out {out}"
        )
    check_inputs_outside(out, inputs, "index")
    if written_by_encodr(out) != "index":
        raise EncodrError(
            f"{flag}: {out} is not an encodr index (no index.json in it); build one with encodr index CORPUS --out NEW_FOLDER"
        )


def _build_locked(spec: IndexSpec, progress: ProgressFn) -> dict:
    """:func:`build` once the inputs are checked and the index is locked: in two stages where
    :func:`~.stages.wants_fast_stage` (:mod:`.stages`). A sync of an index left at its fast stage
    builds its second stage from the corpus; ``add`` keeps its stage (and its static model)."""
    old = IndexReader.open(spec.out) if spec.update else None
    if old is not None and old.meta.stage == FAST and spec.options.write == "sync":  # its second stage, of the whole corpus
        model = spec.options.model or old.meta.full_model
        old.close()
        old, spec = None, replace(spec, options=replace(spec.options, model=model, write="overwrite"))
    try:
        with (
            ray_session(spec.options.address) if spec.options.engine == "ray" else contextlib.nullcontext()
        ):  # one Ray for reading, encoding and adding
            first = None
            if old is None and wants_fast_stage(spec):
                plan = fast_plan(spec, spec.options.model or _chosen_model(spec), lambda name: _load_auto(spec, name, "torch"))
                if plan is not None:
                    first = _build_generation(fast_spec(spec, plan), None, progress)
                    spec.warn(Said(f"searchable after {first['seconds']:.1f} s (fast stage); encoding with {plan.full_model}"))
                    spec = full_spec(spec, plan)
            built = _build_generation(spec, old, progress)
            if first is not None:
                built["fast_stage_seconds"] = first["seconds"]
            return built
    finally:
        if old is not None:
            old.close()  # release the old generation before the sweep (if not already)


def _backend(spec: IndexSpec, old: IndexReader | None) -> str:
    """The backend this build encodes with: ``spec.options.backend``, or for ``auto`` the index's own with
    ``--add`` (its vectors and its queries stay on one backend), else :func:`choose_backend` for
    the device this process encodes on — ``torch`` for several processes (sentence-transformers'
    pool runs its own float32 pass), for Ray (the actors' machines are not this one) and for
    a ready-made :class:`Encoder` (its own)."""
    if spec.options.backend != AUTO_BACKEND:
        return spec.options.backend
    if spec.options.model is not None and not isinstance(
        spec.options.model, str
    ):  # a loaded encoder (or the server's batched one)
        return spec.options.model.backend
    if old is not None:
        return old.meta.backend
    if spec.options.processes > 1 or spec.options.engine != "local":
        return "torch"
    from ..models import pick_device

    return choose_backend(AUTO_BACKEND, pick_device())


@dataclass
class _Plan:
    """What one write reads and how it encodes: the files left to read and their line counts, the
    encoder, its backend, the texts' language, the prompts, the passage splitter and its room,
    the encoded windows kept for a rerun, and with a sync of an existing index, its roots and
    the files unchanged since it was written."""

    files: list[str]
    counts: list[int]
    encoder: Encoder
    backend: str
    lang: str | None
    prompts: dict
    room: int
    split: Callable | None
    shards: Shards
    roots: list[str] | None
    unread: set

    @property
    def total(self) -> int:
        return sum(self.counts)


def _encoder_for(spec: IndexSpec, old: IndexReader | None, backend: str) -> tuple[Encoder, str | None]:
    """The encoder a write encodes with (the index's own model with ``--add``, checked against
    ``spec.options.model`` and ``dim``), and the language of texts that name none.

    Raises:
        EncodrError: a model or ``--dim`` that differs from the index's.
    """
    from ..models import open_encoder

    model, out, lang = spec.options.model, spec.out, spec.options.lang
    if old is None:
        encoder = model if isinstance(model, Encoder) else _load_auto(spec, model or _chosen_model(spec), backend)
        if spec.options.dim is not None:  # else the model's own (a model saved truncated stays so)
            encoder.truncate(spec.options.dim)
        if encoder.truncate_dim is not None:
            _check_matryoshka(encoder, spec.warn)
        return encoder, lang
    encoder = (
        model if model is not None and not isinstance(model, str) else open_encoder(model or old.meta.model, backend=backend)
    )
    if encoder.fingerprint != old.meta.fingerprint:
        raise EncodrError(
            f"model '{model}' differs from the model index {out} was built with ({old.meta.model}); drop {S.model} or "
            "build a new index"
        )
    kept = old.meta.truncate_dim
    if spec.options.dim is not None and spec.options.dim != (kept or old.meta.dimension):
        raise EncodrError(
            f"{S.dim} {spec.options.dim} differs from index {out}'s {old.meta.dimension} dimensions; drop {S.dim} "
            f"({S('write', 'add')} keeps the index's)"
        )
    encoder.truncate(kept)
    return encoder, lang or old.meta.default_lang


SHOWN_SHARE = 0.1  # a language named in the line that says why a new index's model was chosen


def _chosen_model(spec: IndexSpec) -> str:
    """The model of a new index built without one (:func:`~encodr.models.aliases.default_model_for`):
    by ``lang`` when given, else by the languages of a sample of the corpus
    (:func:`~.ingest.prose_sample`, :func:`~encodr.data.language.language_shares`). Where the
    multilingual model is chosen, one line says so and why; where its package is missing, one
    line names it and the English model is used."""
    from ..data.language import language_shares
    from ..models import resolve
    from ..models.aliases import DEFAULT_MODEL, default_model_for
    from .ingest import prose_sample

    lang = spec.options.lang
    shares = {lang: 1.0} if lang else language_shares(prose_sample(spec))
    chosen = default_model_for(shares)
    if chosen == DEFAULT_MODEL:
        return chosen
    found = ", ".join(f"{code} {share:.0%}" for code, share in list(shares.items())[:2] if share >= SHOWN_SHARE)
    try:
        resolve(chosen)
    except EncodrError as exc:
        spec.warn(Said(f"the text is {found}, {DEFAULT_MODEL} reads English only: {exc}"))
        return DEFAULT_MODEL
    spec.warn(Said(f"model {chosen}: text {found}; {S.model} {DEFAULT_MODEL} for English"))  # 80 columns with two languages
    return chosen


def _load_auto(spec: IndexSpec, model: str | None, backend: str) -> Encoder:
    """``load_encoder(model, backend=backend)`` (a static model run by torch or chosen by ``auto``:
    its table, :func:`~encodr.models.loading.table_encoder`); where ``auto`` chose ``onnx`` or ``openvino`` and
    it is refused (its vectors differ from torch's, :func:`~encodr.models.onnx.onnx_encoder`),
    ``torch`` (``torch-bf16`` in place of ``openvino``, auto's choice on such a CPU without it)
    instead, with one warning line; for a static model, which no ONNX backend runs, ``torch``
    quietly (the model the refusal loaded, not loaded again)."""
    from ..models import load_encoder
    from ..models.loading import table_encoder
    from ..models.onnx import NotExportable

    if (backend in ("torch", "torch-bf16") or spec.options.backend == AUTO_BACKEND) and (table := table_encoder(model)):
        return table  # a static model: its table, no torch (no ONNX backend runs one)
    try:
        return load_encoder(model, backend=backend)
    except EncodrError as exc:
        if spec.options.backend != AUTO_BACKEND or backend not in ("onnx", "openvino"):
            raise
        if isinstance(exc, NotExportable):  # a static model: torch is auto's choice for it, nothing to say
            if exc.encoder is not None:
                return exc.encoder
            return load_encoder(model, backend="torch")
        instead = "torch-bf16" if backend == "openvino" else "torch"
        spec.warn(Said(f"{S.backend} auto: {exc}; encoding with {instead}"))
        return load_encoder(model, backend=instead)


def _plan(spec: IndexSpec, old: IndexReader | None) -> _Plan:
    """What :func:`_build_generation` reads and how it encodes (see :class:`_Plan`)."""
    backend = _backend(spec, old)
    encoder, lang = _encoder_for(spec, old, backend)
    backend = getattr(encoder, "backend", backend)  # auto's onnx may have fallen back to torch (_load_auto)
    roots = (
        spec.roots if old is not None and spec.options.write == "sync" else None
    )  # a sync of an existing index: what it must hold exactly
    unread = unchanged_files(old.texts, spec.files) if roots is not None else set()
    files = [f for f in spec.files if os.path.abspath(f) not in unread]
    # documents are encoded with the model's document prompt (E5: "passage: "); --add keeps the index's own
    prompts = old.meta.prompts if old is not None else {role: encoder.prompt(role) for role in ("query", "document")}
    room = encoder.max_length - 2 - len(encoder.tokenizer.tokenize(prompts["document"]))  # the prompt's tokens share the window
    split = None if spec.options.whole else passage_splitter(encoder.tokenizer, room, quick=spec.full_model is not None)
    key = {
        "fingerprint": encoder.fingerprint,
        "backend": backend,
        "truncate_dim": encoder.truncate_dim,
        "prompt": prompts["document"],
    }
    if spec.options.engine == "ray":  # a shard is an item's records too: what reading and splitting depend on
        key.update(
            engine="ray",
            window=spec.options.window,
            passages=None if split is None else room,
            lang=lang,
            layout=dataclasses.asdict(spec.options.layout),
        )
    return _Plan(
        files,
        [count_lines(f) for f in files],
        encoder,
        backend,
        lang,
        prompts,
        room,
        split,
        Shards(shards_folder(spec.out), key),
        roots,
        set(unread),
    )


def _read_on_ray(
    spec: IndexSpec, plan: _Plan, ingest: "Ingest", reconcile: Reconcile, step: Callable[[int], None], old: IndexReader | None
) -> None:
    """Read, split and encode ``plan.files`` on Ray Data (:func:`~.dataflow.ray_windows`); deduplicate and store here."""
    o, encoder = spec.options, plan.encoder
    model_spec = o.model if isinstance(o.model, str) else old.meta.model if old is not None else encoder.name
    work = items(plan.files, plan.counts, o.window, spec.found, o.layout)
    tokenizer = None if plan.split is None else encoder.tokenizer.backend_tokenizer.to_str()
    actor = ActorModel(
        model_spec, encoder.fingerprint, plan.backend, o.processes, encoder.truncate_dim, plan.prompts["document"], o.batch_size
    )
    for item, records, vectors, skipped in ray_windows(
        work, plan.shards, actor, Splitting(tokenizer, plan.room, plan.lang, o.layout), step
    ):
        spec.skipped.extend(skipped)
        row = {id(r): i for i, r in enumerate(records)}
        records = list(reconcile.documents(records, file_state(records[0].source))) if records else records
        fresh = ingest.fresh(records)
        if fresh:
            ingest.store(fresh, vectors[[row[id(r)] for r, _ in fresh]], whole_corpus=len(work) == 1 and len(records) < o.window)


def dense_text(record: Record) -> str:
    """What the dense side encodes for ``record``: its text, as stored and shown. (Its heading
    path is left to the keyword side: ``bench/sections.py`` measures prefixing it to the encoded
    text too, on documentation with headings.)"""
    return record.text


class RecordTotal:
    """A progress bar's total while files are read, in records (the unit its steps count: texts
    encoded, duplicates passed over): a file's records once it is read, and until then its lines
    (:func:`~.ingest.count_lines`) times the records a line gave in the files read so far. Exact
    once every file is read. Lines alone are a poor total: a PDF's bytes and a Markdown file's
    short lines count many times the records they give, so such a bar would jump from a few per
    cent to full at the end.

    Args:
        files, counts: the files to read and their lines, in the same order.
    """

    def __init__(self, files: list[str], counts: list[int]):
        self.lines = dict(zip(files, counts))
        self.unread_lines = sum(counts)
        self.read_lines = self.records = 0

    def read(self, path: str, records: int) -> None:
        """``path`` is read and gave ``records`` records (each file once)."""
        lines = self.lines.pop(path, 0)
        self.unread_lines -= lines
        self.read_lines += lines
        self.records += records

    @property
    def value(self) -> int:
        """The records the files read gave, and the estimate for the rest."""
        per_line = self.records / self.read_lines if self.read_lines else 1.0
        return self.records + round(self.unread_lines * per_line)


def _read_here(
    spec: IndexSpec, plan: _Plan, ingest: "Ingest", reconcile: Reconcile, step: Callable[[int], None], total: RecordTotal
) -> None:
    """Read ``plan.files`` in windows, encode each window's new texts in this process (or its pool) and store them;
    a window encoded before a crash is taken from ``plan.shards``; ``total`` hears of each file read."""
    with encoding(plan.encoder, spec, plan.prompts["document"]) as encode:
        for n, records in enumerate(read_windows(plan.files, spec, plan.lang, plan.split, reconcile, total.read)):
            fresh = ingest.fresh(records)
            step(len(records) - len(fresh))  # duplicates count as done
            if not fresh:
                continue
            # a first window not full is the only one; its texts are labelled and written while they encode
            ingest.admit(fresh, whole_corpus=n == 0 and len(records) < spec.options.window)
            ingest.store(fresh, _encoded(plan, encode, fresh, n, spec.options.batch_size, step))


SHARD_TEXTS = 1024  # texts a kept shard of a window holds: an interrupted build loses at most this much encoding


def _encoded(plan: _Plan, encode, fresh: list, n: int, batch_size: int | None, step: Callable[[int], None]) -> np.ndarray:
    """float32 (len(fresh), d): window ``n``'s new texts encoded in pieces of
    :data:`SHARD_TEXTS`, shortest first (the pieces keep the window's length-sorted batches),
    each kept in ``plan.shards`` as it is done and taken from there on a rerun (a build
    stopped in its first window, a folder of a few thousand passages, kept nothing before)."""
    texts = [dense_text(r) for r, _ in fresh]
    order = np.argsort(np.fromiter(map(len, texts), np.int64, len(texts)), kind="stable")
    out: np.ndarray | None = None
    for c, start in enumerate(range(0, len(texts), SHARD_TEXTS)):
        part = order[start : start + SHARD_TEXTS]
        key, number = digest([fresh[i][1] for i in part]), n * 1000 + c
        vectors = plan.shards.get(number, key)  # a rerun after a crash: this piece was encoded then
        if vectors is None:
            vectors = encode([texts[i] for i in part], batch_size, step)
            plan.shards.put(number, key, vectors)
        else:
            step(len(part))
        if out is None:
            out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        out[part] = vectors
    return out


class _Unchanged(Exception):
    """An update that changed nothing: its new generation is dropped, the current one stays."""


def _language_worker(spec: IndexSpec, old: IndexReader | None) -> LanguageWorker:
    """Where a write's language detection runs: a worker process for a new index whose
    languages are detected (no ``--lang``) and whose inputs hold :data:`WORKER_BYTES` or more,
    started now so that it reads the detector's models while the encoder loads; else this process
    (``--add`` and sync detect among the index's few languages, whose models a long-lived process keeps)."""
    if old is not None or spec.options.lang is not None:
        return LanguageWorker(start=False)
    sizes = itertools.accumulate(_file_size(f) for f in spec.files)  # stops at the threshold: a folder of many files
    return LanguageWorker(preload=None, start=any(size >= WORKER_BYTES for size in sizes))


def _file_size(path: str) -> int:
    """Bytes of ``path``; 0 where it is gone (reading it will say so)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _build_generation(spec: IndexSpec, old: IndexReader | None, progress: ProgressFn) -> dict:
    """Write the new generation of ``spec.out`` (from ``old``'s, with ``--add``) and make it current."""
    with _language_worker(spec, old) as detector:
        return _write_generation(spec, old, progress, detector)


def _write_generation(spec: IndexSpec, old: IndexReader | None, progress: ProgressFn, detector: LanguageWorker) -> dict:
    """:func:`_build_generation` with its language ``detector``."""
    plan = _plan(spec, old)
    total, out = RecordTotal(plan.files, plan.counts), spec.out
    progress(ProgressEvent("indexing", 0, total.value))  # inputs checked and model loaded: the work starts
    started = time.time()
    candidates = old.meta.detected_languages or None if old is not None else None
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        progress(ProgressEvent("indexing", min(done, total.value), total.value))

    try:
        with generation(out) as tmp:
            if old is not None:
                old.copy_store(tmp / STORE_FILE)
                for name in (META_FILE, PCR_FILE):
                    if (old.folder / name).exists():
                        shutil.copy2(old.folder / name, tmp / name)
            with Ingest(
                tmp,
                plan.encoder,
                plan.lang,
                old,
                candidates,
                accurate=None if spec.full_model else plan.total <= SMALL_CORPUS,  # the fast stage: low accuracy
                roots=spec.roots,
                detector=detector,
            ) as ingest:
                reconcile = Reconcile(ingest.texts, plan.roots, text_hash, new=old is None, unread=set(plan.unread))
                if spec.options.engine == "ray":
                    _read_on_ray(spec, plan, ingest, reconcile, step, old)
                else:
                    _read_here(spec, plan, ingest, reconcile, step, total)
            # every input is read: the bar ends full (on Ray a file's lines, its total's unit there, are not its records)
            end = max(total.value, done)
            progress(ProgressEvent("indexing", end, end))
            meta, keyword_seconds = _settle(tmp, spec, plan, ingest, reconcile, old)
            changed = ingest.added or any(getattr(reconcile.counts, name) for name in ("added", "updated", "removed"))
            if old is not None and not changed:  # nothing to write: the current generation stays (a shard a sync did not touch)
                meta = old.meta.copy()
                raise _Unchanged
            if old is not None:
                old.close()  # this build holds the old generation no more: the swap may remove it
    except _Unchanged:  # the old generation stays current; meta is its own
        keyword_seconds = 0.0
        sweep_generations(out)  # what a write would have swept: a killed write's folder, generations no reader holds now
    plan.shards.remove()  # the new generation is current: nothing left to resume
    files_skipped = [{"path": s.path, "reason": s.reason} for s in spec.skipped if s.reason != EMPTY]
    return {
        **meta.to_dict(),
        **reconcile.counts.as_dict(),
        "encoded": ingest.added,
        "skipped_duplicates": ingest.skipped,
        "resumed": plan.shards.reused,
        "skipped_files": files_skipped,
        "empty_files": sum(s.reason == EMPTY for s in spec.skipped),
        "seconds": round(time.time() - started, 2),
        "keyword_seconds": keyword_seconds,
        "path": str(out.resolve()),
    }


def _settle(
    tmp: Path, spec: IndexSpec, plan: _Plan, ingest: "Ingest", reconcile: Reconcile, old: IndexReader | None
) -> tuple[IndexMeta, float]:
    """Once every input is stored: remove replaced texts, build or extend the FAISS index, the
    keyword index and ``index.json`` in ``tmp``; the record written and the keyword index's seconds."""
    deleted = ingest.texts.settle_members(reconcile.replaced, reconcile.finish())
    detected = ingest.detected and old is None and settle_languages(ingest.texts, ingest.detector)
    on_disk = spec.options.on_disk if old is None else bool(old.meta.on_disk)
    with (
        ray_adding(spec.options.address) if on_disk and spec.options.engine == "ray" else contextlib.nullcontext() as add_blocks
    ):  # blocks added in Ray tasks
        if old is None:
            index, meta = new_index(tmp, ingest, spec.options, plan.lang, detected, add_blocks)
            meta.backend = plan.backend
        elif on_disk:
            index, meta = extended_on_disk(tmp, ingest, old, add_blocks), old.meta.copy()
        else:  # --add in memory: the writer thread added the vectors as they came
            index, meta = old.faiss, old.meta.copy()
    ingest.raw_path.unlink()
    index = remove_texts(index, deleted, ingest.texts, meta)
    meta.count = int(index.ntotal)
    meta.documents = ingest.texts.document_count()
    meta.deleted = len(ingest.texts.tombstones())
    meta.sources = sorted(set(meta.sources) | set(spec.roots or []))  # what it was built, added to and synced from
    meta.passages, meta.split_documents = ingest.texts.passage_counts()
    meta.code = bool(meta.code) or ingest.code
    meta.languages = ingest.texts.languages()
    meta.updated = time.strftime("%Y-%m-%d %H:%M:%S")
    keywords_started = time.time()
    ingest.texts.build_keywords(written=old is None and not len(deleted))  # a new index's entries were written as it read
    meta.keywords = {"engine": "sqlite-fts5 bm25", "analyzer": ANALYZER, "tokenizer": KEYWORD_TOKENIZER}
    meta.prompts = plan.prompts
    if spec.full_model or old is None:  # a new generation's stage; an add to one keeps its own (old.meta's)
        meta.stage, meta.full_model = (FAST, spec.full_model) if spec.full_model else (None, None)
    keyword_seconds = round(time.time() - keywords_started, 2)
    ingest.texts.close()
    write_faiss(index, tmp / VECTORS_FILE)
    stored = (tmp / VECTORS_FILE).stat().st_size + ((tmp / ONDISK_FILE).stat().st_size if (tmp / ONDISK_FILE).exists() else 0)
    meta.bytes_per_vector = round(stored / max(1, index.ntotal), 1)
    if (tmp / RESCORE_FILE).exists():  # --quantize binary: the int8 vectors, on disk and memory-mapped
        meta.rescore_bytes_per_vector = round((tmp / RESCORE_FILE).stat().st_size / max(1, index.ntotal), 1)
    meta.write(tmp)
    return meta, keyword_seconds


def _check_matryoshka(encoder: Encoder, warn: Callable[[str], None]) -> None:
    """One ``warn`` line when ``encoder`` was not trained to be truncated to its ``truncate_dim``
    (:attr:`~encodr.models.resolution.ModelRef.matryoshka_dims`)."""
    from ..models import resolve

    try:
        dims = resolve(encoder.name).matryoshka_dims
    except EncodrError:
        return
    dim = encoder.truncate_dim
    if dims is None:
        warn(
            f"{encoder.name} was not trained with a Matryoshka loss: its first {dim} dimensions lose more quality than "
            "a model tuned "
            f"with matryoshka_dims; drop {S.dim} to keep them all"
        )
    elif dims and dim not in dims:
        warn(
            f"{encoder.name} was trained to be truncated to {', '.join(map(str, dims))} dimensions, not {dim}; pass "
            f"one of those to {S.dim}"
        )


def upsert(
    out: str | Path, records: list[Record], warn: Callable[[str], None] = lambda line: None, encoder: Encoder | None = None
) -> dict:
    """Add or replace documents given as records (``POST /v1/indexes/{name}/documents``), each
    record a whole document (``ext_id`` its id, ``source`` :data:`~.documents.API_SOURCE`):
    new ids are added, changed ones replaced (their old passages removed), identical ones left
    as they are. One new generation, as :func:`build` with ``add`` writes it.

    Returns:
        As :func:`build`: the counts (``added``, ``updated``, ``unchanged``, ``encoded``…).

    Raises:
        EncodrError: no such index, an OS fault (the index unchanged).
    """
    out = locate(out)
    if is_sharded(out):
        return upsert_sharded(out, records, warn, encoder, upsert)
    if written_by_encodr(out) != "index":
        raise EncodrError(f"index {out} does not exist; build it with encodr index CORPUS --out {out}", field="index", status=404)
    with index_lock(out):
        spec = IndexSpec([], out, BuildOptions(model=encoder, write="add"), warn, records=list(records))
        try:
            return _build_locked(spec, silent)
        except (OSError, sqlite3.OperationalError) as exc:
            raise os_fault(exc, getattr(exc, "filename", None) or out, kept="the previous index is unchanged") from None
