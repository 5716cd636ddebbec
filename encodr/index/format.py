"""The index format: one number in ``index.json``, read here and nowhere else, and the one
conversion of an index written by an older encodr (``encodr index --upgrade IDX``, :mod:`.upgrade`).

Formats:

- ``1`` (no ``format`` in ``index.json``): what encodr wrote before the number existed. Any of:
  a flat folder (no generations), a ``texts.db`` without document tables (documents without
  identity), a keyword index of plain words (no analysis) or none, no prompts recorded.
- ``2``: generations (``current`` → ``gNNNNNN``), documents with identity, the analysed keyword
  index (:data:`~.keywords.ANALYZER`), the model's prompts in ``index.json``.
- ``3``: each passage's heading path (``section``), its words in the keyword index; Thai segmented into words there.
- ``4``: passages bounded by their sections, each with the file lines it spans (``end_line``),
  its PDF ``page`` and its ``path`` relative to the folder indexed (an upgraded index has them
  empty: a hit shows its document's first line until the file is indexed again).

Every reader refuses an index of another format with one line naming the fix
(:func:`require_current`), so the code that reads and writes indexes knows one layout. An upgrade
keeps the vectors as they are (nothing is encoded) and writes one new generation.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import EncodrError

FORMAT = 4


def require_current(path: Path, found: int) -> None:
    """Refuse an index of format ``found`` (:attr:`~.meta.IndexMeta.format`) unless it is this encodr's :data:`FORMAT`.

    Raises:
        EncodrError: an older index (the fix: ``encodr index --upgrade PATH``, once), or a newer
            one (the fix: a newer encodr); field ``index``.
    """
    if found < FORMAT:
        raise EncodrError(
            f"index {path} was written by an older encodr (index format {found}; this one reads {FORMAT}); "
            f"bring it up to date once with: encodr index --upgrade {path}",
            field="index",
        )
    if found > FORMAT:
        raise EncodrError(
            f"index {path} was written by a newer encodr (index format {found}; this one reads {FORMAT}); "
            "upgrade encodr: pip install -U encodr",
            field="index",
        )
