"""What ``encodr index PATH…`` reads: files and folders (recursive), each file by its kind —
records (one text a line, TSV, CSV, JSONL: :mod:`.records`) or documents (Markdown, HTML, PDF,
and Word, PowerPoint, Excel, OpenDocument, EPUB, RTF and e-mail files converted to Markdown: one
document a file) — and passages that fit the model's window.

Documents → passages → records: a text longer than the window is split into passages on
semantic boundaries by ``semantic-text-splitter`` (Rust; the model's own tokenizer measures
each passage, and it splits at the largest unit that fits — paragraphs, then Unicode sentence
boundaries (UAX #29, so any language), then words), with an overlap of :data:`OVERLAP` tokens.
Each passage keeps its document's id, title and source, and its character offset.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..cpus import usable_cpus
from ..errors import EncodrError, S
from ..extras import need
from ..paths import short_path
from .code import CODE_SUFFIXES, code_language, code_sections
from .records import Layout, Record, read_records
from .rst import RST_SUFFIXES, rst_sections

RECORD_SUFFIXES = (".txt", ".tsv", ".csv", ".jsonl")
# converted to Markdown by kreuzberg (one Rust library for all of them, with each file's properties)
CONVERTED_SUFFIXES = (".docx", ".pptx", ".xlsx", ".odt", ".ods", ".odp", ".epub", ".rtf", ".eml")
DOCUMENT_SUFFIXES = (
    ".md",
    ".markdown",
    ".html",
    ".htm",
    ".pdf",
    *RST_SUFFIXES,
    *CONVERTED_SUFFIXES,
    *CODE_SUFFIXES,
)  # source code: .code; reStructuredText: .rst
MARKDOWN_SUFFIXES = (
    ".md",
    ".markdown",
    ".html",
    ".htm",
    *CONVERTED_SUFFIXES,
)  # documents whose text is Markdown (headings, lists, tables)
OVERLAP = 32  # tokens shared by consecutive passages of a document
SPLIT_BATCH = 256  # records split together, spread over threads (split_records)
SPLIT_THREADS = 16  # at most this many splitting threads

NOT_READ = "not a kind encodr reads"  # why a file of a folder is left out (encodr index --help lists the kinds it reads)
EMPTY = "empty"  # a file with no text: counted, not a failure
BINARY = "binary (a NUL byte in its first 8 kB)"
TOO_LARGE = "over the size limit"
TEXT_SUFFIXES = (".md", ".markdown", ".html", ".htm", ".txt", *RST_SUFFIXES, *CODE_SUFFIXES)  # size limit and binary probe apply
Splitter = Callable[..., list[tuple[int, str]]]  # (text, code=False) → [(offset, passage)]


@dataclass(frozen=True)
class Skipped:
    """A file left out of an index, and why (a one-line reason)."""

    path: str
    reason: str


def expand(
    paths: list[str], glob: str | None = None, no_ignore: bool = False, max_bytes: int | None = None
) -> tuple[list[str], list[Skipped]]:
    """The files that ``paths`` name: files as given; folders walked recursively in sorted
    order (:func:`.walk.walk`: ``.gitignore``, ``.ignore`` and ``.encodrignore`` honoured,
    dependency and build folders and hidden files left out, unless ``no_ignore``), keeping the
    files whose name matches ``glob`` (default: every kind encodr reads, :data:`RECORD_SUFFIXES`
    and :data:`DOCUMENT_SUFFIXES`).

    Args:
        max_bytes: a file of a folder larger than this (source code, Markdown, HTML, plain
            text) is skipped (:data:`TOO_LARGE`); None: no limit. A file named by itself is read
            whatever its size.

    Returns:
        (file paths, files of a folder skipped: another kind of file (:data:`NOT_READ`), an
        empty one (:data:`EMPTY`), a binary one (:data:`BINARY`), one over ``max_bytes``).

    Raises:
        EncodrError: a path that does not exist, a file named here of a kind encodr does not
            read (naming the kinds it reads), or a folder with no file to read.
    """
    from .walk import walk

    files: list[str] = []
    skipped: list[Skipped] = []
    for spec in paths:
        p = Path(spec)
        if not p.exists():
            raise EncodrError(f"{spec}: no such file or folder")
        if p.is_file():
            if p.suffix.lower() not in RECORD_SUFFIXES + DOCUMENT_SUFFIXES:
                raise EncodrError(f"{spec}: not a kind encodr reads; it reads {kinds_read()} (rename a plain-text file to .txt)")
            files.append(str(p))
            continue
        walked = walk(p, no_ignore, max_bytes, sized=lambda f: f.suffix.lower() in TEXT_SUFFIXES)
        found = 0
        for f in map(Path, walked.files):
            if _wanted(f, p, glob):
                files.append(str(f))
                found += 1
            elif glob is None:
                skipped.append(Skipped(str(f), NOT_READ))
        skipped += [Skipped(f, EMPTY) for f in walked.empty if _wanted(Path(f), p, glob)]
        skipped += [Skipped(f, BINARY) for f in walked.binary if _wanted(Path(f), p, glob)]
        skipped += [Skipped(f, f"{TOO_LARGE} ({size / 1e6:.1f} MB)") for f, size in walked.large if _wanted(Path(f), p, glob)]
        if not found:
            left = f" ({walked.ignored} left out by ignore rules; {S.no_ignore} reads them)" if walked.ignored else ""
            raise EncodrError(
                f"{spec}: no file to read in this folder{f' matching {glob!r}' if glob else ''}{left}; "
                f"encodr reads {kinds_read()}"
            )
    return files, skipped


SKIPPED_SHOWN = 10  # files skipped for their own reason (damaged, empty) named one a line, at most


def skipped_lines(skipped: list[dict]) -> list[str]:
    """The lines a person reads about files left out of an index: one a kind for files of a
    kind encodr does not read (``skipped 30 .bin files: not a kind encodr reads``), one for
    binary files and one for files over the size limit (naming the first few), and one a file,
    at most :data:`SKIPPED_SHOWN`, for files that could not be read; the full list is the index
    result's ``skipped_files`` (``--json``)."""
    kinds: dict[str, int] = {}
    grouped: dict[str, list[str]] = {BINARY: [], TOO_LARGE: []}
    others = []
    for s in skipped:
        if s["reason"] == NOT_READ:
            kind = Path(s["path"]).suffix.lower() or "extensionless"
            kinds[kind] = kinds.get(kind, 0) + 1
        elif s["reason"] == BINARY or s["reason"].startswith(TOO_LARGE):
            grouped[BINARY if s["reason"] == BINARY else TOO_LARGE].append(short_path(s["path"]))
        else:
            others.append(f"skipped {short_path(s['path'])}: {s['reason']}")
    lines = [
        f"skipped {n} {kind} file{'s' if n > 1 else ''}: {NOT_READ}"
        for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    for reason, paths in grouped.items():
        if paths:
            named = ", ".join(paths[:3]) + (" …" if len(paths) > 3 else "")
            n = f"{len(paths)} {'binary ' if reason == BINARY else ''}file{'s' if len(paths) > 1 else ''}"
            why = "(a NUL byte in the first 8 kB)" if reason == BINARY else f"over the size limit ({S.max_file_size} raises it)"
            lines.append(f"skipped {n} {why}: {named}")
    if len(others) > SKIPPED_SHOWN:
        others = [*others[:SKIPPED_SHOWN], f"… and {len(others) - SKIPPED_SHOWN} more files that could not be read"]
    return lines + others


def _wanted(f: Path, folder: Path, glob: str | None) -> bool:
    """Whether file ``f`` of ``folder`` is read: its name or its path in the folder matches
    ``glob``, or without one, it is of a kind encodr reads."""
    if glob is not None:
        return fnmatch.fnmatch(f.name, glob) or fnmatch.fnmatch(str(f.relative_to(folder)), glob)
    return f.suffix.lower() in RECORD_SUFFIXES + DOCUMENT_SUFFIXES


def kinds_read() -> str:
    """The kinds of file encodr reads, in a few words for an error message: the record and
    document suffixes, and the source code ones in short."""
    documents = [s for s in DOCUMENT_SUFFIXES if s not in CODE_SUFFIXES]
    return f"{' '.join(RECORD_SUFFIXES + tuple(documents))} and source code ({' '.join(CODE_SUFFIXES[:6])} …)"


def front_matter(raw: str) -> tuple[dict, str]:
    """A Markdown file's YAML front matter (a ``---`` line first, up to the next ``---`` or
    ``...`` line) and the text after it; ``({}, raw)`` without one, or when it is not a YAML
    mapping (then it stays part of the text)."""
    import yaml

    lines = raw.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, raw
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, raw
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError:
        return {}, raw
    if not isinstance(meta, dict):
        return {}, raw
    return {str(k): _plain(v) for k, v in meta.items()}, "\n".join(lines[end + 1 :])


def _plain(value):
    """A YAML value as JSON can hold it (dates as ISO 8601 strings)."""
    import datetime

    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def read_document(path: str | Path) -> tuple[str, str]:
    """The title and text of one document file (:func:`read_document_meta` without the metadata)."""
    title, text, _ = read_document_meta(path)
    return title, text


@dataclass(frozen=True)
class Document:
    """One document file as read: its title, text and metadata, the 1-based line of the file
    where ``text`` starts (after YAML front matter), and for a PDF, or a presentation's slides,
    the character offset in ``text`` where each page starts (page i + 1 starts at
    ``pages[i]``); for source code, its
    sections along the syntax tree (:func:`.code.code_sections`), else None (headings decide)."""

    title: str
    text: str
    meta: dict
    first_line: int = 1
    pages: tuple[int, ...] = ()
    sections: tuple[tuple[int, int, str], ...] | None = None


def read_document_file(path: str | Path) -> Document:
    """One document file as read (:class:`Document`): its title, text and metadata, the line of
    the file its text starts on, and a PDF's page offsets.

    - Markdown: the text as written after its YAML front matter (:func:`front_matter`), which
      is the metadata; the title is the front matter's ``title``, else the first ``#``
      heading, else the file name; the text starts on the line after the front matter.
    - Plain text (a note found in a folder): the text as written, titled by the file name.
    - Source code (:data:`.code.CODE_LANGUAGES`): the text as written, titled by the file name,
      with its sections along the syntax tree (a function, method or class each).
    - reStructuredText (Sphinx's, docutils'): the text as written, with its sections from
      docutils' parse (:func:`.rst.rst_sections`); the title is its first title, else the file name.
    - HTML: the visible text (Python's ``html.parser``; script and style left out, block
      elements end lines); the title is ``<title>``, else the first ``<h1>``, else the file name.
    - PDF: the text of each page (``pypdf``), pages separated by a blank line; the title is the
      PDF's own title, else the file name.
    - Word, PowerPoint, Excel, OpenDocument, EPUB, RTF, e-mail (:data:`CONVERTED_SUFFIXES`):
      Markdown (headings, lists, tables) from kreuzberg (:func:`_read_converted`); the title is
      the file's own, else its first ``#`` heading, else the file name; the metadata its
      ``author``, ``created`` and ``modified`` where the file records them; a presentation's
      slides are its pages (an Excel sheet is a ``##`` section, named by the sheet).

    Raises:
        EncodrError: the file cannot be read or parsed (a PDF pypdf cannot open, a damaged or
            password-protected Office file, bytes that are not UTF-8 in Markdown or HTML),
            naming the file.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".pdf":
        title, pages = _pdf_pages(p)
        starts, at = [], 0
        for page in pages:
            starts.append(at)
            at += len(page) + 2 if page else 0  # the blank line that joins it to the next
        return Document(title, "\n\n".join(page for page in pages if page), {}, 1, tuple(starts))
    if suffix in CONVERTED_SUFFIXES:
        title, text, meta = _read_converted(p)
        text, pages = _page_marks(text)
        return Document(title, text, meta, 1, pages)
    try:
        raw = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EncodrError(f"{p}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise EncodrError(f"{p}: cannot read it ({exc.strerror})") from None
    if suffix in (".html", ".htm"):
        return Document(*_html_text(raw, p.stem), {})
    if suffix == ".txt":
        return Document(p.stem, raw, {})
    if suffix in CODE_SUFFIXES:
        return Document(p.name, raw, {}, 1, (), tuple(code_sections(raw, code_language(p.name))))
    if suffix in RST_SUFFIXES:
        title, sections = rst_sections(raw)
        return Document(title or p.stem, raw, {}, 1, (), tuple(sections))
    fields, text = front_matter(raw)
    text = markdown_marks(text)
    heading = next((heading_words(line.lstrip("#")) for line in text.splitlines() if line.startswith("# ")), None)
    title = fields.get("title") if isinstance(fields.get("title"), str) else None
    first = raw[: len(raw) - len(text)].count("\n") + 1  # the lines the front matter took
    return Document(title or heading or p.stem, text, fields, first)


def read_document_meta(path: str | Path) -> tuple[str, str, dict]:
    """The title, text and metadata of one document file (:func:`read_document_file`).

    Raises:
        EncodrError: as :func:`read_document_file`.
    """
    doc = read_document_file(path)
    return doc.title, doc.text, doc.meta


def _pdf_pages(p: Path) -> tuple[str, list[str]]:
    """A PDF's title and the text of each of its pages (pypdf), stripped."""
    PdfReader = need("pypdf").PdfReader
    quiet = logging.getLogger("pypdf")  # its warnings on a damaged file ("EOF marker not found") are not ours to print
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        reader = PdfReader(str(p))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        title = (reader.metadata.title if reader.metadata and reader.metadata.title else None) or p.stem
    except Exception as exc:  # pypdf raises many kinds of errors on damaged files
        raise EncodrError(
            f"{p}: not a PDF that can be read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'unreadable'})"
        ) from None
    finally:
        quiet.setLevel(level)
    return str(title), pages


def _read_converted(p: Path) -> tuple[str, str, dict]:
    """Title, Markdown text and metadata of an Office, OpenDocument, EPUB, RTF or e-mail file,
    through kreuzberg's ``extract_file_sync`` (``output_format="markdown"``). Chosen over
    markitdown, which reads no OpenDocument and turns a damaged ``.docx`` into its raw bytes
    as text instead of failing; kreuzberg reads each of these formats, raises on a damaged
    or locked file, and gives the properties (title, authors, created, modified)."""
    kreuzberg = need("kreuzberg")
    ExtractionConfig, KreuzbergError, PageConfig = kreuzberg.ExtractionConfig, kreuzberg.KreuzbergError, kreuzberg.PageConfig
    extract_file_sync = kreuzberg.extract_file_sync

    marks = PageConfig(extract_pages=False, insert_page_markers=True, marker_format=f"\n\n{PAGE_MARK}{{page_num}}\n\n")
    try:
        found = extract_file_sync(str(p), config=ExtractionConfig(output_format="markdown", pages=marks))
    except (KreuzbergError, OSError, ValueError, RuntimeError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise EncodrError(f"{p}: not a {p.suffix} file that can be read, damaged or password-protected ({reason})") from None
    props = dict(found.metadata or {})
    text = found.content or ""
    heading = next((line.lstrip("#").strip() for line in text.splitlines() if line.startswith("# ")), None)
    title = props.get("title") or props.get("subject")
    authors = (
        props.get("authors")
        or ([props["created_by"]] if props.get("created_by") else None)
        or ([props["from_email"]] if props.get("from_email") else None)
    )
    meta = {
        "author": ", ".join(map(str, authors)) if authors else None,
        "created": props.get("created_at"),
        "modified": props.get("modified_at"),
    }
    return str(title or heading or p.stem), text, {k: v for k, v in meta.items() if v}


PAGE_MARK = (
    "ENCODRPAGE"  # what kreuzberg writes where a slide (a page) starts; only letters, so its Markdown output keeps it as written
)
_PAGE_LINE = re.compile(rf"\n*^{PAGE_MARK}(\d+)\n*", re.M)


def _page_marks(text: str) -> tuple[str, tuple[int, ...]]:
    """A converted file's text without the page marks kreuzberg put where each slide of a
    presentation starts, and the character offset where each page starts (as a PDF's: page
    i + 1 at ``pages[i]``); ``(text, ())`` when it put none (Word, Excel: no pages)."""
    if PAGE_MARK not in text:
        return text, ()
    out, starts, at = [], [], 0
    for m in _PAGE_LINE.finditer(text):
        out.append(text[at : m.start()])
        joined = sum(map(len, out))
        if joined:
            out.append("\n\n")
            joined += 2
        starts.append(joined)
        at = m.end()
    out.append(text[at:])
    return "".join(out), tuple(starts)


def _html_text(raw: str, fallback: str) -> tuple[str, str]:
    from html.parser import HTMLParser

    blocks = {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "pre",
        "blockquote",
        "td",
        "th",
    }

    class Text(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.skip = 0
            self.where: list[str] = []
            self.title = ""
            self.h1 = ""

        def handle_starttag(self, tag, attrs):
            self.where.append(tag)
            if tag in ("script", "style", "noscript"):
                self.skip += 1
            if tag in blocks:
                self.parts.append("\n")
            if (
                tag in ("h1", "h2", "h3", "h4", "h5", "h6") and not self.skip
            ):  # a heading as Markdown's: its passages know their section
                self.parts.append("#" * int(tag[1]) + " ")

        def handle_endtag(self, tag):
            if tag in ("script", "style", "noscript") and self.skip:
                self.skip -= 1
            if tag in blocks:
                self.parts.append("\n")
            if self.where and self.where[-1] == tag:
                self.where.pop()

        def handle_data(self, data):
            tag = self.where[-1] if self.where else ""
            if tag == "title":
                self.title += data
                return
            if tag == "h1" and not self.h1:
                self.h1 = data.strip()
            if not self.skip:
                self.parts.append(data)

    parser = Text()
    parser.feed(raw)
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    text = "\n".join(line for line in lines if line)
    return (parser.title.strip() or parser.h1 or fallback), text


FITS_CHARS = 8  # a text up to this many characters a token of room is counted before it is split (most fit whole)


def passage_splitter(tokenizer, max_tokens: int, overlap: int = OVERLAP, quick: bool = False) -> Splitter:
    """``text → [(character offset, passage)]`` with passages of at most ``max_tokens`` tokens of
    ``tokenizer`` (a Hugging Face fast tokenizer), consecutive ones sharing up to ``overlap``
    tokens; a text that fits comes back whole, at offset 0. With ``quick`` (an index's fast
    stage), ``split(text, code=True)`` cuts source code between lines on one tokenization
    (:func:`_line_passages`: seconds less a megabyte of code; on the held-out functions of
    ``bench/code_search.py`` it located about one in 70 fewer at rank 1, so the second stage keeps
    semantic-text-splitter's cuts).

    Raises:
        EncodrError: the tokenizer is not a fast (Rust) one, which the splitter needs.
    """
    from semantic_text_splitter import TextSplitter

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise EncodrError("splitting documents into passages needs a fast (Rust) tokenizer; this model has a slow one")
    from tokenizers import Tokenizer

    counter = Tokenizer.from_str(backend.to_str())  # a copy without the truncation a model's tokenizer.json may carry,
    counter.no_truncation()  # which would count every long text as fitting
    counter.no_padding()
    overlap = min(overlap, max_tokens // 4)
    splitter = TextSplitter.from_huggingface_tokenizer(counter, capacity=max_tokens, overlap=overlap, trim=True)

    def library(text: str) -> list[tuple[int, str]]:
        return [(offset, chunk) for offset, chunk in splitter.chunk_indices(text) if chunk.strip()]

    def split(text: str, code: bool = False) -> list[tuple[int, str]]:
        if len(text) <= max_tokens:  # no token is shorter than a character: it fits
            return [(0, text)]
        if code and quick:
            tokens = counter.encode(text, add_special_tokens=False)
            if len(tokens.ids) <= max_tokens:
                return [(0, text)]
            return _line_passages(text, tokens.offsets, max_tokens, overlap, library) or [(0, text)]
        if len(text) <= FITS_CHARS * max_tokens and len(counter.encode(text, add_special_tokens=False)) <= max_tokens:
            return [(0, text)]  # counted once: the splitter would search for cuts in a text that has none
        return library(text) or [(0, text)]

    return split


def _line_passages(text: str, offsets: list, room: int, overlap: int, library: Splitter) -> list[tuple[int, str]]:
    """Source code cut between lines: consecutive lines packed while their tokens fit ``room``,
    the next passage starting with the last lines of the one before that fit ``overlap`` tokens.
    A passage ends at the last blank line of its second half where there is one (a block's end,
    as semantic-text-splitter prefers the coarsest boundary that fits). The text is tokenized
    once (``offsets``: each token's character span, ``tokenizers``' ``Encoding.offsets``) and
    each line holds the tokens that start in it, where semantic-text-splitter tokenizes candidate
    chunks again at every level it tries (seconds for a megabyte of code); a passage's tokens,
    tokenized alone, are then its lines' (exact for tokenizers that split words at whitespace,
    within a token a line for SentencePiece's). A line longer than ``room`` is cut by
    ``library`` (semantic-text-splitter)."""
    import numpy as np

    starts = [0, *(m.end() for m in re.finditer("\n", text))]
    ends = [*starts[1:], len(text)]
    token_starts = np.fromiter((a for a, _ in offsets), dtype=np.int64, count=len(offsets))
    line_of = np.searchsorted(np.asarray(starts), token_starts, side="right") - 1
    counts = np.bincount(line_of, minlength=len(starts)).tolist()
    pieces: list[tuple[int, str]] = []
    i, n = 0, len(starts)
    while i < n:
        j, total = i, 0
        while j < n and total + counts[j] <= room:
            total += counts[j]
            j += 1
        if j == i:  # one line over the window
            pieces += [(starts[i] + offset, chunk) for offset, chunk in library(text[starts[i] : ends[i]])]
            i += 1
            continue
        if j < n:  # cut after the last blank line of the window's second half, where there is one (a block's end)
            j = next((b + 1 for b in range(j - 1, i + (j - i) // 2, -1) if counts[b] == 0), j)
        pieces.append((starts[i], text[starts[i] : ends[j - 1]]))
        if j == n:
            break
        back, k = 0, j
        while k - 1 > i and back + counts[k - 1] <= overlap:
            back += counts[k - 1]
            k -= 1
        i = k
    trimmed = []
    for offset, piece in pieces:
        body = piece.strip()
        if body:
            trimmed.append((offset + len(piece) - len(piece.lstrip()), body))
    return trimmed


def reads_as_markdown(source: str | None) -> bool:
    """Whether a document at ``source`` is read as Markdown (Markdown, HTML, Office and e-book
    files: :data:`MARKDOWN_SUFFIXES`), so that its headings are headings and a front end may
    render it as such."""
    return Path(source or "").suffix.lower() in MARKDOWN_SUFFIXES


def reads_as_document(path: str, in_folder: bool = False, layout: Layout = Layout()) -> bool:
    """Whether ``path`` is read as one document (passages by section, lines kept) rather than
    as records: a document file (:data:`DOCUMENT_SUFFIXES`), and a plain text file (``.txt``)
    found in a folder, a note as people keep them, unless ``layout`` asks for records
    (``records``, or ``documents``: blank-line blocks). A text file given by itself is a
    corpus of one text a line."""
    suffix = Path(path).suffix.lower()
    if suffix in DOCUMENT_SUFFIXES:
        return True
    return suffix == ".txt" and in_folder and not (layout.records or layout.documents)


def iter_records(
    path: str,
    lang: str | None = None,
    split: Splitter | None = None,
    skipped: list[Skipped] | None = None,
    layout: Layout = Layout(),
    in_folder: bool = False,
) -> Iterator[Record]:
    """The records of one file, split into passages by ``split`` where a text is too long.

    A document file (Markdown, HTML, PDF, a converted Office or e-book file) is one document with the file's path as its id; a
    record file gives its records (:func:`~.records.read_records`), each a document whose id is
    its own (``id`` / ``_id``), else ``source:line``. A passage's ``line`` is its record's line
    (1 for a document file) and ``start`` its character offset.

    Args:
        skipped: when given, a document file that cannot be read, or holds no text, is added
            to it instead of raising (files found in a folder).
        in_folder: the file was found in a folder (a ``.txt`` file is then one document:
            :func:`reads_as_document`).
        layout: where a record file keeps its fields (:class:`~.records.Layout`).

    Raises:
        EncodrError: see :func:`read_document` and :func:`~.records.read_records`.
    """
    if reads_as_document(path, in_folder, layout):
        try:
            doc = read_document_file(path)
        except EncodrError as exc:
            if skipped is None:
                raise
            skipped.append(Skipped(path, str(exc).removeprefix(f"{path}: ")))
            return
        if not doc.text.strip():
            if skipped is None:
                raise EncodrError(f"{path}: no text in it (an empty document, or a PDF of scanned images); leave it out")
            text_kind = Path(path).suffix.lower() in TEXT_SUFFIXES
            skipped.append(Skipped(path, EMPTY if text_kind else "no text in it (an empty document, or a PDF of scanned images)"))
            return
        record = Record(doc.text, str(path), doc.first_line, str(path), lang, doc.title, meta=doc.meta or None)
        yield from document_passages(record, split, doc.pages, doc.sections)
        return
    yield from split_records(read_records(path, lang, layout), split)


def iter_passages(record: Record, split: Splitter | None) -> Iterator[Record]:
    """A whole document given as one record (an HTTP upsert), in passages as a file's are
    (:func:`document_passages`)."""
    return document_passages(record, split)


def document_passages(
    record: Record, split: Splitter | None, pages: tuple[int, ...] = (), sections: tuple[tuple[int, int, str], ...] | None = None
) -> Iterator[Record]:
    """The passages of one document: its sections (:func:`section_bounds`; for a PDF, also
    its pages; for source code, ``sections``: its definitions), each cut by ``split`` where it is longer than the window,
    so that no passage
    crosses a heading or a page. Each passage carries its heading path (``section``), its
    character offset in the document (``start``), the lines of the file it spans (``line``,
    ``end_line``, 1-based, counted from ``record.line``, where the document's text starts)
    and its ``page`` (PDF). A document that is one passage comes back as one record with no
    offset (``start`` None), as a text that was not split.

    This is LlamaIndex's ``MarkdownNodeParser`` (a node per heading, with its path) followed
    by a token-bounded split of a section too long for the model, as semble and ck do.

    Args:
        record: the document, its ``text`` whole and ``line`` the file line it starts on.
        split: the window's splitter (:func:`passage_splitter`); None keeps each section whole.
        pages: a PDF's page start offsets in ``record.text``.
        sections: (start, end, name) ranges that cover ``record.text`` in order, used instead
            of its headings (source code: :func:`.code.code_sections`).
    """
    import bisect

    text = record.text
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(offset: int) -> int:
        return record.line + bisect.bisect_left(newlines, offset)

    out: list[Record] = []
    code = code_language(record.source or "") is not None
    for start, end, section in sections if sections is not None else section_bounds(text, record.title, pages):
        chunk = text[start:end]
        lead = len(chunk) - len(chunk.lstrip())
        body = chunk.strip()
        if not body:
            continue
        for offset, piece in split(body, code=code) if split is not None else [(0, body)]:
            at = start + lead + offset
            page = bisect.bisect_right(pages, at) if pages else None
            out.append(
                replace(
                    record,
                    text=piece,
                    ext_id=record.document_id,
                    start=at,
                    line=line_at(at),
                    end_line=line_at(at + max(len(piece) - 1, 0)),
                    section=section or None,
                    page=page,
                )
            )
    if len(out) == 1:
        yield replace(out[0], ext_id=record.ext_id, start=None)
        return
    yield from out


def section_bounds(text: str, title: str | None = None, pages: tuple[int, ...] = ()) -> list[tuple[int, int, str]]:
    """The sections of a Markdown text: (start, end, heading path) character ranges that cover
    it in order, one from each heading (:func:`heading_paths`) to the next, and the text before
    the first heading with an empty path. A heading with no text of its own before the next one
    (``# Guide`` then ``## Install``) joins the section after it, which keeps the deeper path.
    ``pages`` (offsets) cut sections too; a page's part keeps the section it sits in.
    """
    heads = heading_paths(text, title)
    cuts = sorted({0, *[o for o, _ in heads], *[p for p in pages if 0 < p < len(text)]})
    path_at = dict(heads)
    bounds: list[tuple[int, int, str]] = []
    current, pending = "", None  # the path in force; the start of a heading-only section waiting to join the next
    for i, start in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else len(text)
        if start in path_at:
            current = path_at[start]
            body = text[start:end].split("\n", 1)
            if len(body) < 2 or not body[1].strip():  # only the heading: it joins the next section
                pending = start if pending is None else pending
                continue
        bounds.append((start if pending is None else pending, end, current))
        pending = None
    if pending is not None:
        bounds.append((pending, len(text), current))
    return bounds


SECTION_SEPARATOR = " › "
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_ATTRIBUTES = re.compile(r"\s*\{:?\s*[#.][^{}]*\}\s*$")  # a heading's attribute list: { #request-files } (mkdocs, pandoc)


def heading_words(raw: str) -> str:
    """A heading's words as a reader sees them: spaces collapsed, and without the attribute
    list Python-Markdown's ``attr_list`` (mkdocs) and pandoc put after it (``{ #anchor .class }``),
    which no rendered page shows."""
    return " ".join(_ATTRIBUTES.sub("", raw).split())


FENCE = re.compile(r"^[ \t]*(```|~~~)", re.M)  # a Markdown code fence's line (a code block opens or closes)

# mkdocs' markup a rendered page never shows as text: an admonition's marker line (Material's
# "!!! note" / "??? tip", pymdownx.blocks' "/// info" and its closing "///", a title kept), and an
# include line (FastAPI's "{* docs_src/app.py hl[3] *}", pymdownx.snippets' '--8<-- "file"').
_ADMONITION = re.compile(
    r"^([ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]+[\w-]+(?:[ \t]+[\w-]+)*|///(?:[ \t]*[\w-]+)?)"  # the marker and its type
    r"[ \t]*(?:\|?[ \t]*\"?(.*?)\"?)?[ \t]*$"  # its title, quoted ("!!!") or after "|" ("///")
)
_INCLUDE = re.compile(r"^[ \t]*(?:\{\*.*\*\}|-{2}8<-{2}.*)[ \t]*$")


def markdown_marks(text: str) -> str:
    """``text`` (Markdown) with mkdocs' marker lines emptied outside code blocks: admonition
    markers (their title, where given, kept in their place) and include lines. Every line
    stays where it was (a hit's ``path:line`` is the file's), and a snippet no longer reads
    ``/// … ///`` or ``{* docs_src/app.py *}`` as prose."""
    if "///" not in text and "!!!" not in text and "???" not in text and "{*" not in text and "--8<--" not in text:
        return text
    out, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and _INCLUDE.match(line):
            line = ""
        elif not fenced and (m := _ADMONITION.match(line)):
            line = m.group(1) + m.group(2).strip() if m.group(2) else ""
        out.append(line)
    return "\n".join(out)


def heading_paths(text: str, title: str | None = None) -> list[tuple[int, str]]:
    """Where each section of a Markdown text starts and its heading path: (character offset of
    the heading line, ``"Install › GPU"``), in order. ATX headings (``#`` to ``######``) outside
    fenced code blocks; a heading closes every deeper open one (CommonMark's outline, as
    LlamaIndex's ``MarkdownNodeParser`` keeps it). A top heading equal to the document's
    ``title`` is left out of the path (the title is shown on its own)."""
    found, open_headings, fenced, offset = [], [], False, 0
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line.rstrip("\r\n"))):
            level, words = len(m.group(1)), heading_words(m.group(2))
            open_headings = [(lv, w) for lv, w in open_headings if lv < level] + [(level, words)]
            path = [w for lv, w in open_headings]
            if title and path and path[0].casefold() == title.strip().casefold():
                path = path[1:]
            found.append((offset, SECTION_SEPARATOR.join(path)))
        offset += len(line)
    return found


def split_records(records: Iterable[Record], split: Splitter | None, batch: int = SPLIT_BATCH) -> Iterator[Record]:
    """Each of ``records`` whole, or its passages where ``split`` cuts it, in order. ``batch``
    records at a time are split on as many threads as the process may use (at most
    :data:`SPLIT_THREADS`): semantic-text-splitter's ``chunk_indices`` releases the GIL, and cutting
    long texts one at a time on one core made it the longest part of a build on a GPU machine
    (bench/notes/gpu.md). Records read before an error of ``records`` are still yielded, then
    the error is raised, as when they are split one by one."""
    if split is None:
        yield from records
        return
    threads = min(usable_cpus(), SPLIT_THREADS)
    with ThreadPoolExecutor(threads, thread_name_prefix="encodr-split") as pool:
        failed, source = None, iter(records)
        while failed is None:
            group: list[Record] = []
            try:
                for record in source:
                    group.append(record)
                    if len(group) >= batch:
                        break
            except Exception as exc:  # noqa: BLE001 - raised again below, after the records read before it
                failed = exc
            if not group and failed is None:
                return
            slices = [group[i::threads] for i in range(threads)]  # interleaved: long and short texts spread evenly
            cuts = list(pool.map(lambda part: [split(r.text) for r in part], slices))
            for i, record in enumerate(group):
                yield from _passages(record, cuts[i % threads][i // threads])
        raise failed


def _passages(record: Record, parts: list[tuple[int, str]]) -> Iterator[Record]:
    """``record`` whole where ``parts`` (its ``split``) is one passage, else a record per passage."""
    if len(parts) == 1:
        yield record
        return
    doc = record.document_id
    for offset, chunk in parts:
        yield replace(record, text=chunk, ext_id=doc, start=offset)
