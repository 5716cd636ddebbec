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

import math

FUSIONS = ("zscore", "convex", "rrf")
RRF_K = 60  # Cormack et al. 2009
CONVEX_ALPHA = 0.5  # weight of the dense scores (convex)
ZSCORE_ALPHA = 0.5  # weight of the dense z-scores of prose (zscore)
CODE_ALPHA = 0.8  # … of a passage of source code


def fuse(
    dense: list[tuple[int, float]],
    keyword: list[tuple[int, float]],
    fusion: str,
    query_lang: str | None = None,
    lang_of: dict[int, str | None] | None = None,
    alpha: float | None = None,
    code: set[int] | frozenset = frozenset(),
) -> list[tuple[int, float]]:
    """One ranking from a dense and a keyword ranking of the same corpus.

    Args:
        dense: (text id, cosine) best first.
        keyword: (text id, BM25 score, ≥ 0) best first.
        fusion: ``zscore``, ``convex`` or ``rrf``.
        query_lang: the query's language (ISO 639-3), or None / ``und``: no language-aware step.
        lang_of: text id → stored language, for every candidate.
        alpha: the dense weight in [0, 1] (``zscore``, ``convex``); None: the declared ones
            (:data:`ZSCORE_ALPHA` and :data:`CODE_ALPHA`, :data:`CONVEX_ALPHA`).
        code: the candidates that are passages of source code (``zscore``'s :data:`CODE_ALPHA`).

    Returns:
        (text id, fused score) over the union of both lists, best first (ties: dense order first);
        ``zscore``'s score is the weighted sum passed through the logistic function, in (0, 1).

    Raises:
        ValueError: an unknown fusion.
    """
    if fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
    lang_of = lang_of or {}

    def other_language(i: int) -> bool:
        lang = lang_of.get(i)
        return bool(query_lang and query_lang != "und" and lang and lang != "und" and lang != query_lang)

    order = list(dict.fromkeys([i for i, _ in dense] + [i for i, _ in keyword]))
    if fusion == "rrf":
        d_rank = {i: r for r, (i, _) in enumerate(dense, 1)}
        k_rank = {i: r for r, (i, _) in enumerate(keyword, 1)}
        for i, r in d_rank.items():
            if other_language(i):
                k_rank[i] = min(r, k_rank.get(i, r))
        score = {
            i: (1 / (RRF_K + d_rank[i]) if i in d_rank else 0.0) + (1 / (RRF_K + k_rank[i]) if i in k_rank else 0.0)
            for i in order
        }
    elif fusion == "zscore":
        d_z, k_z = _z_scores(dense, keyword, order)
        for i in order:
            if other_language(i):
                k_z[i] = max(k_z[i], d_z[i])
        weight = {i: alpha if alpha is not None else CODE_ALPHA if i in code else ZSCORE_ALPHA for i in order}
        score = {i: _logistic(weight[i] * d_z[i] + (1 - weight[i]) * k_z[i]) for i in order}
    else:
        a = CONVEX_ALPHA if alpha is None else alpha
        d_norm, k_norm = _min_max(dense), _min_max(keyword)
        for i, s in d_norm.items():
            if other_language(i):
                k_norm[i] = max(s, k_norm.get(i, s))
        score = {i: a * d_norm.get(i, 0.0) + (1 - a) * k_norm.get(i, 0.0) for i in order}
    position = {i: p for p, i in enumerate(order)}
    return sorted(((i, score[i]) for i in order), key=lambda pair: (-pair[1], position[pair[0]]))


def _z_scores(
    dense: list[tuple[int, float]], keyword: list[tuple[int, float]], order: list[int]
) -> tuple[dict[int, float], dict[int, float]]:
    """Each candidate's dense and keyword z-score over ``order`` (the union): absent from the
    keyword list, BM25 0; absent from the dense list, the list's lowest cosine; a list whose
    values are all equal gives 0 to all."""
    d, k = dict(dense), dict(keyword)
    floor = min(d.values(), default=0.0)
    return _standardised({i: d.get(i, floor) for i in order}), _standardised({i: max(k.get(i, 0.0), 0.0) for i in order})


def _logistic(x: float) -> float:
    """1 / (1 + e^−x): a fused z-score shown in (0, 1), in the same order (a table's score column
    keeps its width, as the other fusions' scores do)."""
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _standardised(values: dict[int, float]) -> dict[int, float]:
    if not values:
        return {}
    mean = sum(values.values()) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values.values()) / len(values))
    return {i: (v - mean) / sd if sd > 0 else 0.0 for i, v in values.items()}


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
    """Scores mapped to [0, 1] over the list (all 1 when they are equal)."""
    if not ranked:
        return {}
    low, high = min(s for _, s in ranked), max(s for _, s in ranked)
    return {i: (s - low) / (high - low) if high > low else 1.0 for i, s in ranked}
