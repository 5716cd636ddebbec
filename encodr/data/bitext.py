"""Translation pairs (bitext), for methods that learn from them (CMLM §4.2: bitext retrieval)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import EncodrError
from .text import iter_lines, read_lines


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
            raise EncodrError(
                f"{path}: line {number} is not source<TAB>target (found {len(cells)} column{'s' * (len(cells) != 1)}"
                f"{', one empty' if len(cells) >= 2 else ''}); write one translation pair a line"
            )
        langs = (cells[2] or None, cells[3] or None) if len(cells) >= 4 else (None, None)
        found.setdefault((cells[0], cells[1]), Translation(cells[0], cells[1], *langs))
    if len(found) < 2:
        raise EncodrError(
            f"{path} has {len(found)} distinct translation pair{'s' * (len(found) != 1)}; bitext retrieval needs at "
            "least 2 (in-batch negatives)"
        )
    return list(found.values())


def hold_out(pairs: list[Translation], n: int, seed: int = 42) -> tuple[list[Translation], list[Translation]]:
    """Split translation pairs into (train, dev) for a dev set cut from the bitext itself.

    Source sentences are drawn at random (seeded) until ``n`` pairs are held; every pair of a
    drawn source goes to dev, so no dev source sentence is ever trained on, even when one
    English sentence is paired with several languages. At most a tenth of the pairs is held.

    Args:
        pairs: the training pairs, in file order.
        n: pairs to hold out (fewer when a tenth of the pairs is fewer).
        seed: seeds the draw.

    Returns:
        (train, dev), each in the input order; dev is empty when a tenth of the pairs is
        fewer than 2 (too little bitext for a dev set).
    """
    import random

    n = min(n, len(pairs) // 10)
    if n < 2:
        return list(pairs), []
    by_source: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_source.setdefault(p.source, []).append(i)
    order = list(by_source)
    random.Random(seed).shuffle(order)
    held: set[int] = set()
    for source in order:
        if len(held) >= n:
            break
        held.update(by_source[source])
    return [p for i, p in enumerate(pairs) if i not in held], [p for i, p in enumerate(pairs) if i in held]


def read_tatoeba(path: str | Path) -> list[Translation]:
    """Read the Tatoeba / LASER layout: ``tatoeba.XXX-eng.XXX`` and its aligned sibling
    ``tatoeba.XXX-eng.eng`` (line i of one translates line i of the other). Every line is kept,
    repeats included, so that line i stays the gold answer for line i.

    Args:
        path: either file of the pair.

    Raises:
        EncodrError: a name not in that layout, a missing sibling, files of different
            lengths, or a blank line.
    """
    p = Path(path)
    parts = p.name.split(".")
    if len(parts) != 3 or "-" not in parts[1]:
        raise EncodrError(f"{path}: not a Tatoeba file (tatoeba.LANG-eng.LANG); pass source<TAB>target pairs as a .tsv instead")
    lang, other = parts[1].split("-", 1)
    source, target = p.with_name(f"{parts[0]}.{parts[1]}.{lang}"), p.with_name(f"{parts[0]}.{parts[1]}.{other}")
    a, _ = read_lines(source)
    b, _ = read_lines(target)
    if len(a) != len(b):
        raise EncodrError(
            f"{source.name} has {len(a)} lines and {target.name} {len(b)}; aligned files need one translation a line"
        )
    blank = next((i for i, (x, y) in enumerate(zip(a, b), 1) if not x.strip() or not y.strip()), None)
    if blank is not None:
        raise EncodrError(f"{source.name} / {target.name}: line {blank} is blank; aligned files need one sentence a line")
    return [Translation(x.strip(), y.strip(), lang, other) for x, y in zip(a, b)]


def read_bitext_any(path: str | Path) -> list[Translation]:
    """Translation pairs from a Tatoeba pair of files (:func:`read_tatoeba`) or a TSV
    (:func:`read_bitext`), chosen by the file name."""
    return read_tatoeba(path) if Path(path).suffix.lower() not in (".tsv", ".txt") else read_bitext(path)
