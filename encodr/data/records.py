"""Corpus records for indexing: one text a line, or a TSV with ``text`` (optional ``id``,
``lang``) columns, streamed one line at a time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import EncodrError
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
            number), or a TSV without a ``text`` column.
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
            cells = dict(zip(columns, line.split("\t")))
            text = cells.get("text", "").strip()
            if text:
                yield Record(text, str(p), number, cells.get("id") or None, cells.get("lang") or default_lang)
        elif line.strip():
            yield Record(line.strip(), str(p), number, None, default_lang)
