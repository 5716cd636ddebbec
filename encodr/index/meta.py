"""``index.json``, typed: :class:`IndexMeta`, the one reader and writer of its keys.

Guarantee: no other module names a key of ``index.json``; each reads and sets the fields of an
:class:`IndexMeta`, which :meth:`IndexMeta.read` makes from the file and :meth:`IndexMeta.write`
writes back. A key this encodr does not know (written by a newer one, or by hand) is kept in
:attr:`IndexMeta.extra` and written back as it was. :mod:`.format` says which format a record
is in; an older index's record lacks later keys and reads with their defaults.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..outputs import INDEX_RECORD
from .format import FORMAT

META_FILE = INDEX_RECORD
FAST = "fast"  # IndexMeta.stage of a first-stage generation (encodr.index.stages)


@dataclass
class IndexMeta:
    """What ``index.json`` records of one index generation (or, joined, of a sharded index's shards).

    Attributes:
        format: the index format (:mod:`.format`; 1 when the file has none).
        encodr_version: the encodr that wrote it.
        model: the model's name or resolved path; ``pooling``, ``dimension`` (d of the stored
            vectors), ``truncate_dim`` (Matryoshka truncation, or None) and ``fingerprint`` (of
            its weights) describe it.
        index_type: FAISS type, ``flat`` | ``hnsw`` | ``ivf`` | ``ivfpq``; ``quantize``: ``none`` |
            ``int8`` | ``binary``; ``on_disk``: IVF lists memory-mapped from disk;
            ``int8_ranges``: a binary index's int8 rescoring ranges (d × 2), else None.
        pcr: languages' principal components removed (CMLM §5.2); ``pcr_variant`` how.
        default_lang: the language given with ``--lang``; ``lang_detection``: the detector and
            the languages it chose among (None with ``--lang``).
        backend: the forward pass the index was built with (its queries' default).
        count: vectors in the FAISS index (tombstones included); ``deleted``: tombstones;
            ``documents``, ``passages`` and ``split_documents`` (documents cut into passages);
            ``code``: source code was indexed (its search runs the code-ranking stage; None:
            not recorded, an index made before it was).
        sources: the folders and files indexed; ``languages``: the languages of the stored texts.
        keywords: the keyword index (engine, analyzer, tokenizer), None without one.
        prompts: ``{"query": …, "document": …}`` the model's prompts.
        bytes_per_vector, rescore_bytes_per_vector: disk bytes a vector (None before a build settles them).
        created, updated: local times, ``YYYY-MM-DD HH:MM:SS``.
        stage: ``fast`` for a generation whose vectors are a static model's, distilled from
            ``full_model``, that a second stage replaces with ``full_model``'s (None: the model's own).
        shards: a sharded index's shard count (only in the record joined from its shards).
        extra: keys this encodr does not know, kept as read.
    """

    format: int = 1
    encodr_version: str | None = None
    model: str = ""
    pooling: str = ""
    dimension: int = 0
    truncate_dim: int | None = None
    fingerprint: str | None = None
    index_type: str = "flat"
    quantize: str = "none"
    on_disk: bool = False
    int8_ranges: list | None = None
    pcr: bool = False
    pcr_variant: str | None = None
    default_lang: str | None = None
    lang_detection: dict | None = None
    backend: str = "torch"
    count: int = 0
    deleted: int = 0
    documents: int = 0
    passages: int = 0
    split_documents: int = 0
    code: bool | None = None
    sources: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    keywords: dict | None = None
    prompts: dict = field(default_factory=lambda: {"query": "", "document": ""})
    bytes_per_vector: float | None = None
    rescore_bytes_per_vector: float | None = None
    created: str | None = None
    updated: str | None = None
    stage: str | None = None
    full_model: str | None = None
    shards: int | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> "IndexMeta":
        """The record of a parsed ``index.json`` (missing keys take their defaults; ``None``
        where a list or dict is expected reads as empty).

        Raises:
            TypeError: ``data`` is not a dict.
        """
        if not isinstance(data, dict):
            raise TypeError(f"index.json holds {type(data).__name__}, not an object")
        known = {f.name for f in fields(cls)} - {"extra"}
        values = {k: v for k, v in data.items() if k in known and v is not None}
        return cls(**values, extra={k: v for k, v in data.items() if k not in known})

    @classmethod
    def read(cls, folder: Path) -> "IndexMeta":
        """``folder/index.json``.

        Raises:
            OSError: it cannot be read; ValueError (``json.JSONDecodeError``) or TypeError: it is not the JSON encodr writes.
        """
        return cls.from_dict(json.loads((Path(folder) / META_FILE).read_text()))

    def to_dict(self) -> dict:
        """The record as ``index.json`` holds it (unknown keys last; ``shards`` only when set)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        for key in ("shards", "stage", "full_model"):
            if out[key] is None:
                del out[key]
        return {**out, **self.extra}

    def write(self, folder: Path) -> None:
        """Write ``folder/index.json`` (the folder is a generation being made: the swap that
        publishes it is atomic, :func:`encodr.outputs.atomic_dir`)."""
        (Path(folder) / META_FILE).write_text(json.dumps(self.to_dict(), indent=2))

    def copy(self, **changes) -> "IndexMeta":
        """A copy with ``changes`` (lists and dicts copied, so the copy's changes stay its own)."""
        kept = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name not in changes}
        return dataclasses.replace(self, **kept, **changes)

    @property
    def live(self) -> int:
        """Texts a search can return: ``count`` less tombstones."""
        return self.count - self.deleted

    @property
    def has_keywords(self) -> bool:
        """Whether the index has a keyword index."""
        return self.keywords is not None

    @property
    def detected_languages(self) -> list[str]:
        """The languages the detector chose among (none with ``--lang``)."""
        return list((self.lang_detection or {}).get("languages") or [])

    @property
    def query_prompt(self) -> str:
        """The model's query prompt."""
        return self.prompts.get("query", "")

    @property
    def document_prompt(self) -> str:
        """The model's document prompt."""
        return self.prompts.get("document", "")


def new_meta(**values) -> IndexMeta:
    """A new generation's record, of this encodr's :data:`~.format.FORMAT`."""
    from .. import __version__

    return IndexMeta(format=FORMAT, encodr_version=__version__, **values)
