"""Readers for evaluation files: STS (STS-B, SICK, plain TSV), word pairs, MeSH names."""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import EncodrError
from .text import read_lines


@dataclass(frozen=True)
class ScoredPair:
    """Two texts and a gold similarity score (any scale)."""

    score: float
    text1: str
    text2: str


def _float(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _plain_rows(rows: list[tuple[int, list[str]]], is_data) -> list[tuple[int, list[str]]] | None:
    """The data rows of a headerless layout: all ``(line number, cells)`` rows, or all but the
    first when only that one is not data (an optional header line of 3+ columns); ``None`` when
    the file is not in the layout."""
    if is_data(rows[0][1]):
        return rows
    if len(rows) > 1 and len(rows[0][1]) >= 3 and is_data(rows[1][1]):
        return rows[1:]
    return None


def read_sts(path: str | Path) -> list[ScoredPair]:
    """Read scored pairs from any of three layouts, detected per file:

    - STS-B: tab-separated genre, source, year, id, score, sentence 1, sentence 2
      (extra trailing columns ignored);
    - SICK: a header with ``sentence_A``, ``sentence_B``, ``relatedness_score``;
    - plain: ``score<TAB>sentence1<TAB>sentence2``, with or without a header line.

    Raises:
        EncodrError: unreadable file, unknown layout, or no pair in it.
    """
    lines, _ = read_lines(path)
    rows = [(number, line.split("\t")) for number, line in enumerate(lines, 1) if line.strip()]
    if not rows:
        raise EncodrError(f"{path} is empty; an STS file needs score<TAB>sentence1<TAB>sentence2 lines")
    header = [c.strip().lower() for c in rows[0][1]]
    first = rows[0][1]
    pairs: list[ScoredPair] = []
    if "sentence_a" in header and "relatedness_score" in header:
        a, b, s = header.index("sentence_a"), header.index("sentence_b"), header.index("relatedness_score")
        for _, row in rows[1:]:
            if len(row) > max(a, b, s) and _float(row[s]) is not None:
                pairs.append(ScoredPair(float(row[s]), row[a].strip(), row[b].strip()))
    elif len(first) >= 7 and _float(first[4]) is not None:
        for number, row in rows:
            if len(row) < 7 or _float(row[4]) is None:
                raise EncodrError(f"{path}: line {number} is not in the STS-B layout (score in column 5, sentences in 6 and 7)")
            pairs.append(ScoredPair(float(row[4]), row[5].strip(), row[6].strip()))
    elif (body := _plain_rows(rows, lambda row: len(row) >= 3 and _float(row[0]) is not None)) is not None:
        for number, row in body:
            if len(row) < 3 or _float(row[0]) is None:
                raise EncodrError(f"{path}: line {number} is not score<TAB>sentence1<TAB>sentence2")
            pairs.append(ScoredPair(float(row[0]), row[1].strip(), row[2].strip()))
    else:
        raise EncodrError(
            f"{path}: unknown STS layout; use score<TAB>sentence1<TAB>sentence2, the STS-B layout, or SICK with a header"
        )
    if not pairs:
        raise EncodrError(f"{path} has no scored pairs")
    return pairs


def read_word_pairs(path: str | Path) -> list[ScoredPair]:
    """Word-similarity file: ``word1<TAB>word2<TAB>score``; ``#`` lines are comments.

    Raises:
        EncodrError: unreadable file, a line not in that layout (with its number), or no pair.
    """
    pairs = []
    for number, line in enumerate(read_lines(path)[0], 1):
        if line.startswith("#") or not line.strip():
            continue
        row = line.split("\t")
        if len(row) < 3 or _float(row[2]) is None:
            raise EncodrError(f"{path}: line {number} is not word1<TAB>word2<TAB>score")
        pairs.append(ScoredPair(float(row[2]), row[0].strip(), row[1].strip()))
    if not pairs:
        raise EncodrError(f"{path} has no word pairs; it needs word1<TAB>word2<TAB>score lines")
    return pairs


_TOKEN = re.compile(r"[a-z0-9]+")


def _singular(token: str) -> str:
    if len(token) > 3 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("es"):
        return token[:-2]
    if len(token) > 2 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def surface_key(name: str) -> tuple[str, ...]:
    """A name reduced to its bag of singular lowercase tokens.

    Two names with the same key differ only by case, punctuation, plural endings or word
    order (e.g. comma inversion: "Arthritis, Rheumatoid" ~ "rheumatoid arthritis").
    """
    return tuple(sorted(_singular(t) for t in _TOKEN.findall(name.lower())))


@dataclass(frozen=True)
class LinkingSet:
    """Entity-linking data: query names with gold concept ids, and candidate names with theirs."""

    queries: list[str]
    query_ids: list[str]
    candidates: list[str]
    candidate_ids: list[frozenset[str]]


def concept_split(concept_id: str) -> str:
    """``dev`` for a fixed 20% of concepts (by a hash of the id), else ``test``."""
    return "dev" if int(hashlib.sha1(concept_id.encode()).hexdigest(), 16) % 5 == 0 else "test"


def read_linking(path: str | Path, split: str = "all") -> LinkingSet:
    """MeSH-style TSV with columns ``mesh_id``, ``name``, ``canonical``.

    Every name that is not a trivial rewrite of its concept's canonical name (same
    :func:`surface_key`) is a query; the candidates are all distinct canonical names, each
    with the set of concept ids it names.

    Args:
        path: the TSV file.
        split: ``dev`` keeps the queries of a fixed 20% of concepts (for choosing settings),
            ``test`` the other 80%, ``all`` every query. Candidates are always all names.

    Raises:
        EncodrError: unreadable file, a header without those columns, or no query in the split.
    """
    columns = ("mesh_id", "name", "canonical")
    reader = csv.DictReader(read_lines(path)[0], delimiter="\t")
    missing = set(columns) - set(reader.fieldnames or [])
    if missing:
        raise EncodrError(
            f"{path}: a linking file needs a tab-separated header with mesh_id, name and canonical (missing: "
            f"{', '.join(sorted(missing))})"
        )
    rows = []
    for row in reader:
        if not all(row[c] for c in columns):
            raise EncodrError(f"{path}: line {reader.line_num} needs a mesh_id, a name and a canonical name, tab-separated")
        rows.append(row)
    by_name: dict[str, set[str]] = {}
    for row in rows:
        by_name.setdefault(row["canonical"], set()).add(row["mesh_id"])
    queries, query_ids = [], []
    for row in rows:
        if split != "all" and concept_split(row["mesh_id"]) != split:
            continue
        if surface_key(row["name"]) != surface_key(row["canonical"]):
            queries.append(row["name"])
            query_ids.append(row["mesh_id"])
    if not queries:
        raise EncodrError(
            f"{path}: no query names{'' if split == 'all' else ' in the ' + split + ' split'}; "
            "a query is a name that is not just a rewrite (case, plural, word order) of its canonical name"
        )
    candidates = sorted(by_name)
    return LinkingSet(queries, query_ids, candidates, [frozenset(by_name[c]) for c in candidates])


@dataclass(frozen=True)
class LabelledPair:
    """Two texts and a binary label (1: related / duplicate / entailed / paraphrase)."""

    label: int
    text1: str
    text2: str


_BINARY_LABELS = {"1": 1, "0": 0, "entailment": 1, "not_entailment": 0}
# layout → (column of text 1, column of text 2, column of the label), found by header names
_BINARY_HEADERS = {
    "QQP": ("question1", "question2", "is_duplicate"),
    "QNLI": ("question", "sentence", "label"),
    "MRPC": ("#1 string", "#2 string", "quality"),
}


def read_binary_pairs(path: str | Path) -> list[LabelledPair]:
    """Pairs with 0/1 labels, for ROC-AUC (Trans-Encoder §3, binary classification).

    Layouts, detected from the header: GLUE QQP (``question1``, ``question2``,
    ``is_duplicate``), QNLI (``question``, ``sentence``, ``label`` with
    ``entailment``/``not_entailment``), MRPC (``Quality``, ``#1 String``, ``#2 String``);
    otherwise ``label<TAB>sentence1<TAB>sentence2``, with or without a header line. Rows without a
    label (test files) are refused.

    Raises:
        EncodrError: unreadable file, unknown layout, a short row or a label that is not 0/1 (line given),
            or only one class present (ROC-AUC needs both).
    """
    lines, _ = read_lines(path)
    rows = [(number, line.split("\t")) for number, line in enumerate(lines, 1) if line.strip()]
    if not rows:
        raise EncodrError(f"{path} is empty; a pairs file needs label<TAB>sentence1<TAB>sentence2 lines")
    header = [c.strip().lower() for c in rows[0][1]]
    columns = next((cols for cols in _BINARY_HEADERS.values() if all(c in header for c in cols)), None)
    if columns is not None:
        a, b, y = (header.index(c) for c in columns)
        body = rows[1:]
    elif (body := _plain_rows(rows, lambda row: len(row) >= 3 and row[0].strip() in ("0", "1"))) is not None:
        a, b, y = 1, 2, 0
    else:
        raise EncodrError(
            f"{path}: unknown pairs layout; use label<TAB>sentence1<TAB>sentence2 (label 0 or 1), or a QQP, QNLI or "
            "MRPC file with its header"
        )
    pairs = []
    for number, row in body:
        if len(row) <= max(a, b, y):
            raise EncodrError(
                f"{path}: line {number} has {len(row)} tab-separated column{'' if len(row) == 1 else 's'}, fewer than "
                f"the layout's {max(a, b, y) + 1}"
            )
        if row[y].strip().lower() not in _BINARY_LABELS:
            raise EncodrError(
                f"{path}: line {number} has no 0/1 label in column {y + 1} (got '{row[y].strip()[:20]}'); every row needs one"
            )
        pairs.append(LabelledPair(_BINARY_LABELS[row[y].strip().lower()], row[a].strip(), row[b].strip()))
    if len({p.label for p in pairs}) < 2:
        raise EncodrError(f"{path}: every pair has label {pairs[0].label}; ROC-AUC needs both 0 and 1 labels")
    return pairs
