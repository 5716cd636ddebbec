"""The judged recipe's query adapter (:mod:`encodr.index.adapter`): learned from the judged
queries in seconds, and kept only where cross-validation over those queries says it helps.

Training (:func:`fit`): each judged query's vector, as the index's model encodes it, is pulled
toward its relevant documents' best passage and away from the passages the model ranks above it
that no judgment calls relevant, and from the other queries' positives: InfoNCE at the recipe's
scale s = 1/τ, full batch, Adam, ``V`` under weight decay so the map stays near the identity.
Chroma's and LlamaIndex's adapters train a full linear map on (query, document) pairs; this one is
low-rank and residual, and is judged on queries it did not see before it is kept.

Selection (:meth:`~.crossval.Folds.score_adapter`): on the recipe's cross-validation folds
(:func:`document_folds`: queries that share a relevant document in one fold, so that a held-out
query's documents were never a training query's, and an adapter that only learned the judged
documents is not kept), each fold's queries are searched with an adapter fitted on the other
folds' queries, on the starting model's index and on the index of the fold's own model; the
adapter is kept by the recipe's rule, against the same model without it, in the search the
index gives by default (hybrid where it has a keyword index). :func:`held_out` scores other
splits (``bench/query_adapter.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ...evaluation.retrieval import ndcg_at_10
from ...index.adapter import QueryAdapter

DEPTH = 50  # passages retrieved per query for its hard negatives and for nDCG@10 at the document level
NEGATIVES = 16  # hard negatives per query
STEPS = 50  # full-batch Adam steps
LR = 1e-3
DECAY = 1.0  # weight decay on V: the correction stays small


@dataclass
class Pairs:
    """What the adapter learns from: for n judged queries, float32 ``queries`` (n, d), their best
    relevant passage ``positives`` (n, d) and ``negatives`` (n, NEGATIVES, d) (zeros where a query
    has fewer, masked by ``mask`` (n, NEGATIVES) bool)."""

    queries: np.ndarray
    positives: np.ndarray
    negatives: np.ndarray
    mask: np.ndarray

    def subset(self, rows: np.ndarray) -> "Pairs":
        """The pairs of the queries at ``rows`` (int (m,))."""
        return Pairs(self.queries[rows], self.positives[rows], self.negatives[rows], self.mask[rows])


def fold_of(query: str, folds: int) -> int:
    """The cross-validation fold of ``query``: a hash of its text (stable across runs and machines)."""
    return int(hashlib.sha1(query.encode("utf-8")).hexdigest()[:8], 16) % folds


def document_folds(queries: list[str], relevant: list[set[str]], folds: int) -> list[int]:
    """Each query's cross-validation fold, queries that share a relevant document always in one
    fold (their groups joined by union-find), a group's fold the hash of its first query text
    (:func:`fold_of`): a held-out query's documents are never relevant to a training query."""
    parent = list(range(len(queries)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, docs in enumerate(relevant):
        for d in docs:
            if d in owner:
                parent[root(i)] = root(owner[d])
            else:
                owner[d] = i
    first: dict[int, str] = {}
    for i, q in enumerate(queries):
        r = root(i)
        first[r] = min(first.get(r, q), q)
    return [fold_of(first[root(i)], folds) for i in range(len(queries))]


def mine(searcher, queries: list[str], relevant: list[set[str]]) -> Pairs:
    """:class:`Pairs` for ``queries`` (each with ``relevant``: its documents judged relevant, by
    id) from ``searcher``'s index and encoder, with no adapter applied."""
    from ...index.options import DENSE, SearchOptions

    index = searcher.index
    q = index.encode_queries(searcher.encoder, queries).astype(np.float32)
    docs = sorted({d for docs in relevant for d in docs})
    texts = {d: [t for _, t in index.passages_of(d)] for d in docs}
    flat = [t for d in docs for t in texts[d]]
    encoded = index.encode_passages(searcher.encoder, flat).astype(np.float32) if flat else np.zeros((0, q.shape[1]), np.float32)
    at, vectors = 0, {}
    for d in docs:
        vectors[d] = encoded[at : at + len(texts[d])]
        at += len(texts[d])
    _, hits = searcher.query(queries, SearchOptions(mode=DENSE, k=DEPTH, passages=True))
    pos = np.zeros_like(q)
    neg = np.zeros((len(queries), NEGATIVES, q.shape[1]), np.float32)
    mask = np.zeros((len(queries), NEGATIVES), bool)
    for i, (row, wanted) in enumerate(zip(hits, relevant)):
        own = np.concatenate([vectors[d] for d in wanted if len(vectors.get(d, ()))] or [np.zeros((1, q.shape[1]), np.float32)])
        pos[i] = own[int(np.argmax(own @ q[i]))]
        others = [h.id for h in row if h.document not in wanted][:NEGATIVES]
        if others:
            neg[i, : len(others)] = index.vectors_of(others)
            mask[i, : len(others)] = True
    return Pairs(q, pos, neg, mask)


SCHEDULE = (STEPS, LR, DECAY)  # fit's default: full-batch steps, learning rate, weight decay on V


def fit(
    pairs: Pairs, rank: int, scale: float, seed: int = 0, schedule: tuple[int, float, float] = SCHEDULE
) -> tuple[np.ndarray, np.ndarray]:
    """The adapter's ``U`` and ``V`` (float32 (d, rank) each) learned from ``pairs`` (see the
    module docstring): InfoNCE over [the positive, the query's hard negatives, the other queries'
    positives] at ``scale`` = 1/τ, for ``schedule`` (steps, learning rate, weight decay on V)."""
    steps, lr, decay = schedule
    import torch

    generator = torch.Generator().manual_seed(seed)
    q, p = torch.from_numpy(pairs.queries), torch.from_numpy(pairs.positives)
    n, d = q.shape
    neg, mask = torch.from_numpy(pairs.negatives), torch.from_numpy(pairs.mask)
    u = torch.nn.Parameter(torch.randn(d, rank, generator=generator) / d**0.5)
    v = torch.nn.Parameter(torch.zeros(d, rank))
    optimiser = torch.optim.AdamW([{"params": [u], "weight_decay": 0.0}, {"params": [v], "weight_decay": decay}], lr=lr)
    others = ~torch.eye(n, dtype=torch.bool)
    for _ in range(steps):
        moved = torch.nn.functional.normalize(q + (q @ u) @ v.T, dim=-1)
        hard = torch.einsum("nd,nkd->nk", moved, neg).masked_fill(~mask, float("-inf"))
        batch = (moved @ p.T).masked_fill(~others, float("-inf"))
        logits = torch.cat([(moved * p).sum(-1, keepdim=True), hard, batch], dim=1) * scale
        loss = torch.nn.functional.cross_entropy(logits, torch.zeros(n, dtype=torch.long))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return u.detach().numpy().astype(np.float32), v.detach().numpy().astype(np.float32)


def searched_ndcg(searcher, queries: list[str], relevant: list[set[str]], mode: str) -> np.ndarray:
    """Per-query nDCG@10 × 100 of ``searcher`` (with whatever adapter it holds) in ``mode``,
    documents ranked by their best passage: float64 (len(queries),)."""
    from ...index.options import SearchOptions

    _, hits = searcher.query(queries, SearchOptions(mode=mode, k=DEPTH))
    return np.asarray([ndcg_at_10([h.document for h in row], wanted) for row, wanted in zip(hits, relevant)], dtype=np.float64)


@dataclass
class Judged:
    """The judged queries cross-validation reads: their texts, each one's relevant documents and
    their mined :class:`Pairs` (row i of each is query i)."""

    queries: list[str]
    relevant: list[set[str]]
    pairs: Pairs


def held_out(
    searcher, judged: Judged, folds: np.ndarray, recipe, modes: tuple[str, ...], seconds: dict | None = None, schedule=SCHEDULE
) -> dict:
    """Each query's nDCG@10 × 100 in each of ``modes``, searched with an adapter fitted on the
    queries of the other folds (``folds``: int (n,), a fold per query; the recipe's rank, scale
    and seed, and ``schedule``: :func:`fit`'s): {mode: float64 (n,)}, NaN for a query whose fold has fewer than 2 others
    to fit on.
    ``seconds``, when given, gathers the time spent fitting (``fit``) and searching (``search``).
    ``searcher`` must hold no adapter; it holds none after."""
    import time

    seconds = {} if seconds is None else seconds
    after = {m: np.full(len(judged.queries), np.nan) for m in modes}
    for f in sorted(set(folds.tolist())):
        held, train = np.flatnonzero(folds == f), np.flatnonzero(folds != f)
        if len(train) < 2:
            continue
        started = time.perf_counter()
        u, v = fit(judged.pairs.subset(train), recipe.adapter_rank, recipe.scale, recipe.seed, schedule)
        seconds["fit"] = seconds.get("fit", 0.0) + time.perf_counter() - started
        started = time.perf_counter()
        searcher.adapter = QueryAdapter(u, v, searcher.fingerprint, {})
        try:
            for m in modes:
                after[m][held] = searched_ndcg(searcher, [judged.queries[i] for i in held], [judged.relevant[i] for i in held], m)
        finally:
            searcher.adapter = None
        seconds["search"] = seconds.get("search", 0.0) + time.perf_counter() - started
    return after
