"""The judgments a ``judged`` run learns from, split into folds over their corpus."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import EncodrError, S
from ...index.judgments import CURRENT, Judgment, corpus_of, read_import, with_status, write_beir

TRAIN, DEV = "train", "dev"
JUDGED = "judged"  # the run folder's one split: every judged query of the train and dev folds


@dataclass
class JudgedData:
    """Judgments over a corpus, as a run uses them.

    Attributes:
        folder: a BEIR-layout folder written for the run: ``corpus.jsonl`` (every document),
            ``queries.jsonl`` and ``qrels/judged.tsv`` (the train and dev folds of
            :mod:`encodr.index.judgments`, which cross-validation splits again; the test fold
            is never written, so nothing the run does can read it).
        corpus: document id → its text (title and text joined, as ``encodr index`` reads it).
        judgments: the usable judgments (status ``current``) of the train and dev folds.
        source: what was read (the index, or the BEIR folder's qrels file).
        unused: judgments left out: ``edited``, ``orphaned`` and ``test`` (the test fold).
    """

    folder: Path
    corpus: dict[str, str]
    judgments: list[Judgment]
    source: str
    unused: dict[str, int] = field(default_factory=dict)

    def queries(self) -> list[str]:
        """The judged queries with at least one relevant (grade > 0) document, in order."""
        return list(dict.fromkeys(j.query for j in self.judgments if j.grade > 0))


def check_source(index: str | None, data: str | None) -> None:
    """Refuse, before any model loads, a run with neither or both of an index and a BEIR folder,
    an index that cannot be opened or holds no judgment, or a folder that is not BEIR's or has no
    train split.

    Raises:
        EncodrError: naming the problem and the fix.
    """
    from ...data.beir import splits

    if bool(index) == bool(data):
        raise EncodrError(
            f"the judged recipe learns from judgments: pass {S.index} INDEX (its judgments) or a BEIR folder (its train qrels), "
            "not both"
            if index
            else f"the judged recipe learns from judgments: pass {S.index} INDEX (its judgments, encodr judge) "
            "or a BEIR folder (FILE: corpus.jsonl, queries.jsonl, qrels/train.tsv)",
            field="index",
        )
    if index:
        from ...index import Index
        from ...index.sharded import is_sharded

        if is_sharded(index):
            raise EncodrError(
                f"index {index} is sharded; the judged recipe learns from one index's judgments: tune on an index built "
                f"without {S.shards} over the same documents, with its judgments",
                field="index",
            )
        from ...index.judgments import Judgments

        with Index.open(index) as opened:
            if not Judgments(opened.path).count():
                raise EncodrError(
                    f"index {index} has no judgments to learn from: judge some hits first (encodr judge QUERY DOC "
                    f"{S.index} {index}, the TUI's keys 0, 1 and 2 on a hit, or POST /v1/indexes/NAME/judgments), then tune",
                    field="index",
                )
    elif "train" not in splits(data):
        raise EncodrError(
            f"{data}: no qrels/train.tsv; the judged recipe learns from a BEIR folder's train split "
            f"(its splits: {', '.join(splits(data)) or 'none'})"
        )


def read_judged(index: str | None, data: str | None, out: Path) -> JudgedData:
    """The judgments of ``index`` (an index directory or workspace name: its ``current``
    judgments), or of the BEIR folder ``data`` (its ``qrels/train.tsv``), with the folder of
    :class:`JudgedData` written under ``out``.

    Raises:
        EncodrError: neither or both given; an index that cannot be opened; a folder that is not
            BEIR's, has no train split, or whose qrels name unknown documents.
    """
    check_source(index, data)
    out.mkdir(parents=True, exist_ok=True)
    if index:
        from ...index import Index
        from ...index.judgments import Judgments

        with Index.open(index) as opened:
            found = with_status(Judgments(opened.path).all(), opened.texts)
            corpus = corpus_of(opened)
        source = str(opened.path)
    else:
        folder = Path(data)
        corpus = {}
        with open(folder / "corpus.jsonl", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    doc = json.loads(line)
                    corpus[str(doc["_id"])] = f"{doc.get('title') or ''} {doc.get('text') or ''}".strip()
        rows = read_import(folder / "queries.jsonl", folder / "qrels" / "train.tsv", set(corpus))
        found = [Judgment(q, d, g, front="import") for q, d, g in rows]
        source = str(folder / "qrels" / "train.tsv")
    usable = [j for j in found if j.status == CURRENT and j.fold in (TRAIN, DEV)]
    unused = {
        "edited": sum(j.status == "edited" for j in found),
        "orphaned": sum(j.status == "orphaned" for j in found),
        "test": sum(j.status == CURRENT and j.fold == "test" for j in found),
    }
    write_beir(corpus, usable, out, {JUDGED: (TRAIN, DEV)})  # the test fold is never written
    return JudgedData(out, corpus, usable, source, unused)


__all__ = ["DEV", "JUDGED", "TRAIN", "JudgedData", "check_source", "read_judged"]
