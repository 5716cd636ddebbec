"""Reading a corpus into a new generation of an index: windows of records read and deduplicated,
encoded (here, on a process pool, or by Ray Data: :mod:`.dataflow`), and stored by a second thread:
a window's languages detected and its texts written to SQLite while it encodes, its vectors written
to disk while the next window encodes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from ..data.code import CODE_LANG, code_language
from ..data.files import Skipped, iter_passages, iter_records
from ..data.language import (
    DETECTOR,
    UNDETERMINED,
    prose_confidence,
    settled_languages,
)
from ..data.language_worker import LanguageWorker
from ..data.records import Record
from ..errors import EncodrError, S
from ..models.pcr import POOLED, fit_and_remove, remove_per_language
from .documents import Reconcile, within
from .faiss_types import add_vectors, auto_index_type, new_faiss, training_sample, write_faiss
from .meta import IndexMeta, new_meta
from .ondisk import add_on_disk, extend_trained
from .options import UPDATES, BuildOptions
from .quantized import BinaryRescored
from .reader import PCR_FILE, RAW_VECTORS_FILE, STORE_FILE, VECTORS_FILE, IndexReader
from .texts import TextStore


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def count_lines(path: str) -> int:
    """Lines in a file (the progress total), without decoding it."""
    with open(path, "rb") as f:
        return sum(1 for _ in f)


@dataclass(frozen=True)
class IndexSpec:
    """One build, ``--add`` or sync, checked: the files read, the index, the :class:`BuildOptions`,
    and what reading found."""

    files: list[str]
    out: Path
    options: BuildOptions
    warn: Callable[[str], None] = lambda line: None
    found: list[str] = field(default_factory=list)  # files found in folders: their faults are skipped, not raised
    skipped: list[Skipped] = field(default_factory=list)  # files left out, and why (filled while reading)
    roots: list[str] | None = None  # the absolute paths given (with sync: whose documents the index must hold exactly)
    records: list[Record] | None = None  # documents given as records (an HTTP upsert), read after the files
    full_model: str | None = None  # set: this generation is the fast stage (meta.stage) of a build with this model

    @property
    def update(self) -> bool:
        """Whether the write goes into the existing index at ``out`` (``add``, or a ``sync`` of one
        that exists: :func:`~.build.build` makes a sync of a missing index a ``new`` write)."""
        return self.options.write in UPDATES


def owned(spec: IndexSpec, records: Iterable[Record]) -> Iterable[Record]:
    """``records`` whose document routes to the shard ``spec`` writes (``spec.options.shard``,
    :func:`.sharded.route`), or all of them for an index that is not a shard."""
    if spec.options.shard is None:
        return records
    from .manifest import route

    shard, shards = spec.options.shard
    return (r for r in records if route(r.document_id, shards) == shard)


SAMPLE_FILES = 8  # files read for the corpus's languages before a new index's model is chosen (prose_sample)
SAMPLE_CHARS = 4_000  # characters read of each
SAMPLE_PIECE = 300  # characters in a piece whose language is detected


def prose_sample(spec: IndexSpec) -> list[str]:
    """Pieces of about :data:`SAMPLE_PIECE` characters of the corpus's text, for its languages
    before a model is chosen (:func:`~.build.build`): the first :data:`SAMPLE_CHARS` characters
    of up to :data:`SAMPLE_FILES` files evenly spaced among ``spec.files`` that are not source
    code, then of ``spec.records``. A file that cannot be read is left out here (reading
    reports it later)."""
    from ..data.code import code_language

    files = [f for f in spec.files if code_language(f) is None]
    if len(files) > SAMPLE_FILES:
        files = [files[round(i * (len(files) - 1) / (SAMPLE_FILES - 1))] for i in range(SAMPLE_FILES)]
    found, texts = set(spec.found), []
    for path in files:
        try:
            records = iter_records(path, None, None, [], spec.options.layout, path in found)
            texts.append(_first_chars((r.text for r in records), SAMPLE_CHARS))
        except (EncodrError, OSError, UnicodeError):
            continue
    if spec.records:
        texts.append(_first_chars((r.text for r in spec.records), SAMPLE_CHARS))
    return [piece for text in texts for piece in _pieces(text, SAMPLE_PIECE)]


def _first_chars(texts: Iterable[str], n: int) -> str:
    """The first ``n`` characters of ``texts`` joined by newlines, reading no more of them."""
    out, got = [], 0
    for text in texts:
        out.append(text[: n - got])
        got += len(out[-1])
        if got >= n:
            break
    return "\n".join(out)


def _pieces(text: str, size: int) -> list[str]:
    """``text``'s words in runs of about ``size`` characters (a run ends at the first word past it)."""
    pieces, words, got = [], [], 0
    for word in text.split():
        words.append(word)
        got += len(word) + 1
        if got >= size:
            pieces.append(" ".join(words))
            words, got = [], 0
    if words:
        pieces.append(" ".join(words))
    return pieces


def read_windows(
    files: list[str],
    spec: IndexSpec,
    lang: str | None,
    split=None,
    reconcile: Reconcile | None = None,
    on_file: Callable[[str, int], None] | None = None,
) -> Iterator[list[Record]]:
    """The records of ``files`` (passages, with ``split``), then ``spec.records``, in lists of
    ``spec.options.window``; a document file among ``spec.found`` that cannot be read is added to
    ``spec.skipped`` instead of raising.
    With ``reconcile`` (:class:`~.documents.Reconcile`), only new and changed documents'
    records pass, and a record file among ``found`` that vanishes or fails while it is read is
    skipped too (its stored documents are kept, or removed when the file is gone). ``on_file(path,
    n)`` hears of each file once it is read, with the records it gave (a progress total's estimate:
    :class:`~.build.RecordTotal`)."""
    from .documents import file_state

    size, found, skipped, layout, given = spec.options.window, spec.found, spec.skipped, spec.options.layout, spec.records
    window: list[Record] = []
    for f in files:
        state = file_state(f)  # before reading: a file changed while it is read differs from it next time
        before = len(skipped) if skipped is not None else 0
        records = owned(spec, iter_records(f, lang, split, skipped if f in found else None, layout, in_folder=f in found))
        if reconcile is not None:
            records = reconcile.documents(records, state)
        read = 0
        try:
            for record in records:
                window.append(record)
                read += 1
                if len(window) >= size:
                    yield window
                    window = []
        except EncodrError as exc:
            if f not in found or skipped is None:
                raise
            skipped.append(Skipped(f, str(exc).removeprefix(f"{f}: ").removeprefix(f"{f}, ")))
        if on_file is not None:
            on_file(f, read)
        if reconcile is None:
            continue
        if skipped is not None and len(skipped) > before:  # unreadable now: its documents stay as they were, unless it is gone
            if os.path.exists(f):
                reconcile.keep_unreadable(f)
        elif file_state(f) != state:
            skipped.append(Skipped(f, "changed while it was read; the next sync reads it again"))
            reconcile.forget(f)
    for doc in given or []:  # documents given whole (an upsert): each its own group, split like a file's
        records = owned(spec, iter_passages(doc, split))
        for record in reconcile.documents(records, (None, None)) if reconcile is not None else records:
            window.append(record)
            if len(window) >= size:
                yield window
                window = []
    if window:
        yield window


@contextlib.contextmanager
def encoding(encoder, spec: IndexSpec, prompt: str = ""):
    """``encode(texts, batch_size, on_batch) -> float32 (N, d)`` for a local build: the encoder
    itself, or with ``processes`` > 1 sentence-transformers' multi-process pool (one process
    per GPU when CUDA is visible, else CPU processes that split the cores between them),
    stopped on exit; each text after ``prompt``. (``--engine ray``: :mod:`.dataflow`.)"""
    processes = spec.options.processes
    if processes == 1:
        yield lambda texts, batch_size, on_batch: encoder.encode(texts, batch_size, on_batch=on_batch, prompt=prompt)
        return
    import torch

    gpus = torch.cuda.device_count()
    devices = [f"cuda:{i % gpus}" for i in range(processes)] if gpus else ["cpu"] * processes
    if gpus:
        pool = encoder.st.start_multi_process_pool(devices)
    else:  # the workers read it when they import torch: no more threads than cores in all
        saved = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // processes))
        try:
            pool = encoder.st.start_multi_process_pool(devices)
        finally:
            if saved is None:
                del os.environ["OMP_NUM_THREADS"]
            else:
                os.environ["OMP_NUM_THREADS"] = saved

    def encode(texts, batch_size, on_batch):
        chunk = max(1, min(1000, -(-len(texts) // (4 * processes))))
        vectors = encoder.st.encode(
            texts,
            pool=pool,
            batch_size=batch_size or encoder.batch_size,
            chunk_size=chunk,
            prompt=prompt,
            truncate_dim=encoder.truncate_dim,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        on_batch(len(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    try:
        yield encode
    finally:
        encoder.st.stop_multi_process_pool(pool)


class Ingest:
    """Texts into the store, vectors into the FAISS index (``--add``) or a raw float32 file
    (a new index, whose type and PCR are fitted on all vectors at the end).

    :meth:`fresh` runs in the caller's thread; :meth:`admit` hands a window's texts to a writer
    thread (language detection, SQLite rows) before they are encoded, so they are labelled while
    the encoder works; :meth:`store` hands it their vectors (PCR on ``--add``, FAISS or the raw
    file) and returns once the previous window is stored. A failure in the writer comes out of
    the next :meth:`store` or the ``with`` block's end. ``accurate``: texts labelled in
    high-accuracy mode (a small corpus); None: low accuracy throughout (an index's fast stage,
    :func:`~encodr.data.language.labelled`)."""

    def __init__(
        self,
        tmp: Path,
        encoder,
        lang: str | None,
        old: IndexReader | None,
        candidates: list[str] | None = None,
        accurate: bool | None = False,
        roots: list[str] | None = None,
        detector: LanguageWorker | None = None,
    ):
        self.encoder, self.lang, self.old, self.candidates, self.accurate = encoder, lang, old, candidates, accurate
        self.detector = detector or LanguageWorker(start=False)  # where the detector runs (a worker process, or here)
        # the paths given, and the folders the index was built, added to and synced from: a file's shown path (shown_roots)
        self.folders = shown_roots([*(roots or []), *((old.meta.sources or []) if old is not None else [])])
        self.detected = 0  # texts whose language came from the detector
        self.texts = TextStore.create(tmp / STORE_FILE)
        self.next_id = self.texts.next_id()
        self.raw_path = tmp / RAW_VECTORS_FILE
        self.raw = open(self.raw_path, "wb")
        self.added = self.skipped = 0
        self.code = False  # a passage of source code was stored
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encodr-store")
        self.pending: Future | None = None
        self.admitted: tuple[Future, int] | None = None  # the window admit queued: its labels' future, its first id
        self.pending_hashes: set[str] = set()

    def __enter__(self) -> "Ingest":
        return self

    def __exit__(self, kind, *exc) -> None:
        try:
            if self.pending is not None and kind is None:
                self.pending.result()
        finally:
            self.writer.shutdown(wait=True, cancel_futures=kind is not None)  # a failed build drops what is queued
            self.raw.close()
            if kind is not None:  # a failed build: its generation is dropped; on success the build reads on, then closes
                self.texts.close()

    def raw_vectors(self, mode: str = "r") -> np.ndarray:
        """float32 (added, d): the vectors this build wrote to the raw file (a memmap opened with
        ``mode``; an empty array when none was)."""
        shape = (self.added, self.encoder.dimension)
        return np.memmap(self.raw_path, dtype=np.float32, mode=mode, shape=shape) if self.added else np.empty(shape, np.float32)

    def fresh(self, records: list[Record]) -> list[tuple[Record, str]]:
        """The records whose text is neither stored (nor being stored) nor earlier in
        ``records``, with their text hashes; counts the others in ``skipped``."""
        hashes = [text_hash(r.text) for r in records]
        known = self.texts.known(hashes)
        fresh, seen = [], set()
        for r, h in zip(records, hashes):
            if h in known or h in seen or h in self.pending_hashes:
                self.skipped += 1
                continue
            seen.add(h)
            fresh.append((r, h))
        return fresh

    def admit(self, fresh: list[tuple[Record, str]], whole_corpus: bool = False) -> None:
        """Queue the window's texts for the writer thread: their languages detected and their rows
        written while the caller encodes them; :meth:`store` then takes their vectors, in the same
        order (``whole_corpus``: this window is all the corpus, so a sample of it is one of the corpus)."""
        first = self.next_id
        self.next_id += len(fresh)
        self.added += len(fresh)
        self.pending_hashes = {h for _, h in fresh}
        self.admitted = self.writer.submit(self._label, fresh, first, whole_corpus), first

    def store(self, fresh: list[tuple[Record, str]], vectors: np.ndarray, whole_corpus: bool = False) -> None:
        """Queue the window's vectors (float32 (len(fresh), d)) for the writer thread, once the
        previous window is stored; its texts too, unless :meth:`admit` queued them."""
        if self.pending is not None:
            self.pending.result()
        if self.admitted is None:
            self.admit(fresh, whole_corpus)
        (labels, first), self.admitted = self.admitted, None
        self.pending = self.writer.submit(self._vectors, labels, vectors, first)

    def _label(self, fresh: list[tuple[Record, str]], first: int, whole_corpus: bool) -> list[str]:
        """Detect the languages the records lack and write their rows; each record's language."""
        code = [code_language(r.source or "") is not None for r, _ in fresh]
        self.code = self.code or any(code)
        langs = [r.lang or self.lang or (CODE_LANG if c else None) for (r, _), c in zip(fresh, code)]
        confidence: list[float | None] = [None] * len(fresh)
        unknown = [i for i, code in enumerate(langs) if code is None]
        if unknown:
            texts = [fresh[i][0].text for i in unknown]
            sample = whole_corpus and self.old is None  # a new index's corpus in one window: its languages from a sample of it
            self.candidates, found = self.detector.call("labelled", texts, self.candidates, self.accurate, sample)
            for i, text, (code, sure) in zip(unknown, texts, found):
                langs[i], confidence[i] = code, prose_confidence(text, sure)  # a contents page's label counts as unsure
            self.detected += len(unknown)
            if self.old is None and len(set(langs) - {UNDETERMINED}) > 1:  # settle_languages will read their word lists
                self.detector.call("warm_word_lists", langs)
        guessed = set(unknown)
        rows = [
            {
                "id": first + i,
                "ext_id": r.ext_id,
                "text": r.text,
                "source": r.source,
                "line": r.line,
                "lang": langs[i],
                "hash": h,
                "lang_detected": int(i in guessed),
                "lang_confidence": confidence[i],
                "title": r.title,
                "start": r.start,
                "section": r.section,
                "end_line": r.end_line,
                "page": r.page,
                "path": shown_path(r.source, self.folders),
            }
            for i, (r, h) in enumerate(fresh)
        ]
        self.texts.insert(rows, keywords=self.old is None)  # a new index's keyword entries too, while it encodes
        return langs

    def _vectors(self, labels: Future, vectors: np.ndarray, first: int) -> None:
        """Store the vectors of the window whose rows ``labels`` wrote (the writer ran that first)."""
        langs = labels.result()
        if self.old is not None and self.old.components:
            try:
                vectors = remove_per_language(vectors, langs, self.old.components, self.old.pooled_for)
            except KeyError as missing:
                have = ", ".join(sorted(c for c in self.old.components if c != POOLED))
                raise EncodrError(
                    f"index {self.old.path} has no principal component for language '{missing.args[0]}' (it has {have}); "
                    f"rebuild it with {S.pcr} over all languages, or give {S.lang}"
                ) from None
        if self.old is not None and not self.old.meta.on_disk:
            add_vectors(self.old.faiss, vectors, first)
        else:  # a new index, or one whose lists are on disk: the vectors wait in the raw file (see extended_on_disk)
            vectors.tofile(self.raw)


def shown_roots(roots: list[str]) -> list[tuple[str, str]]:
    """The folders a file's shown path (:func:`shown_path`) starts from, each with the prefix it
    gives its files: the outermost folders among ``roots`` (absolute paths; files, missing paths
    and folders inside another one left out). With one such folder there is no prefix: a file
    shows relative to it (``projects/todo.md``). With several, each file's path starts with its
    folder's name (``notes/todo.md``, ``code/main.py``), or, where two of them share a name, with
    the folder's path from their common parent, so that two files never show the same path (as
    ripgrep shows the paths it was given)."""
    folders = sorted({os.path.abspath(r) for r in roots if os.path.isdir(r)}, key=lambda f: (len(f), f))
    top = [f for i, f in enumerate(folders) if not any(within(f, g) for g in folders[:i])]
    if len(top) <= 1:
        return [(f, "") for f in top]
    names = [os.path.basename(f) or f for f in top]
    if len(set(names)) < len(names):
        common = os.path.commonpath(top)
        names = [Path(os.path.relpath(f, common)).as_posix() for f in top]
    return list(zip(top, names))


def shown_path(source: str, folders: list[tuple[str, str]]) -> str:
    """``source`` as a person reads it: relative to the folder of ``folders`` (:func:`shown_roots`)
    that holds it, after that folder's prefix, with ``/`` between parts; a file given by itself,
    or a document given whole (an upsert), its own name."""
    full = os.path.abspath(source)
    for root, prefix in folders:
        if within(full, root):
            shown = Path(os.path.relpath(full, root)).as_posix()
            return f"{prefix}/{shown}" if prefix else shown
    return Path(source).name  # a file given by itself (an upsert's source, "api", reads the same)


def settle_languages(texts: TextStore, detector: LanguageWorker | None = None) -> list[str]:
    """Second pass of language detection over a new index's store: detect again, among
    the languages that make up the corpus's confident labels (:func:`~encodr.data.language.corpus_languages`)
    and in high-accuracy mode, the texts whose language was detected. Returns those
    languages. (Nothing to do when every text got the one same label.) A minority label most of
    whose texts read as the corpus's major language (:func:`~encodr.data.language.misread_languages`:
    wordfreq's common words, a second opinion on lingua) counts as unsure, so the second pass
    gives those texts one of the corpus's languages. ``detector``: where the detection runs (this
    process by default)."""
    detector = detector or LanguageWorker(start=False)
    labels = texts.detected_labels()
    kept = settled_languages(
        [code for code, _, _ in labels],
        [sure for _, sure, _ in labels],
        [n for _, _, n in labels],
        texts.detected_texts,
        lambda major, by_label: detector.call("misread_languages", major, by_label),
    )
    if not kept or {code for code, _, _ in labels} == set(kept) == {kept[0]}:
        return kept
    texts.relabel_detected(lambda batch: detector.call("detect_languages", batch, kept))
    return kept


def extended_on_disk(tmp: Path, ingest: Ingest, old: IndexReader, add_blocks=None):
    """``old``'s on-disk IVF index with the ingested vectors added (ids after its own), its lists
    merged into ``tmp``'s own list file (:func:`~.ondisk.add_on_disk`, ``add_blocks`` as there):
    the old generation's files are only read."""
    vectors = ingest.raw_vectors()
    index = add_on_disk(
        extend_trained(old.folder / VECTORS_FILE),
        vectors,
        tmp,
        write_faiss,
        old=old.faiss,
        add_blocks=add_blocks,
        old_file=old.folder / VECTORS_FILE,
    )
    del vectors
    return index


def new_index(
    tmp: Path, ingest: Ingest, options: BuildOptions, lang: str | None, detected: list[str] | None = None, add_blocks=None
) -> tuple[object, IndexMeta]:
    """The FAISS index and ``index.json`` record of a new index from the ingested raw vectors, as
    ``options`` say (its PCR variant applied first, with ``pcr``; its type, quantisation and
    on-disk lists); ``detected``: the languages the detector settled on, when it labelled any
    text; ``add_blocks``: see :func:`~.ondisk.add_on_disk`."""
    pcr, index_type, quantize, on_disk = (
        options.pcr_variant if options.pcr else None,
        options.index_type,
        options.quantize,
        options.on_disk,
    )
    encoder, n, dim = ingest.encoder, ingest.next_id, ingest.encoder.dimension
    vectors = ingest.raw_vectors("r+")
    if pcr:
        langs = ingest.texts.langs()
        np.savez(tmp / PCR_FILE, **fit_and_remove(vectors, langs, pcr, strict=not ingest.detected))
    kind = "flat" if quantize == "binary" else index_type if index_type != "auto" else auto_index_type(n)
    if kind == "ivfpq" and quantize == "int8":
        kind = "ivf"  # auto above HNSW_MAX: IVF lists of int8 vectors (PQ codes are a quantisation of their own)
    if kind == "ivfpq" and n < 10_000:
        raise EncodrError(
            f"{S.index_type} ivfpq needs at least 10,000 texts to train its quantisers (this corpus has {n:,}); use flat or hnsw"
        )
    sample = training_sample(vectors) if kind.startswith("ivf") or quantize != "none" else None
    index = new_faiss(kind, dim, n, sample, quantize)
    del sample  # trained: the sample is not held while the vectors are added
    if on_disk:
        index = add_on_disk(index, vectors, tmp, write_faiss, add_blocks=add_blocks)
    else:
        for start in range(0, n, 10_000):
            index.add(np.ascontiguousarray(vectors[start : start + 10_000]))
    del vectors
    meta = new_meta(
        model=encoder.name if not Path(encoder.name).exists() else str(Path(encoder.name).resolve()),
        pooling=encoder.pooling,
        dimension=dim,
        truncate_dim=encoder.truncate_dim,
        fingerprint=encoder.fingerprint,
        index_type=kind,
        quantize=quantize,
        on_disk=on_disk,
        int8_ranges=index.ranges.tolist() if isinstance(index, BinaryRescored) else None,
        pcr=bool(pcr),
        pcr_variant=pcr,
        default_lang=lang,
        lang_detection={"detector": DETECTOR, "languages": detected} if ingest.detected else None,
        created=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    return index, meta
