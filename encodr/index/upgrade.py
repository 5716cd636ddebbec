"""``encodr index --upgrade IDX``: an index written by an older encodr brought to this one's
format (:mod:`.format`) once, in one new generation, its vectors kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..errors import EncodrError, S
from ..outputs import SHARDED_RECORD, current_generation, generation, written_by_encodr
from .format import FORMAT, require_current
from .keywords import ANALYZER, KEYWORD_TOKENIZER
from .lock import index_lock
from .meta import IndexMeta
from .reader import INDEX_FILES, META_FILE, RAW_VECTORS_FILE, STORE_FILE, locate


def upgrade(path: str | Path) -> dict:
    """Bring the index at ``path`` to :data:`FORMAT` in one new generation: a flat folder gets
    generations, ``texts.db`` its current tables (each stored text the one passage of a document
    named as it is shown, :func:`~.texts.upgrade_store`), the keyword index is built
    with the current analysis, and ``index.json`` records the prompts (none, as the index was
    encoded) and the format. An index of the current format whose keywords an older analysis
    made (:func:`keywords_stale`) gets its keyword index built again. The vectors are kept as
    they are.

    Returns:
        ``path``, ``from`` and ``to`` (formats), ``upgraded`` (False: it was current already);
        for a sharded index, over its shards (``from`` the oldest).

    Raises:
        EncodrError: no index at ``path``, a corrupted ``index.json``, a newer format; an OS
            fault, with the index unchanged.
    """
    from .texts import TextStore, upgrade_store

    path = locate(path)
    if (path / SHARDED_RECORD).is_file():  # a sharded index: each shard in turn (:mod:`.sharded`)
        from .manifest import shard_folders

        done = [upgrade(folder) for folder in shard_folders(path)]
        return {
            "path": str(path),
            "from": min(d["from"] for d in done),
            "to": FORMAT,
            "upgraded": any(d["upgraded"] for d in done),
        }
    with index_lock(path):
        source = current_generation(path) or path  # a flat (format 1) index holds its files itself
        try:
            meta = json.loads((source / META_FILE).read_text())
        except FileNotFoundError:
            raise EncodrError(
                f"{path} is not an encodr index (no index.json in it); pass an index folder to {S.upgrade}", field="upgrade"
            ) from None
        except ValueError:
            raise EncodrError(
                f"{source / META_FILE} is corrupted (not the JSON encodr wrote); rebuild the index", field="upgrade"
            ) from None
        if (
            written_by_encodr(path) != "index"
            or not isinstance(meta, dict)
            or not {"model", "fingerprint", "count"} <= set(meta)
            or not (source / STORE_FILE).is_file()
        ):
            raise EncodrError(
                f"{path} is not an index encodr wrote (its index.json, vectors.faiss and texts.db); {S.upgrade} "
                "converts only those, "
                "and leaves this folder as it is",
                field="upgrade",
            )
        meta = IndexMeta.from_dict(meta)
        found = meta.format
        if found > FORMAT or (found == FORMAT and not keywords_stale(meta)):
            require_current(path, found)  # a newer one is refused
            return {"path": str(path.resolve()), "from": found, "to": FORMAT, "upgraded": False}
        with generation(path, legacy=INDEX_FILES) as tmp:  # a flat index's files are removed once the generation is current
            for name in INDEX_FILES:
                if name not in (META_FILE, RAW_VECTORS_FILE) and (source / name).is_file():
                    shutil.copy2(source / name, tmp / name)
            upgrade_store(tmp / STORE_FILE)
            texts = TextStore.create(tmp / STORE_FILE)
            try:
                texts.build_keywords()
                meta.documents = texts.document_count()
            finally:
                texts.close()
            meta.keywords = {"engine": "sqlite-fts5 bm25", "analyzer": ANALYZER, "tokenizer": KEYWORD_TOKENIZER}
            meta.format = FORMAT
            meta.write(tmp)
    return {"path": str(path.resolve()), "from": found, "to": FORMAT, "upgraded": True}


def keywords_stale(meta: IndexMeta) -> bool:
    """Whether the index ``meta`` describes has a keyword index made by an analysis other than
    this encodr's (:data:`~.keywords.ANALYZER`): its texts' terms and a query's may then differ
    (an identifier's parts, stemmed apart since, were stemmed as one word). Every write
    (``--add``, ``--sync``, a deletion) builds the keyword index again, and so does
    :func:`upgrade`."""
    keywords = getattr(meta, "keywords", None)  # a sharded index's record has none of its own
    return bool(keywords) and keywords.get("analyzer") != ANALYZER
