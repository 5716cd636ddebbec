"""A retrieval dev set built from a user's own documents, without labels (``encodr tune
--recipe retrieval --dev auto``).

Guarantee: each pseudo-query is a sentence cut out of one document; the returned documents no
longer hold it, so a model trained on them never sees a pseudo-query, and retrieving the
document from its cut sentence is the inverse cloze task (Lee et al. 2019, ORQA §5) scored as
BEIR scores search: nDCG@10 against the whole corpus, through :class:`~.retrieval.RetrievalEvaluator`
(the code of ``encodr eval retrieval``).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..data.records import Record
from ..errors import EncodrError, S

# sentence ends: . ! ? (and their CJK forms) followed by space, or a CJK end mark alone
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
MIN_WORDS = 5  # a pseudo-query has at least this many words: shorter ones ("Fig. 2.") say little
MIN_SENTENCES = 3  # a document gives a pseudo-query only if at least two sentences stay behind


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans (start, end) of the sentences of ``text``, split after ``.``, ``!``,
    ``?`` followed by white space and after ``。！？``; leading and trailing space excluded.

    Returns:
        Non-overlapping spans in order; one span for a text without sentence ends.
    """
    spans, start = [], 0
    for m in SENTENCE_END.finditer(text):
        if text[start : m.start()].strip():
            spans.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


@dataclass
class PseudoDev:
    """A label-free retrieval dev set.

    Attributes:
        documents: the corpus with each pseudo-query's sentence cut out of its document (the
            texts to train on and to search).
        queries: pseudo-query id → sentence.
        qrels: pseudo-query id → the id of the document it was cut from.
        searched: indices (into ``documents``) of the documents the dev set searches: all of
            them, or with a cap, the pseudo-queries' own and a seeded sample of the others.
    """

    documents: list[Record]
    queries: dict[str, str]
    qrels: dict[str, str]
    searched: list[int] | None = None

    def training_documents(self, holdout: str = "sentences") -> list[Record]:
        """The documents to train on: all of them, each pseudo-query's sentence cut out
        (``holdout="sentences"``), or only those that gave no pseudo-query (``"documents"``).

        Raises:
            ValueError: another ``holdout``.
        """
        if holdout == "sentences":
            return self.documents
        if holdout != "documents":
            raise ValueError(f"holdout {holdout!r}: sentences or documents")
        held = set(self.qrels.values())
        return [d for d in self.documents if d.document_id not in held]

    def write(self, folder: str | Path) -> Path:
        """Write it in BEIR's layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/dev.tsv``),
        so :func:`encodr.evaluation.dev_set` and ``encodr eval retrieval`` read it.

        Returns:
            The folder.
        """
        root = Path(folder)
        (root / "qrels").mkdir(parents=True, exist_ok=True)
        with open(root / "corpus.jsonl", "w", encoding="utf-8") as f:
            for i in self.searched if self.searched is not None else range(len(self.documents)):
                doc = self.documents[i]  # the title stays in the text, as the documents were read
                f.write(json.dumps({"_id": doc.document_id, "text": doc.text}, ensure_ascii=False) + "\n")
        with open(root / "queries.jsonl", "w", encoding="utf-8") as f:
            for qid, text in self.queries.items():
                f.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
        with open(root / "qrels" / "dev.tsv", "w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in self.qrels.items()))
        return root


def pseudo_dev(documents: list[Record], n: int, seed: int = 42, searched: int = 0) -> PseudoDev:
    """Hold out ``n`` pseudo-queries: from ``n`` documents drawn at random (seeded) among those
    with at least :data:`MIN_SENTENCES` sentences, one sentence of at least :data:`MIN_WORDS`
    words each, cut out of its document.

    Args:
        documents: whole documents (one record each; distinct ids).
        n: pseudo-queries to hold out (fewer when fewer documents qualify).
        seed: the draw.
        searched: at most this many documents are searched by the dev set (0: all): the
            pseudo-queries' own and a seeded sample of the others. Each evaluation indexes
            them anew, so on a large corpus a cap keeps checkpoint selection affordable; the
            task gets easier with fewer distractors, which shifts every checkpoint's score
            alike.

    Returns:
        A :class:`PseudoDev`.

    Raises:
        EncodrError: no document has enough sentences to give one (naming the rule), or two
            documents share an id.
    """
    ids = [d.document_id for d in documents]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))
        raise EncodrError(
            f"two documents share the id '{dup}'; a dev set needs one id per document: give each an id, or drop {S.dev} auto"
        )
    rng = random.Random(seed)
    candidates = []
    for i, doc in enumerate(documents):
        spans = sentence_spans(doc.text)
        usable = [s for s in spans if len(doc.text[s[0] : s[1]].split()) >= MIN_WORDS]
        if len(spans) >= MIN_SENTENCES and usable:
            candidates.append((i, usable))
    if not candidates:
        raise EncodrError(
            f"{S.dev} auto cuts a sentence of {MIN_WORDS}+ words out of documents of {MIN_SENTENCES}+ sentences, and none of "
            f"these documents has that many; pass {S.dev} with a BEIR folder of real queries, or longer documents"
        )
    chosen = rng.sample(candidates, min(n, len(candidates)))
    out = list(documents)
    queries, qrels = {}, {}
    for number, (i, usable) in enumerate(sorted(chosen)):
        start, end = rng.choice(usable)
        doc = out[i]
        queries[f"pq{number}"] = doc.text[start:end]
        qrels[f"pq{number}"] = ids[i]
        out[i] = replace(doc, text=(doc.text[:start].rstrip() + " " + doc.text[end:].lstrip()).strip())
    kept = None
    if searched and searched < len(out):
        own = {i for i, _ in chosen}
        others = [i for i in range(len(out)) if i not in own]
        kept = sorted(own | set(rng.sample(others, max(0, searched - len(own)))))
    return PseudoDev(out, queries, qrels, kept)
