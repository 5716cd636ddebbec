"""Documents of consecutive sentences, for methods that learn from adjacent sentences
(CMLM, Yang et al. 2021, §2: s1 conditions the masked-language-model on s2)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import EncodrError
from .text import iter_lines

DOC_ID_COLUMNS = ("doc", "doc_id", "document", "document_id")


@dataclass
class Documents:
    """Sentences grouped by document, in file order.

    Attributes:
        docs: one list of sentences (stripped, non-blank) per document.
        source: the file path.
        sha256: hex digest of the file's bytes.
    """

    docs: list[list[str]]
    source: str
    sha256: str

    def adjacent_pairs(self) -> list[tuple[str, str]]:
        """(s_i, s_{i+1}) for every two consecutive sentences of a document, in order."""
        return [(doc[i], doc[i + 1]) for doc in self.docs for i in range(len(doc) - 1)]


def read_documents(path: str | Path) -> Documents:
    """Read documents from plain text or a TSV.

    Plain text: one sentence a line, a blank line between documents. TSV (``.tsv``): a
    header with a ``text`` column and a document-id column (``doc``, ``doc_id``,
    ``document`` or ``document_id``); consecutive rows with the same id form one document.

    Raises:
        EncodrError: unreadable file (see :func:`encodr.data.text.iter_lines`), a TSV
            without its columns, or no two adjacent sentences in any document.
    """
    p = Path(path)
    digest = hashlib.sha256()
    docs: list[list[str]] = [[]]
    columns: list[str] | None = None
    last_id = None
    for number, line in iter_lines(
        path, "a text file (one sentence a line, a blank line between documents) or a TSV with text and doc columns"
    ):
        digest.update(line.encode("utf-8") + b"\n")
        if number == 1 and p.suffix.lower() == ".tsv":
            columns = [c.strip().lower() for c in line.split("\t")]
            if "text" not in columns or not set(DOC_ID_COLUMNS) & set(columns):
                raise EncodrError(
                    f"{path}: a .tsv of documents needs a header with 'text' and a document-id column "
                    f"({', '.join(DOC_ID_COLUMNS)})"
                )
            continue
        if columns is None:
            if line.strip():
                docs[-1].append(line.strip())
            elif docs[-1]:
                docs.append([])
            continue
        cells = dict(zip(columns, line.split("\t")))
        doc_id = next(cells[c] for c in DOC_ID_COLUMNS if c in cells)
        text = cells.get("text", "").strip()
        if not text:
            continue
        if doc_id != last_id and docs[-1]:
            docs.append([])
        last_id = doc_id
        docs[-1].append(text)
    found = Documents([d for d in docs if d], str(path), digest.hexdigest())
    if not found.adjacent_pairs():
        raise EncodrError(
            f"{path} has no document with two sentences; adjacent-sentence methods need documents of 2+ lines (blank "
            "line between documents)"
        )
    return found
