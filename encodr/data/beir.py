"""Retrieval datasets in BEIR's layout (Thakur et al. 2021): ``corpus.jsonl`` (``_id``,
``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``) and ``qrels/<split>.tsv``
(``query-id``, ``corpus-id``, ``score``, with a header)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EncodrError, S
from .text import iter_json_lines, iter_lines


@dataclass
class RetrievalSet:
    """One BEIR-layout folder, read.

    Attributes:
        name: the folder's name.
        corpus_file: ``corpus.jsonl`` (what ``encodr index`` reads: title and text joined).
        doc_ids: every document id of the corpus.
        queries: query id → text, in file order.
        qrels: split → query id → {document id: relevance grade}; grades ≤ 0 are dropped.
    """

    name: str
    corpus_file: Path
    doc_ids: set[str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    def judged(self, split: str) -> dict[str, dict[str, int]]:
        """The qrels of ``split``: query id → {document id: grade}, queries with at least one
        relevant document only.

        Raises:
            EncodrError: no ``qrels/<split>.tsv`` (naming the splits there are).
        """
        if split not in self.qrels:
            raise EncodrError(
                f"{self.name}: no qrels/{split}.tsv; its splits are {', '.join(sorted(self.qrels)) or 'none'} (use {S.split})",
                field="split",
            )
        return self.qrels[split]


def splits(folder: str | Path) -> list[str]:
    """The split names of a BEIR folder (``qrels/*.tsv``), without reading any file.

    Raises:
        EncodrError: not a folder, or it lacks ``corpus.jsonl``, ``queries.jsonl`` or ``qrels/``.
    """
    root = Path(folder)
    if not root.is_dir():
        raise EncodrError(f"{folder}: not a folder; pass a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels"):
        if not (root / name).exists():
            raise EncodrError(f"{folder}: no {name}; a BEIR-layout folder holds corpus.jsonl, queries.jsonl and qrels/SPLIT.tsv")
    return sorted(p.stem for p in (root / "qrels").glob("*.tsv"))


def _jsonl(path: Path, what: str) -> list[dict]:
    return [obj for _, obj in iter_json_lines(path, what, "'_id' and a string 'text'", ids=True)]


def read_queries(path: str | Path) -> dict[str, str]:
    """A BEIR ``queries.jsonl``: query id → text, in file order.

    Raises:
        EncodrError: a missing file, a line that is not JSON or lacks ``_id`` and a string ``text``.
    """
    return {str(q["_id"]): q["text"] for q in _jsonl(Path(path), "a BEIR queries.jsonl")}


def qrels_rows(path: str | Path, field: str | None = None):
    """The (query id, document id, grade) rows of a BEIR qrels file (``query-id<TAB>corpus-id<TAB>score``,
    header optional, blank lines skipped), every grade as given.

    Raises:
        EncodrError: a row of another shape, naming its line (``field``: the request field at fault).
    """
    for number, line in iter_lines(path, "a BEIR qrels file: query-id<TAB>corpus-id<TAB>score"):
        cells = line.split("\t")
        if number == 1 and cells[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue
        if not line.strip():
            continue
        if len(cells) != 3 or not cells[2].strip().lstrip("-").isdigit():
            raise EncodrError(f"{path}, line {number}: expected query-id<TAB>corpus-id<TAB>score (an integer)", field=field)
        yield cells[0].strip(), cells[1].strip(), int(cells[2])


def read_qrels(
    path: str | Path, doc_ids: set[str], queries: dict[str, str], corpus: str = "corpus.jsonl"
) -> dict[str, dict[str, int]]:
    """A BEIR qrels file (``query-id<TAB>corpus-id<TAB>score``, header optional): query id →
    {document id: grade}, grades ≤ 0 dropped.

    Args:
        doc_ids / queries: the documents and queries it may name.
        corpus: what holds ``doc_ids``, for the error message.

    Raises:
        EncodrError: a row that is not ``query-id<TAB>corpus-id<TAB>score``, or qrels that name
            a query or a document not given (with their count and the first one: every
            judgment must be scoreable, or the metric is wrong).
    """
    judged: dict[str, dict[str, int]] = {}
    for qid, did, grade in qrels_rows(path):
        if grade > 0:
            judged.setdefault(qid, {})[did] = grade
    for what, ids, known in (
        ("document", {d for r in judged.values() for d in r}, doc_ids),
        ("query", set(judged), set(queries)),
    ):
        missing = sorted(ids - known)
        if missing:
            where = corpus if what == "document" else "the queries"
            raise EncodrError(
                f"{path}: names {len(missing)} {what}{'s' * (len(missing) > 1)} not in {where} (first: '{missing[0]}'); "
                f"remove those rows or add the {what}s"
            )
    return judged


def read_retrieval(folder: str | Path) -> RetrievalSet:
    """Read a BEIR-layout folder: corpus ids, queries and every split's qrels.

    Raises:
        EncodrError: not a folder, a missing ``corpus.jsonl`` / ``queries.jsonl`` / ``qrels``
            folder, a line that is not JSON; see :func:`read_qrels`.
    """
    root = Path(folder)
    names = splits(root)
    corpus_file = root / "corpus.jsonl"
    listed = [str(d["_id"]) for d in _jsonl(corpus_file, "a BEIR corpus.jsonl")]
    doc_ids = set(listed)
    if len(doc_ids) < len(listed):
        from collections import Counter

        repeated = [d for d, n in Counter(listed).items() if n > 1]
        raise EncodrError(
            f"{corpus_file}: {len(listed) - len(doc_ids):,} documents repeat an _id ({len(repeated):,} ids, first "
            f"{', '.join(repeated[:3])}); "
            "give each document its own _id",
            field="data",
        )
    data = RetrievalSet(root.name, corpus_file, doc_ids, read_queries(root / "queries.jsonl"))
    for split in names:
        data.qrels[split] = read_qrels(root / "qrels" / f"{split}.tsv", doc_ids, data.queries)
    return data
