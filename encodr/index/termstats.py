"""BM25 with term statistics from beyond one index: a sharded index's exact keyword scores.

Each shard of a sharded index (:mod:`.sharded`) ranks by SQLite FTS5's ``bm25()``, whose
statistics are the shard's own: its row count N, its average length avgdl, and each query
phrase's document frequency n. A term rare in one shard then scores higher there than it
would in one index. Elasticsearch's ``dfs_query_then_fetch`` fixes this with a first round trip
that collects the statistics of every shard; this module is that round trip's arithmetic:

1. each shard gives its :class:`KeywordStats` (N, total tokens, n of each phrase of each query);
2. the coordinator sums them (``+``): the statistics one index of all the shards' rows has;
3. each shard scores its matching rows with the summed statistics (:func:`bm25`) and returns
   its top k, which merge into one index's ranking.

The score is FTS5's ``bm25()`` (``ext/fts5/fts5_aux.c``), term for term (Robertson and
Zaragoza 2009, eq. 3.27, with k1 = 1.2, b = 0.75 and FTS5's floor on the idf):

    score(d) = Σ_p idf(p) · f(p, d) · (k1 + 1) / (f(p, d) + k1 · (1 − b + b · |d| / avgdl))
    idf(p)   = max(ln((N − n(p) + 0.5) / (n(p) + 0.5)), 1e−6)

over the phrases p of the query's FTS5 expression (:func:`~.keywords.keyword_expression`), with
f(p, d) the phrase's occurrences in row d and |d| the row's tokens. How ours differs from FTS5:
FTS5 does not give f(p, d) to SQL, so :func:`frequencies` recovers it, exactly (it is an
integer), from the row's local ``bm25()`` of the phrase alone and the local statistics.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .keywords import quoted

K1, B = 1.2, 0.75  # FTS5's bm25() constants
IDF_FLOOR = 1e-6  # FTS5's floor on a phrase's idf (a phrase in more than half the rows)
_QUOTED = re.compile(r'"[^"]*"\*?')  # a phrase, or a prefix query ("猫"*)


def expression_phrases(expression: str) -> list[str]:
    """The phrases of an FTS5 expression written by :func:`~.keywords.keyword_expression`, in
    order, each as its quoted FTS5 string (``'"vitamin d"'``, a prefix query ``'"猫"*'``): FTS5's
    ``bm25()`` sums over these."""
    return _QUOTED.findall(expression)


@dataclass(frozen=True)
class KeywordStats:
    """The term statistics of the rows of one index, or of several summed.

    Attributes:
        rows: N, rows in the keyword index.
        tokens: their tokens in all (avgdl = tokens / rows).
        hits: per query, each phrase (:func:`expression_phrases`) → the rows holding it, n(p).
    """

    rows: int
    tokens: int
    hits: tuple[dict[str, int], ...]

    def __add__(self, other: "KeywordStats") -> "KeywordStats":
        """The statistics of both indexes' rows together (the same queries' phrases)."""
        hits = tuple({p: n + b.get(p, 0) for p, n in a.items()} for a, b in zip(self.hits, other.hits))
        return KeywordStats(self.rows + other.rows, self.tokens + other.tokens, hits)

    @property
    def avgdl(self) -> float:
        """Average tokens per row (1.0 for an empty index)."""
        return self.tokens / self.rows if self.rows else 1.0

    def weightless(self, query: int):
        """A ``weightless`` for :func:`~.keywords.keyword_expression` of query number ``query``:
        given terms, those whose phrase is in at least half the rows (idf at its floor)."""
        return lambda terms: {t for t in terms if weighs_nothing(self.rows, self.hits[query].get(quoted(t), 0))}

    def idf(self, query: int, phrase: str) -> float:
        """idf(p) of ``phrase`` of query number ``query`` (the module's formula)."""
        return idf(self.rows, self.hits[query].get(phrase, 0))


def idf(rows: int, hits: int) -> float:
    """FTS5's idf: ln((N − n + 0.5) / (n + 0.5)), floored at :data:`IDF_FLOOR`."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows else 0.0
    return value if value > 0.0 else IDF_FLOOR


def weighs_nothing(rows: int, hits: int) -> bool:
    """Whether :func:`idf` of a term held by ``hits`` of ``rows`` texts is at its floor: held by at
    least half of them (ln((N − n + 0.5) / (n + 0.5)) ≤ 0), so ``bm25()`` weighs it at nothing."""
    return bool(rows) and 2 * hits >= rows


def saturation(freq: np.ndarray, length: np.ndarray, avgdl: float) -> np.ndarray:
    """f · (k1 + 1) / (f + k1 · (1 − b + b · |d| / avgdl)) for arrays of f and |d| (float64)."""
    return (freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * length / avgdl))


def frequencies(scores: np.ndarray, length: np.ndarray, phrase_idf: float, avgdl: float) -> np.ndarray:
    """f(p, d), recovered from the local ``bm25()`` scores (−bm25, float64 (m,)) of a query of
    the phrase p alone, its local idf, the rows' lengths |d| (m,) and the local avgdl: the
    saturation x = score / idf inverted, f = x · K / (k1 + 1 − x), rounded (f is an integer).

    Returns:
        float64 (m,), whole numbers ≥ 1.
    """
    x = scores / phrase_idf
    norm = K1 * (1 - B + B * length / avgdl)
    return np.maximum(np.rint(x * norm / (K1 + 1.0 - x)), 1.0)


def bm25(freqs: list[tuple[np.ndarray, float]], length: np.ndarray, avgdl: float) -> np.ndarray:
    """Σ_p idf(p) · saturation(f(p, d)) over the phrases, in the query's phrase order (as FTS5 sums).

    Args:
        freqs: per phrase, (f(p, d) float64 (m,), 0 where d lacks p; idf(p) by the statistics to score with).
        length: |d| of the m rows, float64 (m,).
        avgdl: the statistics' average length.

    Returns:
        float64 (m,): the rows' scores (−``bm25()``: higher is better).
    """
    score = np.zeros(len(length), dtype=np.float64)
    for freq, phrase_idf in freqs:
        score += phrase_idf * saturation(freq, length, avgdl)
    return score
