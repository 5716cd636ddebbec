"""Translation pairs (bitext), for methods that learn from them (CMLM §4.2: bitext retrieval)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import EncodrError
from .text import iter_lines


@dataclass(frozen=True)
class Translation:
    """A sentence and its translation, with optional language codes."""

    source: str
    target: str
    source_lang: str | None = None
    target_lang: str | None = None


def read_bitext(path: str | Path) -> list[Translation]:
    """Read ``source<TAB>target`` lines, optionally followed by ``<TAB>source_lang<TAB>target_lang``.

    Blank lines are skipped, and so is a first line that reads ``source<TAB>target…``
    (a header). Repeated pairs are kept once.

    Raises:
        EncodrError: unreadable file; a line with one column or an empty side (its line
            number is given); fewer than 2 distinct pairs (in-batch negatives need 2).
    """
    found: dict[tuple[str, str], Translation] = {}
    for number, line in iter_lines(path, "a TSV of source<TAB>target translation pairs"):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split("\t")]
        if number == 1 and [c.lower() for c in cells[:2]] == ["source", "target"]:
            continue
        if len(cells) < 2 or not cells[0] or not cells[1]:
            raise EncodrError(f"{path}: line {number} is not source<TAB>target (found {len(cells)} column{'s' * (len(cells) != 1)}"
                              f"{', one empty' if len(cells) >= 2 else ''}); write one translation pair a line")  # fmt: skip
        langs = (cells[2] or None, cells[3] or None) if len(cells) >= 4 else (None, None)
        found.setdefault((cells[0], cells[1]), Translation(cells[0], cells[1], *langs))
    if len(found) < 2:
        raise EncodrError(f"{path} has {len(found)} distinct translation pair{'s' * (len(found) != 1)}; bitext retrieval needs at least 2 (in-batch negatives)")
    return list(found.values())
