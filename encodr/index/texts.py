"""The texts of one index generation: ``texts.db``, an SQLite table and its keyword index
(FTS5, :mod:`.keywords`), through the standard library's ``sqlite3``: sqlite-utils, which the
run registry uses, imports pandas where it is installed, which every build would pay for.

Guarantee: this is the one module that knows the table's schema and speaks SQL to it; builds
(:mod:`.build`) write through :class:`TextStore`, searches (:class:`~.reader.IndexReader`) read
through it. Row id i is vector i of the generation's FAISS index.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from .keywords import KEYWORD_TABLE, add_keywords, build_keywords, drop_keywords, indexed_text, keyword_entries
from .postings import Postings, alternatives

# The one table: vector i of the FAISS index is row id i. lang_detected = 1: the language came
# from the detector (a build may settle it again), not from the input; lang_confidence: the
# detector's confidence (0 for a text that is not prose: data.language.prose_confidence); start: a
# passage's character offset in its document; section: its heading path.
TEXTS_COLUMNS = {
    "id": int,
    "ext_id": str,
    "text": str,
    "source": str,
    "line": int,
    "lang": str,
    "hash": str,
    "lang_detected": int,
    "lang_confidence": float,
    "title": str,
    "start": int,
    "section": str,
    "end_line": int,
    "page": int,
    "path": str,
}
# end_line: the file line where the text ends (line: where it starts); page: a PDF's page;
# path: the document's path as a person reads it, relative to the folder that was indexed.
SQL_TYPES = {int: "INTEGER", str: "TEXT", float: "REAL"}  # as sqlite-utils typed them, which wrote the stores before
SQLITE_PARAMETERS = 900  # values bound per statement at most (SQLite's limit is 999 on older builds)

# Documents (the unit a sync, a delete and a filter work on) and their passages. A text (a
# row of ``texts``, one vector) is stored once however many documents hold it; ``members``
# says which documents hold which texts, so a text goes only when its last document goes.
# ``tombstones``: ids whose vector is still in a FAISS index that cannot remove it (HNSW,
# IVF-PQ, on-disk IVF, binary); searches leave them out, a compaction drops them.
DOCUMENT_SCHEMA = """
create table if not exists documents (id text primary key, path text, source text, title text, hash text, meta text,
                                      modified text, size integer, lang text);
create index if not exists documents_path on documents(path);
create table if not exists members (doc text not null, text_id integer not null, line integer, start integer);
create index if not exists members_doc on members(doc);
create index if not exists members_text on members(text_id);
create table if not exists staged (doc text, hash text, line integer, start integer);
create table if not exists tombstones (id integer primary key);
"""
DOCUMENT_COLUMNS = ("id", "path", "source", "title", "hash", "meta", "modified", "size", "lang")


ROW_KEYS = ("id", "ext_id", "text", "source", "line", "lang", "title", "start", "section", "end_line", "page", "path")


class TextStore:
    """``texts.db`` of one generation, for writing (:meth:`create`) or reading (:meth:`open`).

    One statement runs at a time on the connection (a lock), so a server's threads may share a
    reader. Writes are committed by each call that makes them.

    Raises (from the constructors and every method): ``sqlite3.DatabaseError`` as SQLite gives
    it (locked, corrupted, disk full); callers turn it into one line, as they know which index
    and which fix to name.
    """

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._lock = threading.Lock()
        self.has_keywords = conn.execute("select 1 from sqlite_master where name = ?", (KEYWORD_TABLE,)).fetchone() is not None
        self._scopes = 0  # temporary id tables made (:meth:`scope_table`)
        self._frequencies: tuple[tuple[int, int], dict[str, int]] | None = None  # (totals, n(t)): :meth:`weightless_terms`
        self.read_only = False  # opened by :meth:`open`
        self.keywords_written = False  # keyword entries written with the texts (insert(keywords=True))
        self.holds_postings = False  # keyword_hits scores from held postings (:meth:`hold_postings`)
        self._postings: Postings | None = None  # a reader's keyword postings held in memory (:meth:`keyword_hits`)

    @classmethod
    def create(cls, path: Path) -> "TextStore":
        """Open ``path`` for writing, creating the tables (:data:`TEXTS_COLUMNS` with unique text
        hashes, :data:`DOCUMENT_SCHEMA`) where they are missing (a new index; ``--add`` opens a
        copy of the old store)."""
        conn = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
        columns = ", ".join(
            f'"{name}" {SQL_TYPES[kind]}' + (" PRIMARY KEY" if name == "id" else "") for name, kind in TEXTS_COLUMNS.items()
        )
        conn.execute(f'create table if not exists "texts" ({columns})')
        conn.execute('create unique index if not exists "idx_texts_hash" on "texts" ("hash")')
        have = {row[1] for row in conn.execute('pragma table_info("texts")')}
        for name, kind in TEXTS_COLUMNS.items():  # a copy of a store from before a column was added (--add)
            if name not in have:
                conn.execute(f'alter table "texts" add column "{name}" {SQL_TYPES[kind]}')
        conn.executescript(DOCUMENT_SCHEMA)
        conn.commit()
        return cls(conn)

    @classmethod
    def open(cls, path: Path, timeout: float) -> "TextStore":
        """Open ``path`` read-only, waiting up to ``timeout`` seconds for a writer's lock."""
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout, check_same_thread=False)
        try:
            store = cls(conn)
            store.read_only = True  # a generation never changes: its keyword postings may be held (:mod:`.postings`)
            return store
        except BaseException:
            conn.close()
            raise

    def _all(self, sql: str, params: Iterable = ()) -> list[tuple]:
        with self._lock:
            return self.conn.execute(sql, list(params)).fetchall()

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def copy_to(self, target: Path) -> None:
        """Copy the store to ``target`` through SQLite's backup API: a consistent copy, which
        waits for a writer's lock like any reader instead of copying a file mid-write."""
        dest = sqlite3.connect(str(target))
        try:
            with self._lock:
                self.conn.backup(dest)
        finally:
            dest.close()

    # writing

    def next_id(self) -> int:
        """The id the next inserted text takes: one past the largest, tombstones included (a
        tombstoned vector still holds its id in FAISS)."""
        return int(
            self._all(
                "select coalesce(max(m) + 1, 0) from (select max(id) as m from texts union all select max(id) from tombstones)"
            )[0][0]
        )

    # documents

    def documents_info(self, ids: list[str]) -> dict[str, tuple[str | None, str | None, int | None]]:
        """(hash, modified, size) of the stored documents among ``ids``."""
        found: dict[str, tuple] = {}
        for start in range(0, len(ids), SQLITE_PARAMETERS):
            part = ids[start : start + SQLITE_PARAMETERS]
            found.update(
                (d, (h, m, z))
                for d, h, m, z in self._all(
                    f"select id, hash, modified, size from documents where id in ({','.join('?' * len(part))})", part
                )
            )
        return found

    def file_states(self) -> dict[str, tuple[str | None, int | None]]:
        """Each stored file's (modified, size) when all its documents agree on them and carry a
        content hash (a file whose documents were all read by this encodr); files where they
        differ are left out (they must be read)."""
        rows = self._all(
            "select path, min(modified), max(modified), min(size), max(size), count(hash), count(*) from documents group by path"
        )
        return {p: (m0, z0) for p, m0, m1, z0, z1, hashed, n in rows if m0 == m1 and z0 == z1 and m0 is not None and hashed == n}

    def documents_under(self, roots: list[str]) -> dict[str, str]:
        """id → path of the stored documents whose file is one of ``roots`` or lies in one of them."""
        found: dict[str, str] = {}
        for root in roots:
            found.update(
                self._all(
                    "select id, path from documents where path = ? or substr(path, 1, ?) = ?",
                    (root, len(root) + 1, root.rstrip("/") + "/"),
                )
            )
        return found

    def documents_matching(self, sql: str, params: list) -> list[str]:
        """The ids of the documents a filter's ``where`` clause over ``documents d`` keeps (:mod:`.filters`)."""
        return [d for (d,) in self._all(f"select d.id from documents d where {sql}", params)]

    def put_documents(self, rows: list[dict]) -> None:
        """Insert or replace document rows (dicts of :data:`DOCUMENT_COLUMNS`)."""
        if rows:
            with self._lock:
                self.conn.executemany(
                    f"insert or replace into documents({', '.join(DOCUMENT_COLUMNS)}) values "
                    f"({', '.join('?' * len(DOCUMENT_COLUMNS))})",
                    [tuple(r.get(c) for c in DOCUMENT_COLUMNS) for r in rows],
                )
                self.conn.commit()

    def touch_documents(self, rows: list[tuple[str | None, int | None, str]]) -> None:
        """Set (modified, size) of unchanged documents by id (a file saved again as it was)."""
        if rows:
            with self._lock:
                self.conn.executemany("update documents set modified = ?, size = ? where id = ?", rows)
                self.conn.commit()

    def forget_state(self, path: str) -> None:
        """Clear the stored modification time of ``path``'s documents, so the next sync reads the file again."""
        with self._lock:
            self.conn.execute("update documents set modified = null where path = ?", (path,))
            self.conn.commit()

    def stage_members(self, rows: list[tuple[str, str, int, int | None]]) -> None:
        """Remember (document id, text hash, line, start) of passages read, to become members
        once their texts are stored (:meth:`settle_members`)."""
        if rows:
            with self._lock:
                self.conn.executemany("insert into staged(doc, hash, line, start) values (?, ?, ?, ?)", rows)
                self.conn.commit()

    def settle_members(self, replaced: list[str], removed: list[str]) -> np.ndarray:
        """Apply one write's document changes: the passages of ``replaced`` documents (read
        again) and of ``removed`` ones are dropped, the staged passages become members, and a
        text whose every document is gone is deleted (with its keyword entry; call
        :meth:`build_keywords` after). A surviving text shown under a document that no longer
        holds it is shown under one that does.

        Returns:
            int64 ids of the texts deleted (their vectors are to be removed or tombstoned).
        """
        gone = sorted(set(replaced) | set(removed))
        with self._lock:
            c = self.conn
            c.execute("create temp table if not exists gone_docs (id text primary key)")
            c.execute("delete from gone_docs")
            c.executemany("insert or ignore into gone_docs values (?)", [(d,) for d in gone])
            candidates = "select text_id from members where doc in (select id from gone_docs)"
            c.execute("create temp table if not exists maybe (id integer primary key)")
            c.execute("delete from maybe")
            c.execute(f"insert or ignore into maybe {candidates}")
            c.execute("delete from members where doc in (select id from gone_docs)")
            c.executemany("delete from documents where id = ?", [(d,) for d in removed])
            c.execute(
                "insert into members(doc, text_id, line, start) select s.doc, t.id, s.line, s.start from staged s join "
                "texts t on t.hash = s.hash"
            )
            c.execute("delete from staged")
            orphans = np.array(
                [i for (i,) in c.execute("select id from maybe where id not in (select text_id from members)")], dtype=np.int64
            )
            if len(orphans):
                c.execute("delete from texts where id in (select id from maybe where id not in (select text_id from members))")
            doc = "coalesce(texts.ext_id, texts.source || ':' || texts.line)"
            c.execute(f"""update texts set (ext_id, source, line, start, title) = (
                            select m.doc, d.source, m.line, m.start, d.title from members m join documents d on d.id = m.doc
                            where m.text_id = texts.id order by m.rowid limit 1)
                          where id in (select id from maybe)
                            and not exists (select 1 from members m where m.text_id = texts.id and m.doc = {doc})""")
            c.commit()
        return orphans

    def tombstones(self) -> np.ndarray:
        """int64 ids whose vectors are still in the FAISS index but whose texts are deleted."""
        return np.array([i for (i,) in self._all("select id from tombstones order by id")], dtype=np.int64)

    def add_tombstones(self, ids: np.ndarray) -> None:
        """Record deleted ids whose vectors stay in FAISS."""
        with self._lock:
            self.conn.executemany("insert or ignore into tombstones(id) values (?)", [(int(i),) for i in ids])
            self.conn.commit()

    def renumber(self) -> None:
        """Give the stored texts the ids 0…n−1 in their order, as a compacted FAISS index numbers
        its remaining vectors, and forget the tombstones (their vectors are gone). Call
        :meth:`build_keywords` after (the keyword index is keyed by id)."""
        with self._lock:
            c = self.conn
            c.execute("create temp table renumbered (old integer primary key, new integer)")
            c.execute("insert into renumbered select id, row_number() over (order by id) - 1 from texts")
            c.execute("update texts set id = -1 - (select new from renumbered where old = texts.id)")
            c.execute("update texts set id = -1 - id")
            c.execute("update members set text_id = (select new from renumbered where old = members.text_id)")
            c.execute("delete from tombstones")
            c.execute("drop table renumbered")
            c.commit()

    def known(self, hashes: list[str]) -> set[str]:
        """The members of ``hashes`` (text hashes) already stored."""
        found: set[str] = set()
        for start in range(0, len(hashes), SQLITE_PARAMETERS):
            part = hashes[start : start + SQLITE_PARAMETERS]
            found.update(h for (h,) in self._all(f"select hash from texts where hash in ({','.join('?' * len(part))})", part))
        return found

    def insert(self, rows: list[dict], keywords: bool = False) -> None:
        """Store ``rows`` (dicts of :data:`TEXTS_COLUMNS`' keys) and commit; with ``keywords``,
        their keyword entries too (:func:`~.keywords.add_keywords`: a new index's writer thread
        analyses them while the corpus encodes; :meth:`build_keywords` then keeps them)."""
        names = list(TEXTS_COLUMNS)
        sql = f"insert into texts ({', '.join(names)}) values ({', '.join('?' * len(names))})"
        rows_in = ((row["id"], indexed_text(row["text"], row.get("section")), row.get("lang")) for row in rows)
        entries = keyword_entries(rows_in) if keywords else []
        with self._lock:
            self.conn.executemany(sql, [tuple(row.get(name) for name in names) for row in rows])
            if keywords:
                add_keywords(self.conn, entries)
                self.keywords_written = True
            self.conn.commit()

    def detected_labels(self) -> list[tuple[str, float | None, int]]:
        """(language, confidence, length in characters) of every text whose language came from the detector."""
        return self._all("select lang, lang_confidence, length(text) from texts where lang_detected = 1")

    def detected_texts(self, langs: list[str], limit: int) -> dict[str, list[str]]:
        """Up to ``limit`` texts the detector labelled each of ``langs``, spread over the store:
        of a label's n texts by id, every (n // limit)-th from the first, in one pass over the
        table; SQLite picks them (a window function), so only the picked texts reach Python,
        however many a label has."""
        found: dict[str, list[str]] = {lang: [] for lang in langs}
        for start in range(0, len(langs), SQLITE_PARAMETERS):
            part = langs[start : start + SQLITE_PARAMETERS]
            marks = ",".join("?" * len(part))
            rows = self._all(
                "select lang, text from (select lang, text, row_number() over (partition by lang order by id) - 1 as i, "
                "max(1, count(*) over (partition by lang) / ?) as step from texts "
                f"where lang_detected = 1 and lang in ({marks})) where i % step = 0 and i / step < ? order by lang, i",
                [max(1, limit), *part, limit],
            )
            for lang, text in rows:
                found[lang].append(text)
        return found

    def relabel_detected(self, detect: Callable[[list[str]], list[str]], chunk: int = 10_000) -> None:
        """Give every detected text the language ``detect`` (texts → ISO 639-3 codes) finds,
        ``chunk`` texts at a time (the second detection pass of a build), and commit; keyword
        entries written with the texts (:meth:`insert`) are analysed again where the language
        changed."""
        last = self._all("select max(id) from texts")[0][0]
        for start in range(0, (last or 0) + 1, chunk):
            rows = self._all(
                "select id, text, section, lang from texts where lang_detected = 1 and id >= ? and id < ?", (start, start + chunk)
            )
            if rows:
                codes = detect([text for _, text, _, _ in rows])
                changed = [
                    (i, indexed_text(text, section), old, new) for (i, text, section, old), new in zip(rows, codes) if old != new
                ]
                if self.keywords_written:  # the entries written with the old languages, and the new ones
                    was = keyword_entries((i, text, old) for i, text, old, _ in changed)
                    now = keyword_entries((i, text, new) for i, text, _, new in changed)
                with self._lock:
                    self.conn.executemany("update texts set lang = ? where id = ?", [(new, i) for i, _, _, new in changed])
                    if self.keywords_written:
                        drop_keywords(self.conn, was)
                        add_keywords(self.conn, now)
        with self._lock:
            self.conn.commit()

    def build_keywords(self, written: bool = False) -> None:
        """(Re)build the keyword index over every stored text (:func:`~.keywords.build_keywords`),
        or with ``written`` keep the entries :meth:`insert` wrote with every text (a new index
        none of whose texts was deleted since)."""
        if not (written and self.keywords_written):
            with self._lock:
                build_keywords(self.conn)
        self.has_keywords = True

    # reading

    def count(self) -> int:
        """Texts stored."""
        return int(self._all("select count(*) from texts")[0][0])

    def document_count(self) -> int:
        """Documents stored."""
        return int(self._all("select count(*) from documents")[0][0])

    def passage_counts(self) -> tuple[int, int]:
        """(passages, split documents): the texts that are a passage of a longer document, and
        the documents stored as passages, counted from what the store holds now (an update
        replaces a document's passages; counting what each build added would count them again)."""
        row = self._all("select count(distinct text_id), count(distinct doc) from members where start is not null")[0]
        return int(row[0]), int(row[1])

    def ids_where(
        self, documents_sql: str | None, documents_params: list, texts_sql: str | None, texts_params: list
    ) -> np.ndarray:
        """int64 ids of the texts a filter keeps: held by a document that ``documents_sql`` (a
        ``where`` clause over ``documents d``) keeps, and themselves kept by ``texts_sql`` (over
        ``texts t``); either may be None (no condition)."""
        sql, params = "select t.id from texts t", []
        where = []
        if documents_sql:
            where.append(f"t.id in (select m.text_id from members m join documents d on d.id = m.doc where {documents_sql})")
            params += documents_params
        if texts_sql:
            where.append(texts_sql)
            params += texts_params
        if where:
            sql += " where " + " and ".join(where)
        return np.array([i for (i,) in self._all(sql + " order by t.id", params)], dtype=np.int64)

    def languages(self) -> list[str]:
        """The distinct stored languages, sorted."""
        return sorted(code for (code,) in self._all("select distinct lang from texts"))

    def langs(self) -> list[str]:
        """Each text's language, by id (N strings)."""
        return [code for (code,) in self._all("select lang from texts order by id")]

    def column(self, name: str) -> list:
        """One column's values by id (``line``, ``text``…: for benchmarks and tests)."""
        if name not in TEXTS_COLUMNS:
            raise ValueError(f"no column {name!r} in texts")
        return [value for (value,) in self._all(f"select {name} from texts order by id")]

    def ids_in(self, langs: list[str]) -> np.ndarray:
        """int64 ids of the texts whose language is one of ``langs``."""
        return np.array(
            [i for (i,) in self._all(f"select id from texts where lang in ({','.join('?' * len(langs))})", langs)], dtype=np.int64
        )

    def rows(self, ids: list[int], keys: tuple[str, ...] | None = None) -> dict[int, dict]:
        """Stored rows by id: ``id``, ``text``, ``source``, ``line``, ``lang``, ``ext_id``, ``title``,
        ``start``, ``section``, ``end_line``, ``page`` and ``path``; only ``id`` and ``keys``
        when given (a fusion reads the languages and sources of hundreds of candidates)."""
        keys = ["id", *(keys or ROW_KEYS[1:])]
        if not set(keys) <= set(ROW_KEYS):
            raise ValueError(f"unknown row fields {sorted(set(keys) - set(ROW_KEYS))}")
        found = self._all(f"select {', '.join(keys)} from texts where id in ({','.join('?' * len(ids))})", ids)
        return {r[0]: dict(zip(keys, r)) for r in found}

    def sharers(self, ids: list[int]) -> dict[int, list[dict]]:
        """The other documents that hold each of ``ids``: a text stored once for the first document
        that held it (the same text in two files) is also the other files'. text id → their
        ``ext_id``, ``path``, ``source``, ``title``, ``line`` and ``start``, by document id; ids
        no other document holds are left out (one look-up by the members' index)."""
        if not ids:
            return {}
        found = self._all(
            "select m.text_id, m.doc, t.path, t.source, d.source, d.title, coalesce(m.line, t.line), m.start from members m "
            "join texts t on t.id = m.text_id join documents d on d.id = m.doc "
            f"where m.text_id in ({','.join('?' * len(ids))}) and t.ext_id is not null and m.doc != t.ext_id "
            "order by m.text_id, m.doc",
            list(ids),
        )
        out: dict[int, list[dict]] = {}
        for text_id, doc, shown, credited, own, title, line, start in found:
            path = _shown_as(shown, credited, own)
            out.setdefault(int(text_id), []).append(
                {"ext_id": doc, "path": path, "source": own, "title": title, "line": line, "start": start}
            )
        return out

    def documents_passing(self, ids: list[str], documents_sql: str, params: list) -> set[str]:
        """Those of document ids ``ids`` that ``documents_sql`` (a ``where`` clause over
        ``documents d``, :func:`~.filters.sql`'s) keeps."""
        sql = f"select d.id from documents d where d.id in ({','.join('?' * len(ids))}) and {documents_sql}"
        return {r[0] for r in self._all(sql, [*ids, *params])} if ids else set()

    def passages_of(self, ext_id: str) -> list[tuple[int, str]]:
        """(character offset, text) of every stored passage of the document ``ext_id``, in
        document order (whole texts, with no offset, at 0)."""
        return [(s, t) for s, t, _ in self.passage_lines(ext_id)]

    def first_passage(self, ext_id: str) -> int | None:
        """The id of document ``ext_id``'s first passage (or of a whole text with that id), None when none is stored."""
        found = self._all("select id from texts where ext_id = ? order by coalesce(start, 0) limit 1", (ext_id,))
        return int(found[0][0]) if found else None

    def passage_lines(self, ext_id: str) -> list[tuple[int, str, int]]:
        """(character offset, text, first line) of every stored passage of document ``ext_id``, in
        order: its members (:data:`DOCUMENT_SCHEMA`), which also hold a passage whose text another
        document stored first and a record of a one-record-a-line file (no ``ext_id`` of its own)."""
        found = self._all(
            "select coalesce(m.start, t.start, 0), t.text, coalesce(m.line, t.line) from members m "
            "join texts t on t.id = m.text_id where m.doc = ? order by coalesce(m.start, t.start, 0), t.id",
            (ext_id,),
        ) or self._all("select coalesce(start, 0), text, line from texts where ext_id = ? order by coalesce(start, 0)", (ext_id,))
        return [(int(s), t, int(n or 1)) for s, t, n in found]

    def document_path(self, ext_id: str) -> str | None:
        """Document ``ext_id``'s path as hits show it (None: not stored, an older index); for a
        document whose texts another document stored first, its own path shown from the same folder."""
        found = self._all("select path from texts where ext_id = ? and path is not null limit 1", (ext_id,))
        if found:
            return found[0][0]
        shared = self._all(  # its texts are all stored under another document's name (the same text in two files)
            "select t.path, t.source, d.source from members m join texts t on t.id = m.text_id join documents d "
            "on d.id = m.doc where m.doc = ? and t.path is not null limit 1",
            (ext_id,),
        )
        if not shared:
            return None
        return _shown_as(*shared[0])

    def documents_at(self, path: str, lines: tuple[int, int] | None = None) -> list[str]:
        """The ids of the documents whose path as shown (relative to the folder indexed), source or
        id is ``path``, else (without ``lines``) whose absolute path ends with ``/path``: a file's
        document, or each record of a one-record-a-line file (only those on ``lines``, first and
        last, 1-based, when given), in natural order."""
        found = (
            self._all(
                "select distinct ext_id from texts where ext_id is not null and (path = ? or source = ? or ext_id = ?)",
                (path, path, path),
            )
            or self._all(
                "select id from documents where id = ? union select distinct m.doc from members m join texts t "
                "on t.id = m.text_id where t.ext_id is null and (t.path = ? or t.source = ?)"
                + (" and coalesce(m.line, t.line) between ? and ?" if lines else ""),
                (path, path, path, *(lines or ())),
            )
            or (
                []
                if lines
                else self._all(  # a document whose texts are all stored under another's (the same text in two files)
                    "select id from documents where substr(path, -?) = ?", (len(path) + 1, "/" + path)
                )
            )
        )
        return sorted({str(d) for (d,) in found}, key=lambda d: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", d)])

    def document_row(self, ext_id: str) -> dict | None:
        """The stored record of document ``ext_id``: ``id``, ``path``, ``source``, ``title``,
        ``modified``, ``size``, ``lang`` and ``metadata`` (a dict); None when the store has no
        such document."""
        found = self._all("select id, path, source, title, modified, size, lang, meta from documents where id = ?", (ext_id,))
        if not found:
            return None
        keys = ("id", "path", "source", "title", "modified", "size", "lang")
        return {**dict(zip(keys, found[0][:7])), "metadata": json.loads(found[0][7]) if found[0][7] else {}}

    def document_hashes(self, ids: Iterable[str]) -> dict[str, str | None]:
        """Content hash (:func:`~.documents.document_hash`) of each of ``ids`` the store holds
        (``None``: a document whose hash is unknown, one an upgrade converted)."""
        return {str(d): h for d, h in self._documents_by_id("hash", ids)}

    def document_states(self, ids: Iterable[str]) -> dict[str, tuple[str | None, str | None, int | None]]:
        """(path, modified, size) of each of ``ids`` the store holds: the absolute path of the
        file it was read from and that file's modification time (ISO 8601 UTC) and size in bytes
        then (:func:`~.documents.file_state`); Nones for a document not read from a file."""
        return {str(d): (path, modified, size) for d, path, modified, size in self._documents_by_id("path, modified, size", ids)}

    def _documents_by_id(self, columns: str, ids: Iterable[str]) -> list[tuple]:
        """``id`` and ``columns`` of the stored documents among ``ids``, asked 900 ids at a time
        (below SQLite's limit on parameters)."""
        ids, rows = list(dict.fromkeys(str(i) for i in ids)), []
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            rows += self._all(f"select id, {columns} from documents where id in ({','.join('?' * len(chunk))})", chunk)
        return rows

    def document_ids(self) -> set[str]:
        """Every stored document id (``ext_id``)."""
        return {str(d) for (d,) in self._all("select distinct ext_id from texts where ext_id is not null")}

    def scope_table(self, ids: np.ndarray) -> str:
        """A temporary table (this connection's own, so a read-only store can hold it) of the
        text ids ``ids``, indexed, for :meth:`keyword_hits`' ``scope``; returns its name.
        Drop it with :meth:`drop_scope`."""
        with self._lock:
            self._scopes += 1
            name = f"temp.encodr_scope_{self._scopes}"
            self.conn.execute(f"create table {name} (id integer primary key)")
            self.conn.executemany(f"insert into {name} values (?)", ((int(i),) for i in ids))
        return name

    def drop_scope(self, name: str) -> None:
        """Drop a :meth:`scope_table`."""
        with self._lock:
            self.conn.execute(f"drop table if exists {name}")

    def keyword_hits(
        self, expression: str, k: int, langs: list[str] | None = None, scope: tuple[str, list] | None = None
    ) -> list[tuple[int, float]]:
        """(id, −``bm25()``) of the top ``k`` texts matching the FTS5 ``expression``, best first,
        among texts whose language is one of ``langs`` (all when None) and, with ``scope``
        (an SQL ``select`` of text ids and its parameters, :mod:`.filters`), among those it
        selects: the filter is part of the FTS5 query, so ``k`` hits come back whenever ``k``
        matching texts pass it.

        A reader that holds postings (:meth:`hold_postings`) scores an unfiltered query of
        alternatives (no quoted phrase) from them, fetching from FTS5 those it lacks
        (:class:`~.postings.Postings`: the same hits and scores, ties by id), unless a phrase is
        too big to hold; FTS5 scores every other query."""
        phrases = alternatives(expression) if self.holds_postings and langs is None and scope is None else None
        if phrases is not None:
            found = self.postings().top(phrases, k)
            if found is not None:
                return found
        where, params = _keyword_where(langs, scope)
        sql = (
            f"select rowid, -bm25({KEYWORD_TABLE}) from {KEYWORD_TABLE} where {KEYWORD_TABLE} match ?{where} order "
            f"by bm25({KEYWORD_TABLE}) limit ?"
        )
        return self._all(sql, (expression, *params, k))

    def hold_postings(self) -> None:
        """From now on, a reader's keyword searches score from postings held in memory
        (:mod:`.postings`); a store being written never does. :meth:`.reader.IndexReader.keyword_search`
        calls it after a reader's first search: a one-off search is left to FTS5, which answers
        one query faster than its postings are fetched, and a reader kept open holds them."""
        self.holds_postings = self.read_only

    def postings(self) -> Postings:
        """This reader's :class:`~.postings.Postings` (made at first use), from FTS5's own
        totals, rows and scores; n(t) of the terms :meth:`weightless_terms` has looked up tells
        a phrase too big to hold before it is fetched."""
        if self._postings is None:
            rows, tokens = self.keyword_totals()

            def known_rows(phrase: str) -> int | None:
                frequencies = self._frequencies
                return frequencies[1].get(phrase[1:-1]) if frequencies else None

            self._postings = Postings(rows, tokens, self.phrase_hits, self.row_lengths, known_rows, counts=self.term_counts)
        return self._postings

    def phrase_hits(self, phrase: str) -> tuple[np.ndarray, np.ndarray]:
        """Every text holding the FTS5 ``phrase``, with the phrase alone's −``bm25()``: (ids
        int64, scores float64), (m,)."""
        found = self._all(f"select rowid, -bm25({KEYWORD_TABLE}) from {KEYWORD_TABLE} where {KEYWORD_TABLE} match ?", (phrase,))
        ids = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
        return ids, np.fromiter((r[1] for r in found), dtype=np.float64, count=len(found))

    def term_counts(self, phrase: str) -> tuple[np.ndarray, np.ndarray] | None:
        """For a quoted phrase of one term that FTS5 stores as it is written (lower-case ASCII
        letters and digits: ``unicode61`` neither splits nor folds it), every text holding it and
        its count there, read from the FTS5 index itself (an ``fts5vocab`` instance table)
        without scoring: (ids int64 ascending, counts float64), (m,). None for any other phrase."""
        if not _PLAIN_TERM.fullmatch(phrase):
            return None
        with self._lock:
            vocab = self._vocab("instance")
            found = self.conn.execute(
                f"select doc, count(*) from {vocab} where term = ? group by doc order by doc", (phrase[1:-1],)
            ).fetchall()
        ids = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
        return ids, np.fromiter((r[1] for r in found), dtype=np.float64, count=len(found))

    def _vocab(self, kind: str) -> str:
        """The name of this connection's ``fts5vocab`` table of ``kind`` (``row``: n(t) per
        term; ``instance``: one row per occurrence) over the keyword index, made at first use
        (a temporary table, so a read-only store can hold it). Call it under the lock."""
        name = f"temp.encodr_vocab_{kind}"
        self.conn.execute(f"create virtual table if not exists {name} using fts5vocab(main, {KEYWORD_TABLE}, {kind})")
        return name

    def row_lengths(self) -> np.ndarray:
        """Each keyword row's tokens |d| (``texts_fts_docsize``, as ``bm25()`` reads them),
        float64 indexed by text id (max id + 1,), 0 where no row is."""
        found = self._all(f"select id, sz from {KEYWORD_TABLE}_docsize")
        ids = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
        lengths = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=np.float64)
        lengths[ids] = np.fromiter((_varint(r[1], 0)[0] for r in found), dtype=np.float64, count=len(found))
        return lengths

    def keyword_matches(
        self, expression: str, langs: list[str] | None = None, scope: tuple[str, list] | None = None
    ) -> np.ndarray:
        """The ids (int64, ascending) of every text matching ``expression`` that passes ``langs``
        and ``scope`` (as :meth:`keyword_hits`, unranked and unlimited)."""
        where, params = _keyword_where(langs, scope)
        sql = f"select rowid from {KEYWORD_TABLE} where {KEYWORD_TABLE} match ?{where} order by rowid"
        return np.array([i for (i,) in self._all(sql, (expression, *params))], dtype=np.int64)

    def keyword_totals(self) -> tuple[int, int]:
        """(N, tokens): the keyword index's rows and their tokens in all, as FTS5's ``bm25()``
        reads them (the FTS5 averages record, ``texts_fts_data`` id 1: varints N, then tokens)."""
        found = self._all(f"select block from {KEYWORD_TABLE}_data where id = 1")
        if not found or not found[0][0]:
            return 0, 0
        rows, at = _varint(found[0][0], 0)
        tokens, _ = _varint(found[0][0], at)
        return rows, tokens

    def weightless_terms(self, terms: list[str]) -> set[str]:
        """The terms of ``terms`` (FTS5 terms, :func:`~.keywords.keyword_terms`) that FTS5's
        ``bm25()`` weighs at nothing: those held by at least half the texts, whose IDF
        log((N − n(t) + 0.5) / (n(t) + 0.5)) is not positive and which FTS5 clamps to 10⁻⁶.

        n(t) is read from an ``fts5vocab`` table (this connection's own, so a read-only store can
        hold it) and kept until the keyword index's totals change. A term the index folds
        differently from how it is written here (diacritics) is not found, so it is kept.
        """
        from .termstats import weighs_nothing

        totals = self.keyword_totals()
        if self._frequencies is None or self._frequencies[0] != totals:
            self._frequencies = (totals, {})
        known = self._frequencies[1]
        missing = [t for t in dict.fromkeys(terms) if t not in known]
        if missing:
            with self._lock:
                vocab = self._vocab("row")
                for term in missing:
                    found = self.conn.execute(f"select doc from {vocab} where term = ?", (term,)).fetchone()
                    known[term] = found[0] if found else 0
            if len(known) > 65536:  # a long-lived server's vocabulary of queries: start again
                self._frequencies = (totals, {t: known[t] for t in terms})
        return {t for t in terms if weighs_nothing(totals[0], known.get(t, 0))}

    def phrase_rows(self, phrases: list[str]) -> list[int]:
        """n(p) of each FTS5 phrase (a quoted string): the texts holding it, as FTS5's
        ``bm25()`` counts them (every text, whatever a search filters)."""
        sql = f"select count(*) from {KEYWORD_TABLE} where {KEYWORD_TABLE} match ?"
        return [self._all(sql, (p,))[0][0] for p in phrases]

    def phrase_scores(self, phrase: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every text holding the FTS5 ``phrase``, with the phrase alone's −``bm25()`` and the
        text's tokens |d| (``texts_fts_docsize``): (ids int64, scores float64, lengths float64), (m,)."""
        sql = (
            f"select f.rowid, -bm25({KEYWORD_TABLE}), d.sz from {KEYWORD_TABLE} f join {KEYWORD_TABLE}_docsize d "
            f"on d.id = f.rowid where {KEYWORD_TABLE} match ?"
        )
        found = self._all(sql, (phrase,))
        ids = np.array([r[0] for r in found], dtype=np.int64)
        scores = np.array([r[1] for r in found], dtype=np.float64)
        lengths = np.array([_varint(r[2], 0)[0] for r in found], dtype=np.float64)
        return ids, scores, lengths


_PLAIN_TERM = re.compile(r'"[a-z0-9]+"')  # a phrase of one term that FTS5's unicode61 keeps as it is


def _keyword_where(langs: list[str] | None, scope: tuple[str, list] | None) -> tuple[str, list]:
    """The conditions (``and …``) and parameters a keyword search adds to its MATCH: texts in
    ``langs``, and among those ``scope`` selects (:meth:`TextStore.keyword_hits`)."""
    where = f" and rowid in (select id from texts where lang in ({','.join('?' * len(langs))}))" if langs else ""
    params = [*(langs or [])]
    if scope is not None:
        # "+": filter the MATCH scan; a rowid IN would make FTS5 evaluate the MATCH once per listed id
        where += f" and +rowid in ({scope[0]})"
        params += scope[1]
    return where, params


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """The SQLite varint at ``blob[at:]`` (FTS5's record format: 7 bits a byte, high bit set
    when more follow, the 9th byte whole) and the offset after it."""
    value = 0
    for i in range(8):
        byte = blob[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | blob[at + 8], at + 9


def upgrade_store(path: Path) -> None:
    """Bring a ``texts.db`` written by an older encodr (:mod:`.upgrade`) to the current tables, in
    place: the ``title``, ``start``, ``section``, ``end_line``, ``page`` and ``path`` columns added where missing (empty),
    and, where it has no
    document tables, every stored text made the one passage of a document named as it is shown
    (its id, else ``source:line``), with no content hash and its source resolved against the
    current folder, so that the next sync reads its file once.

    Raises:
        sqlite3.DatabaseError: as SQLite gives it.
    """
    import os

    conn = sqlite3.connect(str(path))
    try:
        columns = {row[1] for row in conn.execute("pragma table_info(texts)")}
        for name, kind in (
            ("title", "text"),
            ("start", "integer"),
            ("section", "text"),
            ("end_line", "integer"),
            ("page", "integer"),
            ("path", "text"),
        ):
            if name not in columns:
                conn.execute(f"alter table texts add column {name} {kind}")
        if conn.execute("select 1 from sqlite_master where name = 'documents'").fetchone() is None:
            conn.executescript(DOCUMENT_SCHEMA)
            conn.create_function("encodr_abspath", 1, lambda p: os.path.abspath(p) if p else p, deterministic=True)
            doc = "coalesce(ext_id, source || ':' || line)"
            conn.execute(
                f"insert or ignore into documents(id, path, source, title, lang) "
                f"select {doc}, encodr_abspath(source), source, title, lang from texts order by id"
            )
            conn.execute(f"insert into members(doc, text_id, line, start) select {doc}, id, line, start from texts")
        conn.commit()
    finally:
        conn.close()


def _shown_as(shown: str | None, credited: str | None, own: str | None) -> str | None:
    """A document's path as hits show it, for a document whose texts another document stored
    first: ``own`` (its source) shown from the folder the other's ``credited`` source is shown
    from (``shown``: that one's path as shown); else its source, else the other's path."""
    root = credited[: len(credited) - len(shown)] if credited and shown and credited.endswith(shown) else None
    if root is not None and own and own.startswith(root):
        return own[len(root) :]  # its own path, shown from the folder the other's is shown from
    return own or shown
