"""Corpus records for indexing, streamed one record at a time: one text a line (or, with
:attr:`Layout.documents`, one document a blank-line-separated block); a TSV or CSV with a
header (``text``, optional ``id``, ``title`` and ``lang`` columns, or the columns a
:class:`Layout` names); or JSONL, one object a line (a BEIR corpus: ``_id``, ``title``,
``text``; or the text field a :class:`Layout` names)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import EncodrError, S
from ..settings import setting
from .language import check_code
from .text import iter_json_lines, iter_lines


@dataclass(frozen=True)
class Record:
    """One text to index, with where it came from: the file, the 1-based line, the document's id
    and title, and (a passage of a longer text) its character offset in that text."""

    text: str
    source: str
    line: int
    ext_id: str | None = None
    lang: str | None = None
    title: str | None = None
    start: int | None = None
    meta: dict | None = None  # the document's metadata: a JSONL object's other fields, --meta-columns, Markdown front matter
    section: str | None = (
        None  # a passage's heading path under its document's title ("Install › GPU"), where the document has headings
    )
    end_line: int | None = None  # the 1-based line of the source file where the text ends (``line``: where it starts)
    page: int | None = None  # the 1-based page of a PDF the text sits on

    @property
    def document_id(self) -> str:
        """The id of the document this record is (or is a passage of) in an index: its own id
        (``_id``, an id column, a document file's path), else ``source:line``."""
        return self.ext_id or f"{self.source}:{self.line}"


@dataclass(frozen=True)
class Layout:
    """Where a record file keeps its fields, when not where a BEIR corpus keeps them. Each
    field's default and meaning are in its declaration below. Columns are matched without regard
    to case; a column named here must exist, while the default id and title columns are optional.
    A JSONL object keeps all its other fields as metadata."""

    text_field: str = setting("text", "JSONL: the field that holds the text.")
    text_column: str = setting("text", "CSV / TSV: the header's column that holds the text.")
    id_column: str | None = setting(None, "CSV / TSV: the column that holds each document's id (default: 'id' when present).")
    title_column: str | None = setting(
        None, "CSV / TSV: the column that holds each document's title (default: 'title' when present)."
    )
    documents: bool = setting(
        False,
        "Plain text files: each blank-line-separated block (a file without blank lines: the whole file) is one document, "
        "not each line.",
    )
    meta_columns: tuple[str, ...] = setting(
        (), f"CSV / TSV: columns kept as each document's metadata, for search {S.filter} (comma-separated or repeated)."
    )
    records: bool = setting(
        False,
        "Plain text files found in a folder: one text a line, as a text file given by itself is read (by default each "
        ".txt file in a folder is one document, its passages following its paragraphs).",
    )


def read_records(path: str | Path, default_lang: str | None = None, layout: Layout = Layout()) -> Iterator[Record]:
    """Stream the texts of a corpus file, one line (one record) at a time.

    Plain text: one text a line; with ``layout.documents``, one text a blank-line-separated
    block (lines joined with a line break; ``line`` is the block's first). TSV (``.tsv``) or
    CSV (``.csv``, RFC 4180: quoted fields may hold commas and line breaks; never read as
    lines) with a header that has the text column, and optionally the id, title and ``lang``
    columns. JSONL (``.jsonl``): one JSON object a line with the text field, and optionally
    ``title``, ``_id`` or ``id``, and ``lang``. A title is joined before the text with a
    space, as BEIR's dense-retrieval protocol joins them, and kept as the record's title.
    Blank texts are skipped. ``line`` is the 1-based line (CSV: the line where the row ends).

    Raises:
        EncodrError: missing file, a directory, bytes that are not UTF-8 (with the line
            number); a TSV or CSV whose header lacks the text column or a column the layout
            names (naming the header's columns and the option to pass); a row whose number of
            fields differs from the header's, or whose ``lang`` is not an ISO 639-3 code (with
            the line number: such a row is refused, not guessed at); a JSONL line that is not
            a JSON object with a string text field.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        yield from _read_jsonl(p, default_lang, layout)
    elif suffix in (".csv", ".tsv"):
        yield from _read_table(p, default_lang, layout, suffix)
    elif layout.documents:
        yield from _read_blocks(p, default_lang)
    else:
        for number, line in iter_lines(p, "a text file (one text a line), or a TSV or CSV with a 'text' column"):
            if line.strip():
                yield Record(line.strip(), str(p), number, None, default_lang)


def _read_blocks(p: Path, default_lang: str | None) -> Iterator[Record]:
    block: list[str] = []
    first = 0
    for number, line in iter_lines(p, "a text file (one document a blank-line-separated block)"):
        if line.strip():
            first = first or number
            block.append(line.rstrip())
        elif block:
            yield Record("\n".join(block).strip(), str(p), first, None, default_lang)
            block, first = [], 0
    if block:
        yield Record("\n".join(block).strip(), str(p), first, None, default_lang)


def _read_jsonl(p: Path, default_lang: str | None, layout: Layout) -> Iterator[Record]:
    field = layout.text_field
    for number, obj in iter_json_lines(
        p,
        f"a JSONL file: one JSON object a line with a '{field}' field",
        f"a string '{field}' field (optional: _id, title, lang; {S.text_field} names another)",
        text=field,
    ):
        title = obj.get("title") if isinstance(obj.get("title"), str) else None
        text = f"{title or ''} {obj[field]}".strip()
        ext_id = obj.get("_id", obj.get("id"))
        lang = obj.get("lang") or None
        if lang:
            check_code(lang, f"{p}, line {number}: lang")
        meta = {k: v for k, v in obj.items() if k not in (field, "title", "_id", "id", "lang")} or None
        if text:
            yield Record(
                text, str(p), number, None if ext_id is None else str(ext_id), lang or default_lang, title or None, meta=meta
            )


def _columns(p: Path, header: list[str], layout: Layout) -> dict[str, int]:
    """The header's column index for each of text, id, title and lang (those present)."""
    columns = [c.strip().lower() for c in header]
    names = {"text": layout.text_column, "id": layout.id_column or "id", "title": layout.title_column or "title", "lang": "lang"}
    named = {
        "text": S.text_column,
        "id": S.id_column if layout.id_column else None,
        "title": S.title_column if layout.title_column else None,
    }
    names.update({f"meta:{c}": c for c in layout.meta_columns})
    named.update({f"meta:{c}": S.meta_columns for c in layout.meta_columns})
    found = {}
    for key, name in names.items():
        if name.lower() in columns:
            found[key] = columns.index(name.lower())
        elif named.get(key):
            raise EncodrError(
                f"{p}: no column '{name}' in its header ({', '.join(columns) or 'empty'}); pass {named[key]} with one of them"
            )
    return found


def _scalar(cell: str):
    """A table cell as metadata: an integer or a decimal number when it reads as one (so that
    ``--filter year>=2020`` compares numbers), else the string."""
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            pass
    return cell


def _row(p: Path, number: int, values: list[str], columns: dict[str, int], default_lang: str | None) -> Record | None:
    cells = {key: values[i].strip() for key, i in columns.items()}
    if cells.get("lang"):
        check_code(cells["lang"], f"{p}, line {number}: lang")
    title = cells.get("title") or None
    text = f"{title or ''} {cells['text']}".strip() if cells["text"] else ""
    meta = {key[5:]: _scalar(value) for key, value in cells.items() if key.startswith("meta:")} or None
    return (
        Record(text, str(p), number, cells.get("id") or None, cells.get("lang") or default_lang, title, meta=meta)
        if text
        else None
    )


def _read_table(p: Path, default_lang: str | None, layout: Layout, suffix: str) -> Iterator[Record]:
    tsv = suffix == ".tsv"
    lines = (
        line
        for _, line in iter_lines(
            p, f"a {suffix[1:].upper()} file with a header that has a '{layout.text_column}' column", ends=True
        )
    )
    csv.field_size_limit(2**31 - 1)  # a document in one field may be longer than the module's 128 KiB default
    try:
        # a TSV is split at every tab, quotes kept as text; a CSV follows RFC 4180
        rows = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE) if tsv else csv.reader(lines)
        header = next(rows, None) or []
        columns = _columns(p, header, layout)
        for values in rows:
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                unit, fix = (
                    ("column", "separate the row's fields with tabs, or leave a field empty between two tabs")
                    if tsv
                    else ("field", "quote a field that holds a comma")
                )
                raise EncodrError(
                    f"{p}, line {rows.line_num}: {len(values)} {unit}{'s' * (len(values) != 1)} where the header has "
                    f"{len(header)} "
                    f"({', '.join(c.strip().lower() for c in header)}); {fix}"
                )
            record = _row(p, rows.line_num, values, columns, default_lang)
            if record:
                yield record
    except csv.Error as exc:
        raise EncodrError(f"{p}: not a readable {suffix[1:].upper()} ({exc}); check its quoting") from None
