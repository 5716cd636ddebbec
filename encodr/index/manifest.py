"""The layout of a sharded index (:mod:`.sharded`), read without opening it: its manifest, its
shards' folders, where a document goes, and its shards' ``index.json`` joined into one. Below
:mod:`.reader` (which lists and peeks at a sharded index through it); writing is :mod:`.sharded`'s,
searching :mod:`.scatter`'s."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import EncodrError
from ..outputs import INDEX_RECORD, SHARDED_RECORD, current_generation

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


def joined(metas: list[dict], count: int) -> dict:
    """One ``index.json`` for the shards' ``metas``: see :attr:`~.scatter.ShardedIndex.meta`."""
    meta = dict(metas[0])
    meta["count"] = count
    for key in ("documents", "split_documents"):
        meta[key] = sum(int(m.get(key) or 0) for m in metas)
    detected = sorted({lang for m in metas for lang in ((m.get("lang_detection") or {}).get("languages") or [])})
    if meta.get("lang_detection"):
        meta["lang_detection"] = {**meta["lang_detection"], "languages": detected}
    meta["languages"] = sorted({lang for m in metas for lang in (m.get("languages") or [])}) or meta.get("languages")
    meta["keywords"] = all(m.get("keywords", True) for m in metas)
    meta["shards"] = len(metas)
    return meta


def current_meta(folder: Path) -> dict:
    """The ``index.json`` of the index in ``folder`` (its current generation, or the folder itself
    before generations), read without opening the index; ``{}`` where there is none to read."""
    try:
        return json.loads(((current_generation(folder) or Path(folder)) / INDEX_RECORD).read_text())
    except (OSError, ValueError):
        return {}


def states_on_disk(root: Path) -> list[tuple[dict, int]]:
    """Each shard's (``index.json`` of its current generation, live texts) read from the files
    (no shard asked): what a coordinator starts from before its shards answer; ``{}`` and 0 for a
    shard whose ``index.json`` cannot be read."""
    states = []
    for folder in shard_folders(root):
        meta = current_meta(folder)
        states.append((meta, int(meta.get("count", 0) or 0) - int(meta.get("deleted", 0) or 0)))
    return states


def sharded_meta(root: Path) -> dict:
    """The ``index.json`` of the sharded index in ``root`` as a search sees it
    (:attr:`~.scatter.ShardedIndex.meta`), read from the files.

    Raises:
        EncodrError: see :func:`read_manifest`; a shard without an index.
    """
    states = states_on_disk(root)
    if any(not meta for meta, _ in states):
        raise EncodrError(f"sharded index {root}: a shard has no index.json; rebuild it with --overwrite", field="index")
    return joined([meta for meta, _ in states], sum(n for _, n in states))
