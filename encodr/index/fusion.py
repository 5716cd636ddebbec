"""Fusing a dense (vector) ranking with a keyword (BM25) ranking into one hybrid ranking.

Three fusions, as compared by Bruch et al. 2023 ("An Analysis of Fusion Functions for Hybrid
Retrieval", ACM TOIS) and as search engines ship them:

- ``zscore`` (the default): a convex combination of z-scores, ``s(d) = α·z_dense(d) + (1 − α)·z_kw(d)``,
  each list's scores standardised (mean 0, standard deviation 1) over the candidates of both
  lists; a candidate absent from the keyword list scores 0 there (BM25 of a text that holds no
  query term), one absent from the dense list the list's lowest cosine (a bound on its own).
  Distribution-based, as Qdrant's DBSF and OpenSearch's z-score normalisation are: the top of a
  list counts by how far it stands out, not as 1 by construction, so two lists' tops do not tie
  (min-max does that), and a text that alone holds a rare code (``HX-7731``) stands far above the
  rest of the keyword list. The weight α differs by what a candidate is: :data:`ZSCORE_ALPHA` for
  prose, :data:`CODE_ALPHA` for a passage of source code, where BM25 over identifiers serves a
  question in words poorly (CodeSearchNet's finding, Husain et al. 2019), unless the caller
  gives one α for all. Both weights were chosen with bench/fusion.py on the shared sets
  (SciFact's train claims, bench/answers.py's and bench/code_search.py's folders).
- ``convex``: the same combination over min-max normalised scores (each list mapped to [0, 1]
  over its own candidates; absent: 0), α = :data:`CONVEX_ALPHA`;
- reciprocal rank fusion (Cormack, Clarke & Büttcher 2009): ``s(d) = Σ_lists 1 / (K + rank(d))``
  with K = 60, ranks from 1; uses ranks only, so no score scale matters.

All are language-aware, which neither paper is: a keyword list cannot match a text in another
language than the query's, so a cross-lingual text that dense search ranks high would lose to
same-language texts that only share words with the query. A candidate whose language is known
and differs from the query's therefore takes, in the keyword list, the better of its own place
there and the place it has in the dense list (its dense rank for RRF, its normalised dense
score for the others). "Its own place there" is usually nothing or a poor one: a text in
another language reaches a keyword list only through the words the two languages share
(names, numbers, loanwords), so its keyword rank says little about it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FUSIONS = ("zscore", "convex", "rrf")
RRF_K = 60  # Cormack et al. 2009
CONVEX_ALPHA = 0.5  # weight of the dense scores (convex)
ZSCORE_ALPHA = 0.5  # weight of the dense z-scores of prose (zscore)
CODE_ALPHA = 0.85  # … of a passage of source code
FAST_STAGE_ALPHA = 0.1  # … of every candidate of an index at its fast stage (a static model's vectors: keywords lead)


def fuse(
    dense: list[tuple[int, float]],
    keyword: list[tuple[int, float]],
    fusion: str,
    query_lang: str | None = None,
    lang_of: dict[int, str | None] | None = None,
    alpha: float | None = None,
    code: set[int] | frozenset = frozenset(),
) -> list[tuple[int, float]]:
    """One ranking from a dense and a keyword ranking of the same corpus: :func:`fuse_arrays`
    on lists of pairs.

    Args:
        dense: (text id, cosine) best first.
        keyword: (text id, BM25 score, ≥ 0) best first.
        fusion, query_lang, lang_of, alpha, code: as :func:`fuse_arrays` takes them.

    Returns:
        (text id, fused score) over the union of both lists, best first (ties: dense order first);
        ``zscore``'s score is the weighted sum passed through the logistic function, in (0, 1).

    Raises:
        ValueError: an unknown fusion.
    """
    ids, scores = fuse_arrays(_pairs(dense), _pairs(keyword), fusion, query_lang, lang_of, Weights(alpha, frozenset(code)))
    return list(zip(ids.tolist(), scores.tolist()))


def fuse_arrays(
    dense: tuple[np.ndarray, np.ndarray],
    keyword: tuple[np.ndarray, np.ndarray],
    fusion: str,
    query_lang: str | None = None,
    lang_of: dict[int, str | None] | None = None,
    weights: "Weights | None" = None,
    pool: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One ranking from a dense and a keyword ranking of the same corpus (the module's three
    fusions), computed over arrays: a query's candidates are scored at once, not one by one.

    Args:
        dense: (ids, cosines), int (n,) and float (n,), best first, ids distinct.
        keyword: (ids, BM25 scores ≥ 0), int (m,) and float (m,), best first, ids distinct.
        fusion: ``zscore``, ``convex`` or ``rrf``.
        query_lang: the query's language (ISO 639-3), or None / ``und``: no language-aware step.
        lang_of: text id → stored language, for every candidate.
        weights: the dense weights (:class:`Weights`; default: the declared ones).
        pool: normalise (``zscore``'s mean and deviation, ``convex``'s range, the dense
            floor) over the candidates among the first ``pool`` of either list, however deep
            the lists are: a search that fetches more candidates (a larger ``k``, a deeper
            round for documents) then gives each candidate the score it gave before. None:
            over all of them.

    Returns:
        (ids int64 (u,), fused scores float64 (u,)) over the union of both lists, best first
        (ties: the order of the union, the dense list's ids before the keyword list's others).

    Raises:
        ValueError: an unknown fusion.
    """
    if fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
    weights = weights or Weights()
    alpha = weights.alpha
    union = _Union.of(dense, keyword)
    other = union.other_language(query_lang, lang_of or {})
    if fusion == "rrf":
        d_rank, k_rank = union.ranks()
        if pool is not None:  # as a first round of pool a list saw them (as_first_round)
            first = union.first(pool)
            d_rank = np.where(first & (d_rank > pool), np.nan, d_rank)
            k_rank = np.where(first & (k_rank > pool), np.nan, k_rank)
        k_rank = np.where(other & ~np.isnan(d_rank), np.fmin(d_rank, k_rank), k_rank)
        score = np.nan_to_num(1 / (RRF_K + d_rank)) + np.nan_to_num(1 / (RRF_K + k_rank))
    elif fusion == "zscore":
        d, k = union.as_first_round(pool)
        first = union.first(pool)
        floor = union.scores[0][:pool].min() if len(union.scores[0]) else 0.0  # absent from the dense list: its lowest cosine
        d_z = _standardised(np.where(np.isnan(d), floor, d), first)
        k_z = _standardised(np.maximum(np.nan_to_num(k), 0.0), first)
        k_z = np.where(other, np.maximum(k_z, d_z), k_z)
        weight = (
            np.full(len(union.ids), alpha) if alpha is not None else _code_weights(union.ids, weights.code, weights.code_alpha)
        )
        score = _logistic(weight * d_z + (1 - weight) * k_z)
    else:
        a = CONVEX_ALPHA if alpha is None else alpha
        d, k = union.values(lambda s: _scaled(s, pool))
        k = np.where(other & ~np.isnan(d), np.fmax(d, k), k)
        score = a * np.nan_to_num(d) + (1 - a) * np.nan_to_num(k)
    order = np.lexsort((np.arange(len(score)), -score))
    return union.ids[order], score[order]


@dataclass(frozen=True)
class Weights:
    """The dense weights of a fusion, in [0, 1].

    Attributes:
        alpha: one weight for every candidate (``zscore``, ``convex``); None: the declared ones
            (:data:`ZSCORE_ALPHA` and :data:`CODE_ALPHA`, :data:`CONVEX_ALPHA`).
        code: the candidates that are passages of source code (``zscore``'s :data:`CODE_ALPHA`).
        code_alpha: ``zscore``'s weight for ``code`` in place of :data:`CODE_ALPHA` (an
            identifier-shaped query: :mod:`.ranking`); ``alpha``, when given, wins.
    """

    alpha: float | None = None
    code: frozenset = frozenset()
    code_alpha: float | None = None


@dataclass(frozen=True)
class _Union:
    """The candidates of a dense and a keyword list: ``ids`` in first-seen order (the dense
    list's, then the keyword list's others), and where each list's entries sit among them."""

    ids: np.ndarray  # int64 (u,)
    at: tuple[np.ndarray, np.ndarray]  # each list's positions in ids: int (n,), int (m,)
    scores: tuple[np.ndarray, np.ndarray]  # each list's scores: float64 (n,), (m,)

    @classmethod
    def of(cls, dense: tuple[np.ndarray, np.ndarray], keyword: tuple[np.ndarray, np.ndarray]) -> "_Union":
        both = np.concatenate([np.asarray(dense[0], dtype=np.int64), np.asarray(keyword[0], dtype=np.int64)])
        unique, first, inverse = np.unique(both, return_index=True, return_inverse=True)
        seen = np.argsort(first, kind="stable")  # unique ids in the order first seen
        place = np.empty(len(unique), dtype=np.int64)
        place[seen] = np.arange(len(unique))
        at = place[inverse]
        n = len(dense[0])
        scores = (np.asarray(dense[1], dtype=np.float64), np.asarray(keyword[1], dtype=np.float64))
        return cls(unique[seen], (at[:n], at[n:]), scores)

    def values(self, scale=lambda s: s) -> tuple[np.ndarray, np.ndarray]:
        """Each candidate's score in each list (float64 (u,) each), passed through ``scale`` over
        the list's own scores; NaN where absent."""
        return tuple(self._spread(at, scale(s)) for at, s in zip(self.at, self.scores))

    def first(self, pool: int | None) -> np.ndarray:
        """bool (u,): the candidates among the first ``pool`` of either list (all: None)."""
        if pool is None:
            return np.ones(len(self.ids), dtype=bool)
        out = np.zeros(len(self.ids), dtype=bool)
        out[self.at[0][:pool]] = out[self.at[1][:pool]] = True
        return out

    def as_first_round(self, pool: int | None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`values`, except that a candidate among the first ``pool`` of one list has, in
        the other list, no value where it sits below that list's first ``pool`` (NaN: as a
        search that fetched ``pool`` a list saw it); deeper candidates keep theirs."""
        d, k = self.values()
        if pool is None:
            return d, k
        d_rank, k_rank = self.ranks()
        first = self.first(pool)
        d = np.where(first & (d_rank > pool), np.nan, d)
        k = np.where(first & (k_rank > pool), np.nan, k)
        return d, k

    def ranks(self) -> tuple[np.ndarray, np.ndarray]:
        """Each candidate's rank (from 1) in each list; NaN where absent."""
        return tuple(self._spread(at, np.arange(1, len(at) + 1, dtype=np.float64)) for at in self.at)

    def _spread(self, at: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = np.full(len(self.ids), np.nan)
        out[at] = values
        return out

    def other_language(self, query_lang: str | None, lang_of: dict) -> np.ndarray:
        """bool (u,): a candidate whose language is known and is not the query's."""
        if not query_lang or query_lang == "und" or not lang_of:
            return np.zeros(len(self.ids), dtype=bool)
        return np.fromiter(
            (bool(lang and lang != "und" and lang != query_lang) for lang in map(lang_of.get, self.ids.tolist())),
            dtype=bool,
            count=len(self.ids),
        )


def _pairs(ranked: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(ids int64, scores float64) of a list of (id, score)."""
    n = len(ranked)
    return np.fromiter((i for i, _ in ranked), np.int64, n), np.fromiter((s for _, s in ranked), np.float64, n)


def _code_weights(ids: np.ndarray, code, code_alpha: float | None = None) -> np.ndarray:
    """float64 (u,): ``code_alpha`` (default :data:`CODE_ALPHA`) for a candidate that is source
    code, else :data:`ZSCORE_ALPHA`."""
    if not code:
        return np.full(len(ids), ZSCORE_ALPHA)
    alpha = CODE_ALPHA if code_alpha is None else code_alpha
    return np.where(np.isin(ids, np.fromiter(code, np.int64, len(code))), alpha, ZSCORE_ALPHA)


def _logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^−x): a fused z-score shown in (0, 1), in the same order (a table's score column
    keeps its width, as the other fusions' scores do); computed without overflow for any x."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _standardised(values: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
    """z-scores of ``values`` by the mean and population standard deviation of those ``among``
    marks (bool, default all); all 0 when they are all equal."""
    if not len(values):
        return values
    sample = values if among is None else values[among]
    sd = sample.std()
    return (values - sample.mean()) / sd if sd > 0 else np.zeros_like(values)


def _scaled(scores: np.ndarray, pool: int | None = None) -> np.ndarray:
    """float64 scores, best first, mapped to [0, 1] by the range of the first ``pool`` (all:
    None); deeper ones below it are 0 (all 1 when the range is empty)."""
    if not len(scores):
        return scores
    low, high = scores[:pool].min(), scores.max()
    return np.maximum((scores - low) / (high - low), 0.0) if high > low else np.ones_like(scores)


def interpolate(cross: list[float], first: list[float], weight: float) -> list[float]:
    """A re-ranker's scores interpolated with the first stage's over the same candidates:
    ``w · ŝ_cross + (1 − w) · ŝ_first``, each min-max normalised over the candidates as the
    convex fusion normalises (the score interpolation of re-rankers with their first stage, as
    in Pyserini; Nogueira & Cho 2019's monoBERT uses the cross-encoder alone, w = 1).

    Args:
        cross: n cross-encoder scores (any scale).
        first: n first-stage scores of the same candidates (any scale).
        weight: w in [0, 1]; 1 returns ``cross`` unchanged, 0 orders as ``first``.

    Returns:
        n scores, higher is better.
    """
    if weight >= 1:
        return list(cross)
    c, f = _min_max(list(enumerate(cross))), _min_max(list(enumerate(first)))
    return [weight * c[i] + (1 - weight) * f[i] for i in range(len(cross))]


def _min_max(ranked: list[tuple[int, float]]) -> dict[int, float]:
    """Scores mapped to [0, 1] over the list (all 1 when they are equal), by id (:func:`_scaled`)."""
    scaled = _scaled(np.fromiter((s for _, s in ranked), np.float64, len(ranked)))
    return {i: float(v) for (i, _), v in zip(ranked, scaled)}
