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
from ..errors import EncodrError, S
from ..models.encoder import AUTO_BACKEND, BACKEND_HELP, BACKENDS, Encoder
from ..models.pcr import DEFAULT_VARIANT, PCR_VARIANTS
from ..settings import check, setting
from .engines import ENGINES, check_engine
from .faiss_types import FLAT_MAX, HNSW_EF_SEARCH, HNSW_MAX, INDEX_TYPES, IVF_NPROBE, check_quantize
from .filters import Filter, parse_all
from .fusion import CODE_ALPHA, CONVEX_ALPHA, FUSIONS, ZSCORE_ALPHA
from .quantized import QUANTIZE

MODES = ("dense", "keyword", "hybrid")
DENSE, KEYWORD, HYBRID = MODES
HYBRID_DEPTH = 100  # candidates taken from each list before fusion
RERANK_DEPTH, RERANK_WEIGHT = 50, 1.0  # a re-ranker's depth and weight, unless given or tuned with it (SearchOptions.resolved)
MAX_FILE_SIZE = 1_000_000  # bytes: a minified bundle or a data dump, not a file a person wrote
KEYWORD_STATS = ("shard", "global")  # the term statistics BM25 scores by in a sharded index
PASSAGES_PER_DOCUMENT = 4  # passages fetched per document asked for, before keeping each document's best
FILTER_HELP = (
    "Only hits from documents where FIELD=VALUE (also !=, >=, <=); repeatable, all must hold. Fields: source (a glob, "
    "e.g. notes/*.md), lang, id, title, modified and size (the file's; ISO 8601 dates), or any metadata field (a JSONL "
    f"object's other fields, {S.meta_columns}, Markdown front matter). Over HTTP also an object: "
    '{"year": ">=2020", "lang": "eng"}.'
)


def comma_list(value) -> list[str]:
    """``"spa,fra"`` or ``["spa,fra", "deu"]`` → ``["spa", "fra", "deu"]`` (``None``: ``[]``)."""
    items = [] if value is None else [value] if isinstance(value, str) else list(value)
    return [c.strip() for item in items for c in str(item).split(",") if c.strip()]


@dataclass(frozen=True)
class SearchOptions:
    """The settings of one search, validated when built (:func:`encodr.settings.check`). Each
    field's default, meaning, range and choices are in its declaration below, the one the front
    ends render. What the declarations do not say:

    - ``hybrid`` on an index built without a keyword index searches it ``dense`` (:meth:`for_index`);
      the fusions are :mod:`.fusion`'s (RRF: Cormack et al. 2009), all language-aware.
    - ``fusion_weight``, ``rerank_depth`` and ``rerank_weight`` left ``None`` are filled by
      :meth:`resolved` from the settings tuned on judgments, else the declared defaults;
      ``rerank_weight`` is w in w·ŝ_cross + (1 − w)·ŝ_first (:func:`.fusion.interpolate`).
    - ``hit_lang`` takes ``"spa,fra"`` or a list; ``filter`` takes :class:`~.filters.Filter` s,
      ``"FIELD=VALUE"`` texts or HTTP's mapping (:func:`.filters.parse_all`); both are kept as tuples.
    - ``keyword_stats`` matters only in a sharded index (:mod:`.termstats`); one index has only its own.

    Raises:
        OptionError: a value out of its range or not among its choices, naming the field;
            EncodrError: a filter that does not parse, a language code that is not ISO 639-3.
    """

    k: int = setting(10, "Results per query.", ge=1)
    mode: str = setting(
        HYBRID,
        f"hybrid: vectors and BM25 fused by {S.fusion} (dense on an index built without a keyword index); "
        "dense: vectors; keyword: BM25 (SQLite FTS5).",
        choices=MODES,
    )
    fusion: str = setting(
        "zscore",
        f"How hybrid fuses: zscore (each list's scores standardised, weighted by {S.fusion_weight}), convex (min-max "
        "normalised, weighted likewise) or rrf (reciprocal rank fusion); all language-aware.",
        choices=FUSIONS,
    )
    fusion_weight: float | None = setting(
        None,
        "Hybrid: the dense scores' weight α in α·dense + (1−α)·BM25 (default: the weight tuned on judgments for the "
        "index's model, encodr tune --recipe judged; else the fusion's own: zscore weighs prose "
        f"{ZSCORE_ALPHA:g} and source code {CODE_ALPHA:g}, convex {CONVEX_ALPHA:g}).",
        ge=0,
        le=1,
    )
    lang: str | None = setting(
        None, f"Query language, ISO 639-3 (for {S.pcr} indexes; default: detected among the index's languages)."
    )
    hit_lang: tuple[str, ...] = setting(
        (), "Only hits in these languages, ISO 639-3, comma-separated or repeated (e.g. spa,fra)."
    )
    filter: tuple[Filter, ...] = setting((), FILTER_HELP)
    rerank_depth: int | None = setting(
        None,
        f"With {S.rerank}: first-stage hits the cross-encoder re-scores per query (default: the depth tuned with the "
        f"re-ranker, else {RERANK_DEPTH}).",
        ge=1,
    )
    rerank_weight: float | None = setting(
        None,
        f"With {S.rerank}: w in w·cross + (1−w)·first stage, each score min-max normalised over the re-scored hits (1: the "
        "cross-encoder's order alone; 0: the first stage's; default: the weight tuned with the re-ranker, else "
        f"{RERANK_WEIGHT:g}).",
        ge=0,
        le=1,
    )
    code_ranking: bool = setting(
        True,
        "Rank source code by the symbols it defines, its path and its file's other passages; tests, docs and copies "
        "below the source (off: first-stage order).",
    )
    defined: bool = setting(
        False, "Only source code that defines the name the query gives: where is NAME defined (code indexes)."
    )
    passages: bool = setting(
        False,
        "Rank passages; by default an index of long documents split into passages ranks each document once, by its best passage.",
    )
    nprobe: int | None = setting(
        None,
        "IVF indexes: lists visited per query (default {} for ivf, {} for ivfpq); more: slower, closer to exact.".format(
            IVF_NPROBE["ivf"], IVF_NPROBE["ivfpq"]
        ),
        ge=1,
    )
    ef_search: int | None = setting(
        None, f"HNSW indexes: candidate list size (default {HNSW_EF_SEARCH}); more: slower, closer to exact.", ge=1
    )
    keyword_stats: str = setting(
        KEYWORD_STATS[0],
        "Sharded indexes: the term statistics of BM25. shard: each shard's own (fast; a term rare in one shard scores "
        "higher there); global: gathered from every shard first, so keyword and hybrid rank as one index would (one "
        "more round trip, and each shard scores all its matching texts).",
        choices=KEYWORD_STATS,
    )

    def __post_init__(self):
        check(self)
        object.__setattr__(self, "hit_lang", tuple(comma_list(self.hit_lang)))
        object.__setattr__(self, "filter", tuple(parse_all(self.filter)))
        for name, codes in (("lang", [self.lang] if self.lang else []), ("hit_lang", self.hit_lang)):
            for code in codes:
                check_code(code, name)

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
    f"those whose file is gone; documents of other paths are kept. Builds the index when {S.out} does not exist.",
    "overwrite": "Rebuild an existing index (only a folder encodr wrote: an index; never a folder of other files).",
}
WRITES = tuple(WRITE_MEANINGS)  # new, add, sync, overwrite
UPDATES = ("add", "sync")  # the writes into an existing index (a sync of a missing one builds it: a new write)


WINDOW = 8192  # texts read, deduplicated and encoded together (length-sorted within)


@dataclass(frozen=True)
class BuildOptions:
    """How :func:`build` builds, appends to or syncs an index, validated when made
    (:func:`encodr.settings.check`). Each field's default, meaning, range and choices are in its
    declaration below, the one :class:`~encodr.core.requests.IndexRequest` renders. What the
    declarations do not say:

    - ``model`` may be a loaded :class:`~encodr.models.Encoder` (a new index only: ``encodr eval
      retrieval`` indexes with the model it scores); with ``add``, a spec must match the index's.
    - ``add`` and ``sync`` keep the index's ``quantize``, ``dim`` and ``backend``; a ``sync`` of a
      missing index builds it (:mod:`.documents` decides what a sync adds, updates and removes);
      ``overwrite`` replaces only a folder encodr wrote.
    - ``quantize``: :mod:`~.quantized` (``binary`` is a flat scan, which ``auto`` then means at any
      size); ``dim``: :meth:`~encodr.models.encoder.Encoder.truncate`; ``on_disk``: :mod:`~.ondisk`;
      ``backend`` ``auto``: :func:`~encodr.models.encoder.choose_backend`; ``engine`` ``ray``: :mod:`~.dataflow`.
    - ``window``: texts read, deduplicated and encoded together (bounds memory); ``layout``: where
      record files keep their fields (:class:`encodr.data.records.Layout`); ``shard``: ``(i, n)``,
      keep only the documents whose id routes to shard ``i`` of ``n`` (:func:`.sharded.route`), set
      by a sharded index's writes, not by a person.

    Raises:
        OptionError: a value out of its range or not among its choices, naming the field;
            EncodrError: a combination the build cannot run (``processes`` off torch, ``on_disk``
            off IVF, ``sync`` on Ray), naming the field.
    """

    model: str | Encoder | None = setting(
        None,
        f"Model (default: minilm, or me5 where under 3/4 of a sample of the corpus's prose, or {S.lang}, is English; "
        f"with {S('write', 'add')}, the index's model).",
    )
    index_type: str = setting(
        "auto",
        f"The FAISS index: auto is flat up to {FLAT_MAX:,} vectors, hnsw up to {HNSW_MAX:,}, ivfpq above.",
        choices=INDEX_TYPES,
    )
    quantize: str = setting(
        "none",
        "Vectors kept as: none (float32); int8 (4× smaller: FAISS's 8-bit scalar quantiser); binary (32× smaller in "
        "memory: sign bits searched by Hamming distance, the best candidates rescored by int8 vectors kept on disk; a "
        "flat scan).",
        choices=QUANTIZE,
    )
    dim: int | None = setting(
        None,
        "Keep the first N dimensions of each vector, renormalised (Matryoshka truncation: N/d of the memory; for a "
        f"model trained with matryoshka_dims; default: all). {S('write', 'add')} keeps the index's.",
        ge=1,
    )
    on_disk: bool = setting(
        False,
        f"With {S.index_type} ivf or ivfpq: keep the IVF lists in a file beside the index, built in blocks and merged "
        "(FAISS merge_ondisk), memory-mapped on search: neither needs the lists in memory.",
    )
    write: str = setting("new", f"What the build does to {S.out}.", choices=WRITE_MEANINGS)
    pcr: bool = setting(False, "Remove each language's first principal component (language-agnostic search, CMLM §5.2).")
    pcr_variant: str = setting(
        DEFAULT_VARIANT,
        f"With {S.pcr}: centred (PCA of the covariance) or uncentred (CMLM §5.2: first singular vector; the default).",
        choices=PCR_VARIANTS,
    )
    lang: str | None = setting(None, "Language of texts without a lang column, ISO 639-3 (default: detected per text).")
    backend: str = setting(
        AUTO_BACKEND,
        BACKEND_HELP + " auto: openvino on a CPU with AMX (torch-bf16 without OpenVINO), checked against torch; else onnx "
        "(float32, checked against torch); without onnxruntime, torch-bf16 on a CPU with AVX512-BF16, else torch; with "
        f"{S('write', 'add')}, "
        "the index's own.",
        choices=(AUTO_BACKEND, *BACKENDS),
    )
    batch_size: int | None = setting(None, "Texts per forward pass (default: per backend and device).", ge=1)
    processes: int = setting(
        1,
        "Encode on N processes: one per GPU (cuda:0…) when CUDA is visible, else CPU processes sharing the cores. Torch backend.",
        ge=1,
    )
    engine: str = setting(
        "local",
        f"local: this machine; ray: a Ray Data pipeline (files read on Ray tasks, encoded on {S.processes} actors; a "
        f"local Ray, or the cluster at {S.address}; pip install 'encodr[ray]').",
        choices=ENGINES,
    )
    address: str | None = setting(
        None,
        f"With {S.engine} ray: the Ray cluster's address (e.g. ray://head:10001; default: RAY_ADDRESS, else a local Ray).",
    )
    window: int = setting(WINDOW, ge=1)
    glob: str | None = setting(
        None,
        "In folders, read only files whose name matches this pattern (e.g. '*.pdf'; default: every kind encodr reads).",
    )
    no_ignore: bool = setting(
        False,
        "In folders, also read files .gitignore, .ignore and .encodrignore leave out, and dependency and build folders "
        "(node_modules, vendor, dist, build, target, virtual environments).",
    )
    max_file_size: int = setting(
        MAX_FILE_SIZE,
        "In folders, skip source, Markdown, HTML and text files larger than this many bytes (one summary line).",
        ge=1,
    )
    fast_stage: bool = setting(
        True,
        "A new index of source code over 200 kB is searchable first with a static model distilled from the model "
        "(made once, cached), then with the model itself.",
    )
    whole: bool = setting(
        False, "Index each text whole, cut at the model's window, instead of splitting longer texts into passages."
    )
    layout: Layout = Layout()
    shards: int | None = setting(
        None,
        "Split a new index into N shards, each document in the shard its id hashes to (each shard an ordinary index; "
        f"{S.engine} ray builds them in parallel; encodr serve {S.engine} ray serves one deployment a shard). "
        f"{S('write', 'add')}, "
        f"{S('write', 'sync')} and delete go to the shards they touch.",
        ge=1,
    )
    shard: tuple[int, int] | None = None

    def __post_init__(self):
        check(self)
        check_engine(self.engine, self.address)
        if self.processes > 1 and self.backend not in ("torch", AUTO_BACKEND) and self.engine == "local":
            raise EncodrError(
                f"{S.processes} works with {S.backend} torch (sentence-transformers' pool runs its own float32 pass; onnxruntime "
                f"already uses every core): drop {S.processes} for {self.backend}",
                field="processes",
            )
        if self.lang is not None:
            check_code(self.lang)
        check_quantize(self.quantize, self.index_type)
        if self.on_disk and self.index_type not in ("ivf", "ivfpq"):
            raise EncodrError(
                f"{S.on_disk} keeps an IVF index's lists in a file; pass {S.index_type} ivf or ivfpq with it, "
                f"or drop {S.on_disk}",
                field="on_disk",
            )
        if self.write == "sync" and self.engine != "local":
            raise EncodrError(
                f"{S('write', 'sync')} reads and compares the documents on this machine: drop {S.engine} ray for it (a "
                "full build can use Ray)",
                field="engine",
            )
