"""Writing an index: read → deduplicate → encode → store, atomically (see :mod:`.store`), for a
new index, ``--add`` and ``--sync`` (which documents change: :mod:`.documents`), and the deletes,
removals and compactions that keep deleted text out of every search (:func:`delete`,
:func:`remove_texts`, :func:`compact`)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, field, replace
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..data.language import DETECTOR, SMALL_CORPUS, check_code, corpus_languages, detect_languages, detect_with_confidence, sampled_languages
from ..data.files import DOCUMENT_SUFFIXES, Skipped, expand, iter_passages, iter_records, passage_splitter
from ..data.records import Layout, Record, read_records
from ..errors import EncodrError, one_of
from ..models.encoder import AUTO_BACKEND, Encoder, check_backend, choose_backend
from ..models.pcr import DEFAULT_VARIANT, POOLED, check_variant, fit_and_remove, remove_per_language
from ..outputs import check_target, errno_in, generation, os_fault
from ..progress import ProgressEvent, ProgressFn, silent
from .quantized import QUANTIZE, RESCORE_FILE, BinaryRescored
from .store import FLAT_MAX, HNSW_EF_CONSTRUCTION, HNSW_M, HNSW_MAX, INDEX_FILES, INDEX_TYPES, PQ_BYTES, TRAIN_PER_LIST, TRAIN_SAMPLE, META_FILE, PCR_FILE, RAW_VECTORS_FILE, STORE_FILE, VECTORS_FILE, Index, locate
from .ondisk import ONDISK_FILE, RefinedOnDisk, add_on_disk, extend_trained
from .shards import Shards, digest, shards_folder
from .texts import TextStore
from .documents import Reconcile, file_state, unchanged_files
from .dataflow import ActorModel, Splitting, items, ray_windows
from .engines import check_engine, ray_adding, ray_session
from .keywords import ANALYZER, KEYWORD_TOKENIZER


WINDOW = 8192  # texts read, deduplicated and encoded together (length-sorted within)
# The fields of build()'s result that `encodr index` and the TUI's Index pane show.
SUMMARY = ("model", "pooling", "dimension", "backend", "index_type", "quantize", "bytes_per_vector", "count", "documents", "added", "updated", "removed", "unchanged",
           "encoded", "skipped_duplicates", "resumed", "passages", "split_documents", "pcr", "languages", "seconds")  # fmt: skip
# A deleted text whose vector the FAISS index cannot remove (HNSW, IVF-PQ, binary, on-disk IVF)
# stays as a tombstone, left out of every search, until tombstones pass COMPACT_AT of the
# vectors; then the write rebuilds the FAISS index from the live vectors (Lucene's merges of
# segments with deletes: TieredMergePolicy's deletesPctAllowed defaults to 20 %). Below it, a
# search visits at most 25 % more vectors than live ones; above it, HNSW's filtered search
# starts to lose neighbours to the dead nodes it must route through, and the rebuild (an HNSW
# graph: ~seconds per 10,000 vectors on 2 cores) is paid once per 20 % of deletions.
COMPACT_AT = 0.20


def _text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _count_lines(path: str) -> int:
    """Lines in a file (the progress total), without decoding it."""
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def _new_faiss(kind: str, dim: int, n: int, sample: np.ndarray | None, quantize: str = "none"):
    """An empty FAISS index of ``kind`` for ``n`` vectors of dimension ``dim`` (inner
    product), its quantisers trained on ``sample`` (IVF types, ``int8``, ``binary``).

    ``quantize``: ``none`` (float32 vectors), ``int8`` (FAISS's 8-bit scalar quantiser in place
    of the float vectors, per-dimension ranges trained on ``sample``: d bytes a vector) or
    ``binary`` (:class:`~.quantized.BinaryRescored`, ``flat`` only: d / 8 bytes in memory, d on disk)."""
    import faiss

    ip, sq8 = faiss.METRIC_INNER_PRODUCT, faiss.ScalarQuantizer.QT_8bit
    if quantize == "binary":
        return BinaryRescored.new(dim, sample)
    if kind == "flat":
        if quantize == "int8":
            index = faiss.IndexScalarQuantizer(dim, sq8, ip)
            index.train(sample)
            return index
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWSQ(dim, sq8, HNSW_M, ip) if quantize == "int8" else faiss.IndexHNSWFlat(dim, HNSW_M, ip)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        if quantize == "int8":
            index.train(sample)
        return index
    nlist = ivf_lists(n)
    if kind == "ivf" and quantize == "int8":
        index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist, sq8, ip)
    elif kind == "ivf":
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    else:  # ivfpq: PQ codes, re-ranked from 8-bit scalar-quantised vectors
        m = max(d for d in range(1, min(dim, PQ_BYTES) + 1) if dim % d == 0)  # PQ_BYTES sub-quantisers, or the most that divide dim
        index = faiss.index_factory(dim, f"IVF{nlist},PQ{m}x8,Refine(SQ8)", faiss.METRIC_INNER_PRODUCT)
    index.train(sample)
    return index


def ivf_lists(n: int) -> int:
    """The number of IVF lists (coarse centroids) for ``n`` vectors: 4·√n, FAISS's guideline,
    with at least 39 vectors a list (FAISS's minimum to train them), at least 1."""
    return max(1, min(int(4 * np.sqrt(n)), n // TRAIN_PER_LIST))


def auto_index_type(n: int) -> str:
    """The index type ``--index-type auto`` picks for ``n`` vectors: ``flat`` up to
    :data:`~.store.FLAT_MAX`, ``hnsw`` up to :data:`~.store.HNSW_MAX`, ``ivfpq`` above."""
    return "flat" if n <= FLAT_MAX else "hnsw" if n <= HNSW_MAX else "ivfpq"


@dataclass(frozen=True)
class BuildOptions:
    """How :func:`build` builds, appends to or syncs an index, validated when made; every
    default lives here (the core's :class:`~encodr.core.requests.IndexRequest` renders them).

    Attributes:
        model: a model spec, or an already loaded :class:`~encodr.models.Encoder` (a new index
            only: ``encodr eval retrieval`` indexes with the model it scores); with ``add``, a
            spec that must match the index's model (or ``None``). Default: ``minilm``.
        index_type: ``auto``, ``flat``, ``hnsw``, ``ivf`` or ``ivfpq`` (:data:`~.store.INDEX_TYPES`).
        quantize: ``none``, ``int8`` (FAISS's 8-bit scalar quantiser: 4× smaller; ``flat``,
            ``hnsw``, ``ivf``) or ``binary`` (sign bits searched by Hamming distance, the
            candidates rescored by int8 vectors kept on disk: 32× smaller in memory; ``flat``,
            which ``auto`` then means at any size); :mod:`~.quantized`. ``add`` keeps the index's.
        dim: keep the first ``dim`` dimensions of each vector, renormalised (Matryoshka
            truncation, :meth:`~encodr.models.encoder.Encoder.truncate`); ``add`` keeps the
            index's (a different ``dim`` is an error).
        on_disk: an IVF index (``ivf`` or ``ivfpq``, a new index) whose inverted lists are added
            in blocks and merged into ``lists.ivfdata`` beside it, memory-mapped on search (:mod:`~.ondisk`).
        add: append to the existing index at ``out``: new documents added, changed ones replaced, none removed.
        sync: make the index at ``out`` hold exactly the documents now under the files given
            (:mod:`.documents`); builds it when ``out`` does not exist.
        overwrite: replace an existing index (one encodr wrote; never another folder).
        pcr: fit and apply per-language principal-component removal (CMLM §5.2).
        pcr_variant: ``centred`` or ``uncentred`` first component (:mod:`encodr.models.pcr`).
        lang: language of texts without a ``lang`` column, ISO 639-3 (default: detected).
        backend: ``torch``, ``torch-bf16``, ``onnx``, ``onnx-int8`` or ``auto``
            (:func:`~encodr.models.encoder.choose_backend`; with ``add``, the index's own).
        batch_size: texts per forward pass (default: the encoder's, per backend and device).
        processes: encode on this many processes (one per GPU when CUDA is visible, else CPU
            processes), or with ``engine`` ``ray`` this many Ray Data encoder actors.
        engine: ``local`` or ``ray`` (read and split on Ray tasks, encode on Ray actors: :mod:`~.dataflow`).
        address: with ``ray``, the cluster's address (default: ``RAY_ADDRESS``, else a local Ray).
        window: texts read, deduplicated and encoded together (bounds memory).
        glob: in folders, read only the files whose name matches (``*.pdf``).
        whole: index each text whole, cut at the model's window, instead of splitting a longer
            text into passages (:func:`encodr.data.files.passage_splitter`).
        layout: where record files keep their fields (:class:`encodr.data.records.Layout`).

    Raises:
        OptionError: an unknown index type, quantisation or engine, a ``dim``, ``processes`` or
            ``window`` below 1, naming the field.
    """

    model: str | Encoder | None = None
    index_type: str = "auto"
    quantize: str = "none"
    dim: int | None = None
    on_disk: bool = False
    add: bool = False
    sync: bool = False
    overwrite: bool = False
    pcr: bool = False
    pcr_variant: str = DEFAULT_VARIANT
    lang: str | None = None
    backend: str = AUTO_BACKEND
    batch_size: int | None = None
    processes: int = 1
    engine: str = "local"
    address: str | None = None
    window: int = WINDOW
    glob: str | None = None
    whole: bool = False
    layout: Layout = Layout()

    def __post_init__(self):
        from ..errors import at_least, one_of
        from .engines import ENGINES
        from .quantized import QUANTIZE

        one_of("index_type", self.index_type, INDEX_TYPES)
        one_of("quantize", self.quantize, QUANTIZE)
        one_of("engine", self.engine, ENGINES)
        for name in ("dim", "processes", "window", "batch_size"):
            at_least(name, getattr(self, name), 1)


def build(files: list[str], out: str | Path, options: BuildOptions = BuildOptions(), progress: ProgressFn = silent,
          warn: Callable[[str], None] = lambda line: None) -> dict:  # fmt: skip
    """Build an index of ``files`` with ``model`` in ``out``, append to it (``add``), or bring it
    in step with ``files`` (``sync``).

    Texts stream through in windows of ``window`` texts: read → deduplicate (a text already
    in the index is stored once) → encode, longest first in batches of ``batch_size`` (so a
    batch is mostly real tokens, not padding) → store. Storing a window (language detection,
    SQLite, the vectors) runs in a second thread while the next window is encoded.

    Memory is bounded whatever the corpus size: two windows at most are alive (one encoding,
    one being stored), about ``2 × window × (4·d + text bytes)`` — 30 MB for MiniLM (d = 384)
    with the default window; the vectors of a new index go to a file on disk until the end.
    What stays in memory at the end is the FAISS index itself: 4·d bytes per vector for
    ``flat`` and ``hnsw`` (plus HNSW's links), the PQ code size for ``ivfpq``
    (:data:`~.store.PQ_BYTES`) plus its 8-bit re-ranking copy (d bytes), and a training sample
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
    if o.sync and Path(locate(out)).exists():
        o = replace(o, add=True)  # an existing index is brought in step; a missing one is built
    add, sync = o.add, o.sync
    out = locate(out) if add else Path(out)
    check_backend(o.backend, auto=True)  # before the lock file and any work
    check_engine(o.engine, o.address)
    if o.processes > 1 and o.backend not in ("torch", AUTO_BACKEND) and o.engine == "local":
        raise EncodrError(f"--processes works with --backend torch (sentence-transformers' pool runs its own float32 pass; onnxruntime "
                          f"already uses every core): drop --processes for {o.backend}")  # fmt: skip
    if not files:
        raise EncodrError("no corpus file given; pass one or more text, TSV, CSV or JSONL files")
    if o.lang is not None:
        check_code(o.lang)
    check_variant(o.pcr_variant)
    check_quantize(o.quantize, o.index_type)
    if o.on_disk and o.index_type not in ("ivf", "ivfpq"):
        raise EncodrError("--on-disk keeps an IVF index's lists in a file; pass --index-type ivf or ivfpq with it, or drop --on-disk")
    if o.on_disk and add:
        raise EncodrError("--on-disk is chosen when an index is built; --add keeps the index's own layout: drop --on-disk")
    if not add:
        check_target(out, o.overwrite, inputs=files, kind="index")
    else:
        _check_updatable(out, files, sync)
    if sync and o.engine != "local":
        raise EncodrError("--sync reads and compares the documents on this machine: drop --engine ray for it (a full build can use Ray)")
    given = [f for f in files if Path(f).is_file()]
    given_paths = list(files)
    files, skipped = expand(list(files), o.glob)
    firsts = [next(iter(read_records(f, None, o.layout)), None) for f in given if Path(f).suffix.lower() not in DOCUMENT_SUFFIXES]  # fail before any work
    if not add and firsts and len(firsts) == len(files) and all(r is None for r in firsts):
        raise EncodrError(f"{', '.join(files)}: no text to index (all lines blank)")
    with index_lock(out):
        if not add:
            check_target(out, o.overwrite, inputs=files, kind="index")  # again: another build may have made it while this one waited
        spec = IndexSpec(list(files), out, o, warn, [f for f in files if f not in given], skipped, roots=[os.path.abspath(f) for f in given_paths])
        try:
            return _build_locked(spec, progress)
        except (OSError, sqlite3.OperationalError) as exc:  # full disk, read-only, locked: the new generation is gone
            where = getattr(exc, "filename", None) or out
            kept = "the previous index is unchanged" if out.exists() else "no index was written"
            finished = Shards.finished(shards_folder(out))
            if finished:
                kept += f"; {finished} encoded window(s) are kept in {shards_folder(out)}, and the same command reuses them"
            raise os_fault(exc, where, kept=kept) from None


def _check_updatable(out: Path, inputs: list[str], sync: bool) -> None:
    """Refuse ``--add`` / ``--sync`` into a folder that is not an encodr index, or that holds
    one of the inputs (its generations would sit among the documents).

    Raises:
        EncodrError: naming the folder and what to do instead.
    """
    from ..outputs import check_inputs_outside, written_by_encodr

    flag = "--sync" if sync else "--add"
    if not out.exists():
        raise EncodrError(f"index {out} does not exist (nor in the workspace, see encodr indexes); build it first with encodr index CORPUS --out {out}")
    check_inputs_outside(out, inputs, "index")
    if written_by_encodr(out) != "index":
        raise EncodrError(f"{flag}: {out} is not an encodr index (no index.json in it); build one with encodr index CORPUS --out NEW_FOLDER")


@contextlib.contextmanager
def index_lock(out: Path):
    """Hold an exclusive lock on ``.NAME.lock`` beside the index ``out`` (``flock``: released
    by the OS when the process ends, however it ends, so a killed build leaves no stale
    lock). A second build of the same index waits for the first."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        handle = open(out.parent / f".{out.name}.lock", "a")
    except OSError as exc:
        raise EncodrError(f"cannot create index {out}: {exc.strerror}; choose another --out") from None
    try:
        try:
            import fcntl
        except ImportError:  # Windows: no flock; builds of one index must not overlap there
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


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


def _build_locked(spec: IndexSpec, progress: ProgressFn) -> dict:
    """:func:`build` once the inputs are checked and the index is locked."""
    old = Index.open(spec.out) if spec.options.add else None
    try:
        with ray_session(spec.options.address) if spec.options.engine == "ray" else contextlib.nullcontext():  # one Ray for reading, encoding and adding
            return _build_generation(spec, old, progress)
    finally:
        if old is not None:
            old.close()  # release the old generation before the sweep (if not already)


def _backend(spec: IndexSpec, old: Index | None) -> str:
    """The backend this build encodes with: ``spec.options.backend``, or for ``auto`` the index's own with
    ``--add`` (its vectors and its queries stay on one backend), else :func:`choose_backend` for
    the device this process encodes on — ``torch`` for several processes (sentence-transformers'
    pool runs its own float32 pass), for Ray (the actors' machines are not this one) and for
    a ready-made :class:`Encoder` (its own)."""
    if spec.options.backend != AUTO_BACKEND:
        return spec.options.backend
    if spec.options.model is not None and not isinstance(spec.options.model, str):  # a loaded encoder (or the server's batched one)
        return spec.options.model.backend
    if old is not None:
        return old.meta.get("backend", "torch")
    if spec.options.processes > 1 or spec.options.engine != "local":
        return "torch"
    from ..models import pick_device

    return choose_backend(AUTO_BACKEND, pick_device())


def _build_generation(spec: IndexSpec, old: Index | None, progress: ProgressFn) -> dict:
    """Write the new generation of ``spec.out`` (from ``old``'s, with ``--add``) and make it current."""
    from ..models import load_encoder

    files, model, out, lang = spec.files, spec.options.model, spec.out, spec.options.lang
    backend = _backend(spec, old)

    if old is not None:
        encoder = model if model is not None and not isinstance(model, str) else load_encoder(model or old.meta["model"], backend=backend)
        if encoder.fingerprint != old.meta["fingerprint"]:
            raise EncodrError(f"model '{model}' differs from the model index {out} was built with ({old.meta['model']}); drop --model or build a new index")
        kept = old.meta.get("truncate_dim")
        if spec.options.dim is not None and spec.options.dim != (kept or old.meta["dimension"]):
            raise EncodrError(f"--dim {spec.options.dim} differs from index {out}'s {old.meta['dimension']} dimensions; drop --dim (--add keeps the index's)")
        encoder.truncate(kept)
        lang = lang or old.meta.get("default_lang")
    else:
        encoder = model if isinstance(model, Encoder) else load_encoder(model, backend=backend)
        if spec.options.dim is not None:  # else the model's own (a model saved truncated stays so)
            encoder.truncate(spec.options.dim)
        if encoder.truncate_dim is not None:
            _check_matryoshka(encoder, spec.warn)
    candidates = (old.meta.get("lang_detection") or {}).get("languages") if old is not None else None
    roots = spec.roots if old is not None and spec.options.sync else None  # a sync of an existing index: what it must hold exactly
    unread = unchanged_files(old.texts, files) if roots is not None else set()
    files = [f for f in files if os.path.abspath(f) not in unread]
    counts = [_count_lines(f) for f in files]
    total = sum(counts)
    progress(ProgressEvent("indexing", 0, total))  # inputs checked and model loaded: the work starts
    started = time.time()
    # documents are encoded with the model's document prompt (E5: "passage: "); --add keeps the index's own
    prompts = old.meta.get("prompts", {"query": "", "document": ""}) if old is not None else {role: encoder.prompt(role) for role in ("query", "document")}
    room = encoder.max_length - 2 - len(encoder.tokenizer.tokenize(prompts["document"]))  # the prompt's tokens share the window
    split = None if spec.options.whole else passage_splitter(encoder.tokenizer, room)
    key = {"fingerprint": encoder.fingerprint, "backend": backend, "truncate_dim": encoder.truncate_dim, "prompt": prompts["document"]}
    if spec.options.engine == "ray":  # a shard is an item's records too: what reading and splitting depend on
        key.update(engine="ray", window=spec.options.window, passages=None if split is None else room, lang=lang, layout=dataclasses.asdict(spec.options.layout))
    shards = Shards(shards_folder(out), key)
    with generation(out, legacy=INDEX_FILES) as tmp:
        if old is not None:
            old.copy_store(tmp / STORE_FILE)
            for name in (META_FILE, PCR_FILE):
                if (old.folder / name).exists():
                    shutil.copy2(old.folder / name, tmp / name)
        with _Ingest(tmp, encoder, lang, old, candidates, accurate=total <= SMALL_CORPUS) as ingest:
            done = 0
            reconcile = Reconcile(ingest.texts, roots, _text_hash, unread=set(unread))
            if ingest.legacy:
                spec.warn(f"index {out} was built before documents kept their identity: this write reads every document once to record it "
                          "(texts already stored are not encoded again), and the ones it does not read stay as they are")  # fmt: skip

            def step(n: int) -> None:
                nonlocal done
                done += n
                progress(ProgressEvent("indexing", min(done, total), total))

            if spec.options.engine == "ray":  # read, split and encoded by Ray Data; deduplicated and stored here
                model_spec = spec.options.model if isinstance(spec.options.model, str) else old.meta["model"] if old is not None else encoder.name
                work = items(files, counts, spec.options.window, spec.found)
                tokenizer = None if split is None else encoder.tokenizer.backend_tokenizer.to_str()
                actor = ActorModel(model_spec, encoder.fingerprint, backend, spec.options.processes, encoder.truncate_dim, prompts["document"],
                                   spec.options.batch_size)  # fmt: skip
                for item, records, vectors, skipped in ray_windows(work, shards, actor, Splitting(tokenizer, room, lang, spec.options.layout), step):
                    spec.skipped.extend(skipped)
                    row = {id(r): i for i, r in enumerate(records)}
                    records = list(reconcile.documents(records, file_state(records[0].source))) if records else records
                    fresh = ingest.fresh(records)
                    if fresh:
                        ingest.store(fresh, vectors[[row[id(r)] for r, _ in fresh]], whole_corpus=len(work) == 1 and len(records) < spec.options.window)
            else:
                with _encoding(encoder, spec, prompts["document"]) as encode:
                    windows = _windows(files, spec, lang, split, reconcile)
                    for n, records in enumerate(windows):
                        fresh = ingest.fresh(records)
                        step(len(records) - len(fresh))  # duplicates count as done
                        if fresh:
                            window_key = digest([h for _, h in fresh])
                            vectors = shards.get(n, window_key)  # a rerun after a crash: this window was encoded then
                            if vectors is None:
                                vectors = encode([r.text for r, _ in fresh], spec.options.batch_size, step)
                                shards.put(n, window_key, vectors)
                            else:
                                step(len(fresh))
                            ingest.store(fresh, vectors, whole_corpus=n == 0 and len(records) < spec.options.window)  # a first window not full is the only one
        # every input is read: the bar ends full although a file's lines (a PDF's, an HTML page's,
        # a CSV's header) are not its records, the unit ``step`` counts
        progress(ProgressEvent("indexing", total, total))
        deleted = ingest.texts.settle_members(reconcile.replaced, reconcile.finish())
        detected = ingest.detected and old is None and _settle_languages(ingest.texts)
        on_disk = spec.options.on_disk if old is None else bool(old.meta.get("on_disk"))
        with ray_adding(spec.options.address) if on_disk and spec.options.engine == "ray" else contextlib.nullcontext() as add_blocks:  # blocks added in Ray tasks
            if old is None:
                index, meta = _new_index(tmp, ingest, spec.options, lang, detected, add_blocks)
                meta["backend"] = backend
            elif on_disk:
                index, meta = _extended(tmp, ingest, old, add_blocks), dict(old.meta)
            else:  # --add in memory: the writer thread added the vectors as they came
                index, meta = old.faiss, dict(old.meta)
        ingest.raw_path.unlink()
        index = remove_texts(index, deleted, ingest.texts, meta)
        meta["count"] = int(index.ntotal)
        meta["documents"] = ingest.texts.document_count()
        meta["deleted"] = len(ingest.texts.tombstones())
        meta["sources"] = sorted(set(meta.get("sources") or []) | set(spec.roots or []))  # what it was built, added to and synced from
        meta["split_documents"] = int(meta.get("split_documents") or 0) + len(ingest.split_documents)
        meta["passages"] = int(meta.get("passages") or 0) + ingest.passages
        meta["languages"] = ingest.texts.languages()
        meta["updated"] = time.strftime("%Y-%m-%d %H:%M:%S")
        keywords_started = time.time()
        ingest.texts.build_keywords()
        meta["keywords"] = {"engine": "sqlite-fts5 bm25", "analyzer": ANALYZER, "tokenizer": KEYWORD_TOKENIZER}
        meta["prompts"] = prompts
        keyword_seconds = round(time.time() - keywords_started, 2)
        ingest.texts.close()
        write_faiss(index, tmp / VECTORS_FILE)
        stored = (tmp / VECTORS_FILE).stat().st_size + ((tmp / ONDISK_FILE).stat().st_size if (tmp / ONDISK_FILE).exists() else 0)
        meta["bytes_per_vector"] = round(stored / max(1, index.ntotal), 1)
        if (tmp / RESCORE_FILE).exists():  # --quantize binary: the int8 vectors, on disk and memory-mapped
            meta["rescore_bytes_per_vector"] = round((tmp / RESCORE_FILE).stat().st_size / max(1, index.ntotal), 1)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
        if old is not None:
            old.close()  # this build holds the old generation no more: the swap may remove it
    shards.remove()  # the new generation is current: nothing left to resume
    files_skipped = [{"path": s.path, "reason": s.reason} for s in spec.skipped]
    return {**meta, **reconcile.counts.as_dict(), "encoded": ingest.added, "skipped_duplicates": ingest.skipped, "resumed": shards.reused, "skipped_files": files_skipped, "seconds": round(time.time() - started, 2), "keyword_seconds": keyword_seconds,
            "path": str(out.resolve())}  # fmt: skip


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
        warn(f"{encoder.name} was not trained with a Matryoshka loss: its first {dim} dimensions lose more quality than a model tuned "
             "with matryoshka_dims; drop --dim to keep them all")  # fmt: skip
    elif dims and dim not in dims:
        warn(f"{encoder.name} was trained to be truncated to {', '.join(map(str, dims))} dimensions, not {dim}; pass one of those to --dim")


def write_faiss(index, path: Path) -> None:
    """``faiss.write_index`` (or the index's own ``write``: :class:`~.quantized.BinaryRescored`,
    :class:`~.ondisk.RefinedOnDisk`), its write errors (a full disk…) raised as ``OSError`` with the file
    named, like every other write of a build.

    Raises:
        OSError: FAISS could not write ``path`` (``errno`` from its message when it names one).
    """
    import errno

    import faiss

    try:
        index.write(path) if isinstance(index, (BinaryRescored, RefinedOnDisk)) else faiss.write_index(index, str(path))
    except RuntimeError as exc:
        code = errno_in(str(exc)) or errno.EIO
        raise OSError(code, os.strerror(code), str(path)) from None


def add_vectors(index, vectors: np.ndarray, first: int) -> None:
    """Add float32 (n, d) ``vectors`` to a FAISS ``index`` as ids ``first`` … ``first + n − 1``:
    an IVF index (which may have had ids removed, so its count is not the next id) takes them
    with their ids, any other index numbers them from its count, which must equal ``first``."""
    import faiss

    if isinstance(index, faiss.IndexIVF):
        index.add_with_ids(vectors, np.arange(first, first + len(vectors), dtype=np.int64))
    else:
        assert index.ntotal == first, (index.ntotal, first)
        index.add(vectors)


def removable_now(index, meta: dict) -> bool:
    """Whether FAISS removes ids from ``index`` (described by its ``index.json`` ``meta``) itself:
    a flat index (float or int8; it then renumbers the vectors after each removed one) or an
    in-memory IVF index (ids kept). HNSW, IVF-PQ with its re-ranking copy, IVF lists on disk
    (a merged, memory-mapped file) and binary indexes cannot."""
    import faiss

    return isinstance(index, (faiss.IndexFlatCodes, faiss.IndexIVF)) and not meta.get("on_disk")


def remove_texts(index, deleted: np.ndarray, texts: TextStore, meta: dict):
    """Take the vectors of ``deleted`` texts (int64 ids; their rows are already gone from
    ``texts``, the generation's store) out of ``index``.

    - flat: removed by FAISS, the rest renumbered 0…n−1 (:meth:`~.texts.TextStore.renumber`);
    - in-memory IVF: removed by FAISS, ids kept;
    - HNSW, IVF-PQ, binary, on-disk IVF: kept as tombstones (searches leave them out); once
      they pass :data:`COMPACT_AT` of the vectors the index is rebuilt from the live vectors
      (:func:`compacted`), except on-disk IVF, which keeps them until it is built again.

    Returns:
        The FAISS index to write (``index`` itself, or a rebuilt one).
    """
    import faiss

    if not len(deleted):
        return index
    if removable_now(index, meta):
        index.remove_ids(faiss.IDSelectorBatch(np.ascontiguousarray(deleted, dtype=np.int64)))
        if isinstance(index, faiss.IndexFlatCodes):
            texts.renumber()
        return index
    texts.add_tombstones(deleted)
    dead = len(texts.tombstones())
    if meta.get("on_disk") or dead <= COMPACT_AT * index.ntotal:
        return index
    return compacted(index, texts, meta)


def compacted(index, texts: TextStore, meta: dict):
    """A new FAISS index of ``meta``'s type holding only the live vectors of ``index`` (the
    stored texts' ids, in order), its quantisers trained again on them; the store is renumbered
    to match. Vectors are read back from the index (HNSW: exact; IVF-PQ: its 8-bit re-ranking
    copy; binary: its int8 copy), so a compaction costs no encoding.

    Returns:
        The rebuilt index (ntotal = live texts)."""
    live = np.array(texts.column("id"), dtype=np.int64)
    if not len(live):
        vectors = np.zeros((0, int(meta["dimension"])), np.float32)
    elif hasattr(index, "reconstruct_batch"):  # FAISS's own: one call (the binary index reads its int8 copy a vector at a time)
        vectors = index.reconstruct_batch(live).astype(np.float32)
    else:
        vectors = np.stack([index.reconstruct(int(i)) for i in live]).astype(np.float32)
    kind, quantize = meta["index_type"], meta.get("quantize", "none")
    sample = training_sample(vectors) if (kind.startswith("ivf") or quantize != "none") and len(vectors) else None
    fresh = _new_faiss(kind, int(meta["dimension"]), len(vectors), sample, quantize)
    for start in range(0, len(vectors), 10_000):
        fresh.add(np.ascontiguousarray(vectors[start : start + 10_000]))
    if isinstance(fresh, BinaryRescored):
        meta["int8_ranges"] = fresh.ranges.tolist()
    texts.renumber()
    return fresh


def _windows(files: list[str], spec: IndexSpec, lang: str | None, split=None, reconcile: Reconcile | None = None) -> Iterator[list[Record]]:
    """The records of ``files`` (passages, with ``split``), then ``spec.records``, in lists of
    ``spec.options.window``; a document file among ``spec.found`` that cannot be read is added to
    ``spec.skipped`` instead of raising.
    With ``reconcile`` (:class:`~.documents.Reconcile`), only new and changed documents'
    records pass, and a record file among ``found`` that vanishes or fails while it is read is
    skipped too (its stored documents are kept, or removed when the file is gone)."""
    from .documents import file_state

    size, found, skipped, layout, given = spec.options.window, spec.found, spec.skipped, spec.options.layout, spec.records
    window: list[Record] = []
    for f in files:
        state = file_state(f)  # before reading: a file changed while it is read differs from it next time
        before = len(skipped) if skipped is not None else 0
        records = iter_records(f, lang, split, skipped if f in found else None, layout)
        if reconcile is not None:
            records = reconcile.documents(records, state)
        try:
            for record in records:
                window.append(record)
                if len(window) >= size:
                    yield window
                    window = []
        except EncodrError as exc:
            if f not in found or skipped is None:
                raise
            skipped.append(Skipped(f, str(exc).removeprefix(f"{f}: ").removeprefix(f"{f}, ")))
        if reconcile is None:
            continue
        if skipped is not None and len(skipped) > before:  # unreadable now: its documents stay as they were, unless it is gone
            if os.path.exists(f):
                reconcile.keep_unreadable(f)
        elif file_state(f) != state:
            skipped.append(Skipped(f, "changed while it was read; the next sync reads it again"))
            reconcile.forget(f)
    for doc in given or []:  # documents given whole (an upsert): each its own group, split like a file's
        records = iter_passages(doc, split)
        for record in reconcile.documents(records, (None, None)) if reconcile is not None else records:
            window.append(record)
            if len(window) >= size:
                yield window
                window = []
    if window:
        yield window


@contextlib.contextmanager
def _encoding(encoder, spec: IndexSpec, prompt: str = ""):
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
        vectors = encoder.st.encode(texts, pool=pool, batch_size=batch_size or encoder.batch_size, chunk_size=chunk, prompt=prompt, truncate_dim=encoder.truncate_dim,
                                    convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)  # fmt: skip
        on_batch(len(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    try:
        yield encode
    finally:
        encoder.st.stop_multi_process_pool(pool)


class _Ingest:
    """Texts into the store, vectors into the FAISS index (``--add``) or a raw float32 file
    (a new index, whose type and PCR are fitted on all vectors at the end).

    :meth:`fresh` runs in the caller's thread; :meth:`store` hands the window to a writer
    thread (language detection, PCR on ``--add``, SQLite, vectors) and returns once the
    previous window is stored, so one window is stored while the next is encoded. A failure
    in the writer comes out of the next :meth:`store` or the ``with`` block's end."""

    def __init__(self, tmp: Path, encoder, lang: str | None, old: Index | None, candidates: list[str] | None = None, accurate: bool = False):
        self.encoder, self.lang, self.old, self.candidates, self.accurate = encoder, lang, old, candidates, accurate
        self.detected = 0  # texts whose language came from the detector
        self.texts = TextStore.create(tmp / STORE_FILE)
        self.next_id = self.texts.next_id()
        self.raw_path = tmp / RAW_VECTORS_FILE
        self.raw = open(self.raw_path, "wb")
        self.added = self.skipped = self.passages = 0
        self.split_documents: set[str] = set()  # ids of the documents stored as several passages
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encodr-store")
        self.pending: Future | None = None
        self.pending_hashes: set[str] = set()
        self.legacy = self.texts.ensure_documents()  # a store from before documents had identity: converted, read once

    def __enter__(self) -> "_Ingest":
        return self

    def __exit__(self, kind, *exc) -> None:
        try:
            if self.pending is not None and kind is None:
                self.pending.result()
        finally:
            self.writer.shutdown(wait=True)
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
        hashes = [_text_hash(r.text) for r in records]
        known = self.texts.known(hashes)
        fresh, seen = [], set()
        for r, h in zip(records, hashes):
            if h in known or h in seen or h in self.pending_hashes:
                self.skipped += 1
                continue
            seen.add(h)
            fresh.append((r, h))
        return fresh

    def store(self, fresh: list[tuple[Record, str]], vectors: np.ndarray, whole_corpus: bool = False) -> None:
        """Queue the window for the writer thread, once the previous one is stored
        (``whole_corpus``: this window is all the corpus, so a sample of it is one of the corpus)."""
        if self.pending is not None:
            self.pending.result()
        first = self.next_id
        self.next_id += len(fresh)
        self.added += len(fresh)
        self.passages += sum(r.start is not None for r, _ in fresh)
        self.pending_hashes = {h for _, h in fresh}
        self.pending = self.writer.submit(self._write, fresh, vectors, first, whole_corpus)

    def _write(self, fresh: list[tuple[Record, str]], vectors: np.ndarray, first: int, whole_corpus: bool = False) -> None:
        langs = [r.lang or self.lang for r, _ in fresh]
        confidence: list[float | None] = [None] * len(fresh)
        unknown = [i for i, code in enumerate(langs) if code is None]
        if unknown:
            texts = [fresh[i][0].text for i in unknown]
            if whole_corpus and self.old is None:  # a new index's corpus in one window: its languages from a sample of it
                self.candidates = sampled_languages(texts)
            for i, (code, sure) in zip(unknown, detect_with_confidence(texts, self.candidates, self.accurate)):
                langs[i], confidence[i] = code, sure
            self.detected += len(unknown)
        guessed = set(unknown)
        rows = [{"id": first + i, "ext_id": r.ext_id, "text": r.text, "source": r.source, "line": r.line, "lang": langs[i], "hash": h,
                 "lang_detected": int(i in guessed), "lang_confidence": confidence[i], "title": r.title, "start": r.start}
                for i, (r, h) in enumerate(fresh)]  # fmt: skip
        self.split_documents.update(r.ext_id for r, _ in fresh if r.start is not None)
        if self.old is not None:
            if self.old.components:
                try:
                    vectors = remove_per_language(vectors, langs, self.old.components, self.old.pooled_for)
                except KeyError as missing:
                    have = ", ".join(sorted(c for c in self.old.components if c != POOLED))
                    raise EncodrError(f"index {self.old.path} has no principal component for language '{missing.args[0]}' (it has {have}); "
                                      "rebuild it with --pcr over all languages, or give --lang") from None  # fmt: skip
        if self.old is not None and not self.old.meta.get("on_disk"):
            add_vectors(self.old.faiss, vectors, first)
        else:  # a new index, or one whose lists are on disk: the vectors wait in the raw file (see _extended)
            vectors.tofile(self.raw)
        self.texts.insert(rows)


def _settle_languages(texts: TextStore) -> list[str]:
    """Second pass of language detection over a new index's store: detect again, among
    the languages that make up the corpus's confident labels (:func:`~encodr.data.language.corpus_languages`)
    and in high-accuracy mode, the texts whose language was detected. Returns those
    languages. (Nothing to do when every text got the one same label.)"""
    pairs = texts.detected_labels()
    kept = corpus_languages([code for code, _ in pairs], confidences=[sure for _, sure in pairs])
    if not kept or {code for code, _ in pairs} == set(kept) == {kept[0]}:
        return kept
    texts.relabel_detected(lambda batch: detect_languages(batch, kept))
    return kept


def _extended(tmp: Path, ingest: _Ingest, old: Index, add_blocks=None):
    """``old``'s on-disk IVF index with the ingested vectors added (ids after its own), its lists
    merged into ``tmp``'s own list file (:func:`~.ondisk.add_on_disk`, ``add_blocks`` as there):
    the old generation's files are only read."""
    vectors = ingest.raw_vectors()
    index = add_on_disk(extend_trained(old.folder / VECTORS_FILE), vectors, tmp, write_faiss, old=old.faiss, add_blocks=add_blocks,
                        old_file=old.folder / VECTORS_FILE)  # fmt: skip
    del vectors
    return index


def _new_index(tmp: Path, ingest: _Ingest, options: BuildOptions, lang: str | None, detected: list[str] | None = None, add_blocks=None):
    """The FAISS index and ``index.json`` of a new index from the ingested raw vectors, as
    ``options`` say (its PCR variant applied first, with ``pcr``; its type, quantisation and
    on-disk lists); ``detected``: the languages the detector settled on, when it labelled any
    text; ``add_blocks``: see :func:`~.ondisk.add_on_disk`."""
    pcr, index_type, quantize, on_disk = options.pcr_variant if options.pcr else None, options.index_type, options.quantize, options.on_disk
    from .. import __version__

    encoder, n, dim = ingest.encoder, ingest.next_id, ingest.encoder.dimension
    vectors = ingest.raw_vectors("r+")
    if pcr:
        langs = ingest.texts.langs()
        np.savez(tmp / PCR_FILE, **fit_and_remove(vectors, langs, pcr, strict=not ingest.detected))
    kind = "flat" if quantize == "binary" else index_type if index_type != "auto" else auto_index_type(n)
    if kind == "ivfpq" and quantize == "int8":
        kind = "ivf"  # auto above HNSW_MAX: IVF lists of int8 vectors (PQ codes are a quantisation of their own)
    if kind == "ivfpq" and n < 10_000:
        raise EncodrError(f"--index-type ivfpq needs at least 10,000 texts to train its quantisers (this corpus has {n:,}); use flat or hnsw")
    sample = training_sample(vectors) if kind.startswith("ivf") or quantize != "none" else None
    index = _new_faiss(kind, dim, n, sample, quantize)
    del sample  # trained: the sample is not held while the vectors are added
    if on_disk:
        index = add_on_disk(index, vectors, tmp, write_faiss, add_blocks=add_blocks)
    else:
        for start in range(0, n, 10_000):
            index.add(np.ascontiguousarray(vectors[start : start + 10_000]))
    del vectors
    extra = {"int8_ranges": index.ranges.tolist()} if isinstance(index, BinaryRescored) else {}
    meta = {
        "encodr_version": __version__,
        "model": encoder.name if not Path(encoder.name).exists() else str(Path(encoder.name).resolve()),
        "pooling": encoder.pooling,
        "dimension": dim,
        "truncate_dim": encoder.truncate_dim,
        "fingerprint": encoder.fingerprint,
        "index_type": kind,
        "quantize": quantize,
        "on_disk": on_disk,
        "pcr": bool(pcr),
        "pcr_variant": pcr,
        "default_lang": lang,
        "lang_detection": {"detector": DETECTOR, "languages": detected} if ingest.detected else None,
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        **extra,
    }
    return index, meta


def training_sample(vectors: np.ndarray) -> np.ndarray:
    """What an index's quantisers train on: a seeded draw of ``vectors`` (n, d), kept in row order,
    of :data:`~.store.TRAIN_SAMPLE` vectors or 39 for each of the :func:`ivf_lists` an IVF index
    of n vectors has, whichever is more (FAISS's k-means asks 39 a centroid: above about 410,000
    vectors the fixed sample would train under-filled centroids), all of them below that size.

    Returns:
        (m, d) float32, m = min(n, max(TRAIN_SAMPLE, 39 · ivf_lists(n))): 760 MB at 10M vectors of 384.
    """
    n = len(vectors)
    size = min(n, max(TRAIN_SAMPLE, TRAIN_PER_LIST * ivf_lists(n)))
    return np.asarray(vectors[np.sort(np.random.default_rng(0).choice(n, size=size, replace=False))], dtype=np.float32)


def check_quantize(quantize: str, index_type: str) -> None:
    """Refuse a ``--quantize`` that is unknown or that the index type cannot hold.

    Raises:
        EncodrError: naming the option and what to pass instead.
    """
    if quantize not in QUANTIZE:
        one_of("quantize", quantize, QUANTIZE)
    if quantize == "binary" and index_type not in ("auto", "flat"):
        raise EncodrError(f"--quantize binary searches every vector's bits (a flat Hamming scan); drop --index-type {index_type} or pass --index-type flat")
    if quantize == "int8" and index_type == "ivfpq":
        raise EncodrError("--index-type ivfpq already compresses vectors (PQ codes); use --quantize int8 with flat, hnsw or ivf, or drop --quantize")


def upsert(out: str | Path, records: list[Record], warn: Callable[[str], None] = lambda line: None, encoder: Encoder | None = None) -> dict:
    """Add or replace documents given as records (``POST /v1/indexes/{name}/documents``), each
    record a whole document (``ext_id`` its id, ``source`` :data:`~.documents.API_SOURCE`):
    new ids are added, changed ones replaced (their old passages removed), identical ones left
    as they are. One new generation, as :func:`build` with ``add`` writes it.

    Returns:
        As :func:`build`: the counts (``added``, ``updated``, ``unchanged``, ``encoded``…).

    Raises:
        EncodrError: no such index, one built before documents had identity is converted (a
            ``warn`` line), an OS fault (the index unchanged).
    """
    from ..outputs import written_by_encodr

    out = locate(out)
    if written_by_encodr(out) != "index":
        raise EncodrError(f"index {out} does not exist; build it with encodr index CORPUS --out {out}", field="index", status=404)
    with index_lock(out):
        spec = IndexSpec([], out, BuildOptions(model=encoder, add=True), warn, records=list(records))
        try:
            return _build_locked(spec, silent)
        except (OSError, sqlite3.OperationalError) as exc:
            raise os_fault(exc, getattr(exc, "filename", None) or out, kept="the previous index is unchanged") from None


def delete(out: str | Path, ids: list[str] = (), sources: list[str] = (), filters: list = (), warn: Callable[[str], None] = lambda line: None) -> dict:
    """Remove documents from an index: those whose id is in ``ids``, and those whose source
    matches one of the globs ``sources`` (as :mod:`.filters`' ``source``) and that pass all
    ``filters`` (either may be empty).
    Their texts go unless another document holds them; their vectors leave a flat or IVF index
    at once and stay as tombstones elsewhere (:func:`remove_texts`). One new generation: a
    search sees the documents or none of their removal, never half; the keyword index follows.

    Returns:
        ``removed`` (documents), ``not_found`` (ids asked for that the index lacks),
        ``deleted_texts``, ``tombstones`` (after), ``compacted``, ``count``, ``documents``, ``path``.

    Raises:
        EncodrError: no criterion, no such index, one built before documents had identity
            (sync it once), a bad filter; an OS fault, with the index unchanged.
    """
    from . import filters as fl

    if not (ids or sources or filters):
        raise EncodrError("name the documents to delete: IDs, --source GLOB or --filter FIELD=VALUE", field="ids")
    out = locate(out)
    with _rewriting(out) as old:
        if not old.texts.has_documents:
            raise EncodrError(f"index {out} was built before documents kept their identity; bring it up to date once with "
                              f"encodr index PATH… --out {out} --sync, then delete")  # fmt: skip
        wanted: set[str] = set()
        known = old.texts.documents_info(list(ids)) if ids else {}
        missing = [i for i in ids if i not in known]
        wanted.update(known)
        chosen = list(filters) + ([fl.Filter("source", "in", tuple(sources))] if sources else [])
        if chosen:
            dsql, dparams, tsql, tparams = fl.sql(chosen)
            if tsql:
                raise EncodrError("--filter lang applies to texts, not documents; delete by id, source or a metadata field", field="filter")
            wanted.update(old.texts.documents_matching(dsql, dparams))
        return _delete_locked(out, old, sorted(wanted), missing)


@contextlib.contextmanager
def _rewriting(out: Path):
    """The index ``out`` locked against other writers and opened, for a write that rewrites its
    current generation (:func:`delete`, :func:`compact`); an OS fault inside becomes one line
    saying the index is unchanged, and the index is closed however the block ends."""
    with index_lock(out):
        old = Index.open(out)
        try:
            yield old
        except (OSError, sqlite3.OperationalError) as exc:
            raise os_fault(exc, getattr(exc, "filename", None) or out, kept="the previous index is unchanged") from None
        finally:
            old.close()


def compact(out: str | Path) -> dict:
    """Rebuild an index's FAISS index from its live vectors now, dropping every tombstone
    (what a write does by itself once they pass :data:`COMPACT_AT`; Lucene's ``forceMerge``).
    One new generation; nothing is encoded.

    Returns:
        As :func:`delete` (``removed`` 0).

    Raises:
        EncodrError: no such index; an on-disk IVF index (built again to compact it); an OS fault, the index unchanged.
    """
    out = locate(out)
    with _rewriting(out) as old:
        if old.meta.get("on_disk"):
            raise EncodrError(f"index {out} keeps its IVF lists on disk: compact it by building it again (encodr index … --overwrite)")
        return _delete_locked(out, old, [], [], force=True)


def _delete_locked(out: Path, old: Index, wanted: list[str], missing: list[str], force: bool = False) -> dict:
    """:func:`delete` once the documents are known and the index is locked (``force``: compact
    even below the threshold, :func:`compact`)."""
    with generation(out, legacy=INDEX_FILES) as tmp:
        old.copy_store(tmp / STORE_FILE)
        if (old.folder / PCR_FILE).exists():
            shutil.copy2(old.folder / PCR_FILE, tmp / PCR_FILE)
        texts = TextStore.create(tmp / STORE_FILE)
        try:
            texts.ensure_documents()
            deleted = texts.settle_members([], wanted)
            meta = dict(old.meta)
            index = remove_texts(old.faiss, deleted, texts, meta)
            if force and len(texts.tombstones()) and index is old.faiss:
                index = compacted(old.faiss, texts, meta)
            rewritten = index is not old.faiss or removable_now(old.faiss, meta)
            meta["count"] = int(index.ntotal)
            meta["documents"] = texts.document_count()
            meta["deleted"] = len(texts.tombstones())
            meta["languages"] = texts.languages()
            meta["updated"] = time.strftime("%Y-%m-%d %H:%M:%S")
            if len(deleted) or index is not old.faiss:  # texts gone, or ids renumbered: the keyword index follows
                texts.build_keywords()
        finally:
            texts.close()
        if rewritten:
            write_faiss(index, tmp / VECTORS_FILE)
        else:  # the vectors are unchanged (tombstones only): the new generation shares the old files
            for name in (VECTORS_FILE, ONDISK_FILE, RESCORE_FILE):
                if (old.folder / name).exists():
                    _link_or_copy(old.folder / name, tmp / name)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
        old.close()
    return {"removed": len(wanted), "not_found": missing, "deleted_texts": int(len(deleted)), "tombstones": meta["deleted"], "compacted": index is not old.faiss and not removable_now(old.faiss, meta),
            "count": meta["count"], "documents": meta["documents"], "path": str(out.resolve())}  # fmt: skip


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link of ``source`` at ``target`` (instant, no space), or a copy across file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
