"""How a search runs, declared once: :class:`SearchOptions`.

Every default, choice and cross-field rule of a search lives here. The core's requests
(:mod:`encodr.core.requests`) take their defaults and choices from this class's fields, and the
front ends (CLI, TUI, HTTP, MCP) render those requests, so none of them states a default of its
own; ``tests/core/test_fronts.py`` fails when one does.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..errors import at_least, between, one_of
from .filters import Filter
from .fusion import FUSIONS

MODES = ("dense", "keyword", "hybrid")
DENSE, KEYWORD, HYBRID = MODES
HYBRID_DEPTH = 100  # candidates taken from each list before fusion
RERANK_DEPTH, RERANK_WEIGHT = 50, 1.0  # a re-ranker's depth and weight, unless given or tuned with it (SearchOptions.resolved)
PASSAGES_PER_DOCUMENT = 4  # passages fetched per document asked for, before keeping each document's best


@dataclass(frozen=True)
class SearchOptions:
    """The settings of one search, validated when built.

    Attributes:
        k: hits per query (≥ 1).
        mode: ``hybrid`` (vectors and BM25 fused by ``fusion``), ``dense`` (cosine of the
            vectors) or ``keyword`` (BM25 over SQLite FTS5). ``hybrid`` on an index built
            without a keyword index searches it ``dense`` (:meth:`for_index`).
        fusion: ``convex`` (min-max normalised scores, weighted by ``fusion_weight``) or ``rrf``
            (reciprocal rank fusion, Cormack et al. 2009), both language-aware (:mod:`.fusion`).
        fusion_weight: ``convex``: α, the dense scores' weight in [0, 1]; ``None``: the weight
            tuned on judgments for the index's model (:meth:`resolved`), else
            :data:`~.fusion.CONVEX_ALPHA`.
        lang: the queries' language, ISO 639-3 (default: detected among the index's languages).
        hit_langs: keep only hits in these languages (ISO 639-3).
        filters: keep only texts of documents that pass all of these (:mod:`.filters`).
        rerank_depth: first-stage hits a cross-encoder re-scores per query (≥ 1); ``None``: the
            depth tuned with the re-ranker (:meth:`resolved`), else :data:`RERANK_DEPTH`.
        rerank_weight: w in w·ŝ_cross + (1 − w)·ŝ_first (:func:`.fusion.interpolate`), in [0, 1];
            ``None``: the weight tuned with the re-ranker, else :data:`RERANK_WEIGHT`.
        passages: rank passages; by default an index of split documents ranks each document
            once, at its best passage.
        nprobe: IVF lists visited per query (default: the index's, :mod:`.store`).
        ef_search: HNSW candidate list size (default: the index's).

    Raises:
        OptionError: a value out of its range or not among its choices, naming the field.
    """

    k: int = 10
    mode: str = HYBRID
    fusion: str = "convex"
    fusion_weight: float | None = None
    lang: str | None = None
    hit_langs: tuple[str, ...] = ()
    filters: tuple[Filter, ...] = ()
    rerank_depth: int | None = None
    rerank_weight: float | None = None
    passages: bool = False
    nprobe: int | None = None
    ef_search: int | None = None

    def __post_init__(self):
        one_of("mode", self.mode, MODES)
        one_of("fusion", self.fusion, FUSIONS)
        for name in ("k", "rerank_depth", "nprobe", "ef_search"):
            at_least(name, getattr(self, name), 1)
        for name in ("rerank_weight", "fusion_weight"):
            if getattr(self, name) is not None:
                between(name, getattr(self, name), 0, 1)
        object.__setattr__(self, "hit_langs", tuple(self.hit_langs or ()))
        object.__setattr__(self, "filters", tuple(self.filters or ()))

    @classmethod
    def default(cls, name: str):
        """The default of field ``name`` (for the requests that render it)."""
        return next(f.default for f in fields(cls) if f.name == name)

    @classmethod
    def given(cls, **values) -> "SearchOptions":
        """Options from a front end's values: ``None`` takes the field's default.

        Raises:
            OptionError: see the class.
        """
        return cls(**{k: v for k, v in values.items() if v is not None})

    def for_index(self, has_keywords: bool) -> "SearchOptions":
        """These options as an index can run them: ``hybrid`` on an index without a keyword
        index (built before keyword indexes existed) is ``dense``; ``keyword`` there is refused
        by :meth:`.store.Index.keyword_search`."""
        return replace(self, mode=DENSE) if self.mode == HYBRID and not has_keywords else self

    def resolved(self, tuned: dict | None = None, reranker_tuned: dict | None = None) -> "SearchOptions":
        """These options with every ``None`` setting filled: ``fusion_weight`` from ``tuned``
        (the settings learned on judgments for the index's model: :func:`.judgments.read_tuned`),
        ``rerank_depth`` and ``rerank_weight`` from ``reranker_tuned`` (a re-ranker's own,
        ``depth`` and ``weight``), else the declared defaults."""
        from .fusion import CONVEX_ALPHA

        tuned, reranker_tuned = tuned or {}, reranker_tuned or {}
        return replace(self, fusion_weight=_first(self.fusion_weight, tuned.get("fusion_weight"), CONVEX_ALPHA),
                       rerank_depth=_first(self.rerank_depth, reranker_tuned.get("depth"), RERANK_DEPTH),
                       rerank_weight=_first(self.rerank_weight, reranker_tuned.get("weight"), RERANK_WEIGHT))  # fmt: skip

    @property
    def label(self) -> str:
        """How a table names these options' ranking: ``dense``, ``keyword``, ``hybrid·convex``
        (``hybrid·convex@0.7`` with a weight given)."""
        if self.mode != HYBRID:
            return self.mode
        weight = f"@{self.fusion_weight:g}" if self.fusion_weight is not None and self.fusion == "convex" else ""
        return f"{self.mode}·{self.fusion}{weight}"

    def depth(self) -> int:
        """Candidates each list gives before fusion (``hybrid``): at least :data:`HYBRID_DEPTH`."""
        return max(self.k, HYBRID_DEPTH)


def _first(*values):
    """The first of ``values`` that is not ``None``."""
    return next(v for v in values if v is not None)


__all__ = ["DENSE", "HYBRID", "KEYWORD", "MODES", "SearchOptions"]
