"""BM25 from postings held in memory: a long-lived reader's keyword search without FTS5's scan.

SQLite FTS5 answers ``match … order by bm25() limit k`` by scoring every row that holds any
query term, in C, on every query: a question of ten words, some of them common, scores half an
index each time. A reader that stays open (the TUI, ``encodr serve``, ``encodr mcp``, a
library's searcher) meets the same common terms in query after query, so this module keeps
each phrase's postings, the rows holding it and its BM25 term per row, and sums them in numpy.

The score is FTS5's ``bm25()`` term for term (:mod:`.termstats`: the same idf with its floor,
the same saturation, the phrases summed in the query's order, in float64), so the hits and
their scores are FTS5's own; ties are broken by the lower row id. Each phrase's postings come
from FTS5 itself, so this module needs no tokenizer of its own: a plain one-term phrase's
counts read from FTS5's index (:meth:`.texts.TextStore.term_counts`), any other phrase's rows
with the phrase alone's ``bm25()`` (:meth:`.texts.TextStore.phrase_hits`), from which its
frequency in each row is recovered exactly (:func:`~.termstats.frequencies`); each row's length
is FTS5's (:meth:`.texts.TextStore.row_lengths`).

How ours differs from a search engine's postings (Lucene's, bm25s's precomputed sparse
matrix): nothing is written to disk or built with the index; a phrase is fetched from FTS5
the first time a query needs it and kept while it fits a budget (least recently used first
out). That first fetch costs more than FTS5's own scoring of the phrase; every later
query holding the phrase reads it from memory.

A generation never changes (:mod:`.reader`), so what is held stays true while its reader is open.
"""

from __future__ import annotations

import re
import threading
from typing import Callable

import numpy as np

from .kept import Kept
from .termstats import frequencies, idf, saturation

BUDGET = 1 << 22  # postings held at most (row id and score: 16 bytes each, 64 MiB)
_ALTERNATIVES = re.compile(r'"[^"]+"(?: OR "[^"]+")*')
_QUOTED = re.compile(r'"[^"]+"')

Fetch = Callable[[str], "tuple[np.ndarray, np.ndarray] | None"]


def alternatives(expression: str) -> list[str] | None:
    """The phrases of an FTS5 expression that only ORs quoted phrases (``"a" OR "b c"``, what
    :func:`~.keywords.keyword_expression` writes for a query without a quoted part), in order,
    each quoted; None for any other expression (a required phrase, ``AND``)."""
    if not _ALTERNATIVES.fullmatch(expression):
        return None
    return _QUOTED.findall(expression)


class Postings:
    """The postings of one read-only keyword index (FTS5 table), held in memory as queries need them.

    Args:
        rows: N, the keyword index's rows; ``tokens``: their tokens in all (FTS5's totals,
            :meth:`.texts.TextStore.keyword_totals`).
        fetch: phrase → (ids int64 (m,), the phrase alone's −``bm25()`` float64 (m,)) of every
            row holding it (:meth:`.texts.TextStore.phrase_hits`).
        lengths: → float64 (max id + 1,): each row's tokens |d| by id, read once when first
            needed (:meth:`.texts.TextStore.row_lengths`).
        known_rows: phrase → n(p) where already known (None otherwise): a phrase known to be
            held by more rows than a quarter of ``budget`` is left to FTS5, unfetched.
        budget: postings held at most; a phrase of more than a quarter of it is never held.
        counts: phrase → (ids int64 ascending, f(p, d) float64) where FTS5's index gives them
            without scoring (a one-term phrase, :meth:`.texts.TextStore.term_counts`), else
            None; then ``fetch`` serves, and f(p, d) is recovered from its scores.

    Thread-safe: queries may run on several threads at once.
    """

    def __init__(
        self,
        rows: int,
        tokens: int,
        fetch: Fetch,
        lengths: Callable[[], np.ndarray],
        known_rows,
        budget: int = BUDGET,
        counts: Fetch = lambda phrase: None,
    ):
        self.rows, self.avgdl = rows, tokens / rows if rows else 1.0
        self._fetch, self._lengths, self._known_rows, self._counts = fetch, lengths, known_rows, counts
        self.budget = budget
        self._held = Kept(budget)  # phrase → (ids, BM25 term), counted by its postings
        self._big: set[str] = set()  # phrases too big to hold: FTS5 scores them
        self._row_lengths: np.ndarray | None = None
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The postings held."""
        return self._held.size

    def top(self, phrases: list[str], k: int) -> list[tuple[int, float]] | None:
        """The top ``k`` rows by FTS5's ``bm25()`` of the OR of ``phrases`` (quoted FTS5
        phrases, :func:`alternatives`): (id, −``bm25()``) best first, ties by id, as
        :meth:`.texts.TextStore.keyword_hits` gives them. None when a phrase is too big to hold
        (the caller asks FTS5).

        Implements the sum of Robertson and Zaragoza (2009), eq. 3.27, as :mod:`.termstats`
        writes it, over postings rather than over FTS5's scan.
        """
        held = self._held_for(phrases)
        if held is None:
            return None
        present = [(ids, terms) for ids, terms in held if len(ids)]
        if not present:
            return []
        score = np.zeros(1 + max(int(ids[-1]) for ids, _ in present), dtype=np.float64)
        for ids, terms in present:  # each phrase once per row, in the query's order: FTS5's sum
            score[ids] += terms
        found = np.flatnonzero(score)  # every BM25 term is positive (idf ≥ 1e−6, f ≥ 1)
        values = score[found]
        if len(found) > k:  # the k best, with every row tied with the k-th (ties go by id)
            kth = np.partition(values, len(values) - k)[len(values) - k]
            keep = values >= kth
            found, values = found[keep], values[keep]
        order = np.lexsort((found, -values))[:k]
        return [(int(found[i]), float(values[i])) for i in order]

    def _held_for(self, phrases: list[str]) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """Each phrase's (ids ascending, BM25 term), those not held fetched and kept; None
        when one is too big to hold."""
        with self._lock:
            if any(p in self._big or (self._known_rows(p) or 0) > self.budget // 4 for p in phrases):
                return None
            found = {p: self._held.get(p) for p in phrases}
        for phrase, postings in found.items():
            if postings is None:
                found[phrase] = postings = self._postings(phrase)
                with self._lock:
                    self._keep(phrase, postings)
        return None if any(p in self._big for p in phrases) else [found[p] for p in phrases]

    def _postings(self, phrase: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids int64 ascending, the phrase's BM25 term in each row, float64) from FTS5."""
        counted = self._counts(phrase)
        ids, values = counted if counted is not None else self._fetch(phrase)
        order = np.argsort(ids, kind="stable")
        ids, values = ids[order], values[order]
        if not len(ids):
            return ids, values
        if self._row_lengths is None:
            self._row_lengths = self._lengths()
        lengths = self._row_lengths[ids]
        phrase_idf = idf(self.rows, len(ids))
        freq = values if counted is not None else frequencies(values, lengths, phrase_idf, self.avgdl)
        return ids, phrase_idf * saturation(freq, lengths, self.avgdl)

    def _keep(self, phrase: str, postings: tuple[np.ndarray, np.ndarray]) -> None:
        """Hold ``postings`` (under the lock), or mark the phrase too big when they are over a
        quarter of the budget; the least recently used go first until the budget holds."""
        if len(postings[0]) > self.budget // 4:
            self._big.add(phrase)
            return
        self._held.put(phrase, postings, len(postings[0]))
