"""Relevance judgments kept with an index: (query, document, grade) as a search team keeps them
(Quepid's ratings, Elasticsearch's Ranking Evaluation API), for measuring the index
(``encodr eval retrieval --index``) and learning from them (the ``judged`` recipe).

Judgments live in ``judgments.db`` (SQLite) at the index directory's root, beside its
generations (:mod:`.index`), not inside one: every write of the index (a build, ``--add``,
``--sync``, a delete, a compaction, a rebuild with another model) makes a new generation, and
the judgments stay where they are. A judgment is never rewritten by such a write; what a write
changes is the judgment's *status*, derived when it is read (:func:`with_status`) by comparing
the content hash of its document when it was judged with the hash the index holds now:

- ``current``: the document is held with the text that was judged;
- ``edited``: the document has been changed since (the grade was given to its earlier text);
- ``orphaned``: the document is no longer in the index.

Only ``current`` judgments are measured on and trained on.

Grades are BEIR's and TREC's: 0 not relevant, 1 relevant, 2 highly relevant. A (query,
document) pair has one grade; judging it again replaces it. Queries are compared with their
whitespace collapsed and case folded.

Folds: each query falls in ``train``, ``dev`` or ``test`` by the SHA-256 of its compared form
(:func:`fold`): the first 8 bytes as an integer, modulo 100, below 60 ``train``, below 80
``dev``, else ``test``. The split depends on the query alone, so it is stable as judgments are
added, and the same on every machine: a query the ``judged`` recipe trained on is never in the
``dev`` or ``test`` fold it is measured on.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sqlite3
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterable

from ..errors import EncodrError, S

JUDGMENTS_FILE = "judgments.db"
TUNED_FILE = "tuned.json"  # search settings learned from the judgments for one model (:func:`read_tuned`)
GRADES = (0, 1, 2)  # not relevant, relevant, highly relevant (BEIR / TREC)
FOLDS = ("train", "dev", "test")
ALL_FOLDS = "all"  # eval retrieval --index --split all: every fold
FOLD_SHARES = (60, 20, 20)  # per cent of the queries in each fold
CURRENT, EDITED, ORPHANED = "current", "edited", "orphaned"
STATUSES = (CURRENT, EDITED, ORPHANED)
LOCK_TIMEOUT = 10.0  # seconds a writer waits for another writer of judgments.db

SCHEMA = """
create table if not exists judgments (
    key text not null, doc text not null, query text not null, grade integer not null, passage text,
    front text not null, made text not null, doc_hash text, primary key (key, doc));
create index if not exists judgments_doc on judgments(doc);
"""


def query_key(query: str) -> str:
    """How two queries are compared: whitespace collapsed, case folded."""
    return " ".join(query.split()).casefold()


def fold(query: str) -> str:
    """The fold (``train``, ``dev`` or ``test``) of ``query``: see the module docstring."""
    bucket = int.from_bytes(hashlib.sha256(query_key(query).encode("utf-8")).digest()[:8], "big") % 100
    edge = 0
    for name, share in zip(FOLDS, FOLD_SHARES):
        edge += share
        if bucket < edge:
            return name
    return FOLDS[-1]


@dataclass(frozen=True)
class Judgment:
    """One judgment.

    Attributes:
        query: the query text, as first judged.
        doc: the document id (a hit's document: a JSONL ``_id``, a file's path…).
        grade: 0, 1 or 2 (:data:`GRADES`).
        passage: the passage judged (a hit's text), when one was.
        front: the front end that made it: ``cli``, ``tui``, ``http``, ``mcp`` or ``import``.
        made: when, ISO 8601 UTC.
        doc_hash: the document's content hash when it was judged (``None``: unknown).
        status: ``current``, ``edited`` or ``orphaned`` (:func:`with_status`; ``current`` until then).
    """

    query: str
    doc: str
    grade: int
    passage: str | None = None
    front: str = "cli"
    made: str = ""
    doc_hash: str | None = None
    status: str = CURRENT

    @property
    def fold(self) -> str:
        """The query's fold (:func:`fold`)."""
        return fold(self.query)

    def to_dict(self) -> dict:
        return {**asdict(self), "fold": self.fold}


def check_grade(grade: int) -> None:
    """Raise :class:`~encodr.errors.EncodrError` (field ``grade``) unless ``grade`` is 0, 1 or 2."""
    if grade not in GRADES:
        raise EncodrError(
            f"grade {grade} is not a grade; use 0 (not relevant), 1 (relevant) or 2 (highly relevant)", field="grade"
        )


class Judgments:
    """The ``judgments.db`` of one index directory.

    A connection is opened per call (SQLite serialises writers; readers never wait for a
    writer in WAL mode), so a server's threads and another process (the CLI while the TUI runs)
    may write at once.

    Args:
        root: the index directory (what ``--index`` names, resolved).

    Raises (every method): EncodrError: the file cannot be read or written (read-only folder,
    full disk, corrupted), naming it and the fix; nothing is half-written.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.path = self.root / JUDGMENTS_FILE

    def _connect(self, write: bool) -> sqlite3.Connection | None:
        if not write and not self.path.exists():
            return None
        if write and not os.access(self.path if self.path.exists() else self.root, os.W_OK):
            raise EncodrError(
                f"index {self.root} cannot be written ({self.path.name if self.path.exists() else 'its folder'} is "
                "read-only), so "
                "no judgment was written; make it writable, or judge a copy of the index"
            )
        mode = "rwc" if write else "ro"
        conn = sqlite3.connect(f"file:{self.path}?mode={mode}", uri=True, timeout=LOCK_TIMEOUT, check_same_thread=False)
        if write:
            conn.executescript(SCHEMA)
        return conn

    def _run(self, write: bool, work):
        """``work(connection)`` in one transaction; SQLite's and the OS's refusals as one line."""
        from ..outputs import os_fault

        try:
            conn = self._connect(write)
            if conn is None:
                return work(None)
            try:
                with conn:
                    return work(conn)
            finally:
                conn.close()
        except (sqlite3.Error, OSError) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in str(exc) or "not a database" in str(exc)):
                raise EncodrError(f"{self.path} is corrupted ({exc}); move it away to start the judgments anew") from None
            raise os_fault(exc, self.path, kept="no judgment was written" if write else "") from None

    def put(self, judgments: Iterable[Judgment]) -> int:
        """Store ``judgments``, each replacing the grade of its (query, document); all or none.
        Returns how many were stored."""
        rows = [
            (query_key(j.query), j.doc, j.query, int(j.grade), j.passage, j.front, j.made or now(), j.doc_hash) for j in judgments
        ]

        def work(conn):
            conn.executemany(
                "insert into judgments values (?, ?, ?, ?, ?, ?, ?, ?) on conflict(key, doc) do update set "
                "grade = excluded.grade, passage = coalesce(excluded.passage, judgments.passage), front = excluded.front, "
                "made = excluded.made, doc_hash = excluded.doc_hash",
                rows,
            )
            return len(rows)

        return self._run(True, work)

    def remove(self, query: str, doc: str) -> bool:
        """Delete the judgment of (``query``, ``doc``); False when there was none."""
        return self._run(
            True,
            lambda conn: conn.execute("delete from judgments where key = ? and doc = ?", (query_key(query), doc)).rowcount > 0,
        )

    def count(self) -> int:
        """How many judgments there are."""
        return self._run(False, lambda conn: 0 if conn is None else conn.execute("select count(*) from judgments").fetchone()[0])

    def all(self) -> list[Judgment]:
        """Every judgment, oldest first, status ``current`` (see :func:`with_status`)."""

        def work(conn):
            if conn is None:
                return []
            rows = conn.execute(
                "select query, doc, grade, passage, front, made, doc_hash from judgments order by made, rowid"
            ).fetchall()
            return [Judgment(q, d, int(g), p, f, m, h) for q, d, g, p, f, m, h in rows]

        return self._run(False, work)


def now() -> str:
    """The time now, ISO 8601 UTC (a judgment's ``made``)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def with_status(judgments: list[Judgment], store) -> list[Judgment]:
    """``judgments`` with their status against ``store`` (the index's current
    :class:`~.texts.TextStore`): ``orphaned`` when it lacks the document, ``edited`` when the
    document's content hash differs from the one judged, else ``current``."""
    held = store.document_hashes(j.doc for j in judgments)
    out = []
    for j in judgments:
        if j.doc not in held:
            status = ORPHANED
        elif j.doc_hash is not None and held[j.doc] is not None and held[j.doc] != j.doc_hash:
            status = EDITED
        else:
            status = CURRENT
        out.append(replace(j, status=status))
    return out


def qrels_of(judgments: list[Judgment], folds: Iterable[str] = FOLDS) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """BEIR's queries and qrels of the ``current`` judgments in ``folds``: (query id → text,
    query id → {document id: grade}); a query's id is ``q`` and the first 12 hex digits of the
    SHA-256 of its compared form. Grades 0 are kept (the evaluators count only grades > 0)."""
    folds = set(folds)
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for j in judgments:
        if j.status != CURRENT or j.fold not in folds:
            continue
        qid = "q" + hashlib.sha256(query_key(j.query).encode("utf-8")).hexdigest()[:12]
        queries.setdefault(qid, j.query)
        qrels.setdefault(qid, {})[j.doc] = j.grade
    return queries, qrels


def read_import(queries_file: Path, qrels_file: Path, known: set[str]) -> list[tuple[str, str, int]]:
    """(query text, document id, grade) of a BEIR ``queries.jsonl`` and qrels TSV, grades 0–2
    (higher grades are taken as 2), every row checked before any is returned.

    Raises:
        EncodrError: a file that cannot be read or parsed; qrels naming queries the queries
            file lacks; qrels naming documents outside ``known`` (their number and the first
            few ids): none of the file's rows is imported.
    """
    from ..data.beir import qrels_rows, read_queries

    queries = read_queries(queries_file)
    rows: list[tuple[str, str, int]] = []
    no_query: list[str] = []
    no_doc: list[str] = []
    for qid, did, grade in qrels_rows(qrels_file, field="import"):
        grade = max(0, min(2, grade))
        if qid not in queries:
            no_query.append(qid)
        elif did not in known:
            no_doc.append(did)
        else:
            rows.append((queries[qid], did, grade))
    if no_query:
        raise EncodrError(
            f"{qrels_file}: {len(no_query)} row(s) name queries that {queries_file} lacks (first: {', '.join(no_query[:3])}); "
            "nothing was imported",
            field="import",
        )
    if no_doc:
        first = ", ".join(f"'{d}'" for d in list(dict.fromkeys(no_doc))[:3])
        raise EncodrError(
            f"{qrels_file}: {len(no_doc)} row(s) name documents the index lacks (first: {first}); nothing was imported: "
            "index those documents, or remove those rows",
            field="import",
        )
    if not rows:
        raise EncodrError(
            f"{qrels_file}: no judgments in it; a qrels file has query-id<TAB>corpus-id<TAB>score rows", field="import"
        )
    return rows


def import_files(source: str, split: str | None) -> tuple[Path, Path]:
    """The queries and qrels files that ``--import SOURCE [--split SPLIT]`` names: a BEIR folder
    (``queries.jsonl``, ``qrels/SPLIT.tsv``, SPLIT default ``train``), or ``QUERIES.jsonl,QRELS.tsv``.

    Raises:
        EncodrError: a folder without the split, or files that do not exist.
    """
    from ..data.beir import splits

    if "," in source and not Path(source).exists():
        queries, _, qrels = source.partition(",")
        pair = (Path(queries.strip()), Path(qrels.strip()))
        for p in pair:
            if not p.is_file():
                raise EncodrError(
                    f"{S.import_from} {source}: no such file {p}; pass a BEIR folder, or QUERIES.jsonl,QRELS.tsv", field="import"
                )
        return pair
    folder = Path(source)
    if not folder.is_dir():
        raise EncodrError(
            f"{S.import_from} {source}: no such folder; pass a BEIR folder (queries.jsonl, qrels/SPLIT.tsv), or "
            "QUERIES.jsonl,QRELS.tsv",
            field="import",
        )
    there = splits(folder)
    split = split or "train"
    if split not in there:
        raise EncodrError(
            f"{S.import_from} {source}: no qrels/{split}.tsv; its splits are {', '.join(there) or 'none'} (use {S.split})",
            field="split",
        )
    return folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"


def corpus_of(index) -> dict[str, str]:
    """Document id → the document's whole text (:meth:`~.reader.IndexReader.document`), of every
    document of ``index`` (a :class:`~.reader.IndexReader`), by id."""
    return {doc: found["text"] for doc in sorted(index.document_ids()) if (found := index.document(doc)) is not None}


def write_beir(
    corpus: dict[str, str], judgments: list[Judgment], out: Path, splits: dict[str, Iterable[str]] | None = None
) -> dict:
    """Write a BEIR folder into ``out`` (an empty folder): ``corpus.jsonl`` (``corpus``: id →
    text), ``queries.jsonl`` and ``qrels/SPLIT.tsv`` of the ``current`` judgments, one split per
    entry of ``splits`` (split → the folds it holds; default: ``train``, ``dev`` and ``test``,
    one each). Grades 0 are written too (evaluators count only grades > 0).

    Returns:
        Counts: ``documents``, ``queries``, and the judgments of each split.
    """
    splits = splits or {f: (f,) for f in FOLDS}
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as f:
        for doc, text in corpus.items():
            f.write(json.dumps({"_id": doc, "title": "", "text": text}, ensure_ascii=False) + "\n")
    members = tuple(f for folds in splits.values() for f in folds)
    queries, _ = qrels_of(judgments, members)
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid, text in queries.items():
            f.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    (out / "qrels").mkdir(exist_ok=True)
    counts = {"documents": len(corpus), "queries": len(queries)}
    for split, folds in splits.items():
        _, qrels = qrels_of(judgments, folds)
        with open(out / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            f.writelines(f"{qid}\t{doc}\t{grade}\n" for qid, docs in qrels.items() for doc, grade in docs.items())
        counts[split] = sum(len(d) for d in qrels.values())
    return counts


def read_tuned(root: Path, fingerprint: str) -> dict:
    """The search settings learned for the model of weights ``fingerprint`` and stored with the
    index at ``root`` (``tuned.json``, written by ``encodr tune --recipe judged --index``):
    ``fusion_weight``, ``rerank_depth``, ``rerank_weight``; empty when there are none for that model."""
    try:
        tuned = json.loads((Path(root) / TUNED_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return dict(tuned.get("search") or {}) if isinstance(tuned, dict) and tuned.get("fingerprint") == fingerprint else {}


def write_tuned(root: Path, fingerprint: str, search: dict, model: str) -> None:
    """Store ``search`` (settings chosen by cross-validation over the judgments) with the index at ``root``, for the
    model of weights ``fingerprint`` (``model``: its path, for people), atomically.

    Raises:
        EncodrError: the file cannot be written, naming it and the fix.
    """
    from ..outputs import atomic_file, os_fault

    try:
        with atomic_file(Path(root) / TUNED_FILE) as tmp:
            tmp.write_text(json.dumps({"fingerprint": fingerprint, "model": model, "search": search}, indent=2))
    except OSError as exc:
        raise os_fault(exc, Path(root) / TUNED_FILE, kept="the index's search settings are unchanged") from None
