"""Corpus records for indexing, streamed one record at a time: one text a line; a TSV or CSV
with a header (``text``, optional ``id`` and ``lang`` columns); or JSONL, one object a line
(a BEIR corpus: ``_id``, ``title``, ``text``)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import EncodrError
from .language import check_code
from .text import check_file, iter_json_lines, iter_lines


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


def read_records(path: str | Path, default_lang: str | None = None) -> Iterator[Record]:
    """Stream the texts of a corpus file, one line at a time (memory bounded by a line).

    Plain text: one text a line. TSV (``.tsv``) or CSV (``.csv``, RFC 4180: quoted fields
    may hold commas and line breaks; never read as lines) with a header that has a ``text``
    column, and optionally ``id`` and ``lang``. JSONL (``.jsonl``): one JSON object a line
    with ``text``, and optionally ``title`` (joined before the text with a space, as BEIR's
    dense-retrieval protocol joins them), ``_id`` or ``id``, and ``lang``. Blank texts are
    skipped. ``line`` is the 1-based line (CSV: the line where the row ends).

    Raises:
        EncodrError: missing file, a directory, bytes that are not UTF-8 (with the line
            number), a TSV without a ``text`` column, or a TSV row whose number of fields
            differs from the header's, or whose ``lang`` is not an ISO 639-3 code (with the
            line number: such a row is refused, not guessed at); a CSV without a ``text``
            column; a JSONL line that is not a JSON object with a string ``text``.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        yield from _read_jsonl(p, default_lang)
        return
    if suffix == ".csv":
        yield from _read_csv(p, default_lang)
        return
    columns = None
    for number, line in iter_lines(path, "a text file (one text a line) or a TSV with a 'text' column"):
        if number == 1 and p.suffix.lower() == ".tsv":
            columns = [c.strip().lower() for c in line.split("\t")]
            if "text" not in columns:
                raise EncodrError(f"{path}: a .tsv corpus needs a header with a 'text' column (optional: id, lang)")
            continue
        if columns:
            values = line.split("\t")
            if len(values) != len(columns) and line.strip():
                raise EncodrError(f"{path}, line {number}: {len(values)} column{'s' * (len(values) != 1)} where the header has {len(columns)} "
                                  f"({', '.join(columns)}); separate the row's fields with tabs, or leave a field empty between two tabs")  # fmt: skip
            cells = dict(zip(columns, values))
            text = cells.get("text", "").strip()
            lang = cells.get("lang", "").strip()
            if lang:
                check_code(lang, f"{path}, line {number}: lang")
            if text:
                yield Record(text, str(p), number, cells.get("id") or None, lang or default_lang)
        elif line.strip():
            yield Record(line.strip(), str(p), number, None, default_lang)


def _read_jsonl(p: Path, default_lang: str | None) -> Iterator[Record]:
    for number, obj in iter_json_lines(p, "a JSONL file: one JSON object a line with a 'text' field", "a string 'text' field (optional: _id, title, lang)"):
        text = f"{obj.get('title') or ''} {obj['text']}".strip()
        ext_id = obj.get("_id", obj.get("id"))
        lang = obj.get("lang") or None
        if lang:
            check_code(lang, f"{p}, line {number}: lang")
        if text:
            yield Record(text, str(p), number, None if ext_id is None else str(ext_id), lang or default_lang, obj.get("title") or None)


def _read_csv(p: Path, default_lang: str | None) -> Iterator[Record]:
    check_file(p, "a CSV file with a header that has a 'text' column")
    try:
        with open(p, encoding="utf-8-sig", newline="") as f:
            rows = csv.reader(f)
            header = next(rows, None)
            columns = [c.strip().lower() for c in header or []]
            if "text" not in columns:
                raise EncodrError(f"{p}: a .csv corpus needs a header with a 'text' column (optional: id, lang); "
                                  f"its header is {', '.join(columns) or 'empty'}")  # fmt: skip
            for values in rows:
                if not any(v.strip() for v in values):
                    continue
                if len(values) != len(columns):
                    raise EncodrError(f"{p}, line {rows.line_num}: {len(values)} fields where the header has {len(columns)} "
                                      f"({', '.join(columns)}); quote a field that holds a comma")  # fmt: skip
                cells = dict(zip(columns, values))
                text, lang = cells["text"].strip(), cells.get("lang", "").strip()
                if lang:
                    check_code(lang, f"{p}, line {rows.line_num}: lang")
                if text:
                    yield Record(text, str(p), rows.line_num, cells.get("id") or None, lang or default_lang)
    except UnicodeDecodeError as exc:
        raise EncodrError(f"{p}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except csv.Error as exc:
        raise EncodrError(f"{p}: not a readable CSV ({exc}); check its quoting") from None
