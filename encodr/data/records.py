"""Corpus records for indexing: one text a line, or a TSV with ``text`` (optional ``id``,
``lang``) columns, streamed one line at a time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import EncodrError
from .language import check_code
from .text import iter_lines


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
            number), a TSV without a ``text`` column, or a TSV row whose number of fields
            differs from the header's, or whose ``lang`` is not an ISO 639-3 code (with the
            line number: such a row is refused, not guessed at).
    """
    p = Path(path)
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
