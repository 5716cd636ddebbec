"""Fusing a dense (vector) ranking with a keyword (BM25) ranking into one hybrid ranking.

Two fusions, as compared by Bruch et al. 2023 ("An Analysis of Fusion Functions for Hybrid
Retrieval", ACM TOIS):

- reciprocal rank fusion (Cormack, Clarke & Büttcher 2009): ``s(d) = Σ_lists 1 / (K + rank(d))``
  with K = 60, ranks from 1; uses ranks only, so no score scale matters;
- a convex combination of min-max normalised scores: ``s(d) = α·ŝ_dense(d) + (1 − α)·ŝ_kw(d)``,
  each list's scores mapped to [0, 1] over its own candidates; a document absent from a list
  scores 0 there.

Both are language-aware, which neither paper is: a keyword list cannot match a text in
another language than the query's, so a cross-lingual text that dense search ranks high would
lose to same-language texts that only share words with the query. A candidate whose language
is known and differs from the query's therefore takes, in the keyword list, the better of its
own place there and the place it has in the dense list (its dense rank for RRF, its normalised
dense score for the convex combination). "Its own place there" is usually nothing or a poor
one: a text in another language reaches a keyword list only through the words the two
languages share (names, numbers, loanwords), so its keyword rank says little about it.
"""

from __future__ import annotations

FUSIONS = ("rrf", "convex")
RRF_K = 60  # Cormack et al. 2009
CONVEX_ALPHA = 0.5  # weight of the dense scores


def fuse(dense: list[tuple[int, float]], keyword: list[tuple[int, float]], fusion: str, query_lang: str | None = None,
         lang_of: dict[int, str | None] | None = None, alpha: float = CONVEX_ALPHA) -> list[tuple[int, float]]:  # fmt: skip
    """One ranking from a dense and a keyword ranking of the same corpus.

    Args:
        dense: (text id, cosine) best first.
        keyword: (text id, BM25 score) best first.
        fusion: ``rrf`` or ``convex``.
        query_lang: the query's language (ISO 639-3), or None / ``und``: no language-aware step.
        lang_of: text id → stored language, for every candidate.
        alpha: the convex combination's dense weight, in [0, 1].

    Returns:
        (text id, fused score) over the union of both lists, best first (ties: dense order first).

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
        score = {i: (1 / (RRF_K + d_rank[i]) if i in d_rank else 0.0) + (1 / (RRF_K + k_rank[i]) if i in k_rank else 0.0) for i in order}
    else:
        d_norm, k_norm = _min_max(dense), _min_max(keyword)
        for i, s in d_norm.items():
            if other_language(i):
                k_norm[i] = max(s, k_norm.get(i, s))
        score = {i: alpha * d_norm.get(i, 0.0) + (1 - alpha) * k_norm.get(i, 0.0) for i in order}
    position = {i: p for p, i in enumerate(order)}
    return sorted(((i, score[i]) for i in order), key=lambda pair: (-pair[1], position[pair[0]]))


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
