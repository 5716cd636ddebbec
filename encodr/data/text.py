"""Reading training text: one string a line, validated, deduplicated.

Implements the data side of Mirror-BERT §2: the training set is a list of *distinct*
strings, each later duplicated into two views.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import EncodrError

# Strings are cut to this many characters per token of max_length before tokenising, so a
# 1 MB line costs no more than a long sentence. No real token is 40 characters long.
CHARS_PER_TOKEN_CAP = 40


@dataclass
class Corpus:
    """Distinct, non-blank strings read from a file.

    Attributes:
        strings: distinct strings in first-seen order, whitespace-stripped.
        source: the file path (or bundled data name) they came from.
        sha256: hex digest of the file's bytes (the run registry's data hash).
        lines: number of lines read.
        blank: number of blank lines skipped.
        duplicates: number of repeated strings dropped.
        long_lines: 1-based line numbers of lines cut to the character cap.
    """

    strings: list[str]
    source: str
    sha256: str
    lines: int = 0
    blank: int = 0
    duplicates: int = 0
    long_lines: list[int] = field(default_factory=list)


def check_file(path: str | Path, what: str) -> Path:
    """The path of an existing regular file, or EncodrError naming the problem and ``what`` to pass."""
    p = Path(path)
    if not p.exists():
        raise EncodrError(f"{path}: no such file; pass {what}")
    if p.is_dir():
        raise EncodrError(f"{path} is a directory; pass {what} inside it")
    return p


def _decode(raw: bytes, path: str | Path, line: int, offset: int = 0) -> str:
    """UTF-8 text of ``raw``, or EncodrError giving the 1-based line of the first bad byte; a NUL
    byte, which no text line holds, is reported as a binary (or UTF-16) file."""
    if b"\x00" in raw:
        line += raw.count(b"\n", 0, raw.index(b"\x00"))
        raise EncodrError(
            f"{path}: line {line} holds a NUL byte: a binary file (or UTF-16 text), not UTF-8 text; "
            f"name a text file, or convert it, e.g. iconv -f utf-16 -t utf-8 {path} > fixed.txt"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line += raw.count(b"\n", 0, exc.start)
        raise EncodrError(
            f"{path}: line {line} is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); "
            f"convert the file, e.g. iconv -f latin1 -t utf-8 {path} > fixed.txt"
        ) from None


def iter_lines(
    path: str | Path, what: str = "a UTF-8 text file with one string a line", ends: bool = False
) -> Iterator[tuple[int, str]]:
    """Stream a UTF-8 text file as ``(1-based line number, line without its line ending)``,
    one line in memory at a time. A leading byte-order mark is dropped.

    Args:
        path: file path.
        what: what the user should pass instead, for the error messages.
        ends: keep each line's ending (for a reader such as :mod:`csv` that needs it).

    Raises:
        EncodrError: missing file, a directory, or bytes that are not UTF-8 (the message
            gives the line number). Raised on the first ``next()``, before any line.
    """
    p = check_file(path, what)
    with open(p, "rb") as f:
        head = f.read(8000)  # a NUL byte in the first 8,000 is a binary file, as git and grep decide
        if b"\x00" in head:
            _decode(head[: head.index(b"\x00") + 1], path, 1)
        f.seek(0)
        for number, raw in enumerate(f, 1):
            line = _decode(raw, path, number)
            line = line if ends else line.rstrip("\r\n")
            yield number, (line.lstrip("\ufeff") if number == 1 else line)


def iter_json_lines(
    path: str | Path, what: str, needs: str = "a string 'text'", ids: bool = False, text: str = "text"
) -> Iterator[tuple[int, dict]]:
    """Stream a JSONL file as ``(1-based line number, object)``, blank lines skipped; each
    object must have a string field ``text`` (the field's name; and with ``ids`` an ``_id``).

    Raises:
        EncodrError: see :func:`iter_lines`; a line that is not JSON, or not an object with
            ``text`` (``needs`` says what it must hold), naming the line.
    """
    import json

    for number, line in iter_lines(path, what):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EncodrError(f"{path}, line {number}: not JSON ({exc.msg}); write one JSON object a line") from None
        if not isinstance(obj, dict) or not isinstance(obj.get(text), str) or (ids and "_id" not in obj):
            raise EncodrError(f"{path}, line {number}: needs a JSON object with {needs}")
        yield number, obj


def read_lines(path: str | Path) -> tuple[list[str], str]:
    """Read a whole UTF-8 text file into lines.

    Args:
        path: file path.

    Returns:
        (lines without line endings, sha256 hex digest of the bytes).

    Raises:
        EncodrError: missing file, a directory, an unreadable file, or bytes that are not
            UTF-8 (the message gives the 1-based line number).
    """
    p = check_file(path, "a UTF-8 text file with one string a line")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise EncodrError(f"{path}: cannot read ({exc.strerror}); check its permissions") from None
    text = _decode(raw, path, 1)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.splitlines(), hashlib.sha256(raw).hexdigest()


def read_corpus(path: str | Path, max_length: int | None = None) -> Corpus:
    """Read, strip and deduplicate the strings of a text file.

    Args:
        path: UTF-8 text file, one string a line.
        max_length: token budget; lines longer than ``max_length × 40`` characters are cut
            there (and reported in ``long_lines``) so a huge line cannot exhaust memory.

    Returns:
        A :class:`Corpus`.

    Raises:
        EncodrError: see :func:`read_lines`; also an empty file, or one with only blank lines.
    """
    lines, digest = read_lines(path)
    if not lines:
        raise EncodrError(f"{path} is empty; it needs one string a line")
    cap = max_length * CHARS_PER_TOKEN_CAP if max_length else None
    seen: dict[str, None] = {}
    corpus = Corpus([], str(path), digest, lines=len(lines))
    for number, line in enumerate(lines, 1):
        s = line.strip()
        if not s:
            corpus.blank += 1
            continue
        if cap and len(s) > cap:
            corpus.long_lines.append(number)
            s = s[:cap]
        if s in seen:
            corpus.duplicates += 1
            continue
        seen[s] = None
    corpus.strings = list(seen)
    if not corpus.strings:
        raise EncodrError(f"{path} has only blank lines; it needs one string a line")
    return corpus


def top_words(n: int = 10_000, lang: str = "en") -> list[str]:
    """The ``n`` most frequent alphabetic words of a language (``wordfreq``), lowercase.

    Mirror-BERT §3 trains word encoders on the 10k most frequent words of a language.
    """
    from wordfreq import top_n_list

    words: list[str] = []
    for w in top_n_list(lang, n * 3):
        if w.isalpha() and w not in words:
            words.append(w)
            if len(words) == n:
                break
    return words
