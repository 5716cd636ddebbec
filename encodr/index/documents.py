"""Documents with identity: what a write adds, replaces, keeps and removes.

Every stored document keeps its id (:attr:`~encodr.data.records.Record.document_id`), its file
(the absolute path: the scope of a sync), its source as shown, a content hash, and its metadata
(a JSONL object's other fields, ``--meta-columns``, Markdown front matter, and the file's
modification time and size). A write streams records through :meth:`Reconcile.documents`,
which groups them by document, compares each with what the index holds and lets through only
the passages of new and changed documents (LlamaIndex's ``refresh_ref_docs``: re-embed only
what changed). :meth:`Reconcile.finish` then names the documents to remove. Ours differs from
LlamaIndex's in two ways: a sync also skips files whose size and modification time are
unchanged without reading them, and a changed document's passages that are already stored
(under any document) are not encoded again.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from ..data.records import Record
from .texts import TextStore

API_SOURCE = "api"  # the source of documents given over HTTP (no file: a sync never removes them)
STAGE_EVERY = 5000  # passages staged in the store at a time (memory stays bounded on a large build)


def file_state(path: str) -> tuple[str | None, int | None]:
    """(modification time as ISO 8601 UTC, size in bytes) of ``path``; (None, None) when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None, None
    stamp = datetime.datetime.fromtimestamp(st.st_mtime, tz=datetime.timezone.utc).isoformat(timespec="microseconds")
    return stamp, int(st.st_size)


def unchanged_files(store: TextStore, files: list[str]) -> set[str]:
    """The absolute paths among ``files`` that a sync need not read: stored (by ``store``, the
    index's current generation) with the same size and modification time as now; their
    documents count as unchanged."""
    states = store.file_states()
    found = set()
    for f in files:
        path = os.path.abspath(f)
        if path in states and states[path] == file_state(f):
            found.add(path)
    return found


def within(path: str, folder: str) -> bool:
    """Whether absolute ``path`` is ``folder`` or lies under it (compared as text, part by part)."""
    folder = folder.rstrip(os.sep)
    return path == folder or path.startswith(folder + os.sep)


EDITED, DELETED = "edited", "deleted"  # what became of a document's file since it was indexed (changed_documents)


def changed_documents(states: dict[str, tuple[str | None, str | None, int | None]], roots: Iterable[str]) -> dict[str, str]:
    """The documents whose file is no longer as it was indexed, by the test a sync makes
    (:func:`unchanged_files`: size and modification time): :data:`EDITED` where the file's are
    not those stored, :data:`DELETED` where it is gone. A file counts as gone only where one of
    ``roots`` (the folders and files the index was built from) can be seen from here, itself or
    the folder that held it: an index read on a machine (or in a container) that does not hold
    its files says nothing of them, rather than calling every one deleted.

    Args:
        states: document id → (absolute path, modified, size) as indexed
            (:meth:`~.texts.TextStore.document_states`); documents without a file are skipped.
        roots: the index's sources (:attr:`~.meta.IndexMeta.sources`), absolute paths.

    Returns:
        document id → :data:`EDITED` or :data:`DELETED`, for the changed ones only.
    """
    seen = [r for r in roots if os.path.exists(r) or os.path.isdir(os.path.dirname(r))]
    now: dict[str, tuple[str | None, int | None]] = {}
    changed = {}
    for doc, (path, modified, size) in states.items():
        if not path or modified is None:
            continue
        if path not in now:
            now[path] = file_state(path)
        if now[path] == (None, None):
            if any(within(path, r) for r in seen):
                changed[doc] = DELETED
        elif now[path] != (modified, size):
            changed[doc] = EDITED
    return changed


def changed_in(index, docs: Iterable[str]) -> dict[str, str]:
    """:func:`changed_documents` of ``docs`` in an opened ``index`` (an
    :class:`~.reader.IndexReader` or a sharded one): their stored states, its sources."""
    docs = set(docs)
    if not docs:
        return {}
    return changed_documents(index.texts.document_states(docs), index.meta.sources or [])


def document_hash(records: list[Record]) -> str:
    """SHA-1 of a document's content: its passages (text and offset), title and metadata."""
    h = hashlib.sha1()
    first = records[0]
    h.update(json.dumps([first.title, first.meta], sort_keys=True, default=str).encode("utf-8"))
    for r in records:
        h.update(b"\x00%d\x00" % (r.start or 0))
        h.update(r.text.encode("utf-8"))
    return h.hexdigest()


@dataclass
class Counts:
    """Documents a write added, updated (read again and changed), removed and left unchanged,
    and files it could not read (kept as they were)."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: int = 0

    def as_dict(self) -> dict:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "failed": self.failed,
        }


@dataclass
class Reconcile:
    """The documents of one write into ``store`` (a new generation's copy).

    Args:
        store: the generation's text store (its document tables made by :meth:`~.texts.TextStore.create`).
        roots: with ``sync``, the absolute paths given: a stored document whose file lies under
            one of them and was not seen is removed. ``None``: nothing is removed (``--add``).
        hash_text: the text hash the store deduplicates by (``ingest.text_hash``).
        new: the store held no document when the write began (a new index): no document is
            looked up in it, since only this write's can be there (and :attr:`seen` holds those).
    """

    store: TextStore
    roots: list[str] | None
    hash_text: Callable[[str], str]
    new: bool = False
    counts: Counts = field(default_factory=Counts)
    replaced: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    unread: set[str] = field(
        default_factory=set
    )  # files not read (unchanged size and time, :func:`unchanged_files`), or unreadable: their documents stay
    _staged: list = field(default_factory=list)
    _rows: list = field(default_factory=list)  # document rows not yet written (one commit a batch, not one a document)
    _touched: list = field(default_factory=list)  # (modified, size, id) of unchanged documents whose file was saved again

    def keep_unreadable(self, path: str) -> None:
        """A file that could not be read this time: its stored documents stay as they were."""
        self.unread.add(os.path.abspath(path))
        self.counts.failed += 1

    def documents(self, records: Iterable[Record], state: tuple[str | None, int | None]) -> Iterator[Record]:
        """The records of one file's new and changed documents, in order; an unchanged
        document's records are dropped. Document rows are written as they pass; passages are
        staged as members (:meth:`~.texts.TextStore.stage_members`).

        Args:
            records: the file's records (passages), a document's consecutive.
            state: the file's :func:`file_state` taken *before* it was read, stored with its
                documents: a file changed while it was read then differs from it, and the next
                sync reads it again.
        """
        group: list[Record] = []
        for record in records:
            if group and record.document_id != group[0].document_id:
                yield from self._document(group, state)
                group = []
            group.append(record)
        if group:
            yield from self._document(group, state)

    def _document(self, records: list[Record], state: tuple[str | None, int | None]) -> Iterator[Record]:
        first = records[0]
        doc = first.document_id
        path = None if first.source == API_SOURCE else os.path.abspath(first.source)
        modified, size = state
        content = document_hash(records)
        if doc in self.seen:  # the same id twice in one read: both occurrences' passages are the document's
            yield from self._stage(doc, records)
            return
        old = None if self.new else self.store.documents_info([doc]).get(doc)
        self.seen.add(doc)
        if old is not None and old[0] == content:
            self.counts.unchanged += 1
            if (old[1], old[2]) != (modified, size):
                self._touched.append((modified, size, doc))
            return
        if old is None:
            self.counts.added += 1
        else:
            self.counts.updated += 1
            self.replaced.append(doc)
        meta = {**(first.meta or {}), "modified": modified, "size": size}
        self._rows.append(
            {
                "id": doc,
                "path": path,
                "source": first.source,
                "title": first.title,
                "hash": content,
                "meta": json.dumps(meta, default=str),
                "modified": modified,
                "size": size,
                "lang": first.lang,
            }
        )
        yield from self._stage(doc, records)

    def _stage(self, doc: str, records: list[Record]) -> Iterator[Record]:
        """Stage ``records`` as passages of ``doc`` (written every :data:`STAGE_EVERY`) and let them through."""
        self._staged.extend((doc, self.hash_text(r.text), r.line, r.start) for r in records)
        if len(self._staged) >= STAGE_EVERY:
            self._flush()
        yield from records

    def forget(self, path: str) -> None:
        """The file at ``path`` changed while it was read: clear its documents' stored time, so
        the next sync reads it again (the rows this read made are written first)."""
        self._flush()
        self.store.forget_state(os.path.abspath(path))

    def _flush(self) -> None:
        self.store.put_documents(self._rows)
        self.store.touch_documents(self._touched)
        self.store.stage_members(self._staged)
        self._rows, self._staged, self._touched = [], [], []

    def finish(self) -> list[str]:
        """The ids of the stored documents to remove: with ``roots``, those whose file lies
        under one of them, was read or is gone, and that were not seen (counted in ``removed``)."""
        self._flush()
        if self.roots is None:
            return []
        under = self.store.documents_under(self.roots)
        gone = [d for d, path in under.items() if d not in self.seen and path not in self.unread]
        self.counts.removed += len(gone)
        self.counts.unchanged += sum(1 for d, path in under.items() if path in self.unread and d not in self.seen)
        return gone
