"""Building an index: read → deduplicate → encode → store, atomically (see :mod:`.store`)."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import numpy as np

from ..data.language import DETECTOR, SMALL_CORPUS, corpus_languages, detect_languages
from ..data.records import Record, read_records
from ..errors import EncodrError
from ..models.pcr import DEFAULT_VARIANT, PCR_VARIANTS, fit_and_remove, remove_per_language
from ..outputs import atomic_dir, check_target
from ..progress import ProgressEvent, ProgressFn, silent
from .store import FLAT_MAX, HNSW_EF_CONSTRUCTION, HNSW_M, INDEX_TYPES, META_FILE, PCR_FILE, STORE_FILE, VECTORS_FILE, Index, fingerprint, locate


def _text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _count_lines(path: str) -> int:
    """Lines in a file (the progress total), without decoding it."""
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def _new_faiss(kind: str, dim: int, n: int, sample: np.ndarray):
    import faiss

    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        return index
    nlist = max(1, min(int(4 * np.sqrt(n)), n // 39))
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    index.train(sample)
    return index


def build(
    files: list[str],
    model: str | None,
    out: str | Path,
    index_type: str = "auto",
    add: bool = False,
    overwrite: bool = False,
    pcr: bool = False,
    lang: str | None = None,
    batch_size: int = 256,
    progress: ProgressFn = silent,
    pcr_variant: str = DEFAULT_VARIANT,
) -> dict:
    """Build an index of ``files`` with ``model`` in ``out``, or append to it (``add``).

    Texts stream through in batches of ``batch_size``: read → deduplicate (a text already
    in the index is stored once) → encode → store. The index type follows the size
    (exact ``flat`` up to :data:`FLAT_MAX` vectors, ``hnsw`` above) unless given. With
    ``pcr``, the first principal component of each language's vectors is fitted and
    removed (CMLM §5.2). ``--add`` keeps the index type, model and PCR components.

    Languages: a ``lang`` column wins, then ``lang``. Without either, each text's language is
    detected (:mod:`encodr.data.language`): first among all languages (high-accuracy mode up to
    10,000 lines), then, once the whole
    corpus is in, again among the languages that make up at least 1 % of it, which undoes
    most of the detector's mistakes on short texts. ``--add`` detects among the languages
    the index already has.

    Args:
        files: corpus files (plain text or TSV with ``text``, ``id``, ``lang``).
        model: model spec; with ``add``, must match the index's model (or be ``None``).
        out: index directory (with ``add``, also the name of a workspace index).
        index_type: ``auto``, ``flat``, ``hnsw`` or ``ivf``.
        add: append to the existing index at ``out``.
        overwrite: replace an existing index (without ``add``).
        pcr: fit and apply per-language principal-component removal.
        pcr_variant: ``centred`` or ``uncentred`` first component (:mod:`encodr.models.pcr`).
        lang: language of texts without a ``lang`` column (default: detected).
        batch_size: texts per encoding batch (bounds memory).
        progress: receives ``ProgressEvent("indexing", lines read, lines in all)``: first with
            0 once the inputs are checked and the model is loaded, then after each batch.

    Returns:
        The index metadata (``index.json``) plus ``added`` and ``skipped_duplicates``.

    Raises:
        EncodrError: bad input files, an unknown index type, a model that differs from the
            index's, or an existing output without ``overwrite``/``add``.
    """
    import faiss

    from ..models import load_encoder

    out = locate(out) if add else Path(out)
    if index_type not in INDEX_TYPES:
        raise EncodrError(f"unknown index type '{index_type}'; choose one of {', '.join(INDEX_TYPES)}")
    if not files:
        raise EncodrError("no corpus file given; pass one or more text or TSV files")
    if pcr_variant not in PCR_VARIANTS:
        raise EncodrError(f"unknown PCR variant '{pcr_variant}'; choose one of {', '.join(PCR_VARIANTS)}")
    if not add:
        check_target(out, overwrite)
    firsts = [next(iter(read_records(f)), None) for f in files]  # fail before any work
    if not add and all(r is None for r in firsts):
        raise EncodrError(f"{', '.join(files)}: no text to index (all lines blank)")
    old = Index.open(out) if add else None
    if old is not None:
        encoder = load_encoder(model or old.meta["model"])
        if fingerprint(encoder) != old.meta["fingerprint"]:
            raise EncodrError(f"model '{model}' differs from the model index {out} was built with ({old.meta['model']}); drop --model or build a new index")
        lang = lang or old.meta.get("default_lang")
    else:
        encoder = load_encoder(model)
    candidates = (old.meta.get("lang_detection") or {}).get("languages") if old is not None else None
    total = sum(_count_lines(f) for f in files)
    progress(ProgressEvent("indexing", 0, total))  # inputs checked and model loaded: the work starts
    started = time.time()
    with atomic_dir(out, overwrite=overwrite or add) as tmp:
        if old is not None:
            for name in (META_FILE, STORE_FILE, PCR_FILE):
                if (out / name).exists():
                    shutil.copy2(out / name, tmp / name)
        with _Ingest(tmp, encoder, lang, old, candidates, accurate=total <= SMALL_CORPUS) as ingest:
            read, batch = 0, []
            for f in files:
                for record in read_records(f, lang):
                    batch.append(record)
                    read += 1
                    if len(batch) >= batch_size:
                        ingest.flush(batch)
                        progress(ProgressEvent("indexing", read, total))
            if batch:
                ingest.flush(batch)
                progress(ProgressEvent("indexing", read, total))
        detected = ingest.detected and old is None and _settle_languages(ingest.db)
        if old is None:
            index, meta = _new_index(tmp, ingest, pcr_variant if pcr else None, index_type, lang, detected)
        else:
            index, meta = old.faiss, dict(old.meta)
        ingest.raw_path.unlink()
        meta["count"] = int(index.ntotal)
        meta["languages"] = sorted({row[0] for row in ingest.db.execute("select distinct lang from texts")})
        meta["updated"] = time.strftime("%Y-%m-%d %H:%M:%S")
        ingest.db.close()
        faiss.write_index(index, str(tmp / VECTORS_FILE))
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
    added, skipped = ingest.added, ingest.skipped
    return {**meta, "added": added, "skipped_duplicates": skipped, "seconds": round(time.time() - started, 2), "path": str(out.resolve())}


class _Ingest:
    """Texts into the store, vectors into the FAISS index (``--add``) or a raw float32 file
    (a new index, whose type and PCR are fitted on all vectors at the end)."""

    def __init__(self, tmp: Path, encoder, lang: str | None, old: Index | None, candidates: list[str] | None = None, accurate: bool = False):
        import sqlite_utils

        self.encoder, self.lang, self.old, self.candidates, self.accurate = encoder, lang, old, candidates, accurate
        self.detected = 0  # texts whose language came from the detector
        self.db = sqlite_utils.Database(tmp / STORE_FILE)
        if "texts" not in self.db.table_names():
            self.db["texts"].create({"id": int, "ext_id": str, "text": str, "source": str, "line": int, "lang": str, "hash": str, "lang_detected": int}, pk="id")
            self.db["texts"].create_index(["hash"], unique=True)
        self.next_id = self.db.execute("select coalesce(max(id) + 1, 0) from texts").fetchone()[0]
        self.raw_path = tmp / "vectors.f32"
        self.raw = open(self.raw_path, "wb")
        self.added = self.skipped = 0

    def __enter__(self) -> "_Ingest":
        return self

    def __exit__(self, *exc) -> None:
        self.raw.close()

    def flush(self, batch: list[Record]) -> None:
        """Store the batch's new texts (a text already stored, or twice in the batch, is
        skipped) and their vectors; empties ``batch``."""
        fresh, seen = [], set()
        hashes = [_text_hash(r.text) for r in batch]
        marks = ",".join("?" * len(hashes))
        known = {h for (h,) in self.db.execute(f"select hash from texts where hash in ({marks})", hashes)}
        for r, h in zip(batch, hashes):
            if h in known or h in seen:
                self.skipped += 1
                continue
            seen.add(h)
            fresh.append((r, h))
        if fresh:
            vectors = self.encoder.encode([r.text for r, _ in fresh])
            langs = [r.lang or self.lang for r, _ in fresh]
            unknown = [i for i, code in enumerate(langs) if code is None]
            if unknown:
                for i, code in zip(unknown, detect_languages([fresh[i][0].text for i in unknown], self.candidates, self.accurate)):
                    langs[i] = code
                self.detected += len(unknown)
            guessed = set(unknown)
            rows = [{"id": self.next_id + i, "ext_id": r.ext_id, "text": r.text, "source": r.source, "line": r.line,
                     "lang": langs[i], "hash": h, "lang_detected": int(i in guessed)} for i, (r, h) in enumerate(fresh)]  # fmt: skip
            if self.old is not None:
                if self.old.components:
                    try:
                        vectors = remove_per_language(vectors, langs, self.old.components)
                    except KeyError as missing:
                        have = ", ".join(sorted(self.old.components))
                        raise EncodrError(f"index {self.old.path} has no principal component for language '{missing.args[0]}' (it has {have}); "
                                          "rebuild it with --pcr over all languages, or give --lang") from None  # fmt: skip
                self.old.faiss.add(vectors)
            else:
                vectors.tofile(self.raw)
            self.db["texts"].insert_all(rows, alter=True)
            self.next_id += len(fresh)
            self.added += len(fresh)
        batch.clear()


def _settle_languages(db, chunk: int = 10_000) -> list[str]:
    """Second pass of language detection over a new index's store: detect again, among
    the languages that make up the corpus (:func:`~encodr.data.language.corpus_languages`)
    and in high-accuracy mode, the texts whose language was detected. Returns those
    languages. (Nothing to do when every text got the one same label.)"""
    labels = {code for (code,) in db.execute("select distinct lang from texts where lang_detected = 1")}
    kept = corpus_languages(code for (code,) in db.execute("select lang from texts where lang_detected = 1"))
    if not kept or labels == set(kept) == {kept[0]}:
        return kept
    last = db.execute("select max(id) from texts").fetchone()[0]
    for start in range(0, last + 1, chunk):
        rows = db.execute("select id, text from texts where lang_detected = 1 and id >= ? and id < ?", (start, start + chunk)).fetchall()
        if rows:
            codes = detect_languages([text for _, text in rows], kept)
            db.conn.executemany("update texts set lang = ? where id = ?", [(code, i) for code, (i, _) in zip(codes, rows)])
    db.conn.commit()
    return kept


def _new_index(tmp: Path, ingest: _Ingest, pcr: str | None, index_type: str, lang: str | None, detected: list[str] | None = None):
    """The FAISS index and ``index.json`` of a new index from the ingested raw vectors
    (PCR of the variant ``pcr`` applied first, when given; ``detected``: the languages the
    detector settled on, when it labelled any text)."""
    from .. import __version__

    encoder, n, dim = ingest.encoder, ingest.next_id, ingest.encoder.dimension
    vectors = np.memmap(ingest.raw_path, dtype=np.float32, mode="r+", shape=(n, dim))
    if pcr:
        langs = [row[0] for row in ingest.db.execute("select lang from texts order by id")]
        np.savez(tmp / PCR_FILE, **fit_and_remove(vectors, langs, pcr, strict=not ingest.detected))
    kind = index_type if index_type != "auto" else ("flat" if n <= FLAT_MAX else "hnsw")
    rng = np.random.default_rng(0)
    sample = np.asarray(vectors[np.sort(rng.choice(n, size=min(n, 50_000), replace=False))]) if kind == "ivf" else None
    index = _new_faiss(kind, dim, n, sample)
    for start in range(0, n, 10_000):
        index.add(np.ascontiguousarray(vectors[start : start + 10_000]))
    del vectors
    meta = {
        "encodr_version": __version__,
        "model": encoder.name if not Path(encoder.name).exists() else str(Path(encoder.name).resolve()),
        "pooling": encoder.pooling,
        "dimension": dim,
        "fingerprint": fingerprint(encoder),
        "index_type": kind,
        "pcr": bool(pcr),
        "pcr_variant": pcr,
        "default_lang": lang,
        "lang_detection": {"detector": DETECTOR, "languages": detected} if ingest.detected else None,
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    return index, meta
