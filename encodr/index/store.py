"""Indexes on disk: vectors in FAISS (normalised, inner product = cosine), texts and
metadata in SQLite (sqlite-utils), settings in ``index.json``.

Layout of an index directory::

    index.json      model spec, pooling, dimension, weight fingerprint, count, index type, PCR
    vectors.faiss   FAISS index; vector i is row id i of the store
    texts.db        SQLite table ``texts``: id, ext_id, text, source, line, lang, hash,
                    lang_detected (1: lang came from the detector, not the input)
    pcr.npz         (with --pcr) first principal component of each language's vectors
                    (``*``: of all vectors, for detected languages with a single text)

Builds and ``--add`` happen in a temporary directory that replaces the old one by rename, so
an interrupted run (even SIGKILL) leaves the previous index intact.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Iterable

import numpy as np

from ..errors import EncodrError
from ..models.pcr import POOLED, remove_per_language

META_FILE, VECTORS_FILE, STORE_FILE, PCR_FILE = "index.json", "vectors.faiss", "texts.db", "pcr.npz"
# --index-type auto: exact search up to FLAT_MAX vectors, HNSW up to HNSW_MAX, IVF-PQ above
# (chosen with bench/search.py: each meets p99 < 10 ms and recall@10 >= 0.95 in its range).
FLAT_MAX = 50_000
HNSW_MAX = 250_000
INDEX_TYPES = ("auto", "flat", "hnsw", "ivf", "ivfpq")
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 80, 128
# IVF lists visited per query, by index type (--nprobe overrides).
IVF_NPROBE = {"ivf": 32, "ivfpq": 128}
# IVF-PQ: PQ_BYTES one-byte codes per vector, re-ranked by a scalar-quantised (8-bit) copy of
# each vector: the REFINE_K_FACTOR × k best PQ candidates are scored again, nearly exactly.
# On 336,198 MiniLM vectors (bench/search.py): PQ alone finds 0.55 of the exact top 10; with
# the 8-bit re-ranking 0.97 (nprobe 128, k-factor 32) at p99 1.1 ms; 6- and 4-bit re-ranking
# 0.94 and 0.82. The 8-bit copy is most of the size (d bytes of d + 48 + 8 per vector).
PQ_BYTES, REFINE_K_FACTOR = 48, 32
TRAIN_SAMPLE = 100_000  # vectors an IVF quantiser is trained on (a seeded sample; FAISS asks 39 per list)


def locate(spec: str | Path) -> Path:
    """The index directory that ``--index SPEC`` names: ``SPEC`` itself when it exists or is a
    path with a folder in it, otherwise the workspace index of that name
    (``$ENCODR_HOME/indexes/SPEC``, as listed by ``encodr indexes``) when there is one."""
    from ..paths import home

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

    def __init__(self, path: Path, meta: dict, faiss_index, components: dict[str, np.ndarray],
                 nprobe: int | None = None, ef_search: int | None = None):  # fmt: skip
        self.path, self.meta, self.faiss, self.components = path, meta, faiss_index, components
        self.nprobe = nprobe or IVF_NPROBE.get(meta.get("index_type"), IVF_NPROBE["ivf"])
        self.ef_search = ef_search or HNSW_EF_SEARCH
        self._db = sqlite3.connect(str(path / STORE_FILE), check_same_thread=False)

    @classmethod
    def open(cls, path: str | Path, mmap: bool = False, nprobe: int | None = None, ef_search: int | None = None) -> "Index":
        """Open and check an index: all files present and readable, and FAISS, SQLite and
        ``index.json`` agreeing on the number of vectors.

        Args:
            path: the index directory, or the name of an index in the workspace (:func:`locate`).
            mmap: memory-map ``vectors.faiss`` (FAISS ``IO_FLAG_MMAP_IFC``: the codes stay in
                the file, zero-copy) instead of reading it: opening takes no time and no memory up
                front, and the OS pages in what searches touch (336k IVF-PQ vectors: 1 ms and 2 MB
                to open instead of 79 ms and 146 MB; ``IO_FLAG_MMAP`` still copied them). A mapped
                index is read-only (``--add`` opens without it).
            nprobe: IVF lists visited per query (default: :data:`IVF_NPROBE` of the index
                type): more is slower and finds more of the exact neighbours.
            ef_search: HNSW candidate-list size (default :data:`HNSW_EF_SEARCH`), likewise.

        Raises:
            EncodrError: naming the missing, corrupted or disagreeing file; ``nprobe`` or
                ``ef_search`` below 1.
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
        for name, value in (("--nprobe", nprobe), ("--ef-search", ef_search)):
            if value is not None and value < 1:
                raise EncodrError(f"{name} {value}: give 1 or more")
        try:
            index = faiss.read_index(str(path / VECTORS_FILE), faiss.IO_FLAG_MMAP_IFC if mmap else 0)
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
        components = {}
        if meta.get("pcr"):
            try:
                with np.load(path / PCR_FILE) as z:
                    components = {k: z[k] for k in z.files}
            except (OSError, ValueError):
                raise EncodrError(f"{path / PCR_FILE} is missing or corrupted; rebuild the index with --pcr") from None
        return cls(path, meta, index, components, nprobe, ef_search)

    def __len__(self) -> int:
        return int(self.faiss.ntotal)

    def prepare_queries(self, vectors: np.ndarray, langs: list[str] | str | None = None) -> np.ndarray:
        """Apply the index's PCR (CMLM §5.2) to each query with its language's component.

        Args:
            vectors: float32 (q, d) unit-norm query vectors.
            langs: one language code per query, or one for all (default: the index's
                default language). A language without a component of its own gets the
                pooled one when the index has it (:func:`encodr.models.pcr.component_for`).

        Returns:
            float32 (q, d), unit norm (unchanged without PCR).

        Raises:
            EncodrError: a language with no component, or a language given for an index
                without PCR.
        """
        if not self.components:
            if isinstance(langs, str):
                raise EncodrError(f"index {self.path} was built without --pcr, so a query language changes nothing; drop --lang")
            return vectors
        if langs is None or isinstance(langs, str):
            langs = [langs or self.meta.get("default_lang")] * len(vectors)
        try:
            return remove_per_language(vectors, langs, self.components)
        except KeyError as missing:
            named = ", ".join(sorted(c for c in self.components if c != POOLED))
            raise EncodrError(f"index {self.path} has no principal component for language '{missing.args[0]}'; use --lang with one of {named}") from None

    def search(self, vectors: np.ndarray, k: int, langs: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """k nearest vectors by inner product, optionally among texts of some languages only.

        Args:
            vectors: float32 (q, d), unit norm (after :meth:`prepare_queries`).
            k: neighbours per query.
            langs: keep only hits whose stored language is one of these (FAISS searches
                with an ID selector, so k hits come back whenever k such texts exist).

        Returns:
            (scores float32 (q, k), ids int64 (q, k)); id −1 pads when fewer than k exist.
        """
        import faiss

        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if not langs:
            return self.faiss.search(x, min(k, len(self)), params=self.search_params())
        marks = ",".join("?" * len(langs))
        ids = np.array([r[0] for r in self._db.execute(f"select id from texts where lang in ({marks})", list(langs))], dtype=np.int64)
        if not len(ids):
            return np.zeros((len(x), 0), dtype=np.float32), np.zeros((len(x), 0), dtype=np.int64)
        selector = faiss.IDSelectorBatch(ids)
        return self.faiss.search(x, min(k, len(ids)), params=self.search_params(selector))

    def search_params(self, selector=None):
        """FAISS search parameters for this index's type: ``nprobe`` (IVF), ``efSearch``
        (HNSW), the re-ranking factor (IVF-PQ's refinement), and an ID selector."""
        import faiss

        base = faiss.downcast_index(self.faiss.base_index) if isinstance(self.faiss, faiss.IndexRefine) else self.faiss
        if isinstance(base, faiss.IndexHNSW):
            params = faiss.SearchParametersHNSW(efSearch=self.ef_search)
        elif isinstance(base, faiss.IndexIVF):
            params = faiss.SearchParametersIVF(nprobe=self.nprobe)
        else:
            params = faiss.SearchParameters()
        if selector is not None:
            params.sel = selector
        if base is not self.faiss:
            refine = faiss.IndexRefineSearchParameters(k_factor=REFINE_K_FACTOR, base_index_params=params)
            refine.referenced_objects = [params, selector]  # the C++ object points at them: keep them alive
            return refine
        return params

    def language_counts(self) -> dict[str, int]:
        """Stored texts per language code."""
        return dict(self._db.execute("select lang, count(*) from texts group by lang order by count(*) desc").fetchall())

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
    from ..paths import home

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


