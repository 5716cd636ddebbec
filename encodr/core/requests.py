"""The requests of every command, each field declared once (:func:`~.fields.option`).

A request is a pydantic model: types, defaults, help and ranges are checked when it is built
(:func:`~.fields.build`), and the rules that tie fields together live in its ``check()``,
which the core's command (:mod:`encodr.core.commands`) calls before any work. The CLI, the TUI
and the HTTP server build these and render the results; none of them holds a rule or a
default of its own.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ..errors import EncodrError
from .fields import option

BACKEND_HELP = (
    "The forward pass: torch-bf16 multiplies in bfloat16 (faster on a CPU with AVX512-BF16 or AMX, slower elsewhere); onnx runs "
    "onnxruntime on the CPU; onnx-int8 adds dynamic int8 quantisation (faster; the docs' benchmarks give speed and quality)."
)
CLI, CLI_TUI, CLI_HTTP, HTTP, MCP, HTTP_MCP = ("cli",), ("cli", "tui"), ("cli", "http"), ("http",), ("mcp",), ("http", "mcp")
CLI_HTTP_MCP = ("cli", "http", "mcp")  # what the TUI does not offer (it has no widget for it)


MODE_HELP = (
    "hybrid: vectors and BM25 fused by --fusion (dense on an index built without a keyword index); dense: vectors; "
    "keyword: BM25 (SQLite FTS5)."
)
RERANK_HELP = "A CrossEncoder (directory, Hub id, or an encodr cross/ output) that re-scores the first hits (--rerank-depth)."


def _rerank_defaults() -> tuple[int, float]:
    """The re-ranker's depth and weight where none is given or tuned (:data:`encodr.index.options.RERANK_DEPTH`, ``RERANK_WEIGHT``)."""
    from ..index.options import RERANK_DEPTH, RERANK_WEIGHT

    return RERANK_DEPTH, RERANK_WEIGHT


RERANK_WEIGHT_HELP = (
    "With --rerank: w in w·cross + (1−w)·first stage, each score min-max normalised over the re-scored hits "
    f"(1: the cross-encoder's order alone; 0: the first stage's; default: the weight tuned with the re-ranker, else {_rerank_defaults()[1]:g})."
)


def _index_sizes() -> tuple[int, int]:
    """The sizes where ``--index-type auto`` moves from flat to hnsw and from hnsw to ivfpq (:mod:`encodr.index.faiss_types`)."""
    from ..index.faiss_types import FLAT_MAX, HNSW_MAX

    return FLAT_MAX, HNSW_MAX


def _fusion_weights() -> tuple[float, float, float]:
    """The fusion's own dense weights: zscore's for prose and for source code, convex's (:mod:`encodr.index.fusion`)."""
    from ..index.fusion import CODE_ALPHA, CONVEX_ALPHA, ZSCORE_ALPHA

    return ZSCORE_ALPHA, CODE_ALPHA, CONVEX_ALPHA


FUSION_WEIGHT_HELP = (
    "Hybrid: the dense scores' weight α in α·dense + (1−α)·BM25 (default: the weight tuned on judgments for the index's "
    "model, encodr tune --recipe judged; else the fusion's own: zscore weighs prose {:g} and source code {:g}, "
    "convex {:g}).".format(*_fusion_weights())
)
FUSION_HELP = (
    "How hybrid fuses: zscore (each list's scores standardised, weighted by --fusion-weight), convex (min-max normalised, "
    "weighted likewise) or rrf (reciprocal rank fusion); all language-aware."
)


FILTER_HELP = (
    "Only hits from documents where FIELD=VALUE (also !=, >=, <=); repeatable, all must hold. Fields: source (a glob, e.g. "
    "notes/*.md), lang, id, title, modified and size (the file's; ISO 8601 dates), or any metadata field (a JSONL object's "
    'other fields, --meta-columns, Markdown front matter). Over HTTP also an object: {"year": ">=2020", "lang": "eng"}.'
)


def parse_filters(given) -> list:
    """``--filter`` values (``["year>=2020", …]``) or HTTP's object (``{"year": ">=2020"}``) as
    :class:`encodr.index.filters.Filter` s.

    Raises:
        EncodrError: a filter that does not parse, naming it (``field="filter"``).
    """
    from ..index import filters as fl

    if not given:
        return []
    if isinstance(given, dict):
        return fl.from_mapping(given)
    return [fl.parse(text) for text in given]


def _index_types() -> tuple[str, ...]:
    from ..index.faiss_types import INDEX_TYPES

    return INDEX_TYPES


def _quantize() -> tuple[str, ...]:
    from ..index.quantized import QUANTIZE

    return QUANTIZE


def _poolings() -> tuple[str, ...]:
    from ..models.encoder import POOLINGS

    return POOLINGS


def _amp_modes() -> tuple[str, ...]:
    from ..training.args import AMP_MODES

    return AMP_MODES


def _pcr_variants() -> tuple[str, ...]:
    from ..models.pcr import PCR_VARIANTS

    return PCR_VARIANTS


def _write_meanings() -> dict[str, str]:
    from ..index.options import WRITE_MEANINGS

    return WRITE_MEANINGS


def _suites() -> tuple[str, ...]:
    from ..evaluation.tasks import PRIMARY

    return tuple(PRIMARY)


def _engines() -> tuple[str, ...]:
    from ..index.engines import ENGINES

    return ENGINES


def build_default(name: str):
    """The default of a build setting, from its one declaration (:class:`encodr.index.options.BuildOptions`)."""
    import dataclasses

    from ..index.options import BuildOptions

    return next(f.default for f in dataclasses.fields(BuildOptions) if f.name == name)


def serve_default(name: str):
    """The default of a server limit, from its one declaration (:class:`encodr.core.limits.Limits`)."""
    import dataclasses

    from .limits import Limits

    return next(f.default for f in dataclasses.fields(Limits) if f.name == name)


def layout_default(name: str):
    """Where record files keep their fields by default, from its one declaration (:class:`encodr.data.records.Layout`)."""
    import dataclasses

    from ..data.records import Layout

    return next(f.default for f in dataclasses.fields(Layout) if f.name == name)


def search_default(name: str):
    """The default of a search setting, from its one declaration (:class:`encodr.index.options.SearchOptions`)."""
    from ..index.options import SearchOptions

    return SearchOptions.default(name)


def search_choices(name: str) -> tuple[str, ...]:
    """The choices of ``mode``, ``fusion`` and ``keyword_stats`` (:mod:`encodr.index.options`, :mod:`encodr.index.fusion`)."""
    from ..index.fusion import FUSIONS
    from ..index.options import KEYWORD_STATS, MODES

    return {"mode": MODES, "fusion": FUSIONS, "keyword_stats": KEYWORD_STATS}[name]


class Request(BaseModel):
    """A command's request: unknown fields are refused (422 over HTTP, naming the field)."""

    model_config = ConfigDict(extra="forbid")

    def check(self) -> None:
        """Refuse what the fields' types cannot express (combinations, files, names), before any work.

        Raises:
            EncodrError: naming the field (``field``) and the fix.
        """


def _comma_list(value):
    """``"spa,fra"`` or ``["spa,fra", "deu"]`` → ``["spa", "fra", "deu"]`` (``None`` stays)."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    return [c.strip() for item in items for c in str(item).split(",") if c.strip()] or None


def pcr_variant(pcr: bool, variant: str | None) -> str | None:
    """The PCR variant ``pcr`` / ``pcr_variant`` ask for: ``None`` without PCR, else the
    variant or :data:`encodr.models.pcr.DEFAULT_VARIANT` (CMLM §5.2).

    Raises:
        EncodrError: a variant without ``pcr``, or an unknown variant.
    """
    from ..models.pcr import DEFAULT_VARIANT, check_variant

    if variant and not pcr:
        raise EncodrError("--pcr-variant chooses how --pcr fits its components; pass --pcr too", field="pcr_variant")
    return check_variant(variant or DEFAULT_VARIANT) if pcr else None


class SearchRequest(Request):
    """Nearest texts in an index: rank, score, language, text, source:line."""

    query: list[str] = option([], "The queries (one or several); none on the CLI: one query a line from stdin.", argument=True)
    index: str = option(..., "Index directory, or the name of one in the workspace (encodr indexes).", flags=("--index", "-i"))
    k: int = option(search_default("k"), "Results per query.", flags=("-k",), ge=1, fronts=CLI_HTTP_MCP)
    lang: str | None = option(
        None, "Query language, ISO 639-3 (for --pcr indexes; default: detected among the index's languages).", fronts=CLI_HTTP_MCP
    )
    hit_lang: list[str] | None = option(
        None, "Only hits in these languages, ISO 639-3, comma-separated or repeated (e.g. spa,fra)."
    )
    model: str | None = option(None, "Must match the index's model.", flags=("--model", "-m"), fronts=CLI_HTTP_MCP)
    backend: str | None = option(
        None,
        "The queries' forward pass (default: the one the index was built with).",
        choices=lambda: _backends(),
        fronts=CLI_HTTP_MCP,
    )
    nprobe: int | None = option(
        None,
        "IVF indexes: lists visited per query (default 32 for ivf, 128 for ivfpq); more: slower, closer to exact.",
        ge=1,
        fronts=CLI_HTTP_MCP,
    )
    ef_search: int | None = option(
        None, "HNSW indexes: candidate list size (default 128); more: slower, closer to exact.", ge=1, fronts=CLI_HTTP_MCP
    )
    mode: str = option(search_default("mode"), MODE_HELP, choices=search_choices("mode"))
    keyword_stats: str = option(
        search_default("keyword_stats"),
        "Sharded indexes: the term statistics of BM25. shard: each shard's own (fast; a term rare in one shard "
        "scores higher there); global: gathered from every shard first, so keyword and hybrid rank as one index "
        "would (one more round trip, and each shard scores all its matching texts).",
        choices=search_choices("keyword_stats"),
        fronts=CLI_HTTP_MCP,
    )
    fusion: str = option(search_default("fusion"), FUSION_HELP, choices=search_choices("fusion"), fronts=CLI_HTTP_MCP)
    rerank: str | None = option(None, RERANK_HELP)
    fusion_weight: float | None = option(search_default("fusion_weight"), FUSION_WEIGHT_HELP, ge=0, le=1, fronts=CLI_HTTP_MCP)
    rerank_depth: int | None = option(
        search_default("rerank_depth"),
        "With --rerank: first-stage hits the cross-encoder re-scores per query "
        f"(default: the depth tuned with the re-ranker, else {_rerank_defaults()[0]}).",
        ge=1,
        fronts=CLI_HTTP_MCP,
    )
    rerank_weight: float | None = option(search_default("rerank_weight"), RERANK_WEIGHT_HELP, ge=0, le=1, fronts=CLI_HTTP_MCP)
    passages: bool = option(
        search_default("passages"),
        "Rank passages; by default an index of long documents split into passages ranks each document once, by its best passage.",
        fronts=CLI_HTTP_MCP,
    )
    filter: list[str] | dict[str, Any] | None = option(None, FILTER_HELP)
    full: bool = option(
        False,
        "Print whole texts; by default a hit shows a snippet around its matched words, as wide as the terminal allows.",
        fronts=CLI,
    )
    format: str = option(
        "table",
        "How hits print: table (rank, score, the snippet and path:line); grep (path:line:column: snippet, one line a "
        "hit, as ripgrep's --vimgrep prints for editors); files (each hit's path once).",
        choices=("table", "grep", "files"),
        fronts=CLI,
    )
    no_judgments: bool = option(
        False,
        "Rank as the index does: do not move the documents judged for this query (by default its grade 2 and 1 "
        "documents come first, grade 0 last, also for a reworded query; evaluation never moves them).",
        fronts=CLI_HTTP_MCP,
    )
    context: int = option(
        0,
        "Lines of the document around each hit's snippet, as grep -C: the hits print as --format grep does, each with "
        "these lines before and after it; in JSON, each hit's context.",
        flags=("-C", "--context"),
        ge=0,
        le=100,
        fronts=CLI_HTTP_MCP,
    )
    timings: bool = option(
        False,
        "Also give the time of each phase of the search in ms (language, encode, dense, keyword, fusion, rerank, hits, "
        "highlights, total), as Elasticsearch's profile does.",
        fronts=CLI_HTTP_MCP,
    )

    _query = field_validator("query", mode="before")(lambda v: [v] if isinstance(v, str) else v)
    _hit_lang = field_validator("hit_lang", mode="before")(_comma_list)

    def filters(self) -> list:
        """The parsed filters (:mod:`encodr.index.filters`), ANDed; empty without any."""
        return parse_filters(self.filter)

    def options(self):
        """The search's settings (:class:`encodr.index.options.SearchOptions`).

        Raises:
            OptionError: a value out of range, naming the field; EncodrError: a filter that does not parse.
        """
        from ..index.options import SearchOptions

        return SearchOptions.given(
            k=self.k,
            mode=self.mode,
            fusion=self.fusion,
            lang=self.lang,
            hit_langs=self.hit_lang,
            filters=self.filters(),
            rerank_depth=self.rerank_depth,
            rerank_weight=self.rerank_weight,
            fusion_weight=self.fusion_weight,
            passages=self.passages,
            nprobe=self.nprobe,
            ef_search=self.ef_search,
            keyword_stats=self.keyword_stats,
        )

    def check(self) -> None:
        from ..data.language import check_code

        self.options()  # cheap checks, before any model loads
        for name, codes in (("lang", [self.lang] if self.lang else []), ("hit_lang", self.hit_lang or [])):
            for code in codes:
                check_code(code, name)
        if not self.query:
            raise EncodrError("no query given; pass QUERY, or one query a line on stdin", field="query")
        if any(not q.strip() for q in self.query):
            raise EncodrError(
                "QUERY is blank; pass non-blank queries, or none to read one query a line from stdin", field="query"
            )


class ScoreRequest(Request):
    """Similarity of two texts: cosine for a bi-encoder, σ(score) for a cross-encoder."""

    text_a: str = option(..., "First text.", argument=True, fronts=CLI_HTTP_MCP)
    text_b: str = option(..., "Second text.", argument=True, fronts=CLI_HTTP_MCP)
    model: str = option("minilm", "Model (alias, directory, Hub id).", flags=("--model", "-m"), fronts=CLI_HTTP_MCP)
    cross: bool = option(False, "--model is a cross-encoder: σ of its score, both orders averaged.", fronts=CLI_HTTP_MCP)
    device: str | None = option(None, "cpu, cuda, cuda:N or mps (default: cuda when available).", fronts=CLI)
    backend: str = option("torch", BACKEND_HELP, choices=lambda: _backends(), fronts=CLI_HTTP_MCP)

    def check(self) -> None:
        for name in ("text_a", "text_b"):
            if not getattr(self, name).strip():
                raise EncodrError(
                    f'{name.upper()} is blank; pass two non-blank texts, e.g. encodr score "a cat" "a kitten"', field=name
                )
        if self.cross and self.backend != "torch":
            raise EncodrError(
                f"--backend {self.backend} runs bi-encoders; a cross-encoder (--cross) runs on torch: drop --backend",
                field="backend",
            )


class EmbedRequest(Request):
    """OpenAI-compatible embeddings (``POST /v1/embeddings``): unit-norm vectors of the inputs."""

    model_config = ConfigDict(extra="ignore")  # OpenAI clients may send fields this server does not use (e.g. user)

    input: str | list[str] = option(..., "A text or a list of texts.", fronts=HTTP)
    model: str = option(..., "A served model's name (GET /v1/models).", fronts=HTTP)
    encoding_format: Literal["float", "base64"] = option(
        "float", "float: lists of numbers; base64: little-endian float32 bytes.", fronts=HTTP
    )
    dimensions: int | None = option(
        None,
        "Keep the first N dimensions of each vector, renormalised (Matryoshka truncation, as OpenAI's "
        "dimensions); at most the model's dimension (default: all).",
        fronts=HTTP,
        ge=1,
    )

    @property
    def texts(self) -> list[str]:
        """The inputs as a list."""
        return [self.input] if isinstance(self.input, str) else list(self.input)

    def check(self) -> None:
        if not self.texts:
            raise EncodrError("input is empty; pass a text or a non-empty list of texts", field="input")
        if any(not t.strip() for t in self.texts):
            raise EncodrError("input holds a blank text; pass non-blank texts", field="input")


class RerankRequest(Request):
    """Re-rank texts for a query with a cross-encoder (``POST /v1/rerank``), in the shape of Cohere's
    and text-embeddings-inference's rerank: ``documents`` (or ``texts``) in, scores by index out."""

    model_config = ConfigDict(extra="ignore")  # clients of other rerank APIs send fields this server does not use

    model: str = option(..., "A served cross-encoder's name (GET /v1/models).", fronts=HTTP)
    query: str = option(..., "The query.", fronts=HTTP)
    documents: list[str] | None = option(None, "The texts to score (Cohere's name).", fronts=HTTP)
    texts: list[str] | None = option(None, "The texts to score (text-embeddings-inference's name).", fronts=HTTP)
    top_n: int | None = option(None, "Return only the best N (default: all).", fronts=HTTP, ge=1)
    return_documents: bool = option(False, "Include each text in its result.", fronts=HTTP)

    @property
    def candidates(self) -> list[str]:
        """The texts, under either name."""
        return list(self.documents if self.documents is not None else self.texts or [])

    def check(self) -> None:
        if not self.query.strip():
            raise EncodrError("query is blank; pass the query the texts are scored against", field="query")
        if self.documents is not None and self.texts is not None:
            raise EncodrError("pass documents or texts, not both", field="texts")
        if not self.candidates:
            raise EncodrError("documents is empty; pass a non-empty list of texts to score", field="documents")


class IndexRequest(Request):
    """Encode a corpus and store it in a FAISS + SQLite index."""

    corpus: list[str] = option(
        [],
        "Files or folders (read recursively): Markdown, HTML, PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), OpenDocument (.odt, .ods, .odp), EPUB, RTF and e-mail (.eml) documents; source code (.py .js .ts .go .rs .java .c .cpp .rb .sh and more: a section per function, method or class); text files (in a folder, one document each; given alone, one text a line), TSV or CSV files with a header with a 'text' column (optional id, lang), "
        "or JSONL (one object a line: text, optional _id / id, title, lang; a BEIR corpus.jsonl).",
        argument=True,
        fronts=CLI_TUI,
    )
    upgrade: str | None = option(
        None,
        "Bring an index written by an older encodr (directory or workspace name) up to date, once: its vectors are kept, "
        "nothing is encoded. Takes no CORPUS.",
        fronts=CLI,
    )
    model: str | None = option(
        None, "Model (default: minilm; with --add, the index's model).", flags=("--model", "-m"), fronts=CLI_TUI
    )
    out: str | None = option(
        None,
        "Index directory (default: $ENCODR_HOME/indexes/NAME of the first file; with --add, a workspace index name works too).",
        flags=("--out", "-o"),
        fronts=CLI_TUI,
    )
    index_type: str = option(
        build_default("index_type"),
        "The FAISS index: auto is flat up to {:,} vectors, hnsw up to {:,}, ivfpq above.".format(*_index_sizes()),
        choices=lambda: _index_types(),
        fronts=CLI_TUI,
    )
    quantize: str = option(
        build_default("quantize"),
        "Vectors kept as: none (float32); int8 (4× smaller: FAISS's 8-bit scalar quantiser); binary (32× smaller in memory: "
        "sign bits searched by Hamming distance, the best candidates rescored by int8 vectors kept on disk; a flat scan).",
        choices=lambda: _quantize(),
        fronts=CLI_TUI,
    )
    dim: int | None = option(
        None,
        "Keep the first N dimensions of each vector, renormalised (Matryoshka truncation: N/d of the memory; for a model "
        "trained with matryoshka_dims; default: all). --add keeps the index's.",
        ge=1,
        fronts=CLI_TUI,
    )
    on_disk: bool = option(
        build_default("on_disk"),
        "With --index-type ivf or ivfpq: keep the IVF lists in a file beside the index, built in blocks and merged (FAISS "
        "merge_ondisk), memory-mapped on search: neither needs the lists in memory.",
        fronts=CLI_TUI,
    )
    write: str = option(
        "new",
        "What the build does to --out.",
        choices=lambda: _write_meanings(),
        fronts=CLI_TUI,
    )
    watch: bool = option(
        False,
        "After indexing, keep watching CORPUS and sync on every change (debounced), one line per sync; Ctrl-C stops.",
        fronts=CLI,
    )
    pcr: bool = option(
        build_default("pcr"),
        "Remove each language's first principal component (language-agnostic search, CMLM §5.2).",
        fronts=CLI_TUI,
    )
    pcr_variant: str | None = option(
        None,
        "With --pcr: centred (PCA of the covariance) or uncentred (CMLM §5.2: first singular vector; the default).",
        choices=lambda: _pcr_variants(),
        fronts=CLI_TUI,
    )
    lang: str | None = option(
        None, "Language of texts without a lang column, ISO 639-3 (default: detected per text).", fronts=CLI_TUI
    )
    batch_size: int | None = option(None, "Texts per forward pass (default: per backend and device).", ge=1, fronts=CLI_TUI)
    backend: str = option(
        build_default("backend"),
        BACKEND_HELP + " auto: torch-bf16 on a CPU with AMX, where its quality equals float32's; else onnx (float32, "
        "checked against torch); without onnxruntime, torch-bf16 on a CPU with AVX512-BF16, else torch; with --add, the index's own.",
        choices=lambda: ("auto", *_backends()),
        fronts=CLI_TUI,
    )
    glob: str | None = option(
        None,
        "In folders, read only files whose name matches this pattern (e.g. '*.pdf'; default: every kind encodr reads).",
        fronts=CLI_TUI,
    )
    whole: bool = option(
        build_default("whole"),
        "Index each text whole, cut at the model's window, instead of splitting longer texts into passages.",
        fronts=CLI_TUI,
    )
    documents: bool = option(
        layout_default("documents"),
        "Plain text files: each blank-line-separated block (a file without blank lines: the whole file) is one document, "
        "not each line.",
        fronts=CLI_TUI,
    )
    records: bool = option(
        layout_default("records"),
        "Plain text files found in a folder: one text a line, as a text file given by itself is read "
        "(by default each .txt file in a folder is one document, its passages following its paragraphs).",
        fronts=CLI_TUI,
    )
    text_field: str = option(layout_default("text_field"), "JSONL: the field that holds the text.", fronts=CLI_TUI)
    text_column: str = option(
        layout_default("text_column"), "CSV / TSV: the header's column that holds the text.", fronts=CLI_TUI
    )
    id_column: str | None = option(
        layout_default("id_column"),
        "CSV / TSV: the column that holds each document's id (default: 'id' when present).",
        fronts=CLI_TUI,
    )
    title_column: str | None = option(
        layout_default("title_column"),
        "CSV / TSV: the column that holds each document's title (default: 'title' when present).",
        fronts=CLI_TUI,
    )
    meta_columns: list[str] | None = option(
        None,
        "CSV / TSV: columns kept as each document's metadata, for search --filter (comma-separated or repeated).",
        fronts=CLI_TUI,
    )
    processes: int = option(
        build_default("processes"),
        "Encode on N processes: one per GPU (cuda:0…) when CUDA is visible, else CPU processes sharing the cores. Torch backend.",
        ge=1,
        fronts=CLI_TUI,
    )
    engine: str = option(
        build_default("engine"),
        "local: this machine; ray: a Ray Data pipeline (files read on Ray tasks, encoded on --processes actors; a local "
        "Ray, or the cluster at --address; pip install 'encodr[ray]').",
        choices=lambda: _engines(),
        fronts=CLI_TUI,
    )
    address: str | None = option(
        None,
        "With --engine ray: the Ray cluster's address (e.g. ray://head:10001; default: RAY_ADDRESS, else a local Ray).",
        fronts=CLI_TUI,
    )
    shards: int | None = option(
        None,
        "Split a new index into N shards, each document in the shard its id hashes to (each shard an ordinary index; "
        "--engine ray builds them in parallel; encodr serve --engine ray serves one deployment a shard). "
        "--add, --sync and delete go to the shards they touch.",
        ge=1,
        fronts=CLI_TUI,
    )

    _meta_columns = field_validator("meta_columns", mode="before")(_comma_list)

    def check(self) -> None:
        if self.upgrade is not None:
            given = [
                name
                for name, spec in type(self).model_fields.items()
                if name != "upgrade" and getattr(self, name) != spec.get_default(call_default_factory=True)
            ]
            if given:
                named = "CORPUS" if given[0] == "corpus" else "--" + given[0].replace("_", "-")
                raise EncodrError(
                    f"--upgrade converts an existing index and reads no documents: pass it alone, without {named} "
                    "(then --add or --sync as usual)",
                    field="upgrade",
                )
            return
        if not self.corpus:
            raise EncodrError("no corpus given; pass one or more text, TSV, CSV or JSONL files", field="corpus")
        pcr_variant(self.pcr, self.pcr_variant)
        if self.watch and self.write in ("add", "overwrite"):
            raise EncodrError(
                "--watch keeps the index in step with CORPUS by syncing it; drop --add / --overwrite (the first pass is a --sync)",
                field="watch",
            )
        for name in ("text_field", "text_column", "id_column", "title_column"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise EncodrError(f"--{name.replace('_', '-')} is blank; name a field or column of the corpus", field=name)

    def write_mode(self) -> str:
        """What the build does to ``out`` (:data:`encodr.index.options.WRITES`): ``write``, or ``sync`` with ``watch``."""
        return "sync" if self.watch else self.write

    def options(self, encoder=None):
        """How to build (:class:`encodr.index.options.BuildOptions`), with ``encoder`` (a loaded
        model) in place of ``model`` when given; ``watch`` syncs.

        Raises:
            OptionError: a value the options refuse, naming the field.
        """
        from ..index.options import BuildOptions

        given = dict(
            model=encoder or self.model,
            index_type=self.index_type,
            quantize=self.quantize,
            dim=self.dim,
            on_disk=self.on_disk,
            write=self.write_mode(),
            pcr=self.pcr,
            pcr_variant=pcr_variant(True, self.pcr_variant),
            lang=self.lang,
            backend=self.backend,
            batch_size=self.batch_size,
            processes=self.processes,
            engine=self.engine,
            address=self.address,
            glob=self.glob,
            whole=self.whole,
            layout=self.layout(),
            shards=self.shards,
        )
        return BuildOptions(**given)

    def layout(self):
        """Where the corpus's record files keep their fields (:class:`encodr.data.records.Layout`)."""
        from ..data.records import Layout

        return Layout(
            self.text_field.strip(),
            self.text_column.strip(),
            self.id_column and self.id_column.strip(),
            self.title_column and self.title_column.strip(),
            self.documents,
            tuple(self.meta_columns or ()),
            self.records,
        )

    def target(self) -> Path:
        """The index directory: ``out``, else the workspace index named after the first file."""
        from ..paths import home

        return Path(self.out) if self.out else home() / "indexes" / Path(self.corpus[0]).stem


class DeleteRequest(Request):
    """Delete documents from an index: by id, by source glob, or by metadata filter (their texts go, unless another document holds them)."""

    ids: list[str] = option(
        [],
        "Document ids (as search shows them: a JSONL _id, a CSV id, a file's path, or source:line).",
        argument=True,
        fronts=CLI,
    )
    index: str = option(
        ..., "Index directory, or the name of one in the workspace (encodr indexes).", flags=("--index", "-i"), fronts=CLI
    )
    source: list[str] | None = option(
        None, "Delete the documents whose source matches this glob (e.g. 'notes/old/*'); repeatable.", fronts=CLI
    )
    filter: list[str] | None = option(
        None,
        "Delete the documents where FIELD=VALUE (also !=, >=, <=); repeatable, all must hold, and with --source "
        "the source must match too (fields as search --filter, lang excepted).",
        fronts=CLI,
    )

    _ids = field_validator("ids", mode="before")(lambda v: [v] if isinstance(v, str) else v)

    def filters(self) -> list:
        """The parsed filters (:func:`parse_filters`)."""
        return parse_filters(self.filter)

    def check(self) -> None:
        filters = self.filters()
        if not (self.ids or self.source or filters):
            raise EncodrError("name the documents to delete: IDS, --source GLOB or --filter FIELD=VALUE", field="ids")


class UpsertDocument(BaseModel):
    """One document of an upsert: ``id`` and ``text``, optional ``title`` and ``metadata``."""

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    title: str | None = None
    metadata: dict[str, Any] | None = None
    lang: str | None = None


class UpsertRequest(Request):
    """Add or replace documents of a served index by id (``POST /v1/indexes/{name}/documents``)."""

    index: str | None = option(None, "The served index (over HTTP: the path's NAME).", fronts=MCP)
    documents: list[UpsertDocument] = option(
        ..., "The documents: id, text, optional title, metadata (an object, for filters) and lang.", fronts=HTTP_MCP
    )

    def check(self) -> None:
        if not self.documents:
            raise EncodrError('documents is empty; send at least one {"id", "text"}', field="documents")
        ids = [d.id for d in self.documents]
        for d in self.documents:
            if not d.id.strip():
                raise EncodrError("a document has a blank id; give each document a non-blank id", field="documents")
            if not d.text.strip():
                raise EncodrError(
                    f"document '{d.id}' has a blank text; send its text, or delete it (DELETE …/documents)", field="documents"
                )
        if len(set(ids)) != len(ids):
            raise EncodrError(
                f"document id '{next(i for i in ids if ids.count(i) > 1)}' appears twice; send each id once", field="documents"
            )

    def records(self) -> list:
        """The documents as records (:class:`encodr.data.records.Record`), one each, source :data:`encodr.index.documents.API_SOURCE`."""
        from ..data.language import check_code
        from ..data.records import Record
        from ..index.documents import API_SOURCE

        for d in self.documents:
            if d.lang:
                check_code(d.lang, f"document '{d.id}': lang")
        return [
            Record(f"{d.title or ''} {d.text}".strip(), API_SOURCE, 1, d.id, d.lang, d.title, meta=d.metadata or None)
            for d in self.documents
        ]


class DocumentIdsRequest(Request):
    """Delete documents of a served index by id (``DELETE /v1/indexes/{name}/documents``)."""

    index: str | None = option(None, "The served index (over HTTP: the path's NAME).", fronts=MCP)
    ids: list[str] = option(..., "The ids of the documents to delete.", fronts=HTTP_MCP)

    def check(self) -> None:
        if not self.ids:
            raise EncodrError("ids is empty; send the ids of the documents to delete", field="ids")


class DocumentRequest(Request):
    """One document of a served index (MCP's ``get_document``): whole, its text (rebuilt from its passages), title, source and
    metadata; or, with ``lines``, those lines of its file."""

    index: str = option(..., "The served index (over HTTP: the path's NAME).", fronts=MCP)
    id: str = option(..., "The document's id, as a hit's document shows it, or its path as a hit shows it.", fronts=MCP)
    lines: str | None = option(
        None, "Only these lines of its file, as a hit gives them: LINE or FIRST-LAST (e.g. 12-40).", fronts=MCP
    )


class ShowRequest(Request):
    """Print a document of an index, or a range of its lines, as the index holds it (qmd's get): PATH as a hit shows it, PATH:LINE or PATH:FIRST-LAST."""

    target: str = option(
        ..., "The document: its path as a hit shows it (or its id), optionally :LINE or :FIRST-LAST.", argument=True, fronts=CLI
    )
    index: str = option(
        ..., "Index directory, or the name of one in the workspace (encodr indexes).", flags=("--index", "-i"), fronts=CLI
    )
    context: int | None = option(
        None,
        "With :LINE, also this many lines before and after it, as grep's context option gives.",
        flags=("--context", "-C"),
        ge=0,
        fronts=CLI,
    )


GRADE_HELP = "0 not relevant, 1 relevant, 2 highly relevant (BEIR / TREC grades)."
INDEX_HELP = "Index directory, or the name of one in the workspace (encodr indexes)."
CLI_TUI_MCP = ("cli", "tui", "mcp")


class CompareRequest(Request):
    """Compare two texts as an index's model sees them: their cosine, and each one's nearest
    passages in the index (each text encoded once, as a query is)."""

    a: str = option(..., "The first text.", argument=True, fronts=CLI_TUI)
    b: str = option(..., "The second text.", argument=True, fronts=CLI_TUI)
    index: str = option(..., INDEX_HELP, flags=("--index", "-i"), fronts=CLI_TUI)
    k: int = option(5, "Nearest passages shown for each text.", flags=("-k",), ge=1, fronts=CLI)
    lang: str | None = option(
        None, "The texts' language, ISO 639-3 (for --pcr indexes; default: detected among the index's languages).", fronts=CLI
    )

    def check(self) -> None:
        from ..data.language import check_code

        if self.lang:
            check_code(self.lang, "lang")
        if not self.a.strip() or not self.b.strip():
            raise EncodrError("compare needs two texts; pass A and B, neither empty", field="a" if not self.a.strip() else "b")


class JudgeRequest(Request):
    """Judge a hit: how relevant a document is to a query, kept with the index (judging the pair again replaces the grade);
    encodr eval retrieval --index measures the index on its judgments, and encodr tune --recipe judged learns from them."""

    query: str = option(..., "The query the document was found for.", argument=True)
    doc: str = option(..., "The document's id, as a hit shows it.", argument=True)
    index: str | None = option(None, INDEX_HELP, flags=("--index", "-i"), fronts=CLI_TUI_MCP)
    grade: int = option(1, GRADE_HELP, ge=0, le=2)
    passage: str | None = option(None, "The passage judged (a hit's text), kept beside the grade.")
    delete: bool = option(
        False,
        "Delete the judgment of QUERY and DOC instead (the TUI's Delete on the Judgments tab; DELETE over HTTP).",
        fronts=CLI,
    )

    def check(self) -> None:
        if not self.query.strip():
            raise EncodrError("QUERY is blank; pass the query the document was found for", field="query")
        if not self.doc.strip():
            raise EncodrError("DOC is blank; pass the document's id, as a hit shows it", field="doc")
        if not self.index:
            raise EncodrError("no index given; pass --index INDEX, the index the document is in", field="index")


class UnjudgeRequest(Request):
    """Delete the judgment of a (query, document) pair (``DELETE /v1/indexes/{name}/judgments``)."""

    query: str = option(..., "The judged query.", fronts=("tui", "http"))
    doc: str = option(..., "The judged document's id.", fronts=("tui", "http"))


class JudgmentsRequest(Request):
    """List an index's judgments, with each one's fold (train, dev or test, by a hash of the query) and status (current;
    edited: made on an earlier text of the document; orphaned: the document is gone); import a BEIR folder's or files' qrels;
    export them as a BEIR folder."""

    index: str = option(..., INDEX_HELP, flags=("--index", "-i"), fronts=CLI_TUI)
    import_from: str | None = option(
        None,
        "Import judgments: a BEIR folder (queries.jsonl, qrels/SPLIT.tsv), or QUERIES.jsonl,QRELS.tsv; all rows or none.",
        flags=("--import",),
        fronts=CLI,
    )
    split: str | None = option(None, "With --import of a BEIR folder: the qrels split (default: train).", fronts=CLI)
    export: str | None = option(
        None,
        "Write the judgments as a new BEIR folder: corpus.jsonl from the index, queries.jsonl, and "
        "qrels/train.tsv, dev.tsv and test.tsv by fold (current judgments only).",
        fronts=CLI,
    )

    def check(self) -> None:
        if self.split and not self.import_from:
            raise EncodrError("--split picks the qrels of a BEIR folder to --import; pass --import DIR too", field="split")
        if self.import_from and self.export:
            raise EncodrError("--import and --export do different things; pass one", field="export")


class SyncRequest(Request):
    """Bring a served index in step with the files under some paths (as ``encodr index --sync``): new documents added, changed ones
    re-encoded, those whose file is gone removed."""

    index: str = option(..., "The served index.", fronts=MCP)
    corpus: list[str] = option(..., "Files or folders on the server's machine whose documents the index must hold.", fronts=MCP)

    def check(self) -> None:
        if not self.corpus:
            raise EncodrError("corpus is empty; name the files or folders to sync with", field="corpus")


class EvalRequest(Request):
    """Evaluate a model: STS (Spearman ρ×100), word similarity, entity linking (acc@k), binary pairs (ROC-AUC×100),
    bitext retrieval (Tatoeba acc@1, both directions), or search over a BEIR-layout folder (nDCG@10, MRR@10,
    recall@100, MAP@100, through a real index). Cross-encoders (--cross) on sts and pairs."""

    suite: str = option(..., "What to evaluate.", argument=True, choices=lambda: _suites(), fronts=CLI_TUI)
    data: list[str] = option(
        [],
        "Evaluation files, BEIR-layout folders (retrieval), or bundled task names (default: the suite's bundled sets).",
        argument=True,
        flags=("--data", "-d"),
        fronts=CLI_TUI,
    )
    model: str = option("minilm", "Model to evaluate (alias, directory, Hub id).", flags=("--model", "-m"), fronts=CLI_TUI)
    compare: str | None = option(None, "A second model, shown side by side with the difference.", fronts=CLI_TUI)
    cross: bool = option(False, "--model is a cross-encoder (sts and pairs only).", fronts=CLI_TUI)
    compare_cross: bool = option(False, "--compare is a cross-encoder.", fronts=CLI_TUI)
    pcr: bool = option(
        False, "bitext: remove each language's first principal component before retrieval (CMLM §5.2).", fronts=CLI_TUI
    )
    pcr_variant: str | None = option(
        None, "With --pcr: centred or uncentred (the default).", choices=lambda: _pcr_variants(), fronts=CLI_TUI
    )
    limit: int | None = option(
        None,
        "Score only the first N items of each dataset (queries, pairs or sentences): a quick estimate.",
        ge=1,
        fronts=CLI_TUI,
    )
    plot: str | None = option(
        None, "sts, words, pairs: write the score distributions of high- and low-gold pairs (each model) to this PNG.", fronts=CLI
    )
    device: str | None = option(None, "cpu, cuda, cuda:N or mps (default: cuda when available).", fronts=CLI)
    backend: str = option(
        "torch", BACKEND_HELP + " For --model; --compare runs on torch.", choices=lambda: _backends(), fronts=CLI_TUI
    )
    split: str | None = option(
        None,
        "retrieval: the qrels split to score (qrels/SPLIT.tsv; default: test); with --index alone, the fold of its "
        "judgments: train, dev, test or all (default: test, the queries tuning never sees).",
        fronts=CLI_TUI,
    )
    mode: list[str] = option(
        [search_default("mode")],
        "retrieval: " + MODE_HELP + " Several (comma-separated or repeated): one row each, from one encoding of the corpus.",
        choices=search_choices("mode"),
        fronts=CLI_TUI,
    )
    fusion: list[str] = option(
        [search_default("fusion")],
        "retrieval: " + FUSION_HELP + " Several: one hybrid row each.",
        choices=search_choices("fusion"),
        fronts=CLI_TUI,
    )
    rerank: str | None = option(None, "retrieval: " + RERANK_HELP, fronts=CLI_TUI)
    rerank_weight: float | None = option(
        search_default("rerank_weight"), "retrieval: " + RERANK_WEIGHT_HELP, ge=0, le=1, fronts=CLI_TUI
    )
    whole: bool = option(
        False,
        "retrieval: index each document whole, cut at the model's window (default: passages, each document ranked by its best).",
        fronts=CLI_TUI,
    )
    index: str | None = option(
        None,
        "retrieval: score this existing index (a folder or workspace name), its own model encoding the queries, "
        "instead of indexing a BEIR folder: on its own judgments (encodr judge; each mode unless --mode), or "
        "with --queries and --qrels.",
        fronts=CLI_TUI,
    )
    queries: str | None = option(None, "retrieval, with --index: the queries, a BEIR queries.jsonl (_id, text).", fronts=CLI_TUI)
    qrels: str | None = option(
        None,
        "retrieval, with --index: the judgments, a BEIR qrels TSV (query-id, corpus-id, score) naming the index's document ids.",
        fronts=CLI_TUI,
    )
    no_cache: bool = option(
        False,
        "retrieval: index the corpus anew; by default the index built for a model and corpus is kept in the workspace "
        "(cache/retrieval) and reused while neither changes.",
        fronts=CLI_TUI,
    )
    filter: list[str] | None = option(
        None,
        "retrieval, with --index: search only documents where FIELD=VALUE, as search --filter does (judged documents "
        "it leaves out count as missed).",
        fronts=CLI_TUI,
    )

    def check(self) -> None:
        from .. import evaluation
        from ..data.beir import splits
        from ..evaluation.tasks import CROSS_SUITES

        self.searches()
        given = [name for name in ("index", "queries", "qrels") if getattr(self, name)]
        if given:
            self._check_scoring_an_index(given)
            return
        if self.filter:
            raise EncodrError(
                "--filter restricts an index's documents: use it with eval retrieval --index (and --queries, --qrels)",
                field="filter",
            )
        tasks = evaluation.tasks_for(self.suite, self.data or None)  # an unknown suite or dataset, before loading models
        if self.suite != "retrieval" and (
            "mode" in self.model_fields_set or "fusion" in self.model_fields_set or self.rerank or self.whole
        ):
            raise EncodrError(
                f"--mode, --fusion and --rerank choose how 'eval retrieval' searches, not '{self.suite}'; drop them", field="mode"
            )
        if self.split is not None and self.suite != "retrieval":
            raise EncodrError(f"--split picks the qrels of 'eval retrieval', not '{self.suite}'; drop --split", field="split")
        if self.suite == "retrieval":
            for task in tasks:
                there = splits(task.file())
                if self.retrieval_split not in there:
                    raise EncodrError(
                        f"{task.path}: no qrels/{self.retrieval_split}.tsv; its splits are {', '.join(there) or 'none'} (use --split)",
                        field="split",
                    )
        if (self.cross or self.compare_cross) and self.suite not in CROSS_SUITES:
            raise EncodrError(
                f"a cross-encoder scores pairs; --cross works with 'eval {' / '.join(CROSS_SUITES)}', not '{self.suite}'",
                field="cross",
            )
        if self.compare_cross and not self.compare:
            raise EncodrError(
                "--compare-cross says the --compare model is a cross-encoder; pass --compare MODEL too", field="compare_cross"
            )
        if (self.pcr or self.pcr_variant) and self.suite != "bitext":
            raise EncodrError(f"--pcr applies to 'eval bitext' (cross-language retrieval), not '{self.suite}'", field="pcr")
        pcr_variant(self.pcr, self.pcr_variant)
        if self.cross and self.backend != "torch":
            raise EncodrError(
                f"--backend {self.backend} runs bi-encoders; a cross-encoder (--cross) runs on torch: drop --backend",
                field="backend",
            )
        if self.plot is not None:
            if self.suite not in ("sts", "words", "pairs"):
                raise EncodrError(
                    f"--plot draws the scores of gold-scored pairs; it works with eval sts, words and pairs, not '{self.suite}'",
                    field="plot",
                )
            from ..plots import check_png

            check_png(Path(self.plot))

    def _check_scoring_an_index(self, given: list[str]) -> None:
        """:meth:`check` for ``eval retrieval --index`` (``given``: which of index, queries and qrels
        were passed): the three together or the index alone, and nothing that builds an index."""
        from ..index.judgments import ALL_FOLDS, FOLDS

        if self.suite != "retrieval":
            raise EncodrError(
                f"--{given[0]} scores an existing index with 'eval retrieval', not '{self.suite}'; drop it", field=given[0]
            )
        if given != ["index"] and len(given) < 3:
            missing = next(n for n in ("index", "queries", "qrels") if n not in given)
            raise EncodrError(
                f"scoring an existing index needs --index alone (its own judgments) or --index, --queries and --qrels together; "
                f"pass --{missing} too",
                field=missing,
            )
        if given == ["index"] and self.split is not None and self.split not in (*FOLDS, ALL_FOLDS):
            raise EncodrError(
                f"--split {self.split}: an index's judgments fall in the folds {', '.join(FOLDS)}; pass one of them or {ALL_FOLDS}",
                field="split",
            )
        for name, why in (
            ("data", "a BEIR folder to index"),
            ("compare", "a second model (it would need its own index)"),
            ("whole", "how to index"),
            *((("split", "a qrels split of a BEIR folder"),) if len(given) == 3 else ()),
            ("cross", "a cross-encoder to score pairs"),
            ("pcr", "bitext options"),
            ("plot", "score distributions of pairs"),
        ):
            if getattr(self, name):
                raise EncodrError(f"--{name} gives {why}, but --index scores an index already built; drop --{name}", field=name)
        if self.backend != "torch":
            raise EncodrError(
                "--index encodes the queries with the index's own model and backend; drop --backend", field="backend"
            )
        parse_filters(self.filter)

    _modes = field_validator("mode", "fusion", mode="before")(_comma_list)

    def searches(self) -> tuple:
        """The rankings ``eval retrieval`` scores, one row each (:class:`encodr.index.options.SearchOptions`):
        every mode, and ``hybrid`` once per fusion.

        Raises:
            OptionError: a value out of range, naming the field; EncodrError: a filter that does not parse.
        """
        from ..index.options import HYBRID, SearchOptions

        filters = tuple(parse_filters(self.filter))
        out = []
        for mode in dict.fromkeys(self.mode or [search_default("mode")]):
            for fusion in (
                dict.fromkeys(self.fusion or [search_default("fusion")]) if mode == HYBRID else [search_default("fusion")]
            ):
                out.append(SearchOptions(mode=mode, fusion=fusion, rerank_weight=self.rerank_weight, filters=filters))
        return tuple(out)

    @property
    def retrieval_split(self) -> str:
        """The qrels split ``eval retrieval`` scores: ``split``, else ``test`` (BEIR's)."""
        return self.split or "test"


# The few recipe fields most recipes share, offered as flags of their own (None keeps the recipe's value);
# every field of a recipe, these included, is also `--set KEY=VALUE`. A flag the chosen recipe lacks is
# refused by TuneRequest.check, naming the recipe's fields.
OVERRIDES = ("epochs", "batch_size", "lr", "max_length", "pooling", "seed", "amp")


class TuneRequest(Request):
    """Fine-tune a base model with a recipe (Mirror-BERT, Trans-Encoder or CMLM; encodr recipes lists them); saves a
    SentenceTransformer (Trans-Encoder: bi/ and cross/)."""

    file: str | None = option(
        None,
        "Training data: UTF-8 text, one string a line (Trans-Encoder: pairs or sentences; retrieval: a file or folder of documents). "
        "Default: the recipe's bundled data.",
        argument=True,
        fronts=CLI_TUI,
    )
    recipe: str = option("sentence", "Bundled recipe (encodr recipes) or a .yaml path.", flags=("--recipe", "-r"), fronts=CLI_TUI)
    model: list[str] = option(
        ["minilm"],
        "Base model: alias, local directory or Hub id. Repeat for Trans-Encoder mutual distillation.",
        flags=("--model", "-m"),
        fronts=CLI_TUI,
    )
    dev: str | None = option(
        None,
        "Keep the best checkpoint on this set: a bundled one (stsb-dev, mesh-dev, wordsim353), a scored-pairs file, "
        "a BEIR folder (nDCG@10 on its dev or train queries), or auto (retrieval recipe: pseudo-queries cut from your documents).",
        fronts=CLI_TUI,
    )
    bitext: list[str] = option(
        [], "Translation pairs, source<TAB>target (recipes that learn from bitext); repeatable.", fronts=CLI_TUI
    )
    out: str | None = option(None, "Output directory (default: encodr-runs/RECIPE-TIME).", flags=("--out", "-o"), fronts=CLI_TUI)
    overwrite: bool = option(False, "Replace an existing output directory.", fronts=CLI)
    limit: int | None = option(None, "Use only the first N distinct strings (Trans-Encoder: pairs).", ge=2, fronts=CLI)
    device: str | None = option(None, "cpu, cuda, cuda:N or mps (default: cuda when available).", fronts=CLI)
    max_length: int | None = option(None, "Max sequence length in tokens.", fronts=CLI)
    epochs: int | None = option(None, "Passes over the data.", fronts=CLI)
    batch_size: int | None = option(
        None, "Examples per step over all processes (Mirror: distinct strings, 2× views).", fronts=CLI
    )
    lr: float | None = option(None, "AdamW learning rate.", fronts=CLI)
    pooling: str | None = option(
        None,
        "How token vectors become one vector (auto: the model's own).",
        choices=lambda: _poolings(),
        fronts=CLI,
    )
    seed: int | None = option(None, "Random seed.", fronts=CLI)
    amp: str | None = option(
        None,
        "Mixed precision (auto: bf16 or fp16 on CUDA, fp32 on CPU).",
        choices=lambda: _amp_modes(),
        fronts=CLI,
    )
    set: list[str] = option(
        [],
        "Any field of the recipe as KEY=VALUE (temperature=0.05, span_mask=0, mini_batch=256…; docs/reference/recipes.md "
        "lists each recipe's fields); repeatable. The TUI edits each field of the recipe.",
        flags=("--set",),
        fronts=CLI_TUI,
    )
    index: str | None = option(
        None,
        "judged recipe: learn from this index's judgments (encodr judge; its train fold, selected on its dev fold).",
        flags=("--index", "-i"),
        fronts=CLI_TUI,
    )
    no_dev: bool = option(
        False,
        "judged recipe: with too few judged queries to hold out a dev fold, train anyway, without selection.",
        fronts=CLI_TUI,
    )

    @classmethod
    def recipe_value(cls, name: str) -> str | None:
        """The value the default recipe's YAML gives field ``name`` (for ``tune --help``; read
        from the bundled file, without loading the methods), or None when it leaves it to its method."""
        import yaml

        from ..paths import recipes_dir

        recipe = cls.model_fields["recipe"].default
        try:
            value = (yaml.safe_load((recipes_dir() / f"{recipe}.yaml").read_text()) or {}).get(name)
        except OSError:
            return None
        return None if value is None else f"{value:g}" if isinstance(value, float) else str(value)

    def check(self) -> None:
        """Every recipe field this request sets is a field of the chosen recipe.

        Raises:
            EncodrError: an unknown recipe; a flag or ``--set`` key the recipe lacks, naming the
                recipe's fields (field: the flag's, or ``set``); a ``--set`` item without ``=``.
        """
        from ..methods import load_recipe

        given = self.overrides()
        recipe = load_recipe(self.recipe)  # the recipe's own values, checked; the overrides are checked when the run loads it
        fields = sorted(f for f in recipe.to_dict() if f not in ("name", "method", "description"))
        for key in given:
            if key not in fields:
                named = f"--{key.replace('_', '-')}" if key in OVERRIDES and getattr(self, key) is not None else f"--set {key}=…"
                raise EncodrError(
                    f"recipe '{recipe.name}' (method {recipe.method}) has no field '{key}' ({named}); its fields: {', '.join(fields)}; "
                    "set one with --set KEY=VALUE",
                    field=key if key in OVERRIDES else "set",
                )

    def overrides(self) -> dict[str, str]:
        """The recipe fields this request changes: the named options, then ``--set`` items.

        Raises:
            EncodrError: a ``--set`` item without ``=``.
        """
        values = {k: getattr(self, k) for k in OVERRIDES if getattr(self, k) is not None}
        for item in self.set:
            key, sep, value = item.partition("=")
            if not sep:
                raise EncodrError(f"--set takes KEY=VALUE, got '{item}'; e.g. --set temperature=0.05", field="set")
            values[key.strip()] = value.strip()
        return values

    def target(self, recipe_name: str) -> Path:
        """The output directory: ``out``, else ``encodr-runs/RECIPE-YYYYmmdd-HHMMSS``."""
        return Path(self.out) if self.out else Path("encodr-runs") / f"{recipe_name}-{time.strftime('%Y%m%d-%H%M%S')}"


class IndexesRequest(Request):
    """List the indexes in a folder (default: the workspace, $ENCODR_HOME/indexes)."""

    path: str | None = option(None, "The folder to look in (default: $ENCODR_HOME/indexes).", fronts=CLI)


class ModelsRequest(Request):
    """List model aliases and the models in the local Hugging Face cache."""


class RecipesRequest(Request):
    """List the bundled recipes and their main settings."""


class RunsRequest(Request):
    """List recorded training runs, newest first (encodr runs show ID: one run, its curves)."""

    limit: int = option(50, "The newest N runs.", ge=1, fronts=CLI_HTTP)


class RunRequest(Request):
    """One run: its details, recipe, losses and dev curve; --plot draws the curves."""

    run_id: int = option(..., "The run's id (encodr runs).", argument=True, fronts=CLI)
    plot: str | None = option(None, "Write the loss curve and the dev curve to this PNG.", fronts=CLI)

    def check(self) -> None:
        if self.plot is not None:
            from ..plots import check_png

            check_png(Path(self.plot))


def _backends() -> tuple[str, ...]:
    from ..models.encoder import BACKENDS

    return BACKENDS


class ServeRequest(Request):
    """Serve models and indexes over HTTP: OpenAI-compatible POST /v1/embeddings, POST /v1/search, POST /v1/score, POST /v1/rerank,
    GET /v1/models, /v1/indexes, /v1/indexes/NAME/judgments, /v1/runs, /health; with --writable, POST and DELETE /v1/indexes/NAME/documents and /v1/indexes/NAME/judgments. Models and indexes
    are loaded once and kept warm."""

    model: list[str] = option(
        [],
        "A model to serve (alias, directory, Hub id); repeatable. Default: minilm, and each --index's model.",
        flags=("--model", "-m"),
        fronts=CLI,
    )
    index: list[str] = option(
        [],
        "An index to serve (directory or workspace name); repeatable. Default: every index in the workspace.",
        flags=("--index", "-i"),
        fronts=CLI,
    )
    host: str = option("127.0.0.1", "Address to bind (127.0.0.1: this machine only).", fronts=CLI)
    port: int = option(8000, "Port to bind.", ge=1, le=65535, fronts=CLI)
    api_key: str | None = option(
        None, "Require 'Authorization: Bearer KEY' (default: the ENCODR_API_KEY environment variable, if set).", fronts=CLI
    )
    batch_wait_ms: float = option(
        serve_default("batch_wait") * 1000,
        "Dynamic batching: how long the first request of a batch waits for others while requests are concurrent (ms).",
        ge=0,
        fronts=CLI,
    )
    batch_tokens: int = option(
        serve_default("batch_tokens"),
        "Dynamic batching: tokens per forward pass at most (padded length × texts).",
        ge=1,
        fronts=CLI,
    )
    max_texts: int = option(serve_default("max_texts"), "Texts per request at most (413 above).", ge=1, fronts=CLI)
    max_chars: int = option(serve_default("max_chars"), "Characters per text at most (413 above).", ge=1, fronts=CLI)
    no_batching: bool = option(
        not serve_default("batching"),
        "Turn dynamic batching of concurrent requests off: one forward pass per request.",
        fronts=CLI,
    )
    workers: int | None = option(
        None,
        "Forward passes a model runs at once, each on its share of the CPU cores (default: 2 on a CPU, 1 on a GPU).",
        ge=1,
        fronts=CLI,
    )
    backend: str = option(
        "torch",
        "Forward pass of each --model bi-encoder (torch-bf16: bfloat16 matrix products; onnx, onnx-int8: onnxruntime "
        "on the CPU); an index's model runs on its index's backend.",
        choices=_backends,
        fronts=CLI,
    )
    writable: bool = option(
        False,
        "Let clients upsert and delete documents and judgments (POST / DELETE /v1/indexes/NAME/documents and …/judgments); "
        "needs --api-key.",
        fronts=CLI,
    )
    watch: list[str] = option(
        [], "Sync the one served --index with this folder on every change (debounced); repeatable.", fronts=CLI
    )
    engine: str = option(
        "local",
        "local: this process serves; ray: serve one sharded --index on Ray Serve, a deployment per shard "
        "(--replicas each) behind an ingress with these routes (pip install 'encodr[cluster]').",
        choices=("local", "ray"),
        fronts=CLI,
    )
    address: str | None = option(
        None, "With --engine ray: the Ray cluster's address (default: RAY_ADDRESS, else a local Ray).", fronts=CLI
    )
    replicas: int = option(1, "With --engine ray: replicas of each shard's deployment, placed by Ray.", ge=1, fronts=CLI)
    shard_timeout: float = option(
        10.0,
        "With --engine ray: seconds a shard has to answer a search; a shard later than that is left out and the "
        "answer says partial: true.",
        ge=0.01,
        fronts=CLI,
    )
    no_auth: bool = option(
        False,
        "Serve an address other than this machine's (--host 0.0.0.0…) without an API key: anyone who can reach "
        "the port reads the served indexes.",
        fronts=CLI,
    )
    allow_host: list[str] = option(
        [],
        "Also answer requests whose Host header is this name (a proxy's, a LAN name; '*': any); repeatable. "
        "By default only the loopback names and --host are answered, which stops DNS rebinding.",
        fronts=CLI,
    )
    allow_origin: list[str] = option(
        [],
        "Answer cross-origin requests from web pages of this origin (e.g. http://localhost:3000; '*': any); "
        "repeatable. By default another site's page is refused (403).",
        fronts=CLI,
    )

    def key(self) -> str | None:
        """``api_key``, else the ``ENCODR_API_KEY`` environment variable."""
        import os

        return self.api_key or os.environ.get("ENCODR_API_KEY") or None

    def check(self) -> None:
        """The serve rules: an address other than loopback needs a key, or ``no_auth`` said
        outright; ``writable`` needs a key (even on 127.0.0.1); ``watch`` syncs one index.

        Raises:
            EncodrError: naming ``host``, ``writable`` or ``watch``.
        """
        if not loopback(self.host) and not self.key() and not self.no_auth:
            raise EncodrError(
                f"--host {self.host} serves the indexes beyond this machine: give a key with --api-key KEY (or ENCODR_API_KEY), "
                "or pass --no-auth to serve them to anyone who can reach the port",
                field="host",
            )
        if self.writable and not self.key():
            raise EncodrError(
                "--writable lets clients change indexes: give it a key with --api-key KEY (or ENCODR_API_KEY), even on 127.0.0.1",
                field="writable",
            )
        if self.watch and len(self.index) != 1:
            raise EncodrError("--watch syncs one index with its documents: serve exactly one --index with it", field="watch")


def loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) binds this machine only: ``localhost`` or a loopback
    address (127.0.0.0/8, ::1)."""
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class McpRequest(Request):
    """Serve indexes to AI agents over the Model Context Protocol: tools to search, get a document, list indexes and their sources,
    and with --writable add, sync and delete documents and judge hits. stdio by default (for an agent that starts encodr); streamable HTTP with --port."""

    index: list[str] = option(
        [],
        "An index to serve (directory or workspace name); repeatable. Default: every index in the workspace.",
        flags=("--index", "-i"),
        fronts=CLI,
    )
    port: int | None = option(
        None, "Serve streamable HTTP on 127.0.0.1:PORT (at /mcp) instead of stdio.", ge=1, le=65535, fronts=CLI
    )
    host: str = option("127.0.0.1", "With --port: the address to bind.", fronts=CLI)
    writable: bool = option(
        False,
        "Offer the tools that change an index: add (upsert) documents, sync an index with its folders, delete documents.",
        fronts=CLI,
    )
    no_auth: bool = option(
        False,
        "With --port on an address other than this machine's: serve it although the MCP server asks no key "
        "(anyone who can reach the port reads the served indexes).",
        fronts=CLI,
    )
    server: str | None = option(
        None,
        "Forward the agent's searches to a running encodr serve at this URL (e.g. a sharded index's Ray Serve "
        "deployment) instead of opening the indexes here: the tools are search and list_indexes; ENCODR_API_KEY is "
        "sent as its key.",
        fronts=CLI,
    )

    def check(self) -> None:
        """Streamable HTTP on an address other than loopback only with ``no_auth`` said outright
        (the MCP server has no key); ``server`` without ``index`` and ``writable``.

        Raises:
            EncodrError: naming ``host`` or ``server``.
        """
        if self.server and (self.index or self.writable):
            raise EncodrError(
                "--server searches the indexes that server serves and writes none: drop --index and --writable", field="server"
            )
        if self.port is not None and not loopback(self.host) and not self.no_auth:
            raise EncodrError(
                f"--host {self.host} serves the indexes beyond this machine and the MCP server asks no key: keep it on 127.0.0.1 "
                "(behind a proxy that authenticates), or pass --no-auth",
                field="host",
            )


class TuiRequest(Request):
    """Interactive terminal UI: Search, Compare, Workspace (indexes, models, runs), Train, Index and Eval panes."""

    index: str | None = option(
        None, "Index directory or workspace index name (default: pick one).", flags=("--index", "-i"), fronts=CLI
    )
    rerank: str | None = option(
        None, "Search re-ranked by this CrossEncoder (the Search tab's re-rank box; blank there: none).", fronts=CLI
    )
