"""Indexes on disk: vectors in FAISS (normalised, inner product = cosine), texts and
metadata in SQLite (sqlite-utils), settings in ``index.json``.

Layout of an index directory::

    index.json      model spec, pooling, dimension, weight fingerprint, count, index type, PCR
    vectors.faiss   FAISS index; vector i is row id i of the store
    texts.db        SQLite table ``texts``: id, ext_id, text, source, line, lang, hash
    pcr.npz         (with --pcr) first principal component of each language's vectors

Builds and ``--add`` happen in a temporary directory that replaces the old one by rename, so
an interrupted run (even SIGKILL) leaves the previous index intact.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from .errors import EncodrError
from .outputs import atomic_dir, check_target

META_FILE, VECTORS_FILE, STORE_FILE, PCR_FILE = "index.json", "vectors.faiss", "texts.db", "pcr.npz"
FLAT_MAX = 50_000  # exact search up to this many vectors, HNSW above (unless --index-type)
INDEX_TYPES = ("auto", "flat", "hnsw", "ivf")
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 80, 128
IVF_NPROBE = 32


@dataclass(frozen=True)
class Record:
    """One text to index, with where it came from (1-based line number)."""

    text: str
    source: str
    line: int
    ext_id: str | None = None
    lang: str | None = None


def read_records(path: str | Path, default_lang: str | None = None) -> Iterator[Record]:
    """Stream the texts of a corpus file, one line at a time (memory bounded by a line).

    Plain text: one text a line. TSV (``.tsv``) with a header that has a ``text`` column,
    and optionally ``id`` and ``lang``. Blank texts are skipped.

    Raises:
        EncodrError: missing file, a directory, bytes that are not UTF-8 (with the line
            number), or a TSV without a ``text`` column.
    """
    p = Path(path)
    if not p.exists():
        raise EncodrError(f"{path}: no such file; pass a text file (one text a line) or a TSV with a 'text' column")
    if p.is_dir():
        raise EncodrError(f"{path} is a directory; pass the corpus files inside it")
    columns = None
    with open(p, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise EncodrError(f"{path}: line {number} is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); convert the file to UTF-8") from None
            if number == 1:
                line = line.lstrip("\ufeff")
                if p.suffix.lower() == ".tsv":
                    columns = [c.strip().lower() for c in line.split("\t")]
                    if "text" not in columns:
                        raise EncodrError(f"{path}: a .tsv corpus needs a header with a 'text' column (optional: id, lang)")
                    continue
            if columns:
                cells = dict(zip(columns, line.split("\t")))
                text = cells.get("text", "").strip()
                if text:
                    yield Record(text, str(p), number, cells.get("id") or None, cells.get("lang") or default_lang)
            elif line.strip():
                yield Record(line.strip(), str(p), number, None, default_lang)


def fingerprint(encoder) -> str:
    """SHA-256 (first 16 hex digits) of the encoder's weights and pooling: two encoders
    with the same fingerprint give the same vectors."""
    h = hashlib.sha256(encoder.pooling.encode())
    for name, tensor in sorted(encoder.st.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def remove_component(vectors: np.ndarray, component: np.ndarray) -> np.ndarray:
    """Principal-component removal (CMLM §5.2): v − (v·u)u, then L2-normalise.

    Args:
        vectors: float32 (n, d).
        component: unit vector (d,).

    Returns:
        float32 (n, d), unit norm.
    """
    out = vectors - np.outer(vectors @ component, component)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out.astype(np.float32)


def first_component(covariance_sum: np.ndarray, vector_sum: np.ndarray, n: int) -> np.ndarray:
    """First principal component (unit vector) from streamed sums Σvvᵀ and Σv over n vectors."""
    mean = vector_sum / n
    cov = covariance_sum / n - np.outer(mean, mean)
    _, vecs = np.linalg.eigh(cov)
    return vecs[:, -1].astype(np.float32)


def locate(spec: str | Path) -> Path:
    """The index directory that ``--index SPEC`` names: ``SPEC`` itself when it exists or is a
    path with a folder in it, otherwise the workspace index of that name
    (``$ENCODR_HOME/indexes/SPEC``, as listed by ``encodr indexes``) when there is one."""
    from .paths import home

    path = Path(spec)
    if path.exists() or len(path.parts) != 1:
        return path
    named = home() / "indexes" / path.name
    return named if named.is_dir() else path


class Index:
    """An index directory opened for search.

    Attributes:
        path: the directory.
        meta: the contents of ``index.json``.
        faiss: the FAISS index.
        components: language → first principal component (empty without PCR).
    """

    def __init__(self, path: Path, meta: dict, faiss_index, components: dict[str, np.ndarray]):
        self.path, self.meta, self.faiss, self.components = path, meta, faiss_index, components
        self._db = sqlite3.connect(str(path / STORE_FILE), check_same_thread=False)

    @classmethod
    def open(cls, path: str | Path) -> "Index":
        """Open and check an index: all files present and readable, and FAISS, SQLite and
        ``index.json`` agreeing on the number of vectors.

        Args:
            path: the index directory, or the name of an index in the workspace (:func:`locate`).

        Raises:
            EncodrError: naming the missing, corrupted or disagreeing file.
        """
        import faiss

        path = locate(path)
        if path.is_file():
            raise EncodrError(f"{path} is a file; --index takes an index directory (built by encodr index) or a workspace index name")
        if not path.is_dir():
            raise EncodrError(f"index {path} does not exist (nor in the workspace, see encodr indexes); build one with: encodr index CORPUS --out {path}")
        for name in (META_FILE, VECTORS_FILE, STORE_FILE):
            if not (path / name).is_file():
                raise EncodrError(f"index {path} is missing {name}; rebuild it with encodr index")
        try:
            meta = json.loads((path / META_FILE).read_text())
            count = int(meta["count"])
        except (ValueError, KeyError, TypeError):
            raise EncodrError(f"{path / META_FILE} is corrupted (not the JSON encodr wrote); rebuild the index") from None
        try:
            index = faiss.read_index(str(path / VECTORS_FILE))
        except RuntimeError:
            raise EncodrError(f"{path / VECTORS_FILE} is corrupted (FAISS cannot read it); rebuild the index") from None
        try:
            with sqlite3.connect(f"file:{path / STORE_FILE}?mode=ro", uri=True) as db:
                rows = db.execute("select count(*) from texts").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise EncodrError(f"{path / STORE_FILE} is corrupted ({exc}); rebuild the index") from None
        if not index.ntotal == rows == count:
            raise EncodrError(
                f"index {path} is inconsistent: {VECTORS_FILE} has {index.ntotal} vectors, {STORE_FILE} {rows} texts, "
                f"{META_FILE} says {count}; rebuild it with encodr index"
            )
        if hasattr(index, "hnsw"):
            index.hnsw.efSearch = HNSW_EF_SEARCH
        if hasattr(index, "nprobe"):
            index.nprobe = IVF_NPROBE
        components = {}
        if meta.get("pcr"):
            try:
                with np.load(path / PCR_FILE) as z:
                    components = {k: z[k] for k in z.files}
            except (OSError, ValueError):
                raise EncodrError(f"{path / PCR_FILE} is missing or corrupted; rebuild the index with --pcr") from None
        return cls(path, meta, index, components)

    def __len__(self) -> int:
        return int(self.faiss.ntotal)

    def prepare_queries(self, vectors: np.ndarray, lang: str | None = None) -> np.ndarray:
        """Apply the index's PCR for ``lang`` (default: the index's default language).

        Args:
            vectors: float32 (q, d) unit-norm query vectors.
            lang: the queries' language code.

        Returns:
            float32 (q, d), unit norm (unchanged without PCR).

        Raises:
            EncodrError: ``lang`` has no component, or is given for an index without PCR.
        """
        if not self.components:
            if lang is not None:
                raise EncodrError(f"index {self.path} was built without --pcr, so a query language changes nothing; drop --lang")
            return vectors
        lang = lang or self.meta.get("default_lang")
        if lang not in self.components:
            raise EncodrError(f"index {self.path} has no principal component for language '{lang}'; use --lang with one of {', '.join(sorted(self.components))}")
        return remove_component(vectors, self.components[lang])

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """k nearest vectors by inner product.

        Args:
            vectors: float32 (q, d), unit norm (after :meth:`prepare_queries`).
            k: neighbours per query.

        Returns:
            (scores float32 (q, k), ids int64 (q, k)); id −1 pads when k > len(index).
        """
        return self.faiss.search(np.ascontiguousarray(vectors, dtype=np.float32), min(k, len(self)))

    def rows(self, ids: Iterable[int]) -> dict[int, dict]:
        """Stored rows by id: ``text``, ``source``, ``line``, ``lang``, ``ext_id``."""
        ids = [int(i) for i in ids if i >= 0]
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        cur = self._db.execute(f"select id, ext_id, text, source, line, lang from texts where id in ({marks})", ids)
        return {r[0]: {"id": r[0], "ext_id": r[1], "text": r[2], "source": r[3], "line": r[4], "lang": r[5]} for r in cur}

    def vectors_of(self, ids: list[int]) -> np.ndarray:
        """Stored vectors (for exact re-ranking and benchmarks)."""
        return np.stack([self.faiss.reconstruct(int(i)) for i in ids])


def list_indexes(root: Path | None = None) -> list[dict]:
    """Index directories under ``root`` (default: ``$ENCODR_HOME/indexes``), with their
    ``index.json`` fields (``name``, the one ``--index`` takes, and ``path`` added); unreadable
    ones are listed with ``error``."""
    from .paths import home

    root = Path(root) if root else home() / "indexes"
    found = []
    for meta_file in sorted(root.glob(f"*/{META_FILE}")):
        where = {"name": meta_file.parent.name, "path": str(meta_file.parent)}
        try:
            found.append({**where, **json.loads(meta_file.read_text())})
        except ValueError:
            found.append({**where, "error": f"{META_FILE} is corrupted; rebuild the index"})
        except OSError as exc:
            found.append({**where, "error": f"{META_FILE} cannot be read ({exc.strerror})"})
    return found


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
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Build an index of ``files`` with ``model`` in ``out``, or append to it (``add``).

    Texts stream through in batches of ``batch_size``: read → deduplicate (a text already
    in the index is stored once) → encode → store. The index type follows the size
    (exact ``flat`` up to :data:`FLAT_MAX` vectors, ``hnsw`` above) unless given. With
    ``pcr``, the first principal component of each language's vectors is fitted and
    removed (CMLM §5.2). ``--add`` keeps the index type, model and PCR components.

    Args:
        files: corpus files (plain text or TSV with ``text``, ``id``, ``lang``).
        model: model spec; with ``add``, must match the index's model (or be ``None``).
        out: index directory (with ``add``, also the name of a workspace index).
        index_type: ``auto``, ``flat``, ``hnsw`` or ``ivf``.
        add: append to the existing index at ``out``.
        overwrite: replace an existing index (without ``add``).
        pcr: fit and apply per-language principal-component removal.
        lang: language of texts without a ``lang`` column (default ``und``).
        batch_size: texts per encoding batch (bounds memory).
        progress: called with 0 once the inputs are checked and the model is loaded, then
            with the number of texts read after each batch.

    Returns:
        The index metadata (``index.json``) plus ``added`` and ``skipped_duplicates``.

    Raises:
        EncodrError: bad input files, an unknown index type, a model that differs from the
            index's, or an existing output without ``overwrite``/``add``.
    """
    import faiss
    import sqlite_utils

    from .models import load_encoder

    out = locate(out) if add else Path(out)
    if index_type not in INDEX_TYPES:
        raise EncodrError(f"unknown index type '{index_type}'; choose one of {', '.join(INDEX_TYPES)}")
    if not files:
        raise EncodrError("no corpus file given; pass one or more text or TSV files")
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
    lang = lang or "und"
    if progress:
        progress(0)  # inputs checked and model loaded: the work starts
    started = time.time()
    with atomic_dir(out, overwrite=overwrite or add) as tmp:
        if old is not None:
            for name in (META_FILE, STORE_FILE, PCR_FILE):
                if (out / name).exists():
                    shutil.copy2(out / name, tmp / name)
            index = old.faiss
            meta = dict(old.meta)
            components = dict(old.components)
        db = sqlite_utils.Database(tmp / STORE_FILE)
        if "texts" not in db.table_names():
            db["texts"].create({"id": int, "ext_id": str, "text": str, "source": str, "line": int, "lang": str, "hash": str}, pk="id")
            db["texts"].create_index(["hash"], unique=True)
        next_id = db.execute("select coalesce(max(id) + 1, 0) from texts").fetchone()[0]
        raw_path = tmp / "vectors.f32"
        read = skipped = added = 0
        with open(raw_path, "wb") as raw:
            batch: list[Record] = []

            def flush():
                nonlocal next_id, added, skipped
                fresh, seen = [], set()
                hashes = [_text_hash(r.text) for r in batch]
                marks = ",".join("?" * len(hashes))
                known = {h for (h,) in db.execute(f"select hash from texts where hash in ({marks})", hashes)}
                for r, h in zip(batch, hashes):
                    if h in known or h in seen:
                        skipped += 1
                        continue
                    seen.add(h)
                    fresh.append((r, h))
                if fresh:
                    vectors = encoder.encode([r.text for r, _ in fresh])
                    rows = [{"id": next_id + i, "ext_id": r.ext_id, "text": r.text, "source": r.source, "line": r.line,
                             "lang": r.lang or lang, "hash": h} for i, (r, h) in enumerate(fresh)]  # fmt: skip
                    if old is not None:
                        langs = np.array([row["lang"] for row in rows])
                        for code, comp in components.items():
                            if (langs == code).any():
                                vectors[langs == code] = remove_component(vectors[langs == code], comp)
                        index.add(vectors)
                    else:
                        vectors.tofile(raw)
                    db["texts"].insert_all(rows)
                    next_id += len(fresh)
                    added += len(fresh)
                batch.clear()

            for f in files:
                for record in read_records(f, lang):
                    batch.append(record)
                    read += 1
                    if len(batch) >= batch_size:
                        flush()
                        if progress:
                            progress(read)
            if batch:
                flush()
                if progress:
                    progress(read)
        n = next_id
        if old is None:
            dim = encoder.dimension
            vectors = np.memmap(raw_path, dtype=np.float32, mode="r+", shape=(n, dim))
            components = {}
            if pcr:
                langs = [row[0] for row in db.execute("select lang from texts order by id")]
                for code in sorted(set(langs)):
                    idx = np.array([i for i, c in enumerate(langs) if c == code])
                    if len(idx) < 2:
                        raise EncodrError(f"language '{code}' has only 1 distinct text; --pcr fits a principal component per language and needs at least 2 (add texts, or drop --pcr)")
                    sub = np.asarray(vectors[idx])
                    components[code] = first_component(sub.T @ sub, sub.sum(axis=0), len(idx))
                    vectors[idx] = remove_component(sub, components[code])
                np.savez(tmp / PCR_FILE, **components)
            kind = index_type if index_type != "auto" else ("flat" if n <= FLAT_MAX else "hnsw")
            rng = np.random.default_rng(0)
            sample = np.asarray(vectors[np.sort(rng.choice(n, size=min(n, 50_000), replace=False))]) if kind == "ivf" else None
            index = _new_faiss(kind, dim, n, sample)
            for start in range(0, n, 10_000):
                index.add(np.ascontiguousarray(vectors[start : start + 10_000]))
            del vectors
            from . import __version__

            meta = {
                "encodr_version": __version__,
                "model": encoder.name if not Path(encoder.name).exists() else str(Path(encoder.name).resolve()),
                "pooling": encoder.pooling,
                "dimension": dim,
                "fingerprint": fingerprint(encoder),
                "index_type": kind,
                "pcr": bool(pcr),
                "default_lang": lang,
                "created": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
        raw_path.unlink()
        meta["count"] = int(index.ntotal)
        meta["languages"] = sorted({row[0] for row in db.execute("select distinct lang from texts")})
        meta["updated"] = time.strftime("%Y-%m-%d %H:%M:%S")
        db.close()
        faiss.write_index(index, str(tmp / VECTORS_FILE))
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
    return {**meta, "added": added, "skipped_duplicates": skipped, "seconds": round(time.time() - started, 2), "path": str(out.resolve())}
