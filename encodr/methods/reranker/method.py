"""The re-ranker recipe's run: read the documents as ``encodr index`` does, split them into
passages, mine (pseudo-query, passage) pairs with the starting bi-encoder, then Trans-Encoder's
cycles (:class:`~encodr.methods.trans_encoder.method.TransEncoderRun`) on them."""

from __future__ import annotations

import hashlib

import numpy as np

from ...data.files import passage_splitter
from ...data.pairs import PairData
from ...errors import EncodrError, S
from ...progress import ProgressEvent, ProgressFn, silent
from ...training import Outcome, RunContext, Stream
from ..retrieval.method import read_documents
from ..retrieval.pairs import Passage, ict_pair
from ..trans_encoder.method import TransEncoderRun


def mine(
    encoder,
    passages: list[str],
    queries: list[tuple[str, str, int]],
    candidates: int,
    document_of: list[int],
    progress: ProgressFn = silent,
    ceiling: float = 0.0,
) -> tuple[list[list[int]], list[list[float]], np.ndarray]:
    """For each pseudo-query, the ``candidates − 1`` passages the bi-encoder ranks highest
    among the other documents' passages, and their cosines. Its own document's are left out: a neighbouring
    passage shares text with the query's (the splitter's overlap) and may hold the query
    sentence itself, which the positive lacks — as negatives they would teach the cross-encoder
    that matching the query's words makes a passage less relevant.

    With ``ceiling`` c > 0, a negative must also score below c × the query's cosine with its
    own positive (positive-aware mining, NV-Retriever's "TopK-PercPos", Moreira et al. 2024):
    the positive is its passage with the query sentence cut out, so the nearest other passages
    are often closer to the query than it is, and as negatives they would teach that closeness
    to the query means irrelevance.

    Args:
        encoder: the starting :class:`~encodr.models.Encoder` (its query and document prompts apply).
        passages: the N passage texts.
        queries: (query, positive, index of its passage) for Q queries.
        candidates: pairs per query, its positive included.
        document_of: N document indices, one per passage.
        progress: called with ``mine pairs`` events, texts encoded of N + Q (+ Q positives with ``ceiling``).
        ceiling: c in [0, 1); 0: off.

    Returns:
        Q lists of passage indices, best first (fewer where the corpus is small); Q lists of
        their cosines with the query (float); the queries' vectors, float32 (Q, d).
    """
    import faiss

    total, done = len(passages) + len(queries) * (2 if ceiling else 1), 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        progress(ProgressEvent("mine pairs", done, total))

    vectors = encoder.encode(passages, prompt=encoder.prompt("document"), on_batch=step)
    asked = encoder.encode([q for q, _, _ in queries], prompt=encoder.prompt("query"), on_batch=step)
    limit = np.full(len(queries), np.inf)
    if ceiling:
        limit = ceiling * np.sum(
            asked * encoder.encode([p for _, p, _ in queries], prompt=encoder.prompt("document"), on_batch=step), axis=1
        )
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    scores, top = index.search(
        np.ascontiguousarray(asked, dtype=np.float32), min((16 if ceiling else 4) * candidates, len(passages))
    )
    kept = [
        [n for n, j in enumerate(row) if j >= 0 and document_of[j] != document_of[own] and scores[q, n] < limit[q]][
            : candidates - 1
        ]
        for q, ((_, _, own), row) in enumerate(zip(queries, top))
    ]
    return (
        [[int(top[q, n]) for n in ns] for q, ns in enumerate(kept)],
        [[float(scores[q, n]) for n in ns] for q, ns in enumerate(kept)],
        np.asarray(asked, dtype=np.float32),
    )


def listwise_stream(
    scorer, pairs: list[tuple[str, str]], groups: list[range], labels: np.ndarray, queries_per_step: int, temperature: float
) -> Stream:
    """Bi → cross as a ranking of each query's candidates: ListNet (Cao et al. 2007) over a
    group, sentence-transformers' ``ListNetLoss``, with the pseudo-labels divided by a
    temperature τ before its softmax.

    Trans-Encoder's Eq. 2 fits each pair's label on its own (BCE); a re-ranker is only asked
    to order one query's candidates, so here the loss is the cross-entropy between
    ``softmax(labels / τ)`` and ``softmax(logits)`` over the query's group. The labels are
    the same as Eq. 2's (the positive's known label, the bi-encoder's cosines for the mined
    negatives); τ sets how much of the target's mass the positive takes (τ → 0: one-hot on
    the positive, InfoNCE over the mined negatives). ``ListNetLoss`` alone takes the labels
    through a plain softmax, which for cosines in [0.5, 1] is close to uniform.

    Args:
        scorer: the :class:`~encodr.models.CrossScorer` being trained.
        pairs: P (query, passage) pairs, each query's contiguous.
        groups: Q ranges of ``pairs``, one per query (its positive first).
        labels: float array (P,), pseudo-labels in [0, 1].
        queries_per_step: global queries per step (each brings its group's pairs).
        temperature: τ > 0.

    Returns:
        A :class:`~encodr.training.Stream` of Q examples; a batch is (queries, lists of
        passages, list of float32 label tensors (n_q,) already divided by τ).
    """
    import torch
    from sentence_transformers.cross_encoder.losses import ListNetLoss

    listnet = ListNetLoss(scorer.ce)

    def batch(indices: list[int], epoch: int):
        chosen = [groups[i] for i in indices]
        return (
            [pairs[g[0]][0] for g in chosen],
            [[pairs[j][1] for j in g] for g in chosen],
            [torch.tensor(labels[list(g)] / temperature, dtype=torch.float32) for g in chosen],
        )

    def loss(module, b):
        queries, passages, targets = b
        return listnet([queries, passages], targets)

    return Stream("cross", len(groups), batch, loss, queries_per_step)


class RerankerRun(TransEncoderRun):
    """Trans-Encoder on pairs mined from documents (see :mod:`encodr.methods.reranker`)."""

    NO_DEV = (
        f"the re-ranker recipe keeps the last cycle's cross-encoder (it takes no {S.dev}); score it with encodr "
        "eval retrieval --rerank"
    )

    def read_pairs(self) -> PairData:
        self.documents, skipped = read_documents(self.request.data, self.request.limit)
        for s in skipped:
            self.ctx.warn(f"skipped {s.path}: {s.reason}")
        digest = hashlib.sha256("\x00".join(d.text for d in self.documents).encode()).hexdigest()
        return PairData([], [], str(self.request.data), digest, mined=True)

    def prepare_pairs(self) -> None:
        """Pseudo-queries (inverse cloze) from a seeded sample of passages, each paired with its
        own passage and with the starting bi-encoder's nearest passages of other documents
        (:func:`mine`). The mining's cosines are the first bi-encoder labels (``first_labels``);
        only the positives, passages with the query sentence cut out, are encoded again, and
        only when ``positive_label`` is off."""
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
            raise EncodrError(
                f"{self.request.data}: {len(queries)} passage(s) of two or more sentences; the re-ranker's "
                "pseudo-queries need at least 2"
            )
        pairs: list[tuple[str, str]] = []
        labels: list[float] = []
        found, cosines, asked = mine(
            encoder, [p.text for p in passages], queries, r.candidates, document_of, self.ctx.progress, r.negative_ceiling
        )
        if r.positive_label >= 0:
            own = np.full(len(queries), r.positive_label)
        else:  # the bi-encoder's cosine of each query with its positive, as the labelling would give
            own = np.sum(
                asked * encoder.encode([positive for _, positive, _ in queries], prompt=encoder.prompt("document")), axis=1
            )
        self.groups = []
        for (query, positive, _), others, scores, label in zip(queries, found, cosines, own):
            self.groups.append(range(len(pairs), len(pairs) + 1 + len(others)))
            if r.positive_label >= 0:
                self.known[len(pairs)] = r.positive_label
            pairs.append((query, positive))
            pairs += [(query, passages[j].text) for j in others]
            labels += [float(label), *scores]
        self.pair_data.sentences = [p.text for p in passages]
        self.pairs = self.pair_data.pairs = pairs
        self.first_labels = np.asarray(labels, dtype=np.float64)
        done(pairs=len(pairs))

    def cross_stream(self, scorer, labels: np.ndarray) -> Stream:
        """``cross_loss: listnet``: :func:`listwise_stream` over each query's group,
        ``cross_batch_size`` pairs a step (whole groups, at least one); ``bce``: Eq. 2 on each
        pair (Trans-Encoder's own loss)."""
        r = self.recipe
        if r.cross_loss == "bce":
            return super().cross_stream(scorer, labels)
        return listwise_stream(
            scorer, self.pairs, self.groups, labels, max(1, r.cross_batch_size // r.candidates), r.label_temperature
        )


def run(ctx: RunContext) -> Outcome:
    """Train ``cross/`` (a CrossEncoder for ``--rerank``) and ``bi/`` on the request's documents.

    Raises:
        EncodrError: bad input (documents, model), checked before training.
    """
    return RerankerRun(ctx).run()
