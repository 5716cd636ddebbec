"""Indexes on disk: vectors in FAISS (normalised, inner product = cosine), texts and
metadata in SQLite (sqlite-utils), settings in ``index.json``.

Layout of an index directory: ``current`` (a symlink) names the current generation, a folder
``gNNNNNN`` that holds (an index written before generations holds these files itself)::

    index.json      model spec, pooling, dimension, weight fingerprint, count, index type, PCR
    vectors.faiss   FAISS index; vector i is row id i of the store
    texts.db        SQLite table ``texts`` (:mod:`.texts`): id, ext_id, text, source, line,
                    lang, hash, lang_detected (1: lang came from the detector, not the input);
                    ``documents`` (id, file, source, content hash, metadata), ``members``
                    (which documents hold which texts) and ``tombstones`` (deleted ids whose
                    vectors the FAISS index still holds; searches leave them out)
    pcr.npz         (with --pcr) first principal component of each language's vectors
                    (``*``: of all vectors, for detected languages with a single text)
    rescore.i8.npy  (with --quantize binary) the int8 vectors the Hamming candidates are
                    rescored with, memory-mapped (:mod:`encodr.index.quantized`)

Builds and ``--add`` write a new generation that becomes current in one ``rename`` of the
link (:func:`encodr.outputs.generation`), so an interrupted run (even SIGKILL) leaves the
previous index intact, and a reader sees the old index or the new one, never a mix and never
none. Old generations are removed by the next write once no reader holds them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import Iterable

import numpy as np

from ..data.language import UNDETERMINED
from ..errors import EncodrError, S, at_least
from ..models.encoder import truncated
from ..models.pcr import POOLED, remove_per_language
from ..outputs import SHARDED_RECORD, current_generation, hold_generation, release_generation
from .faiss_types import HNSW_EF_SEARCH, IVF_NPROBE, REFINE_K_FACTOR
from .filters import Where
from .filters import sql as filter_sql
from .format import require_current
from .keywords import keyword_expression
from .manifest import current_meta, sharded_meta
from .meta import META_FILE, IndexMeta
from .ondisk import ONDISK_FILE, read_on_disk
from .quantized import RESCORE_FILE, BinaryRescored
from .termstats import KeywordStats, bm25, expression_phrases, frequencies, idf
from .texts import TextStore

VECTORS_FILE, STORE_FILE, PCR_FILE = "vectors.faiss", "texts.db", "pcr.npz"
RAW_VECTORS_FILE = "vectors.f32"  # a new index's vectors while it is built (removed before the generation is complete)
INDEX_FILES = (
    META_FILE,
    VECTORS_FILE,
    STORE_FILE,
    PCR_FILE,
    RAW_VECTORS_FILE,
    RESCORE_FILE,
    ONDISK_FILE,
)  # what a generation (or a flat index) holds
# A filter that keeps at most this many texts is searched exactly over them (their vectors read
# back from the index and scored one by one: ~2 ms for 20,000 vectors of 384) rather than by the
# approximate index with an ID selector, whose graph or lists then hold too few of them to give k
# hits (HNSW visits ef_search candidates, IVF nprobe lists). Weaviate switches likewise at 40,000
# (flatSearchCutoff), Qdrant below its full_scan_threshold.
EXACT_FILTER_MAX = 20_000
LOCK_TIMEOUT = 10.0  # seconds a reader waits for a texts.db that another process has locked
OPEN_ATTEMPTS = 20  # generations IndexReader.open follows when the index is replaced while it opens


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


def peek_meta(spec: str | Path) -> IndexMeta | None:
    """The ``index.json`` of the index ``spec`` names (its current generation), read without
    opening the index (no lock, no FAISS, no SQLite): what a caller may prepare for before
    :meth:`IndexReader.open`. None where there is none to read (the open then says why)."""
    path = locate(spec)
    if (path / SHARDED_RECORD).is_file():  # a sharded index: its shards' index.json joined
        try:
            return sharded_meta(path)
        except EncodrError:
            return None
    return current_meta(path)


class _Moved(Exception):
    """The folder being opened stopped being the index's current one (resolve again)."""


class QueryEncoding:
    """How an index's queries and passages are encoded, from its ``index.json`` (``meta``): the
    part of :class:`IndexReader` a sharded index (:class:`~.scatter.ShardedIndex`) shares."""

    meta: IndexMeta

    @property
    def query_prompt(self) -> str:
        """The text put before each query: the model's query prompt the index was built with
        (``index.json`` ``prompts``; E5: ``query: ``)."""
        return self.meta.query_prompt

    def encode_queries(self, encoder, queries: list[str]) -> np.ndarray:
        """float32 (Q, d) unit vectors of ``queries`` as this index's vectors were made: after
        :attr:`query_prompt`, truncated to the index's ``truncate_dim`` and renormalised when it
        was built with ``--dim`` (Matryoshka), whatever truncation ``encoder`` itself holds."""
        return self._encoded(encoder, queries, self.query_prompt)

    def encode_passages(self, encoder, texts: list[str]) -> np.ndarray:
        """float32 (N, d) unit vectors of ``texts`` as this index's passages were made: after the
        document prompt (``index.json`` ``prompts``; E5: ``passage: ``), truncated as
        :meth:`encode_queries` truncates (a hit's sentences, scored for its snippet)."""
        return self._encoded(encoder, texts, self.meta.document_prompt)

    def _encoded(self, encoder, texts: list[str], prompt: str) -> np.ndarray:
        vectors = encoder.encode(texts, prompt=prompt)
        dim = self.meta.dimension
        return truncated(vectors, dim) if vectors.shape[1] != dim else vectors


class IndexReader(QueryEncoding):
    """One generation of an index directory, opened for search.

    Attributes:
        path: the index directory (what ``--index`` names).
        folder: the generation read (``path/gNNNNNN``; ``path`` itself for an index written
            before generations), held with a shared lock until :meth:`close` so that no writer
            removes it under this reader.
        meta: its ``index.json`` (:class:`~.meta.IndexMeta`).
        faiss: the FAISS index.
        components: language → first principal component (empty without PCR).
        texts: the generation's :class:`~.texts.TextStore`, read-only.
    """

    def __init__(
        self,
        path: Path,
        folder: Path,
        meta: IndexMeta,
        faiss_index,
        components: dict[str, np.ndarray],
        texts: TextStore,
        hold: int | None = None,
        probes: tuple[int | None, int | None] = (None, None),
    ):
        """``probes``: (nprobe, ef_search), the search settings of IVF and HNSW (default: the type's)."""
        nprobe, ef_search = probes
        self.path, self.folder, self.meta, self.faiss, self.components, self.texts = (
            path,
            folder,
            meta,
            faiss_index,
            components,
            texts,
        )
        self._identity = _identity(
            folder
        )  # a folder of the same name made anew (the index deleted and built again) is another generation
        self.nprobe = nprobe or IVF_NPROBE.get(meta.index_type, IVF_NPROBE["ivf"])
        self.ef_search = ef_search or HNSW_EF_SEARCH
        self._hold = hold
        self.tombstones = texts.tombstones()  # ids whose vectors FAISS still holds, their texts deleted: never returned
        self._allowed: dict[Where, np.ndarray] = {}  # the ids each recent restriction keeps (a generation never changes)
        self._scopes: dict[Where, str] = {}  # …and the temporary table of them the keyword search reads
        self._restrict = threading.Lock()  # a server's threads share the two
        self._live = None  # the selector that leaves the tombstones out (:meth:`_live_selector`)

    @classmethod
    def open(cls, path: str | Path, mmap: bool = False, nprobe: int | None = None, ef_search: int | None = None) -> "IndexReader":
        """Open and check the current generation of an index: all files present and readable,
        and FAISS, SQLite and ``index.json`` agreeing on the number of vectors.

        The generation is resolved once (:func:`encodr.outputs.current_generation`) and held
        (:func:`encodr.outputs.hold_generation`), and all three files are read from it, so an
        ``--add`` or ``--overwrite`` running meanwhile is seen whole or not at all.

        Args:
            path: the index directory, or the name of an index in the workspace (:func:`locate`).
            mmap: memory-map ``vectors.faiss`` (FAISS ``IO_FLAG_MMAP_IFC``: the codes stay in
                the file, zero-copy) instead of reading it: opening takes no time and no memory up
                front, and the OS pages in what searches touch (``IO_FLAG_MMAP`` still copies
                the codes). A mapped index is read-only (``--add`` opens without it).
            nprobe: IVF lists visited per query (default: :data:`IVF_NPROBE` of the index
                type): more is slower and finds more of the exact neighbours.
            ef_search: HNSW candidate-list size (default :data:`HNSW_EF_SEARCH`), likewise.

        Raises:
            EncodrError: naming the missing, corrupted, locked or disagreeing file; ``nprobe``
                or ``ef_search`` below 1.
        """
        path = locate(path)
        if path.is_file():
            raise EncodrError(
                f"{path} is a file; {S.index} takes an index directory (built by encodr index) or a workspace index name"
            )
        if not path.is_dir():
            raise EncodrError(
                f"index {path} does not exist (nor in the workspace, see encodr indexes); build one with: encodr index "
                f"CORPUS --out {path}"
            )
        for name, value in (("nprobe", nprobe), ("ef_search", ef_search)):
            at_least(name, value, 1)
        for _ in range(OPEN_ATTEMPTS):
            folder = current_generation(path)
            hold = None
            if folder is not None:
                hold = hold_generation(folder)
                if hold is None:
                    if current_generation(path) == folder:  # not superseded: the link names a missing folder
                        raise EncodrError(
                            f"index {path} names generation {folder.name}, which is missing; rebuild it with encodr "
                            "index --overwrite"
                        )
                    continue  # superseded and removed before we held it: resolve again
            try:
                return cls._open_folder(path, folder or path, hold, mmap, nprobe, ef_search)
            except _Moved:
                release_generation(hold)
            except BaseException:
                release_generation(hold)
                raise
        raise EncodrError(f"index {path} was replaced {OPEN_ATTEMPTS} times while it was being opened; try again")

    @classmethod
    def _open_folder(
        cls, path: Path, folder: Path, hold: int | None, mmap: bool, nprobe: int | None, ef_search: int | None
    ) -> "IndexReader":
        """:meth:`open` of one generation ``folder``. Raises :class:`_Moved` when a flat
        (pre-generations) index was converted to generations while it was read."""
        import faiss

        def moved() -> bool:
            return folder == path and current_generation(path) is not None

        def missing(name: str) -> EncodrError:
            if moved():
                raise _Moved
            if folder == path and not any((folder / n).exists() for n in (META_FILE, VECTORS_FILE, STORE_FILE)):
                index = f"{str(path).rstrip('/')}-index"  # a folder of documents, never an index: nothing to rebuild
                return EncodrError(f"{path} is a folder, not an encodr index; index it with: encodr index {path} {S.out} {index}")
            return EncodrError(f"index {path} is missing {name}; rebuild it with encodr index")

        for name in (META_FILE, VECTORS_FILE, STORE_FILE):
            if not (folder / name).is_file():
                raise missing(name)
        try:
            meta = IndexMeta.read(folder)
            count = int(meta.count)
        except FileNotFoundError:
            raise _Moved from None
        except (ValueError, TypeError):
            raise EncodrError(f"{folder / META_FILE} is corrupted (not the JSON encodr wrote); rebuild the index") from None
        require_current(path, meta.format)
        binary = meta.quantize == "binary"
        if binary and not (folder / RESCORE_FILE).is_file():
            raise missing(RESCORE_FILE)
        if meta.on_disk and not (folder / ONDISK_FILE).is_file():
            raise missing(ONDISK_FILE)
        try:
            if binary:
                index = BinaryRescored.read(folder / VECTORS_FILE, meta.int8_ranges)
            else:
                flags = faiss.IO_FLAG_MMAP_IFC if mmap else 0
                index = (
                    read_on_disk(folder / VECTORS_FILE, flags)
                    if meta.on_disk
                    else faiss.read_index(str(folder / VECTORS_FILE), flags)
                )
        except (RuntimeError, OSError, ValueError, KeyError):
            if moved():
                raise _Moved from None
            damaged = f"{VECTORS_FILE} or {RESCORE_FILE} is" if binary else f"{VECTORS_FILE} is"
            raise EncodrError(f"index {path}: {damaged} corrupted (FAISS or NumPy cannot read it); rebuild the index") from None
        with contextlib.ExitStack() as on_error:  # the store's connection is closed on any refusal below
            try:
                texts = TextStore.open(folder / STORE_FILE, LOCK_TIMEOUT)
                on_error.callback(texts.close)
                rows = texts.count()
            except sqlite3.DatabaseError as exc:
                if moved():
                    raise _Moved from None
                if "locked" in str(exc):
                    raise EncodrError(
                        f"{folder / STORE_FILE} is locked by another process (waited {LOCK_TIMEOUT:g} s); "
                        "wait for that process to finish, or stop it, and run again"
                    ) from None
                raise EncodrError(f"{folder / STORE_FILE} is corrupted ({exc}); rebuild the index") from None
            dead = len(texts.tombstones())
            if not index.ntotal == rows + dead == count:
                if moved():
                    raise _Moved
                raise EncodrError(
                    f"index {path} is inconsistent: {VECTORS_FILE} has {index.ntotal} vectors, {STORE_FILE} {rows} texts"
                    f"{f' and {dead} deleted' if dead else ''}, {META_FILE} says {count}; rebuild it with encodr index"
                )
            components = {}
            if meta.pcr:
                try:
                    with np.load(folder / PCR_FILE) as z:
                        components = {k: z[k] for k in z.files}
                except (OSError, ValueError):
                    raise EncodrError(f"{folder / PCR_FILE} is missing or corrupted; rebuild the index with {S.pcr}") from None
            on_error.pop_all()  # opened: the reader owns the store now
        return cls(path, folder, meta, index, components, texts, hold, (nprobe, ef_search))

    def copy_store(self, target: Path) -> None:
        """Copy ``texts.db`` to ``target`` (:meth:`~.texts.TextStore.copy_to`: consistent, waits for a writer).

        Raises:
            sqlite3.OperationalError: the copy failed (locked, disk full…).
        """
        self.texts.copy_to(target)

    @property
    def pooled_for(self) -> tuple[str, ...] | None:
        """The languages that take the pooled PCR component (:func:`encodr.models.pcr.component_for`):
        any, in an index whose languages were detected; only ``und`` (a text in no language)
        in one whose languages were given."""
        return None if self.meta.lang_detection else (UNDETERMINED,)

    def stale(self) -> bool:
        """True once another generation has become current (a long-running reader then opens
        the index again to see it; this one stays readable until :meth:`close`)."""
        now = current_generation(self.path) or self.path
        return now != self.folder or _identity(now) != self._identity

    def close(self) -> None:
        """Close the store and release the generation (a writer may then remove it)."""
        if self.texts is not None:
            self.texts.close()
        release_generation(self._hold)
        self._hold = None

    def __enter__(self) -> "IndexReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # a reader dropped without close() releases its generation too
        if hasattr(self, "_hold"):
            self.close()

    def missing(self) -> list[int]:
        """The shards that did not answer this thread's last search: none, one index answers whole
        (:meth:`~.scatter.ShardedIndex.missing` is the sharded index's)."""
        return []

    def reset_missing(self) -> None:
        """Nothing to forget (see :meth:`missing`)."""

    def __len__(self) -> int:
        """Texts that a search can return (vectors less tombstones)."""
        return int(self.faiss.ntotal) - len(self.tombstones)

    def allowed(self, where: "Where | list[str] | None") -> np.ndarray | None:
        """int64 ids of the texts a search restricted by ``where`` (languages, metadata
        filters: :mod:`.filters`) may return, sorted; ``None`` when it is not restricted.
        Kept for the generation's life for the last few restrictions (a server's repeated filter).
        """
        where = Where.of(where)
        if not where:
            return None
        with self._restrict:
            return self._allowed_locked(where)

    def _allowed_locked(self, where: Where) -> np.ndarray:
        if where in self._allowed:
            return self._allowed[where]
        dsql, dparams, tsql, tparams = filter_sql(list(where.filters))
        if where.langs:
            tsql = " and ".join(x for x in (tsql, f"t.lang in ({','.join('?' * len(where.langs))})") if x)
            tparams = [*tparams, *where.langs]
        ids = self.texts.ids_where(dsql, dparams, tsql, tparams)
        if len(self._allowed) >= 16:
            old = next(iter(self._allowed))
            self._allowed.pop(old)
            if old in self._scopes:
                self.texts.drop_scope(self._scopes.pop(old))
        self._allowed[where] = ids
        return ids

    def _scope(self, where: Where) -> str:
        """The name of a temporary table of the ids :meth:`allowed` keeps for ``where``, made once."""
        with self._restrict:
            ids = self._allowed_locked(where)
            if where not in self._scopes:
                self._scopes[where] = self.texts.scope_table(ids)
            return self._scopes[where]

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
                raise EncodrError(
                    f"index {self.path} was built without {S.pcr}, so a query language changes nothing; drop {S.lang}"
                )
            return vectors
        if langs is None or isinstance(langs, str):
            langs = [langs or self.meta.default_lang] * len(vectors)
        try:
            return remove_per_language(vectors, langs, self.components, self.pooled_for)
        except KeyError as missing:
            named = ", ".join(sorted(c for c in self.components if c != POOLED))
            raise EncodrError(
                f"index {self.path} has no principal component for language '{missing.args[0]}'; use {S.lang} with one of {named}"
            ) from None

    def search(
        self, vectors: np.ndarray, k: int, langs: list[str] | None = None, nprobe: int | None = None, ef_search: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """k nearest vectors by inner product, optionally among texts of some languages only.

        Args:
            vectors: float32 (q, d), unit norm (after :meth:`prepare_queries`).
            k: neighbours per query.
            langs: keep only hits whose stored language is one of these, or a
                :class:`~.filters.Where` (languages and metadata filters): FAISS searches with an
                ID selector, so k hits come back whenever k such texts exist.
            nprobe, ef_search: this search's settings (default: the index's, :meth:`open`);
                per call, so concurrent searches may differ.

        Deleted texts whose vectors FAISS keeps (tombstones: HNSW, IVF-PQ, on-disk IVF, binary)
        are left out by an ID selector too, inside the search, so ``k`` live hits come back: FAISS
        skips them as it collects its top k, which is what over-fetching by the number of
        tombstones would achieve, without its guess.

        Returns:
            (scores float32 (q, k), ids int64 (q, k)); id −1 pads when fewer than k exist.

        Raises:
            EncodrError: see :meth:`allowed`.
        """
        import faiss

        x = np.ascontiguousarray(vectors, dtype=np.float32)
        ids = self.allowed(langs)
        if ids is None:
            if not len(self.tombstones):
                return self.faiss.search(x, min(k, len(self)), params=self.search_params(None, nprobe, ef_search))
            return self.faiss.search(
                x, max(1, min(k, len(self))), params=self.search_params(self._live_selector(), nprobe, ef_search)
            )
        if not len(ids):
            return np.zeros((len(x), 0), dtype=np.float32), np.zeros((len(x), 0), dtype=np.int64)
        if len(ids) <= EXACT_FILTER_MAX and not isinstance(self.faiss, (faiss.IndexFlatCodes, BinaryRescored)):
            found = self._exact(x, ids, k)
            if found is not None:
                return found
        selector = faiss.IDSelectorBatch(ids)
        return self.faiss.search(x, min(k, len(ids)), params=self.search_params(selector, nprobe, ef_search))

    def _live_selector(self):
        """A FAISS selector of every id but the tombstones, built once for this generation (it
        never changes) rather than at each search: a hash set of up to 20 % of the vectors."""
        import faiss

        with self._restrict:
            if self._live is None:
                dead = faiss.IDSelectorBatch(self.tombstones)
                self._live = faiss.IDSelectorNot(dead)
                self._live.referenced = dead  # the C++ selector points at it: keep it alive
            return self._live

    def _exact(self, x: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Exact top-k of queries ``x`` among the texts ``ids`` (int64, sorted), their vectors read
        back from the index (HNSW: as stored; IVF: through an id → list map made once; IVF-PQ: its
        8-bit re-ranking copy); None when the index cannot give them back (then the selector search)."""
        import faiss

        try:
            with self._restrict:
                ivf = faiss.try_extract_index_ivf(self.faiss) if not isinstance(self.faiss, faiss.IndexRefine) else None
                if ivf is not None and ivf.direct_map.type == faiss.DirectMap.NoMap:
                    ivf.set_direct_map_type(faiss.DirectMap.Hashtable)  # ids need not be sequential (removals)
            vectors = self.faiss.reconstruct_batch(ids)
        except RuntimeError:
            return None
        scores = x @ vectors.T
        k = min(k, len(ids))
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1), axis=1)
        return np.take_along_axis(scores, order, axis=1).astype(np.float32), ids[order]

    def search_params(self, selector=None, nprobe: int | None = None, ef_search: int | None = None):
        """FAISS search parameters for this index's type: ``nprobe`` (IVF), ``efSearch``
        (HNSW), the re-ranking factor (IVF-PQ's refinement), and an ID selector."""
        import faiss

        base = faiss.downcast_index(self.faiss.base_index) if isinstance(self.faiss, faiss.IndexRefine) else self.faiss
        if isinstance(base, faiss.IndexHNSW):
            params = faiss.SearchParametersHNSW(efSearch=ef_search or self.ef_search)
        elif isinstance(base, faiss.IndexIVF):
            params = faiss.SearchParametersIVF(nprobe=nprobe or self.nprobe)
        else:
            params = faiss.SearchParameters()
        if selector is not None:
            params.sel = selector
        if base is not self.faiss:
            refine = faiss.IndexRefineSearchParameters(k_factor=REFINE_K_FACTOR, base_index_params=params)
            refine.referenced_objects = [params, selector]  # the C++ object points at them: keep them alive
            return refine
        return params

    def rows(self, ids: Iterable[int], keys: tuple[str, ...] | None = None) -> dict[int, dict]:
        """Stored rows by id, all their fields or ``id`` and ``keys`` (:meth:`~.texts.TextStore.rows`);
        negative ids (FAISS's padding) are skipped."""
        ids = [int(i) for i in ids if i >= 0]
        return self.texts.rows(ids, keys) if ids else {}

    def sharers(self, ids: list[int]) -> dict[int, list[dict]]:
        """The other documents holding each of ``ids`` (:meth:`~.texts.TextStore.sharers`)."""
        return self.texts.sharers(ids)

    def documents_passing(self, ids: list[str], filters) -> set[str] | None:
        """Those of document ids ``ids`` that pass ``filters`` (None: no filter on documents)."""
        documents_sql, params, _, _ = filter_sql(list(filters))
        return None if documents_sql is None else self.texts.documents_passing(ids, documents_sql, params)

    def passages_of(self, ext_id: str) -> list[tuple[int, str]]:
        """(character offset, text) of every stored passage of the document ``ext_id``, in document order."""
        return self.texts.passages_of(ext_id)

    def document(self, ext_id: str) -> dict | None:
        """Document ``ext_id`` whole: its record (:meth:`~.texts.TextStore.document_row`; for a
        store without records, its id alone) and ``text``, rebuilt from its stored passages laid
        over each other at their character offsets. None when the index holds no text of it."""
        passages = self.passages_of(ext_id)
        if not passages:
            return None
        chars: list[str] = []
        for start, text in passages:
            if start > len(chars):
                chars.extend(" " * (start - len(chars)))  # a passage stored once, under another document
            chars[start : start + len(text)] = text
        return {**(self.texts.document_row(ext_id) or {"id": ext_id}), "text": "".join(chars)}

    def document_lines(self, ext_id: str) -> dict:
        """Document ``ext_id`` as the lines of its file, from its stored passages: its ``id``,
        ``path`` (as hits show it), ``title``, ``first_line`` (the file line of the first) and
        ``lines`` (strings). Between two passages the file's line breaks are put back from their
        stored lines (passages are stored without the blank lines between them), and a passage's
        indentation from the characters between it and the one before (as spaces); no lines when
        the index holds no text of it."""
        row = self.texts.document_row(ext_id) or {}
        found = {"id": ext_id, "path": self.texts.document_path(ext_id) or row.get("source") or ext_id, "title": row.get("title")}
        passages = self.texts.passage_lines(ext_id)
        if not passages:
            return {**found, "first_line": 1, "lines": []}
        first = passages[0][2]
        text, end = "", 0
        for start, piece, line in passages:
            if start >= end:
                breaks = max(0, line - (first + text.count("\n")))
                indent = (
                    start - end - breaks if breaks and start is not None and end else 0
                )  # the gap's other characters: the line's indentation
                text += "\n" * breaks + " " * max(0, indent) + piece
            else:  # overlapping the previous passage: only what it adds
                text += piece[end - start :]
            end = max(end, start + len(piece))
        return {**found, "first_line": first, "lines": text.split("\n")}

    def find_documents(self, path: str, lines: tuple[int, int] | None = None) -> list[str]:
        """The ids of the documents at ``path``: its path as hits show it, its source, or its id
        (:meth:`~.texts.TextStore.documents_at`; ``lines`` keeps a one-record-a-line file's records on them)."""
        return self.texts.documents_at(path, lines)

    def document_ids(self) -> set[str]:
        """Every document id stored (``ext_id``; a text stored once for several documents keeps
        the first one's id)."""
        return self.texts.document_ids()

    @property
    def has_keywords(self) -> bool:
        """Whether this generation has a keyword index (built by ``encodr index`` since it has one)."""
        return self.texts.has_keywords

    def keyword_search(
        self,
        queries: list[str],
        k: int,
        langs: "list[str] | Where | None" = None,
        query_langs: list[str] | None = None,
        stats: "str | KeywordStats" = "shard",
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k texts of each query by BM25 (SQLite FTS5: k1 = 1.2, b = 0.75), best first.

        Args:
            queries: q free-text queries (:func:`~.keywords.keyword_expression`; with this
                index's own statistics, the terms ``bm25()`` weighs at nothing are left out:
                :meth:`~.texts.TextStore.weightless_terms`).
            k: hits per query.
            langs: keep only texts whose stored language is one of these, or a
                :class:`~.filters.Where` (its filters become a condition of the FTS5 query).
            query_langs: each query's language, which picks its stemmer (default: none).
            stats: the term statistics BM25 scores by: ``shard`` or ``global`` (this index's
                own: for one index they are the global ones, FTS5's ``bm25()``), or a
                :class:`~.termstats.KeywordStats` of these queries gathered from several
                indexes (a sharded index's exact keyword search, :mod:`.termstats`).

        Returns:
            (scores, ids): float32 and int64 arrays (q, k); the score is −``bm25()`` (higher
            is better); rows with fewer than k matches are padded with score −inf and id −1,
            as FAISS pads.

        Raises:
            EncodrError: the index has no keyword index (built before encodr had one).
        """
        self._require_keywords()
        where = Where.of(langs)
        scope = (
            (f"select id from {self._scope(where)}", []) if where.filters else None
        )  # the filter's ids, as a table the FTS5 query joins
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        ids = np.full((len(queries), k), -1, dtype=np.int64)
        local = self.texts.keyword_totals() if isinstance(stats, KeywordStats) else None  # this index's (N, tokens)
        for row, query in enumerate(queries):
            lang = query_langs[row] if query_langs else None
            expression = keyword_expression(query, lang)
            if not expression:
                continue
            filters = (None if scope else list(where.langs) or None, scope)  # a scope holds the languages too
            if isinstance(stats, KeywordStats):
                weightless = stats.weightless(row)
                run = lambda e: self._scored_by(e, k, filters, (stats, row), local)  # noqa: E731
            else:
                weightless = self.texts.weightless_terms
                run = lambda e: self.texts.keyword_hits(e, k, *filters)  # noqa: E731
            found = _lean_first(keyword_expression(query, lang, weightless), expression, k, run)
            for col, (i, score) in enumerate(found):
                ids[row, col], scores[row, col] = i, score
        self.texts.hold_postings()  # a reader searched again is kept open: its next searches read held postings
        return scores, ids

    def keyword_stats(self, queries: list[str], query_langs: list[str] | None = None) -> KeywordStats:
        """This index's term statistics for ``queries`` (:class:`~.termstats.KeywordStats`):
        its rows, their tokens, and the rows holding each phrase of each query's expression;
        the first round trip of an exact keyword search over shards (:mod:`.termstats`).

        Raises:
            EncodrError: the index has no keyword index.
        """
        self._require_keywords()
        rows, tokens = self.texts.keyword_totals()
        hits = []
        for row, query in enumerate(queries):
            phrases = list(
                dict.fromkeys(expression_phrases(keyword_expression(query, query_langs[row] if query_langs else None)))
            )
            hits.append(dict(zip(phrases, self.texts.phrase_rows(phrases))))
        return KeywordStats(rows, tokens, tuple(hits))

    def _scored_by(
        self, expression: str, k: int, filters: tuple, scored: tuple[KeywordStats, int], local: tuple[int, int]
    ) -> list[tuple[int, float]]:
        """The top ``k`` (id, score) matching ``expression`` and passing ``filters`` (langs,
        scope), scored by BM25 with ``scored`` (the statistics, and the number of the query
        whose phrases they count), best first, ties by id: each phrase's frequency in each
        matching text is recovered from the local ``bm25()`` of the phrase alone and ``local``,
        this index's (N, tokens) (:func:`~.termstats.frequencies`)."""
        stats, query = scored
        matched = self.texts.keyword_matches(expression, *filters)
        if not len(matched):
            return []
        rows, tokens = local
        local_avgdl = tokens / rows
        length = np.zeros(len(matched), dtype=np.float64)
        freqs = []
        for phrase in expression_phrases(expression):
            ids, local, lengths = self.texts.phrase_scores(phrase)
            at = np.searchsorted(matched, ids)
            held = (at < len(matched)) & (matched[np.minimum(at, len(matched) - 1)] == ids)
            freq = np.zeros(len(matched), dtype=np.float64)
            freq[at[held]] = frequencies(local[held], lengths[held], idf(rows, len(ids)), local_avgdl)
            length[at[held]] = lengths[held]
            freqs.append((freq, stats.idf(query, phrase)))
        score = bm25(freqs, length, stats.avgdl)
        best = np.lexsort((matched, -score))[:k]
        return [(int(matched[i]), float(score[i])) for i in best]

    def _require_keywords(self) -> None:
        """Raises EncodrError: this generation has no keyword index (built by an older encodr)."""
        if not self.has_keywords:
            raise EncodrError(
                f"index {self.path} has no keyword index (built by an older encodr); rebuild it with encodr index, or "
                f"use {S.mode} dense",
                field="mode",
            )

    def vectors_of(self, ids: list[int]) -> np.ndarray:
        """Stored vectors (for exact re-ranking and benchmarks)."""
        return np.stack([self.faiss.reconstruct(int(i)) for i in ids])


def _identity(folder: Path) -> tuple[int, int] | None:
    """The file system's identity of ``folder`` (device, inode); ``None`` when it is gone."""
    try:
        stat = os.stat(folder)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def list_indexes(root: Path | None = None) -> list[dict]:
    """Index directories under ``root`` (default: ``$ENCODR_HOME/indexes``), with their
    ``index.json`` fields (``name``, the one ``--index`` takes, and ``path`` added); unreadable
    ones are listed with ``error``."""
    from ..paths import home

    root = Path(root) if root else home() / "indexes"
    found = []
    for folder in sorted(p for p in root.glob("*") if p.is_dir()):
        where = {"name": folder.name, "path": str(folder)}
        if (folder / SHARDED_RECORD).is_file():  # a sharded index: its shards' index.json joined
            try:
                found.append({**where, **sharded_meta(folder).to_dict()})
            except EncodrError as exc:
                found.append({**where, "error": str(exc)})
            continue
        generation = current_generation(folder) or folder
        if not (generation / META_FILE).exists():
            continue
        try:
            found.append({**where, **IndexMeta.read(generation).to_dict()})
        except (ValueError, TypeError):
            found.append({**where, "error": f"{META_FILE} is corrupted; rebuild the index"})
        except OSError as exc:
            found.append({**where, "error": f"{META_FILE} cannot be read ({exc.strerror})"})
    return found


def _lean_first(lean: str, expression: str, k: int, run) -> list[tuple[int, float]]:
    """The keyword hits of a query without the terms ``bm25()`` weighs at nothing (``lean``,
    :func:`~.keywords.keyword_expression` with ``weightless``), which FTS5 would otherwise score
    in most texts for nothing; when fewer than ``k`` texts hold the other terms, the texts that
    the whole ``expression`` ranks next fill ``k``. ``run``: expression → (id, score) best first."""
    found = run(lean)
    if len(found) >= k or lean == expression:
        return found
    have = {i for i, _ in found}
    return found + [hit for hit in run(expression) if hit[0] not in have][: k - len(found)]
