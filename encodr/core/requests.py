"""The requests of every command, each field declared once: a library setting taken as its
options class declares it (:func:`~.fields.declared`: ``SearchOptions``, ``BuildOptions``,
``Layout``, ``Limits``, ``OptimArgs``), an option only the front ends have with :func:`~.fields.option`.

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

from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator

from ..data.records import Layout
from ..errors import EncodrError, S
from ..index.options import BuildOptions, SearchOptions, comma_list
from ..models.encoder import BACKEND_HELP, POOLINGS
from ..models.pcr import PCR_VARIANTS
from ..training.args import OptimArgs
from .fields import declared, option
from .limits import Limits

CLI, CLI_TUI, CLI_HTTP, HTTP, MCP, HTTP_MCP = ("cli",), ("cli", "tui"), ("cli", "http"), ("http",), ("mcp",), ("http", "mcp")
CLI_HTTP_MCP = ("cli", "http", "mcp")  # what the TUI does not offer (it has no widget for it)


RERANK_HELP = f"A CrossEncoder (directory, Hub id, or an encodr cross/ output) that re-scores the first hits ({S.rerank_depth})."


def parse_filters(given) -> list:
    """``--filter`` values (``["year>=2020", …]``) or HTTP's object (``{"year": ">=2020"}``) as
    :class:`encodr.index.filters.Filter` s (:func:`encodr.index.filters.parse_all`).

    Raises:
        EncodrError: a filter that does not parse, naming it (``field="filter"``).
    """
    from ..index.filters import parse_all

    return parse_all(given)


def _suites() -> tuple[str, ...]:
    from ..evaluation.tasks import PRIMARY

    return tuple(PRIMARY)


class Request(BaseModel):
    """A command's request: unknown fields are refused (422 over HTTP, naming the field)."""

    model_config = ConfigDict(extra="forbid")

    def check(self) -> None:
        """Refuse what the fields' types cannot express (combinations, files, names), before any work.

        Raises:
            EncodrError: naming the field (``field``) and the fix.
        """


def _comma_list(value):
    """:func:`encodr.index.options.comma_list`, with ``None`` (or nothing) kept as ``None``: the field left unset."""
    return comma_list(value) or None


def pcr_variant(pcr: bool, variant: str | None) -> str | None:
    """The PCR variant ``pcr`` / ``pcr_variant`` ask for: ``None`` without PCR, else the
    variant or :data:`encodr.models.pcr.DEFAULT_VARIANT` (CMLM §5.2).

    Raises:
        EncodrError: a variant without ``pcr``, or an unknown variant.
    """
    from ..models.pcr import DEFAULT_VARIANT, check_variant

    if variant and not pcr:
        raise EncodrError(f"{S.pcr_variant} chooses how {S.pcr} fits its components; pass {S.pcr} too", field="pcr_variant")
    return check_variant(variant or DEFAULT_VARIANT) if pcr else None


class SearchRequest(Request):
    """Nearest texts in an index: rank, score, language, text, source:line."""

    # its search settings are SearchOptions' (encodr.index.options), by the same names: declared()

    query: list[str] = option([], "The queries (one or several); none on the CLI: one query a line from stdin.", argument=True)
    index: str = option(..., "Index directory, or the name of one in the workspace (encodr indexes).", flags=("--index", "-i"))
    k: int = declared(SearchOptions, "k", flags=("-k",), fronts=CLI_HTTP_MCP)
    lang: str | None = declared(SearchOptions, "lang", fronts=CLI_HTTP_MCP)
    hit_lang: list[str] | None = declared(SearchOptions, "hit_lang", None)
    model: str | None = option(None, "Must match the index's model.", flags=("--model", "-m"), fronts=CLI_HTTP_MCP)
    backend: str | None = option(
        None,
        "The queries' forward pass (default: the one the index was built with).",
        choices=lambda: _backends(),
        fronts=CLI_HTTP_MCP,
    )
    nprobe: int | None = declared(SearchOptions, "nprobe", fronts=CLI_HTTP_MCP)
    ef_search: int | None = declared(SearchOptions, "ef_search", fronts=CLI_HTTP_MCP)
    mode: str = declared(SearchOptions, "mode")
    keyword_stats: str = declared(SearchOptions, "keyword_stats", fronts=CLI_HTTP_MCP)
    fusion: str = declared(SearchOptions, "fusion", fronts=CLI_HTTP_MCP)
    rerank: str | None = option(None, RERANK_HELP)
    fusion_weight: float | None = declared(SearchOptions, "fusion_weight", fronts=CLI_HTTP_MCP)
    rerank_depth: int | None = declared(SearchOptions, "rerank_depth", fronts=CLI_HTTP_MCP)
    rerank_weight: float | None = declared(SearchOptions, "rerank_weight", fronts=CLI_HTTP_MCP)
    passages: bool = declared(SearchOptions, "passages", fronts=CLI_HTTP_MCP)
    code_ranking: bool = declared(SearchOptions, "code_ranking", fronts=CLI_HTTP_MCP)
    defined: bool = declared(SearchOptions, "defined", fronts=CLI_HTTP_MCP)
    max_tokens: int | None = option(
        None,
        "A budget for the answer: each hit as path:first-last › symbol and its snippet, trimmed to fit about this many tokens.",
        ge=20,
        fronts=HTTP_MCP,
    )
    filter: list[str] | dict[str, Any] | None = declared(SearchOptions, "filter", None)
    full: bool = option(
        False,
        "Print whole texts; by default a hit shows a snippet around its matched words, as wide as the terminal allows.",
        fronts=CLI,
    )
    format: str = option(
        "table",
        "How hits print: table (a heading line a hit, its rank, path:line and score, its snippet under it); grep "
        "(path:line:column: snippet, one line a hit, as ripgrep's --vimgrep prints for editors); files (each hit's "
        "path once).",
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
    _options: tuple[dict, SearchOptions] | None = PrivateAttr(None)

    def options(self) -> SearchOptions:
        """The search's settings (:class:`encodr.index.options.SearchOptions`): this request's
        fields of the same names, built once for those values.

        Raises:
            OptionError: a value out of range, naming the field; EncodrError: a filter that does not parse.
        """
        values = {name: getattr(self, name) for name in SEARCH_SETTINGS}
        if self._options is None or self._options[0] != values:  # a copy with other values builds its own
            self._options = (values, SearchOptions.given(**values))
        return self._options[1]

    def check(self) -> None:
        self.options()  # cheap checks, before any model loads
        if not self.query:
            raise EncodrError("no query given; pass QUERY, or one query a line on stdin", field="query")
        if any(not q.strip() for q in self.query):
            raise EncodrError(
                "QUERY is blank; pass non-blank queries, or none to read one query a line from stdin", field="query"
            )


SEARCH_SETTINGS = tuple(name for name in SearchRequest.model_fields if name in SearchOptions.__dataclass_fields__)


class ScoreRequest(Request):
    """Similarity of two texts: cosine for a bi-encoder, σ(score) for a cross-encoder."""

    text_a: str = option(..., "First text.", argument=True, fronts=CLI_HTTP_MCP)
    text_b: str = option(..., "Second text.", argument=True, fronts=CLI_HTTP_MCP)
    model: str = option("minilm", "Model (alias, directory, Hub id).", flags=("--model", "-m"), fronts=CLI_HTTP_MCP)
    cross: bool = option(False, f"{S.model} is a cross-encoder: σ of its score, both orders averaged.", fronts=CLI_HTTP_MCP)
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
                f"{S.backend} {self.backend} runs bi-encoders; a cross-encoder ({S.cross}) runs on torch: drop {S.backend}",
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
        "Files or folders (read recursively): Markdown, HTML, PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), "
        "OpenDocument (.odt, .ods, .odp), EPUB, RTF and e-mail (.eml) documents; source code (.py .js .ts .go .rs "
        ".java .c .cpp .rb .sh and more: a section per function, method or class); text files (in a folder, one "
        "document each; given alone, one text a line), TSV or CSV files with a header with a 'text' column (optional "
        "id, lang), "
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
    model: str | None = declared(BuildOptions, "model", flags=("--model", "-m"), fronts=CLI_TUI)
    out: str | None = option(
        None,
        f"Index directory (default: $ENCODR_HOME/indexes/NAME of the first file; with {S('write', 'add')}, a workspace "
        "index name works too).",
        flags=("--out", "-o"),
        fronts=CLI_TUI,
    )
    index_type: str = declared(BuildOptions, "index_type", fronts=CLI_TUI)
    quantize: str = declared(BuildOptions, "quantize", fronts=CLI_TUI)
    dim: int | None = declared(BuildOptions, "dim", fronts=CLI_TUI)
    on_disk: bool = declared(BuildOptions, "on_disk", fronts=CLI_TUI)
    write: str = declared(BuildOptions, "write", fronts=CLI_TUI)
    watch: bool = option(
        False,
        "After indexing, keep watching CORPUS and sync on every change (debounced), one line per sync; Ctrl-C stops.",
        fronts=CLI,
    )
    pcr: bool = declared(BuildOptions, "pcr", fronts=CLI_TUI)
    pcr_variant: str | None = declared(BuildOptions, "pcr_variant", None, fronts=CLI_TUI)
    lang: str | None = declared(BuildOptions, "lang", fronts=CLI_TUI)
    batch_size: int | None = declared(BuildOptions, "batch_size", fronts=CLI_TUI)
    backend: str = declared(BuildOptions, "backend", fronts=CLI_TUI)
    glob: str | None = declared(BuildOptions, "glob", fronts=CLI_TUI)
    no_ignore: bool = declared(BuildOptions, "no_ignore", fronts=CLI_TUI)
    max_file_size: int = declared(BuildOptions, "max_file_size", fronts=CLI_TUI)
    whole: bool = declared(BuildOptions, "whole", fronts=CLI_TUI)
    fast_stage: bool = declared(BuildOptions, "fast_stage", fronts=CLI_TUI)
    documents: bool = declared(Layout, "documents", fronts=CLI_TUI)
    records: bool = declared(Layout, "records", fronts=CLI_TUI)
    text_field: str = declared(Layout, "text_field", fronts=CLI_TUI)
    text_column: str = declared(Layout, "text_column", fronts=CLI_TUI)
    id_column: str | None = declared(Layout, "id_column", fronts=CLI_TUI)
    title_column: str | None = declared(Layout, "title_column", fronts=CLI_TUI)
    meta_columns: list[str] | None = declared(Layout, "meta_columns", None, fronts=CLI_TUI)
    processes: int = declared(BuildOptions, "processes", fronts=CLI_TUI)
    engine: str = declared(BuildOptions, "engine", fronts=CLI_TUI)
    address: str | None = declared(BuildOptions, "address", fronts=CLI_TUI)
    shards: int | None = declared(BuildOptions, "shards", fronts=CLI_TUI)

    _meta_columns = field_validator("meta_columns", mode="before")(_comma_list)

    def check(self) -> None:
        if self.upgrade is not None:
            given = [
                name
                for name, spec in type(self).model_fields.items()
                if name != "upgrade" and getattr(self, name) != spec.get_default(call_default_factory=True)
            ]
            if given:
                named = "CORPUS" if given[0] == "corpus" else S(given[0])
                raise EncodrError(
                    f"{S.upgrade} converts an existing index and reads no documents: pass it alone, without {named} "
                    f"(then {S('write', 'add')} or {S('write', 'sync')} as usual)",
                    field="upgrade",
                )
            return
        if not self.corpus:
            raise EncodrError("no corpus given; pass one or more text, TSV, CSV or JSONL files", field="corpus")
        pcr_variant(self.pcr, self.pcr_variant)
        if self.watch and self.write in ("add", "overwrite"):
            raise EncodrError(
                f"{S.watch} keeps the index in step with CORPUS by syncing it; drop {S('write', 'add')} / "
                f"{S('write', 'overwrite')} (the first pass is a {S('write', 'sync')})",
                field="watch",
            )
        for name in ("text_field", "text_column", "id_column", "title_column"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise EncodrError(f"{S(name)} is blank; name a field or column of the corpus", field=name)

    def write_mode(self) -> str:
        """What the build does to ``out`` (:data:`encodr.index.options.WRITES`): ``write``, or ``sync`` with ``watch``."""
        return "sync" if self.watch else self.write

    def options(self, encoder=None):
        """How to build (:class:`encodr.index.options.BuildOptions`), with ``encoder`` (a loaded
        model) in place of ``model`` when given; ``watch`` syncs.

        Raises:
            OptionError: a value the options refuse, naming the field.
        """
        given = {name: getattr(self, name) for name in BUILD_SETTINGS}
        given.update(model=encoder or self.model, write=self.write_mode(), pcr_variant=pcr_variant(True, self.pcr_variant))
        return BuildOptions(**given, layout=self.layout())

    def layout(self):
        """Where the corpus's record files keep their fields (:class:`encodr.data.records.Layout`): this
        request's fields of the same names, stripped."""
        given = {name: getattr(self, name) for name in LAYOUT_SETTINGS}
        strip = {name: value.strip() for name, value in given.items() if isinstance(value, str)}
        return Layout(**{**given, **strip, "meta_columns": tuple(self.meta_columns or ())})

    def target(self) -> Path:
        """The index directory: ``out``, else the workspace index named after the first file."""
        from ..paths import home

        return Path(self.out) if self.out else home() / "indexes" / Path(self.corpus[0]).stem


BUILD_SETTINGS = tuple(name for name in IndexRequest.model_fields if name in BuildOptions.__dataclass_fields__)
LAYOUT_SETTINGS = tuple(name for name in IndexRequest.model_fields if name in Layout.__dataclass_fields__)


class DeleteRequest(Request):
    """Delete documents from an index: by id, by source glob, or by metadata filter (their texts go, unless another
    document holds them)."""

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
        f"Delete the documents where FIELD=VALUE (also !=, >=, <=); repeatable, all must hold, and with {S.source} "
        f"the source must match too (fields as search {S.filter}, lang excepted).",
        fronts=CLI,
    )

    _ids = field_validator("ids", mode="before")(lambda v: [v] if isinstance(v, str) else v)

    def filters(self) -> list:
        """The parsed filters (:func:`parse_filters`)."""
        return parse_filters(self.filter)

    def check(self) -> None:
        filters = self.filters()
        if not (self.ids or self.source or filters):
            raise EncodrError(f"name the documents to delete: IDS, {S.source} GLOB or {S.filter} FIELD=VALUE", field="ids")


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
        """The documents as records (:class:`encodr.data.records.Record`), one each, source
        :data:`encodr.index.documents.API_SOURCE`."""
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
    id: str | int = option(
        ...,
        "The document's id, as a hit's document shows it, a hit's own id (an integer), or its path as a hit shows it.",
        fronts=MCP,
    )
    lines: str | None = option(
        None, "Only these lines of its file, as a hit gives them: LINE or FIRST-LAST (e.g. 12-40).", fronts=MCP
    )


class ShowRequest(Request):
    """Print a document of an index, or a range of its lines, as the index holds it (qmd's get): PATH as a hit shows it,
    PATH:LINE or PATH:FIRST-LAST."""

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
        None, f"The texts' language, ISO 639-3 (for {S.pcr} indexes; default: detected among the index's languages).", fronts=CLI
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
    doc: str = option(..., "The document: its path as a hit shows it (relative to the folder indexed), or its id.", argument=True)
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
            raise EncodrError(f"no index given; pass {S.index} INDEX, the index the document is in", field="index")


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
    split: str | None = option(None, f"With {S.import_from} of a BEIR folder: the qrels split (default: train).", fronts=CLI)
    export: str | None = option(
        None,
        "Write the judgments as a new BEIR folder: corpus.jsonl from the index, queries.jsonl, and "
        "qrels/train.tsv, dev.tsv and test.tsv by fold (current judgments only).",
        fronts=CLI,
    )

    def check(self) -> None:
        if self.split and not self.import_from:
            raise EncodrError(
                f"{S.split} picks the qrels of a BEIR folder to {S.import_from}; pass {S.import_from} DIR too", field="split"
            )
        if self.import_from and self.export:
            raise EncodrError(f"{S.import_from} and {S.export} do different things; pass one", field="export")


class SyncRequest(Request):
    """Bring a served index in step with the files under some paths (as ``encodr index --sync``): new documents added,
    changed ones
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
    cross: bool = option(False, f"{S.model} is a cross-encoder (sts and pairs only).", fronts=CLI_TUI)
    compare_cross: bool = option(False, f"{S.compare} is a cross-encoder.", fronts=CLI_TUI)
    pcr: bool = option(
        False, "bitext: remove each language's first principal component before retrieval (CMLM §5.2).", fronts=CLI_TUI
    )
    pcr_variant: str | None = option(
        None, f"With {S.pcr}: centred or uncentred (the default).", choices=PCR_VARIANTS, fronts=CLI_TUI
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
        "torch", BACKEND_HELP + f" For {S.model}; {S.compare} runs on torch.", choices=lambda: _backends(), fronts=CLI_TUI
    )
    split: str | None = option(
        None,
        f"retrieval: the qrels split to score (qrels/SPLIT.tsv; default: test); with {S.index} alone, the fold of its "
        "judgments: train, dev, test or all (default: test, the queries tuning never sees).",
        fronts=CLI_TUI,
    )
    mode: list[str] = declared(
        SearchOptions,
        "mode",
        [SearchOptions.default("mode")],
        about="retrieval: {} Several (comma-separated or repeated): one row each, from one encoding of the corpus.",
        fronts=CLI_TUI,
    )
    fusion: list[str] = declared(
        SearchOptions,
        "fusion",
        [SearchOptions.default("fusion")],
        about="retrieval: {} Several: one hybrid row each.",
        fronts=CLI_TUI,
    )
    rerank: str | None = option(None, "retrieval: " + RERANK_HELP, fronts=CLI_TUI)
    rerank_weight: float | None = declared(SearchOptions, "rerank_weight", about="retrieval: {}", fronts=CLI_TUI)
    whole: bool = option(
        False,
        "retrieval: index each document whole, cut at the model's window (default: passages, each document ranked by its best).",
        fronts=CLI_TUI,
    )
    index: str | None = option(
        None,
        "retrieval: score this existing index (a folder or workspace name), its own model encoding the queries, "
        f"instead of indexing a BEIR folder: on its own judgments (encodr judge; each mode unless {S.mode}), or "
        f"with {S.queries} and {S.qrels}.",
        fronts=CLI_TUI,
    )
    queries: str | None = option(
        None, f"retrieval, with {S.index}: the queries, a BEIR queries.jsonl (_id, text).", fronts=CLI_TUI
    )
    qrels: str | None = option(
        None,
        f"retrieval, with {S.index}: the judgments, a BEIR qrels TSV (query-id, corpus-id, score) naming the index's "
        "document ids.",
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
        f"retrieval, with {S.index}: search only documents where FIELD=VALUE, as search {S.filter} does (judged documents "
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
                f"{S.filter} restricts an index's documents: use it with eval retrieval {S.index} (and {S.queries}, {S.qrels})",
                field="filter",
            )
        tasks = evaluation.tasks_for(self.suite, self.data or None)  # an unknown suite or dataset, before loading models
        if self.suite != "retrieval" and (
            "mode" in self.model_fields_set or "fusion" in self.model_fields_set or self.rerank or self.whole
        ):
            raise EncodrError(
                f"{S.mode}, {S.fusion} and {S.rerank} choose how 'eval retrieval' searches, not '{self.suite}'; drop them",
                field="mode",
            )
        if self.split is not None and self.suite != "retrieval":
            raise EncodrError(f"{S.split} picks the qrels of 'eval retrieval', not '{self.suite}'; drop {S.split}", field="split")
        if self.suite == "retrieval":
            for task in tasks:
                there = splits(task.file())
                if self.retrieval_split not in there:
                    raise EncodrError(
                        f"{task.path}: no qrels/{self.retrieval_split}.tsv; its splits are "
                        f"{', '.join(there) or 'none'} (use {S.split})",
                        field="split",
                    )
        if (self.cross or self.compare_cross) and self.suite not in CROSS_SUITES:
            raise EncodrError(
                f"a cross-encoder scores pairs; {S.cross} works with 'eval {' / '.join(CROSS_SUITES)}', not '{self.suite}'",
                field="cross",
            )
        if self.compare_cross and not self.compare:
            raise EncodrError(
                f"{S.compare_cross} says the {S.compare} model is a cross-encoder; pass {S.compare} MODEL too",
                field="compare_cross",
            )
        if (self.pcr or self.pcr_variant) and self.suite != "bitext":
            raise EncodrError(f"{S.pcr} applies to 'eval bitext' (cross-language retrieval), not '{self.suite}'", field="pcr")
        pcr_variant(self.pcr, self.pcr_variant)
        if self.cross and self.backend != "torch":
            raise EncodrError(
                f"{S.backend} {self.backend} runs bi-encoders; a cross-encoder ({S.cross}) runs on torch: drop {S.backend}",
                field="backend",
            )
        if self.plot is not None:
            if self.suite not in ("sts", "words", "pairs"):
                raise EncodrError(
                    f"{S.plot} draws the scores of gold-scored pairs; it works with eval sts, words and pairs, "
                    f"not '{self.suite}'",
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
                f"{S(given[0])} scores an existing index with 'eval retrieval', not '{self.suite}'; drop it", field=given[0]
            )
        if given != ["index"] and len(given) < 3:
            missing = next(n for n in ("index", "queries", "qrels") if n not in given)
            raise EncodrError(
                f"scoring an existing index needs {S.index} alone (its own judgments) or {S.index}, {S.queries} and "
                f"{S.qrels} together; "
                f"pass --{missing} too",
                field=missing,
            )
        if given == ["index"] and self.split is not None and self.split not in (*FOLDS, ALL_FOLDS):
            raise EncodrError(
                f"{S.split} {self.split}: an index's judgments fall in the folds {', '.join(FOLDS)}; pass one of them "
                f"or {ALL_FOLDS}",
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
                raise EncodrError(
                    f"{S(name)} gives {why}, but {S.index} scores an index already built; drop {S(name)}", field=name
                )
        if self.backend != "torch":
            raise EncodrError(
                f"{S.index} encodes the queries with the index's own model and backend; drop {S.backend}", field="backend"
            )
        parse_filters(self.filter)

    _modes = field_validator("mode", "fusion", mode="before")(_comma_list)

    def searches(self) -> tuple:
        """The rankings ``eval retrieval`` scores, one row each (:class:`encodr.index.options.SearchOptions`):
        every mode, and ``hybrid`` once per fusion.

        Raises:
            OptionError: a value out of range, naming the field; EncodrError: a filter that does not parse.
        """
        from ..index.options import HYBRID

        filters = tuple(parse_filters(self.filter))
        first = SearchOptions.default("fusion")
        out = []
        for mode in dict.fromkeys(self.mode or [SearchOptions.default("mode")]):
            for fusion in dict.fromkeys(self.fusion or [first]) if mode == HYBRID else [first]:
                out.append(SearchOptions(mode=mode, fusion=fusion, rerank_weight=self.rerank_weight, filter=filters))
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
        "Training data: UTF-8 text, one string a line (Trans-Encoder: pairs or sentences; retrieval: a file or folder "
        "of documents). "
        "Default: the recipe's bundled data.",
        argument=True,
        fronts=CLI_TUI,
    )
    recipe: str = option("sentence", "Bundled recipe (encodr recipes) or a .yaml path.", flags=("--recipe", "-r"), fronts=CLI_TUI)
    model: list[str] = option(
        ["minilm"],
        "Base model: alias, local directory or Hub id (with --index: the index's model). Repeat for Trans-Encoder "
        "mutual distillation.",
        flags=("--model", "-m"),
        fronts=CLI_TUI,
    )
    dev: str | None = option(
        None,
        "Keep the best checkpoint on this set: a bundled one (stsb-dev, mesh-dev, wordsim353), a scored-pairs file, "
        "a BEIR folder (nDCG@10 on its dev or train queries), or auto (retrieval recipe: pseudo-queries cut from your "
        "documents).",
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
    epochs: int | None = declared(OptimArgs, "epochs", None, fronts=CLI)
    batch_size: int | None = declared(OptimArgs, "batch_size", None, fronts=CLI)
    lr: float | None = declared(OptimArgs, "lr", None, fronts=CLI)
    pooling: str | None = option(
        None, "How token vectors become one vector (auto: the model's own).", choices=POOLINGS, fronts=CLI
    )
    seed: int | None = declared(OptimArgs, "seed", None, fronts=CLI)
    amp: str | None = declared(OptimArgs, "amp", None, fronts=CLI)
    set: list[str] = option(
        [],
        "Any field of the recipe as KEY=VALUE (temperature=0.05, span_mask=0, mini_batch=256…; docs/reference/recipes.md "
        "lists each recipe's fields); repeatable. The TUI edits each field of the recipe.",
        flags=("--set",),
        fronts=CLI_TUI,
    )
    index: str | None = option(
        None,
        "judged recipe: learn from this index's judgments (encodr judge; every judged query, each component kept "
        "by cross-validation).",
        flags=("--index", "-i"),
        fronts=CLI_TUI,
    )
    no_dev: bool = option(
        False,
        "judged and code recipes: with too few judged queries or documented definitions to select on, train "
        "anyway, without selection.",
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
                named = S(key) if key in OVERRIDES and getattr(self, key) is not None else f"{S.set} {key}=…"
                raise EncodrError(
                    f"recipe '{recipe.name}' (method {recipe.method}) has no field '{key}' ({named}); its fields: "
                    f"{', '.join(fields)}; "
                    f"set one with {S.set} KEY=VALUE",
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
                raise EncodrError(f"{S.set} takes KEY=VALUE, got '{item}'; e.g. {S.set} temperature=0.05", field="set")
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
    """Serve models and indexes over HTTP: OpenAI-compatible POST /v1/embeddings, POST /v1/search, POST /v1/score, POST
    /v1/rerank,
    GET /v1/models, /v1/indexes, /v1/indexes/NAME/judgments, /v1/runs, /health; with --writable, POST and DELETE
    /v1/indexes/NAME/documents and /v1/indexes/NAME/judgments. Models and indexes
    are loaded once and kept warm."""

    model: list[str] = option(
        [],
        f"A model to serve (alias, directory, Hub id); repeatable. Default: minilm without {S.index}; each "
        f"{S.index}'s model is served too, by its name or its folder's.",
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
    batch_wait_ms: float = declared(Limits, "batch_wait_ms", fronts=CLI)
    batch_tokens: int = declared(Limits, "batch_tokens", fronts=CLI)
    max_texts: int = declared(Limits, "max_texts", fronts=CLI)
    max_chars: int = declared(Limits, "max_chars", fronts=CLI)
    no_batching: bool = declared(Limits, "no_batching", fronts=CLI)
    workers: int | None = declared(Limits, "workers", fronts=CLI)
    backend: str = option(
        "torch",
        f"Forward pass of each {S.model} bi-encoder (torch-bf16: bfloat16 matrix products; onnx, onnx-int8: onnxruntime "
        "on the CPU); an index's model runs as encodr search runs it (its index's backend; ONNX for a torch "
        "index on a CPU).",
        choices=_backends,
        fronts=CLI,
    )
    writable: bool = option(
        False,
        "Let clients upsert and delete documents and judgments (POST / DELETE /v1/indexes/NAME/documents and …/judgments); "
        f"needs {S.api_key}.",
        fronts=CLI,
    )
    watch: list[str] = option(
        [], f"Sync the one served {S.index} with this folder on every change (debounced); repeatable.", fronts=CLI
    )
    engine: str = option(
        "local",
        f"local: this process serves; ray: serve one sharded {S.index} on Ray Serve, a deployment per shard "
        f"({S.replicas} each) behind an ingress with these routes (pip install 'encodr[cluster]').",
        choices=("local", "ray"),
        fronts=CLI,
    )
    address: str | None = option(
        None, f"With {S.engine} ray: the Ray cluster's address (default: RAY_ADDRESS, else a local Ray).", fronts=CLI
    )
    replicas: int = option(1, f"With {S.engine} ray: replicas of each shard's deployment, placed by Ray.", ge=1, fronts=CLI)
    shard_timeout: float = option(
        10.0,
        f"With {S.engine} ray: seconds a shard has to answer a search; a shard later than that is left out and the "
        "answer says partial: true.",
        ge=0.01,
        fronts=CLI,
    )
    no_auth: bool = option(
        False,
        f"Serve an address other than this machine's ({S.host} 0.0.0.0…) without an API key: anyone who can reach "
        "the port reads the served indexes.",
        fronts=CLI,
    )
    allow_host: list[str] = option(
        [],
        "Also answer requests whose Host header is this name (a proxy's, a LAN name; '*': any); repeatable. "
        f"By default only the loopback names and {S.host} are answered, which stops DNS rebinding.",
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
                f"{S.host} {self.host} serves the indexes beyond this machine: give a key with {S.api_key} KEY (or "
                "ENCODR_API_KEY), "
                f"or pass {S.no_auth} to serve them to anyone who can reach the port",
                field="host",
            )
        if self.writable and not self.key():
            raise EncodrError(
                f"{S.writable} lets clients change indexes: give it a key with {S.api_key} KEY (or ENCODR_API_KEY), "
                "even on 127.0.0.1",
                field="writable",
            )
        if self.watch and len(self.index) != 1:
            raise EncodrError(f"{S.watch} syncs one index with its documents: serve exactly one {S.index} with it", field="watch")


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
    """Serve indexes to AI agents over the Model Context Protocol: tools to search, get a document, list indexes and their
    sources,
    and with --writable add, sync and delete documents and judge hits. stdio by default (for an agent that starts encodr);
    streamable HTTP with --port."""

    index: list[str] = option(
        [],
        "An index to serve (directory or workspace name); repeatable. Default: every index in the workspace.",
        flags=("--index", "-i"),
        fronts=CLI,
    )
    port: int | None = option(
        None, "Serve streamable HTTP on 127.0.0.1:PORT (at /mcp) instead of stdio.", ge=1, le=65535, fronts=CLI
    )
    host: str = option("127.0.0.1", f"With {S.port}: the address to bind.", fronts=CLI)
    writable: bool = option(
        False,
        "Offer the tools that change an index: add (upsert) documents, sync an index with its folders, delete documents.",
        fronts=CLI,
    )
    no_auth: bool = option(
        False,
        f"With {S.port} on an address other than this machine's: serve it although the MCP server asks no key "
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
                f"{S.server} searches the indexes that server serves and writes none: drop {S.index} and {S.writable}",
                field="server",
            )
        if self.port is not None and not loopback(self.host) and not self.no_auth:
            raise EncodrError(
                f"{S.host} {self.host} serves the indexes beyond this machine and the MCP server asks no key: keep it "
                "on 127.0.0.1 "
                f"(behind a proxy that authenticates), or pass {S.no_auth}",
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
