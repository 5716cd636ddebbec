"""The layout of a sharded index (:mod:`.sharded`), read without opening it: its manifest, its
shards' folders, where a document goes, and its shards' ``index.json`` joined into one. Below
:mod:`.reader` (which lists and peeks at a sharded index through it); writing is :mod:`.sharded`'s,
searching :mod:`.scatter`'s."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import EncodrError, S
from ..outputs import SHARDED_RECORD, current_generation
from .meta import IndexMeta

MANIFEST = SHARDED_RECORD
SHARDED_FORMAT = 1  # the manifest's layout; a newer one is refused by this encodr (:func:`read_manifest`)
ROUTING = "blake2b-64(document id) mod shards"


def route(document_id: str, shards: int) -> int:
    """The shard (0 … ``shards`` − 1) that owns the document ``document_id``: the first 8 bytes
    of its BLAKE2b digest, big-endian, modulo ``shards``. Stable across machines and runs."""
    digest = hashlib.blake2b(document_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def shard_folder(root: Path, shard: int) -> Path:
    """Shard ``shard``'s index folder under the sharded index ``root``."""
    return Path(root) / f"shard-{shard:03d}"


def holds_shards(folder: Path) -> bool:
    """Whether the folder ``folder`` is a sharded index (it holds a manifest)."""
    return (Path(folder) / MANIFEST).is_file()


def read_manifest(root: Path) -> dict:
    """The manifest of the sharded index in the folder ``root``.

    Raises:
        EncodrError: the manifest cannot be read, or was written by a newer encodr (field ``index``).
    """
    root = Path(root)
    try:
        manifest = json.loads((root / MANIFEST).read_text())
        shards = int(manifest["shards"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EncodrError(
            f"sharded index {root}: {MANIFEST} cannot be read ({exc}); rebuild it with encodr index --overwrite --shards N",
            field="index",
        ) from None
    found = int(manifest.get("format", 1))
    if found > SHARDED_FORMAT:
        raise EncodrError(
            f"index {root} is a sharded index written by a newer encodr (sharded format {found}; this one reads "
            f"{SHARDED_FORMAT}); upgrade encodr: pip install -U encodr",
            field="index",
        )
    if shards < 1:
        raise EncodrError(f"sharded index {root}: its manifest names {shards} shards; rebuild it", field="index")
    return manifest


def shard_folders(root: Path) -> list[Path]:
    """The shards' index folders of the sharded index in the folder ``root``, in order (see :func:`read_manifest`)."""
    return [shard_folder(root, i) for i in range(int(read_manifest(root)["shards"]))]


def joined(metas: list[IndexMeta], count: int) -> IndexMeta:
    """One record for the shards' ``metas`` (shard 0's settings; ``count``, ``documents`` and
    ``split_documents`` summed, the languages and sources joined, ``keywords`` only when every
    shard has them, ``shards`` set): see :attr:`~.scatter.ShardedIndex.meta`."""
    first = metas[0]
    detected = sorted({lang for m in metas for lang in m.detected_languages})
    return first.copy(
        count=count,
        deleted=0,
        documents=sum(m.documents for m in metas),
        split_documents=sum(m.split_documents for m in metas),
        code=any(m.code for m in metas) if all(m.code is not None for m in metas) else None,
        lang_detection={**first.lang_detection, "languages": detected} if first.lang_detection else None,
        languages=sorted({lang for m in metas for lang in m.languages}) or list(first.languages),
        keywords=first.keywords if all(m.has_keywords for m in metas) else None,
        sources=sorted({source for m in metas for source in m.sources}),
        shards=len(metas),
    )


def current_meta(folder: Path) -> IndexMeta | None:
    """The ``index.json`` of the index in ``folder`` (its current generation, or the folder itself
    before generations), read without opening the index; None where there is none to read."""
    try:
        return IndexMeta.read(current_generation(folder) or Path(folder))
    except (OSError, ValueError, TypeError):
        return None


def states_on_disk(root: Path) -> list[tuple[IndexMeta | None, int]]:
    """Each shard's (``index.json`` of its current generation, live texts) read from the files
    (no shard asked): what a coordinator starts from before its shards answer; None and 0 for a
    shard whose ``index.json`` cannot be read."""
    states = []
    for folder in shard_folders(root):
        meta = current_meta(folder)
        states.append((meta, meta.live if meta else 0))
    return states


def sharded_meta(root: Path) -> IndexMeta:
    """The ``index.json`` of the sharded index in ``root`` as a search sees it
    (:attr:`~.scatter.ShardedIndex.meta`), read from the files.

    Raises:
        EncodrError: see :func:`read_manifest`; a shard without an index.
    """
    states = states_on_disk(root)
    if any(meta is None for meta, _ in states):
        raise EncodrError(
            f"sharded index {root}: a shard has no index.json; rebuild it with {S('write', 'overwrite')}", field="index"
        )
    return joined([meta for meta, _ in states], sum(n for _, n in states))
