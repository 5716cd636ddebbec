"""How a search runs, declared once: :class:`SearchOptions`.

Every default, choice and cross-field rule of a search lives here. The core's requests
(:mod:`encodr.core.requests`) take their defaults and choices from this class's fields, and the
front ends (CLI, TUI, HTTP, MCP) render those requests, so none of them states a default of its
own; ``tests/core/test_fronts.py`` fails when one does.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..data.language import check_code
from ..data.records import Layout
from ..errors import EncodrError, at_least, between, one_of
from ..models.encoder import AUTO_BACKEND, Encoder, check_backend
from ..models.pcr import DEFAULT_VARIANT, check_variant
from .engines import check_engine
from .faiss_types import INDEX_TYPES, check_quantize
from .filters import Filter
from .fusion import FUSIONS

MODES = ("dense", "keyword", "hybrid")
DENSE, KEYWORD, HYBRID = MODES
HYBRID_DEPTH = 100  # candidates taken from each list before fusion
RERANK_DEPTH, RERANK_WEIGHT = 50, 1.0  # a re-ranker's depth and weight, unless given or tuned with it (SearchOptions.resolved)
KEYWORD_STATS = ("shard", "global")  # the term statistics BM25 scores by in a sharded index
PASSAGES_PER_DOCUMENT = 4  # passages fetched per document asked for, before keeping each document's best


@dataclass(frozen=True)
class SearchOptions:
    """The settings of one search, validated when built.

    Attributes:
        k: hits per query (≥ 1).
        mode: ``hybrid`` (vectors and BM25 fused by ``fusion``), ``dense`` (cosine of the
            vectors) or ``keyword`` (BM25 over SQLite FTS5). ``hybrid`` on an index built
            without a keyword index searches it ``dense`` (:meth:`for_index`).
        fusion: ``zscore`` (z-scores, weighted by ``fusion_weight``), ``convex`` (min-max
            normalised scores, weighted likewise) or ``rrf`` (reciprocal rank fusion, Cormack et
            al. 2009), all language-aware (:mod:`.fusion`).
        fusion_weight: α, the dense scores' weight in [0, 1]; ``None``: the weight tuned on
            judgments for the index's model (:meth:`resolved`), else the declared ones
            (:func:`~.fusion.fuse`: by kind of text for ``zscore``).
        lang: the queries' language, ISO 639-3 (default: detected among the index's languages).
        hit_langs: keep only hits in these languages (ISO 639-3).
        filters: keep only texts of documents that pass all of these (:mod:`.filters`).
        rerank_depth: first-stage hits a cross-encoder re-scores per query (≥ 1); ``None``: the
            depth tuned with the re-ranker (:meth:`resolved`), else :data:`RERANK_DEPTH`.
        rerank_weight: w in w·ŝ_cross + (1 − w)·ŝ_first (:func:`.fusion.interpolate`), in [0, 1];
            ``None``: the weight tuned with the re-ranker, else :data:`RERANK_WEIGHT`.
        passages: rank passages; by default an index of split documents ranks each document
            once, at its best passage.
        nprobe: IVF lists visited per query (default: the index's, :mod:`.faiss_types`).
        ef_search: HNSW candidate list size (default: the index's).
        keyword_stats: the term statistics of BM25 in a sharded index: ``shard`` (each shard's
            own, one round trip; Elasticsearch's default) or ``global`` (gathered from every
            shard first, so keyword scores are one index's: :mod:`.termstats`). One index has
            only its own, so both give the same there.

    Raises:
        OptionError: a value out of its range or not among its choices, naming the field.
    """

    k: int = 10
    mode: str = HYBRID
    fusion: str = "zscore"
    fusion_weight: float | None = None
    lang: str | None = None
    hit_langs: tuple[str, ...] = ()
    filters: tuple[Filter, ...] = ()
    rerank_depth: int | None = None
    rerank_weight: float | None = None
    passages: bool = False
    nprobe: int | None = None
    ef_search: int | None = None
    keyword_stats: str = KEYWORD_STATS[0]

    def __post_init__(self):
        one_of("mode", self.mode, MODES)
        one_of("keyword_stats", self.keyword_stats, KEYWORD_STATS)
        one_of("fusion", self.fusion, FUSIONS)
        for name in ("k", "rerank_depth", "nprobe", "ef_search"):
            at_least(name, getattr(self, name), 1)
        for name in ("rerank_weight", "fusion_weight"):
            if getattr(self, name) is not None:
                between(name, getattr(self, name), 0, 1)
        object.__setattr__(self, "hit_langs", tuple(self.hit_langs or ()))
        object.__setattr__(self, "filters", tuple(self.filters or ()))

    @classmethod
    def default(cls, name: str):
        """The default of field ``name`` (for the requests that render it)."""
        return next(f.default for f in fields(cls) if f.name == name)

    @classmethod
    def given(cls, **values) -> "SearchOptions":
        """Options from a front end's values: ``None`` takes the field's default.

        Raises:
            OptionError: see the class.
        """
        return cls(**{k: v for k, v in values.items() if v is not None})

    def for_index(self, has_keywords: bool) -> "SearchOptions":
        """These options as an index can run them: ``hybrid`` on an index without a keyword
        index (built before keyword indexes existed) is ``dense``; ``keyword`` there is refused
        by :meth:`.reader.IndexReader.keyword_search`."""
        return replace(self, mode=DENSE) if self.mode == HYBRID and not has_keywords else self

    def resolved(self, tuned: dict | None = None, reranker_tuned: dict | None = None) -> "SearchOptions":
        """These options with every ``None`` setting filled: ``fusion_weight`` from ``tuned``
        (the settings learned on judgments for the index's model: :func:`.judgments.read_tuned`),
        ``rerank_depth`` and ``rerank_weight`` from ``reranker_tuned`` (a re-ranker's own,
        ``depth`` and ``weight``), else the declared defaults (``fusion_weight`` stays None
        without a tuned one: the fusion's declared weights, :func:`.fusion.fuse`)."""
        tuned, reranker_tuned = tuned or {}, reranker_tuned or {}
        return replace(
            self,
            fusion_weight=_first(self.fusion_weight, tuned.get("fusion_weight")),
            rerank_depth=_first(self.rerank_depth, reranker_tuned.get("depth"), RERANK_DEPTH),
            rerank_weight=_first(self.rerank_weight, reranker_tuned.get("weight"), RERANK_WEIGHT),
        )

    @property
    def label(self) -> str:
        """How a table names these options' ranking: ``dense``, ``keyword``, ``hybrid·zscore``
        (``hybrid·zscore@0.7`` with a weight given)."""
        if self.mode != HYBRID:
            return self.mode
        weight = f"@{self.fusion_weight:g}" if self.fusion_weight is not None and self.fusion != "rrf" else ""
        return f"{self.mode}·{self.fusion}{weight}"

    def depth(self) -> int:
        """Candidates each list gives before fusion (``hybrid``): at least :data:`HYBRID_DEPTH`."""
        return max(self.k, HYBRID_DEPTH)


def _first(*values):
    """The first of ``values`` that is not ``None`` (None when all are)."""
    return next((v for v in values if v is not None), None)


__all__ = ["DENSE", "HYBRID", "KEYWORD", "KEYWORD_STATS", "MODES", "SearchOptions"]


WRITE_MEANINGS = {  # BuildOptions.write: what a build does to its output folder, as the front ends say it
    "new": "Build a new index where none is.",
    "add": "Add the documents read to an existing index: new ones added, changed ones replaced (texts already in it are "
    "not encoded again); none removed.",
    "sync": "Make the index hold exactly the documents now under CORPUS: add new ones, re-encode changed ones, remove "
    "those whose file is gone; documents of other paths are kept. Builds the index when --out does not exist.",
    "overwrite": "Rebuild an existing index (only a folder encodr wrote: an index; never a folder of other files).",
}
WRITES = tuple(WRITE_MEANINGS)  # new, add, sync, overwrite
UPDATES = ("add", "sync")  # the writes into an existing index (a sync of a missing one builds it: a new write)


WINDOW = 8192  # texts read, deduplicated and encoded together (length-sorted within)


@dataclass(frozen=True)
class BuildOptions:
    """How :func:`build` builds, appends to or syncs an index, validated when made; every
    default lives here (the core's :class:`~encodr.core.requests.IndexRequest` renders them).

    Attributes:
        model: a model spec, or an already loaded :class:`~encodr.models.Encoder` (a new index
            only: ``encodr eval retrieval`` indexes with the model it scores); with ``add``, a
            spec that must match the index's model (or ``None``). Default: ``minilm``.
        index_type: ``auto``, ``flat``, ``hnsw``, ``ivf`` or ``ivfpq`` (:data:`~.faiss_types.INDEX_TYPES`).
        quantize: ``none``, ``int8`` (FAISS's 8-bit scalar quantiser: 4× smaller; ``flat``,
            ``hnsw``, ``ivf``) or ``binary`` (sign bits searched by Hamming distance, the
            candidates rescored by int8 vectors kept on disk: 32× smaller in memory; ``flat``,
            which ``auto`` then means at any size); :mod:`~.quantized`. ``add`` keeps the index's.
        dim: keep the first ``dim`` dimensions of each vector, renormalised (Matryoshka
            truncation, :meth:`~encodr.models.encoder.Encoder.truncate`); ``add`` keeps the
            index's (a different ``dim`` is an error).
        on_disk: an IVF index (``ivf`` or ``ivfpq``, a new index) whose inverted lists are added
            in blocks and merged into ``lists.ivfdata`` beside it, memory-mapped on search (:mod:`~.ondisk`).
        write: what happens to ``out`` (:data:`WRITES`): ``new`` builds an index where none is;
            ``add`` appends to the existing index: new documents added, changed ones replaced,
            none removed; ``sync`` makes the index hold exactly the documents now under the
            files given (:mod:`.documents`), and builds it when ``out`` does not exist;
            ``overwrite`` replaces an existing index (one encodr wrote; never another folder).
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
        shards: a new index split into this many shards (:mod:`.sharded`); None: one index.
            An update of a sharded index keeps its own count.
        shard: ``(i, n)``: keep only the documents whose id routes to shard ``i`` of ``n``
            (:func:`.sharded.route`); set by a sharded index's writes, not by a person.

    Raises:
        OptionError: an unknown index type, quantisation or engine, a ``dim``, ``processes`` or
            ``window`` below 1, naming the field.
    """

    model: str | Encoder | None = None
    index_type: str = "auto"
    quantize: str = "none"
    dim: int | None = None
    on_disk: bool = False
    write: str = "new"
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
    shards: int | None = None
    shard: tuple[int, int] | None = None

    def __post_init__(self):
        from ..errors import at_least, one_of
        from .engines import ENGINES
        from .quantized import QUANTIZE

        one_of("index_type", self.index_type, INDEX_TYPES)
        one_of("quantize", self.quantize, QUANTIZE)
        one_of("engine", self.engine, ENGINES)
        one_of("write", self.write, WRITES)
        for name in ("dim", "processes", "window", "batch_size", "shards"):
            at_least(name, getattr(self, name), 1)
        check_backend(self.backend, auto=True)
        check_engine(self.engine, self.address)
        if self.processes > 1 and self.backend not in ("torch", AUTO_BACKEND) and self.engine == "local":
            raise EncodrError(
                f"--processes works with --backend torch (sentence-transformers' pool runs its own float32 pass; onnxruntime "
                f"already uses every core): drop --processes for {self.backend}",
                field="processes",
            )
        if self.lang is not None:
            check_code(self.lang)
        check_variant(self.pcr_variant)
        check_quantize(self.quantize, self.index_type)
        if self.on_disk and self.index_type not in ("ivf", "ivfpq"):
            raise EncodrError(
                "--on-disk keeps an IVF index's lists in a file; pass --index-type ivf or ivfpq with it, or drop --on-disk",
                field="on_disk",
            )
        if self.write == "sync" and self.engine != "local":
            raise EncodrError(
                "--sync reads and compares the documents on this machine: drop --engine ray for it (a full build can use Ray)",
                field="engine",
            )
