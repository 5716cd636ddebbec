"""The judged recipe's selection: k-fold cross-validation over every judged query (issue 63).

The judged queries (the train and dev folds of :mod:`encodr.index.judgments`; its test fold is
never read) are split into ``folds`` folds by a hash of their text, queries that share a relevant
document always in one fold (:func:`.adapter.document_folds`), so that a held-out query's
documents were never a training query's. For each fold, the components are trained from the
starting model on the other folds' queries, and the fold's queries are searched through an index
of the corpus built by that fold's model: each query is scored by a model that never saw it.

A component is kept when its cross-validated nDCG@10 gain over what it replaces is positive with
a one-sided paired randomization test's p below ``significance`` (lenient by default: a few
hundred queries cannot give significance, and a component that learned nothing transferable
gains nothing on average). A setting chosen from a grid (the fusion weight α; the re-ranker's
depth and weight) is scored by nested choice: each fold's queries are ranked with the setting
best on the other folds, so the figure is not the maximum of a grid over the same queries. The
final model is then trained on every judged query, with the kept components only.

How this differs from one train/dev split: every judged query trains the final model and every
one is a held-out query once; the price is ``folds`` + 1 trainings and ``folds`` + 1 corpus
encodings (one more when a query adapter is kept for a tuned model: the final model's index).
The re-ranker's grid is scored on the starting model's first stage (its index stays open
through the folds), and the seeded loop's on its dense search, both approximations of the final
pipeline that avoid more encodings of the corpus.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ...progress import ProgressEvent
from ...training import FitOptions, RunContext
from ..base import number_list
from .adapter import document_folds
from .config import JudgedRecipe


@dataclass
class Plan:
    """The judged queries as cross-validation reads them.

    Attributes:
        qids: the judged query ids, in the order of the evaluator's per-query scores.
        texts: their texts (row i of each array is query i).
        relevant: each one's documents judged relevant, by id.
        folds: int (n,), each query's fold.
        alphas: the fusion weights α tried.
        grid: the re-ranker's (depth, weight) pairs tried.
    """

    qids: list[str]
    texts: list[str]
    relevant: list[set[str]]
    folds: np.ndarray
    alphas: list[float]
    grid: list[tuple[int, float]]

    @classmethod
    def of(cls, dev, recipe: JudgedRecipe) -> "Plan":
        """The plan of the judged queries of ``dev`` (a :class:`~.method.DevIndex`)."""
        qids = dev.evaluator.query_ids()
        texts = [dev.evaluator.data.queries[q] for q in qids]
        relevant = [set(dev.evaluator.judged[q]) for q in qids]
        folds = np.asarray(document_folds(texts, relevant, recipe.folds))
        alphas = sorted(set(number_list(recipe.fusion_weights)))
        grid = [(int(d), w) for d in number_list(recipe.rerank_depths) for w in number_list(recipe.rerank_weights)]
        return cls(qids, texts, relevant, folds, alphas, grid)

    def members(self, fold: int) -> tuple[np.ndarray, tuple[str, ...]]:
        """Fold ``fold``'s rows and query ids."""
        rows = np.flatnonzero(self.folds == fold)
        return rows, tuple(self.qids[i] for i in rows)


@dataclass
class Scores:
    """Per-query nDCG@10 × 100 of every ranking scored (float64 (n,) each, :class:`Plan` order):
    ``start``, the starting model's, and ``held``, each query's from the model of the fold that
    left it out (NaN until its fold is scored). Keys: ``dense``, ``hybrid`` (the declared fusion),
    ``hybrid@α``, ``loop`` (dense after the seeded loop) and ``rerank@DEPTH,WEIGHT``."""

    start: dict[str, np.ndarray] = field(default_factory=dict)
    held: dict[str, np.ndarray] = field(default_factory=dict)

    def put(self, key: str, rows: np.ndarray, values: np.ndarray, n: int) -> None:
        self.held.setdefault(key, np.full(n, np.nan))[rows] = values

    def filled(self) -> dict[str, np.ndarray]:
        """``held`` with the queries of a fold that was not scored (no other fold to train on)
        given the start's scores of the same ranking (its first stage, for a re-ranking)."""
        first = self.start.get("hybrid", self.start.get("dense"))
        return {k: np.where(np.isnan(v), self.start.get(k, first), v) for k, v in self.held.items()}


def rankings(dev, plan: Plan) -> dict:
    """The first-stage rankings scored, by key: dense, and with a keyword index the declared
    hybrid fusion and hybrid at each α."""
    from ...index.options import DENSE, HYBRID, SearchOptions

    out = {"dense": SearchOptions(mode=DENSE)}
    if dev.has_keywords:
        out["hybrid"] = SearchOptions(mode=HYBRID)
        out.update({f"hybrid@{a:g}": SearchOptions(mode=HYBRID, fusion_weight=a) for a in plan.alphas})
    return out


def first_stage(dev):
    """What the re-ranker re-ranks in cross-validation: the index's default search, declared."""
    from ...index.options import DENSE, HYBRID, SearchOptions

    return SearchOptions(mode=HYBRID if dev.has_keywords else DENSE)


def default_key(keywords: bool) -> str:
    """The :class:`Scores` key of an index's default search: ``hybrid`` with a keyword index (``keywords``), else ``dense``."""
    return "hybrid" if keywords else "dense"


def nested(candidates: dict[str, np.ndarray], folds: np.ndarray) -> tuple[np.ndarray, str]:
    """Each fold's rows scored by the candidate whose mean is best on the other folds' rows
    (nested choice), and the candidate best on every row (the final choice). ``candidates``:
    key → float64 (n,); ties go to the first key."""
    out = np.empty(len(folds))
    for f in sorted(set(folds.tolist())):
        others = folds != f
        pick = max(candidates, key=lambda k: candidates[k][others].mean() if others.any() else 0.0)
        out[folds == f] = candidates[pick][folds == f]
    return out, max(candidates, key=lambda k: candidates[k].mean())


@dataclass
class Folds:
    """One cross-validated judged run's state: the plan, the scores, the seconds of each phase."""

    plan: Plan
    scores: Scores = field(default_factory=Scores)
    seconds: dict[str, float] = field(default_factory=dict)
    log: list = field(default_factory=list)

    def timed(self, phase: str, started: float) -> None:
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + time.perf_counter() - started, 2)

    def score_start(self, dev) -> None:
        """The starting model's per-query scores of every first-stage ranking."""
        started = time.perf_counter()
        for key, options in rankings(dev, self.plan).items():
            self.scores.start[key] = dev.per_query(options)
        self.timed("search", started)

    def score_fold(self, dev, fold: int, keys: tuple[str, ...] | None = None, rename: dict | None = None) -> None:
        """Fold ``fold``'s queries through ``dev`` (an index of that fold's model): each
        first-stage ranking (only ``keys``, stored under ``rename``'s names, when given)."""
        started = time.perf_counter()
        rows, qids = self.plan.members(fold)
        for key, options in rankings(dev, self.plan).items():
            if keys is None or key in keys:
                self.scores.put((rename or {}).get(key, key), rows, dev.per_query(options, only=qids), len(self.plan.qids))
        self.timed("search", started)

    def score_reranker(self, start_dev, fold: int, cached) -> None:
        """Fold ``fold``'s queries re-ranked by that fold's re-ranker (``cached``: its
        :class:`~.method.CachedScores`) over the starting model's first stage, at every depth
        and weight of the grid."""
        started = time.perf_counter()
        rows, qids = self.plan.members(fold)
        first = first_stage(start_dev)
        for depth, weight in self.plan.grid:
            options = replace(first, rerank_depth=depth, rerank_weight=weight)
            found = start_dev.per_query(options, cached, only=qids)
            self.scores.put(f"rerank@{depth},{weight:g}", rows, found, len(self.plan.qids))
        self.timed("search", started)

    def score_adapter(self, dev, fold: int | None, recipe: JudgedRecipe):
        """The query adapter's per-query scores in ``dev``'s default search (:func:`first_stage`),
        each query searched with an adapter fitted on the other folds' queries
        (:func:`.adapter.fit`, pairs mined by :func:`.adapter.mine`). With ``fold`` None, ``dev``
        is the starting model's index and every fold is scored (``start["adapter"]``); returns
        the pairs of every query (the final adapter's when the start is kept). With a fold,
        ``dev`` is that fold's model's index, and its queries are scored (``held["adapter"]``);
        returns None."""
        from .adapter import fit, mine

        started = time.perf_counter()
        plan, n = self.plan, len(self.plan.qids)
        present = sorted(set(plan.folds.tolist())) if fold is None else [fold]
        mined = mine(dev.searcher, plan.texts, plan.relevant) if fold is None else None
        scores = np.full(n, np.nan)
        for f in present:
            held, train = np.flatnonzero(plan.folds == f), np.flatnonzero(plan.folds != f)
            if len(train) < 2:
                continue
            if mined is not None:
                pairs = mined.subset(train)
            else:
                pairs = mine(dev.searcher, [plan.texts[i] for i in train], [plan.relevant[i] for i in train])
            u, v = fit(pairs, recipe.adapter_rank, recipe.scale, recipe.seed)
            with dev.adapted(u, v):
                scores[held] = dev.per_query(first_stage(dev), only=tuple(plan.qids[i] for i in held))
        if fold is None:
            self.scores.start["adapter"] = np.where(np.isnan(scores), self.scores.start[default_key(dev.has_keywords)], scores)
        else:
            self.scores.put("adapter", np.flatnonzero(plan.folds == fold), scores[plan.folds == fold], n)
        self.timed("query adapter", started)
        return mined

    def fit(self, ctx: RunContext, module, stream, optim, phase: str, description: str) -> None:
        """Train ``module`` on ``stream`` without selection; its time counts toward ``phase`` and its
        steps go to the log with ``description`` as their ``phase``."""
        started = time.perf_counter()
        result = ctx.trainer.fit(
            module, [stream], optim, FitOptions(progress=ctx.progress, on_step=ctx.request.on_step, description=description)
        )
        self.log += [{**r, "phase": description} for r in result.log]
        self.timed(phase, started)


def each_fold(ctx: RunContext, folds: Folds, body: Callable[[int, str], None]) -> None:
    """Run ``body(fold, label)`` for every fold that holds a query, with a progress event before each."""
    present = sorted(set(folds.plan.folds.tolist()))
    for n, f in enumerate(present):
        ctx.progress(ProgressEvent("cross-validation", n, len(present)))
        body(f, f"fold {n + 1}/{len(present)}")
    ctx.progress(ProgressEvent("cross-validation", len(present), len(present)))


__all__ = ["Folds", "Plan", "Scores", "default_key", "each_fold", "first_stage", "nested", "rankings"]
