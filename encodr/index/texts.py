"""The texts of one index generation: ``texts.db``, an SQLite table (sqlite-utils) and its
keyword index (FTS5, :mod:`.keywords`).

Guarantee: this is the one module that knows the table's schema and speaks SQL to it; builds
(:mod:`.build`) write through :class:`TextStore`, searches (:class:`~.store.Index`) read
through it. Row id i is vector i of the generation's FAISS index.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from .keywords import KEYWORD_TABLE, build_keywords

# The one table: vector i of the FAISS index is row id i. lang_detected = 1: the language came
# from the detector (a build may settle it again), not from the input; lang_confidence: the
# detector's confidence. title and start (a passage's character offset in its document) are
# absent from stores written before them.
TEXTS_COLUMNS = {"id": int, "ext_id": str, "text": str, "source": str, "line": int, "lang": str, "hash": str, "lang_detected": int,
                 "lang_confidence": float, "title": str, "start": int}  # fmt: skip
SQLITE_PARAMETERS = 900  # values bound per statement at most (SQLite's limit is 999 on older builds)


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
        columns = {row[1] for row in conn.execute("pragma table_info(texts)")}
        self.extra = [c for c in ("title", "start") if c in columns]  # the optional columns this store has, read once
        self.has_keywords = conn.execute("select 1 from sqlite_master where name = ?", (KEYWORD_TABLE,)).fetchone() is not None

    @classmethod
    def create(cls, path: Path) -> "TextStore":
        """Open ``path`` for writing, creating the table (:data:`TEXTS_COLUMNS`, unique text
        hashes) when it lacks one (a new index; ``--add`` opens a copy of the old store)."""
        import sqlite_utils

        conn = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
        db = sqlite_utils.Database(conn)
        if "texts" not in db.table_names():
            db["texts"].create(TEXTS_COLUMNS, pk="id")
            db["texts"].create_index(["hash"], unique=True)
            conn.commit()
        return cls(conn)

    @classmethod
    def open(cls, path: Path, timeout: float) -> "TextStore":
        """Open ``path`` read-only, waiting up to ``timeout`` seconds for a writer's lock."""
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout, check_same_thread=False)
        try:
            return cls(conn)
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
        """The id the next inserted text takes (one past the largest)."""
        return int(self._all("select coalesce(max(id) + 1, 0) from texts")[0][0])

    def known(self, hashes: list[str]) -> set[str]:
        """The members of ``hashes`` (text hashes) already stored."""
        found: set[str] = set()
        for start in range(0, len(hashes), SQLITE_PARAMETERS):
            part = hashes[start : start + SQLITE_PARAMETERS]
            found.update(h for (h,) in self._all(f"select hash from texts where hash in ({','.join('?' * len(part))})", part))
        return found

    def insert(self, rows: list[dict]) -> None:
        """Store ``rows`` (dicts of :data:`TEXTS_COLUMNS`' keys) and commit."""
        import sqlite_utils

        with self._lock:
            sqlite_utils.Database(self.conn)["texts"].insert_all(rows, alter=True)
            self.conn.commit()

    def detected_labels(self) -> list[tuple[str, float | None]]:
        """(language, confidence) of every text whose language came from the detector."""
        return self._all("select lang, lang_confidence from texts where lang_detected = 1")

    def relabel_detected(self, detect: Callable[[list[str]], list[str]], chunk: int = 10_000) -> None:
        """Give every detected text the language ``detect`` (texts → ISO 639-3 codes) finds,
        ``chunk`` texts at a time (the second detection pass of a build), and commit."""
        last = self._all("select max(id) from texts")[0][0]
        for start in range(0, (last or 0) + 1, chunk):
            rows = self._all("select id, text from texts where lang_detected = 1 and id >= ? and id < ?", (start, start + chunk))
            if rows:
                codes = detect([text for _, text in rows])
                with self._lock:
                    self.conn.executemany("update texts set lang = ? where id = ?", [(code, i) for code, (i, _) in zip(codes, rows)])
        with self._lock:
            self.conn.commit()

    def build_keywords(self) -> None:
        """(Re)build the keyword index over every stored text (:func:`~.keywords.build_keywords`)."""
        with self._lock:
            build_keywords(self.conn)
        self.has_keywords = True

    # reading

    def count(self) -> int:
        """Texts stored."""
        return int(self._all("select count(*) from texts")[0][0])

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
        return np.array([i for (i,) in self._all(f"select id from texts where lang in ({','.join('?' * len(langs))})", langs)], dtype=np.int64)

    def rows(self, ids: list[int]) -> dict[int, dict]:
        """Stored rows by id: ``text``, ``source``, ``line``, ``lang``, ``ext_id``, ``title`` and
        ``start`` (None in a store written before those columns)."""
        found = self._all(f"select id, ext_id, text, source, line, lang{''.join(', ' + c for c in self.extra)} from texts "
                          f"where id in ({','.join('?' * len(ids))})", ids)  # fmt: skip
        keys = ["id", "ext_id", "text", "source", "line", "lang", *self.extra]
        return {r[0]: {"title": None, "start": None, **dict(zip(keys, r))} for r in found}

    def passages_of(self, ext_id: str) -> list[tuple[int, str]]:
        """(character offset, text) of every stored passage of the document ``ext_id``, in
        document order (whole texts, with no offset, at 0)."""
        return [(int(s), t) for s, t in self._all("select coalesce(start, 0), text from texts where ext_id = ? order by coalesce(start, 0)", (ext_id,))]

    def document_ids(self) -> set[str]:
        """Every stored document id (``ext_id``)."""
        return {str(d) for (d,) in self._all("select distinct ext_id from texts where ext_id is not null")}

    def keyword_hits(self, expression: str, k: int, langs: list[str] | None = None) -> list[tuple[int, float]]:
        """(id, −``bm25()``) of the top ``k`` texts matching the FTS5 ``expression``, best first,
        among texts whose language is one of ``langs`` (all when None)."""
        where = f" and rowid in (select id from texts where lang in ({','.join('?' * len(langs))}))" if langs else ""
        sql = f"select rowid, -bm25({KEYWORD_TABLE}) from {KEYWORD_TABLE} where {KEYWORD_TABLE} match ?{where} order by bm25({KEYWORD_TABLE}) limit ?"
        return self._all(sql, (expression, *(langs or []), k))
