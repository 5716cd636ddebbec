"""The re-ranker recipe's run: read the documents as ``encodr index`` does, split them into
passages, mine (pseudo-query, passage) pairs with the starting bi-encoder, then Trans-Encoder's
cycles (:class:`~encodr.methods.trans_encoder.method.TransEncoderRun`) on them."""

from __future__ import annotations

import hashlib

import numpy as np

from ...data.files import passage_splitter
from ...data.pairs import PairData
from ...errors import EncodrError
from ...training import Outcome, RunContext
from ..retrieval.method import read_documents
from ..retrieval.pairs import Passage, ict_pair
from ..trans_encoder.method import TransEncoderRun


def mine(encoder, passages: list[str], queries: list[tuple[str, str, int]], candidates: int, document_of: list[int]) -> list[list[int]]:
    """For each pseudo-query, the ``candidates − 1`` passages the bi-encoder ranks highest
    among the other documents' passages. Its own document's are left out: a neighbouring
    passage shares text with the query's (the splitter's overlap) and may hold the query
    sentence itself, which the positive lacks — as negatives they would teach the cross-encoder
    that matching the query's words makes a passage less relevant.

    Args:
        encoder: the starting :class:`~encodr.models.Encoder` (its query and document prompts apply).
        passages: the N passage texts.
        queries: (query, positive, index of its passage) for Q queries.
        candidates: pairs per query, its positive included.
        document_of: N document indices, one per passage.

    Returns:
        Q lists of passage indices, best first (fewer where the corpus is small).
    """
    import faiss

    vectors = encoder.encode(passages, prompt=encoder.prompt("document"))
    asked = encoder.encode([q for q, _, _ in queries], prompt=encoder.prompt("query"))
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    _, top = index.search(np.ascontiguousarray(asked, dtype=np.float32), min(4 * candidates, len(passages)))
    return [[int(j) for j in row if j >= 0 and document_of[j] != document_of[own]][: candidates - 1] for (_, _, own), row in zip(queries, top)]


class RerankerRun(TransEncoderRun):
    """Trans-Encoder on pairs mined from documents (see :mod:`encodr.methods.reranker`)."""

    NO_DEV = "the re-ranker recipe keeps the last cycle's cross-encoder (it takes no --dev); score it with encodr eval retrieval --rerank"

    def read_pairs(self) -> PairData:
        self.documents, skipped = read_documents(self.request.data, self.request.limit)
        for s in skipped:
            self.ctx.warn(f"skipped {s.path}: {s.reason}")
        digest = hashlib.sha256("\x00".join(d.text for d in self.documents).encode()).hexdigest()
        return PairData([], [], str(self.request.data), digest, mined=True)

    def prepare_pairs(self) -> None:
        """Pseudo-queries (inverse cloze) from a seeded sample of passages, each paired with its
        own passage and with the starting bi-encoder's nearest passages of other documents (:func:`mine`)."""
        r = self.recipe
        done = self.timed("mine pairs", 0)
        encoder = self.bi_encoder(self.request.models[0])
        split = passage_splitter(encoder.tokenizer, r.bi_max_length - 2)
        chunks = [(n, Passage.of(chunk, d.title)) for n, d in enumerate(self.documents) for _, chunk in split(d.text)]
        passages, document_of = [p for _, p in chunks], [n for n, _ in chunks]
        rng = np.random.default_rng(r.seed)
        queries: list[tuple[str, str, int]] = []
        for i in rng.permutation(len(passages)):
            pair = ict_pair(passages[int(i)], rng, r.ict_keep)
            if pair:
                queries.append((*pair, int(i)))
                if len(queries) == r.queries:
                    break
        if len(queries) < 2:
            raise EncodrError(f"{self.request.data}: {len(queries)} passage(s) of two or more sentences; the re-ranker's pseudo-queries need at least 2")
        pairs: list[tuple[str, str]] = []
        for (query, positive, _), others in zip(queries, mine(encoder, [p.text for p in passages], queries, r.candidates, document_of)):
            if r.positive_label >= 0:
                self.known[len(pairs)] = r.positive_label
            pairs.append((query, positive))
            pairs += [(query, passages[j].text) for j in others]
        self.pair_data.sentences = [p.text for p in passages]
        self.pairs = self.pair_data.pairs = pairs
        done(pairs=len(pairs))


def run(ctx: RunContext) -> Outcome:
    """Train ``cross/`` (a CrossEncoder for ``--rerank``) and ``bi/`` on the request's documents.

    Raises:
        EncodrError: bad input (documents, model), checked before training.
    """
    return RerankerRun(ctx).run()
