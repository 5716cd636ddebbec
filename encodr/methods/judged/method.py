"""The judged recipe's run: the judgments' train fold teaches a bi-encoder, a re-ranker and the
seeds' distillation loop; the dev fold keeps each one only when it beats what it replaces, and
chooses the hybrid fusion weight and the re-ranker's depth and weight.

Each component is compared on the dev fold's judged queries, through a real index of the
corpus (:class:`~encodr.evaluation.retrieval.RetrievalEvaluator`), by nDCG@10:

1. bi-encoder: dense search, the starting model a candidate (the trainer's ``keep_start``);
2. re-ranker: its re-ranking of the first stage against the first stage alone;
3. the seeded loop: dense search, the bi-encoder before the loop a candidate;
4. fusion weight: hybrid search with the chosen α against the declared default α.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from ...errors import EncodrError, S
from ...models import load_encoder
from ...progress import ProgressEvent
from ...training import FitOptions, Outcome, RunContext, Stream, to_device
from .config import JudgedRecipe, number_list
from .data import DEV, TRAIN, JudgedData, read_judged

EXTRA_MINED = 8  # candidates mined beyond those kept, so that judged-relevant documents can be dropped


@dataclass
class Example:
    """A judged query with one relevant passage and its negatives (judged not relevant first, then mined)."""

    query: str
    positive: str
    negatives: list[str]


@dataclass
class Component:
    """One component's dev comparison: nDCG@10 × 100 on the dev fold before and after, and whether it was kept."""

    name: str
    metric: str
    before: float | None
    after: float | None
    kept: bool
    note: str = ""
    p: float | None = None

    def line(self) -> str:
        """``dense nDCG@10 61.20 → 63.40 (p 0.01), kept`` (or why not)."""
        if self.before is None:
            return f"{self.metric}: {self.note}"
        verdict = (
            "kept" if self.kept else ("not kept: no better on dev" if self.after <= self.before else "not kept: not significant")
        )
        return f"{self.metric} {self.before:.2f} → {self.after:.2f} (p {self.p:.3f}), {verdict}" + (
            f"; {self.note}" if self.note else ""
        )

    @classmethod
    def compared(cls, name: str, metric: str, before, after, level: float, note: str = "") -> "Component":
        """A component kept when ``after`` (per-query scores) beats ``before`` on average with a
        one-sided paired randomization test's p below ``level`` (:mod:`encodr.evaluation.significance`)."""
        from ...evaluation.significance import improvement_p

        p = improvement_p(before, after)
        return cls(
            name,
            metric,
            float(np.mean(before)),
            float(np.mean(after)),
            p < level and float(np.mean(after)) > float(np.mean(before)),
            note,
            round(p, 4),
        )


def examples(data: JudgedData, encoder, recipe: JudgedRecipe, folds: tuple[str, ...], wanted: int) -> list[Example]:
    """One :class:`Example` per (query, relevant document) of ``folds``, each with up to
    ``wanted`` negatives: the query's documents judged not relevant (grade 0), then hard
    negatives mined from the corpus by ``encoder`` (sentence-transformers' ``mine_hard_negatives``,
    ``relative_margin`` = ``recipe.margin``: near-duplicates of the positive skipped), leaving out
    every document judged relevant to the query (and texts equal to one).

    Raises:
        EncodrError: no relevant judgment in ``folds``.
    """
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    judged = [j for j in data.judgments if j.fold in folds]
    relevant: dict[str, set[str]] = {}
    rejected: dict[str, list[str]] = {}
    for j in judged:
        if j.grade > 0:
            relevant.setdefault(j.query, set()).add(j.doc)
        else:
            rejected.setdefault(j.query, []).append(j.doc)
    pairs = [(q, data.corpus[d]) for q, docs in relevant.items() for d in sorted(docs)]
    if not pairs:
        raise EncodrError(
            f"no judgment in the {'/'.join(folds)} fold grades a document relevant (grade 1 or 2); judge some hits relevant"
        )
    mined: list[list[str]] = [[] for _ in pairs]
    if wanted:
        dataset = Dataset.from_dict({"query": [q for q, _ in pairs], "positive": [p for _, p in pairs]})
        with contextlib.redirect_stderr(io.StringIO()):  # its encode bars: encodr draws its own progress
            found = mine_hard_negatives(
                dataset,
                encoder.st,
                corpus=list(dict.fromkeys(data.corpus.values())),
                relative_margin=recipe.margin or None,
                num_negatives=wanted + EXTRA_MINED,
                sampling_strategy="top",
                query_prompt=encoder.prompt("query") or None,
                corpus_prompt=encoder.prompt("document") or None,
                output_format="n-tuple",
                batch_size=64,
                verbose=False,
            )
        columns = [c for c in found.column_names if c.startswith("negative")]
        by_pair = {(row["query"], row["positive"]): [row[c] for c in columns if row[c]] for row in found}
        mined = [by_pair.get(pair, []) for pair in pairs]
    out = []
    for (query, positive), candidates in zip(pairs, mined):
        bad = {data.corpus[d] for d in relevant[query]}
        first = [data.corpus[d] for d in rejected.get(query, []) if d in data.corpus]
        negatives = list(dict.fromkeys(t for t in first + candidates if t not in bad))[:wanted]
        out.append(Example(query, positive, negatives))
    return out


def mnrl_stream(encoder, items: list[Example], recipe, world: int, negatives: int, name: str = "judged") -> Stream:
    """InfoNCE over (query, positive, ``negatives`` hard negatives) with every other passage of
    the global batch as a negative too: sentence-transformers' ``MultipleNegativesRankingLoss``
    (``CachedMultipleNegativesRankingLoss``, GradCache, when ``mini_batch`` > 0), scale
    ``recipe.scale``, the model's query and document prompts put before the texts. Examples with
    fewer than ``negatives`` hard negatives are left out (the run asks for the fewest any example
    has, so none is). ``recipe`` needs ``scale``, ``mini_batch``, ``batch_size``,
    ``query_max_length`` and ``max_length`` (the judged and the code recipe have them); ``name``
    labels the stream's loss in the log."""
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss, MultipleNegativesRankingLoss

    tokenizer = encoder.tokenizer
    query_prompt, doc_prompt = encoder.prompt("query"), encoder.prompt("document")
    usable = [e for e in items if len(e.negatives) >= negatives]
    losses: dict[int, torch.nn.Module] = {}

    def tokens(texts: list[str], length: int) -> dict:
        return dict(tokenizer(texts, max_length=length, truncation=True, padding=True, return_tensors="pt"))

    def batch(indices: list[int], epoch: int):
        chosen = [usable[i] for i in indices]
        columns = [
            tokens([query_prompt + e.query for e in chosen], recipe.query_max_length),
            tokens([doc_prompt + e.positive for e in chosen], recipe.max_length),
        ]
        for n in range(negatives):
            columns.append(tokens([doc_prompt + e.negatives[n] for e in chosen], recipe.max_length))
        return columns

    def loss(module: torch.nn.Module, features) -> torch.Tensor:
        if id(module) not in losses:
            gather = world > 1
            losses[id(module)] = (
                CachedMultipleNegativesRankingLoss(
                    module, scale=recipe.scale, mini_batch_size=recipe.mini_batch, gather_across_devices=gather
                )
                if recipe.mini_batch
                else MultipleNegativesRankingLoss(module, scale=recipe.scale, gather_across_devices=gather)
            )
        device = next(module.parameters()).device
        return losses[id(module)]([to_device(f, device) for f in features], labels=None)

    return Stream(name, len(usable), batch, loss, min(recipe.batch_size, max(2, len(usable))), min_batch=2)


def margin_stream(encoder, triplets: list[tuple[str, str, str, float]], recipe: JudgedRecipe) -> Stream:
    """Cross → bi (Trans-Encoder §2.3 with GPL's loss): sentence-transformers' ``MarginMSELoss``,
    the MSE between the bi-encoder's score margin sim(q, p) − sim(q, n) (dot product of unit
    vectors: cosine) and the cross-encoder's σ-score margin, over (query, passage, passage, margin)."""
    from sentence_transformers.sentence_transformer.losses import MarginMSELoss

    loss_fn = MarginMSELoss(encoder.st)
    tokenizer = encoder.tokenizer
    query_prompt, doc_prompt = encoder.prompt("query"), encoder.prompt("document")

    def tokens(texts: list[str], length: int) -> dict:
        return dict(tokenizer(texts, max_length=length, truncation=True, padding=True, return_tensors="pt"))

    def batch(indices: list[int], epoch: int):
        chosen = [triplets[i] for i in indices]
        return (
            [
                tokens([query_prompt + t[0] for t in chosen], recipe.query_max_length),
                tokens([doc_prompt + t[1] for t in chosen], recipe.max_length),
                tokens([doc_prompt + t[2] for t in chosen], recipe.max_length),
            ],
            torch.tensor([t[3] for t in chosen], dtype=torch.float32),
        )

    def loss(module: torch.nn.Module, b) -> torch.Tensor:
        device = next(module.parameters()).device
        features, labels = b
        return loss_fn([to_device(f, device) for f in features], labels.to(device))

    return Stream("distill", len(triplets), batch, loss, recipe.batch_size)


class CachedScores:
    """A re-ranker whose (query, text) scores are computed once: the depth and weight grid reads them many times."""

    def __init__(self, scorer):
        self.scorer, self.seen = scorer, {}

    def query_scores(self, query: str, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if (query, t) not in self.seen]
        if todo:
            for t, s in zip(todo, self.scorer.query_scores(query, todo)):
                self.seen[(query, t)] = float(s)
        return np.asarray([self.seen[(query, t)] for t in texts], dtype=np.float32)


class DevIndex:
    """The dev fold's judged queries searched in an index of the corpus built by one encoder
    (:class:`~encodr.evaluation.retrieval.RetrievalEvaluator`'s index and metrics)."""

    def __init__(self, folder: Path, encoder, where: Path):
        from ...data.beir import read_retrieval
        from ...evaluation.retrieval import RetrievalEvaluator
        from ...index import BuildOptions, Searcher, build

        self.evaluator = RetrievalEvaluator("dev", read_retrieval(folder), split=DEV)
        build(
            [str(folder / "corpus.jsonl")],
            where,
            BuildOptions(model=encoder, index_type="flat", backend=getattr(encoder, "backend", "torch")),
        )
        self.searcher = Searcher(where, encoder=encoder)
        self.same = self.evaluator.same_text()
        self.has_keywords = self.searcher.index.has_keywords

    def per_query(self, options, reranker=None) -> np.ndarray:
        """nDCG@10 × 100 of each dev-fold query with ``options`` (re-ranked by ``reranker`` at
        its depth and weight): float64 (queries,) (:meth:`~encodr.evaluation.retrieval.RetrievalEvaluator.per_query`)."""
        from ...evaluation.retrieval import DEPTH

        options = replace(options, k=DEPTH)
        ranked = self.evaluator._rank(self.searcher, (options,), reranker, self.same)
        return self.evaluator.per_query(next(iter(ranked.values())))

    def close(self) -> None:
        self.searcher.index.close()


class DevFold:
    """The dev fold's judged queries: per-query nDCG@10 of an encoder's dense search, each
    through an index of the corpus built for it (:class:`DevIndex`)."""

    def __init__(self, folder: Path):
        self.folder = folder

    @contextlib.contextmanager
    def index(self, encoder):
        """A :class:`DevIndex` of ``encoder``'s vectors, removed after the block."""
        with tempfile.TemporaryDirectory(prefix="encodr-judged-dev-") as where:
            found = DevIndex(self.folder, encoder, Path(where) / "index")
            try:
                yield found
            finally:
                found.close()

    def dense(self, encoder) -> np.ndarray:
        """Per-query dense nDCG@10 × 100 of ``encoder``."""
        from ...index.options import DENSE, SearchOptions

        with self.index(encoder) as dev:
            return dev.per_query(SearchOptions(mode=DENSE))

    def fit(self, ctx: RunContext, encoder, stream: Stream, optim, name: str, description: str, note: str = "") -> tuple:
        """Train ``encoder`` on ``stream`` with the dev fold scored at the start and every
        evaluation, keep the best weights only when they beat the start significantly
        (:meth:`Component.compared`; else the start's weights come back). Returns (the
        trainer's result, the :class:`Component`)."""
        start = {k: v.detach().to("cpu", copy=True) for k, v in encoder.st.state_dict().items()}
        curve: list[np.ndarray] = []

        def evaluate() -> float:
            curve.append(self.dense(encoder))
            return float(curve[-1].mean())

        result = ctx.trainer.fit(
            encoder.module,
            [stream],
            optim,
            FitOptions(
                evaluate=evaluate,
                dev_metric="ndcg@10",
                eval_steps=ctx.recipe.eval_steps,
                progress=ctx.progress,
                on_step=ctx.request.on_step,
                description=description,
            ),
        )
        best = next(i for i, point in enumerate(result.dev_curve) if point["step"] == result.best["step"])
        component = Component.compared(name, "dense nDCG@10", curve[0], curve[best], ctx.recipe.significance, note)
        if not component.kept and best > 0:
            encoder.st.load_state_dict(start)
        return result, component


def distill_triplets(
    data: JudgedData, encoder, cross, recipe: JudgedRecipe, folds: tuple[str, ...], progress
) -> list[tuple[str, str, str, float]]:
    """(query, passage, passage, σ-margin) labelled by ``cross``: the judged queries of ``folds``
    and ``recipe.distill_queries`` pseudo-queries cut from the corpus (inverse cloze: a sentence
    of a document), each against the ``distill_candidates`` documents ``encoder`` ranks highest
    (a judged query's relevant document among them); the passage the cross-encoder scores highest
    is paired with each other one (AugSBERT's silver labels, GPL's margins)."""
    import faiss

    from ..retrieval.pairs import Passage, ict_pair

    rng = np.random.default_rng(recipe.seed)
    texts = list(dict.fromkeys(data.corpus.values()))
    judged = {j.query: data.corpus[j.doc] for j in data.judgments if j.fold in folds and j.grade > 0}
    queries = list(judged)
    for i in rng.permutation(len(texts))[: recipe.distill_queries]:
        pair = ict_pair(Passage.of(texts[int(i)][:2000]), rng, 0.0)
        if pair:
            queries.append(pair[0])
    vectors = encoder.encode(texts, prompt=encoder.prompt("document"))
    asked = encoder.encode(queries, prompt=encoder.prompt("query"))
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    _, top = index.search(np.ascontiguousarray(asked, dtype=np.float32), min(recipe.distill_candidates, len(texts)))
    out = []
    for n, (query, row) in enumerate(zip(queries, top)):
        candidates = list(dict.fromkeys(([judged[query]] if query in judged else []) + [texts[int(j)] for j in row if j >= 0]))
        scores = cross.query_scores(query, candidates)
        best = int(np.argmax(scores))
        out += [
            (query, candidates[best], c, float(scores[best] - s)) for c, s in zip(candidates, scores) if c != candidates[best]
        ]
        progress(ProgressEvent("label pairs", n + 1, len(queries)))
    return out


def run(ctx: RunContext) -> Outcome:
    """Learn from judgments (see the module docstring); saves the bi-encoder at the output's root,
    the re-ranker in ``cross/`` when it was kept, and the chosen search settings as ``search`` in
    ``encodr.json`` (and, with ``--index``, with the index: :func:`encodr.index.judgments.write_tuned`).

    Raises:
        EncodrError: no judgments, none relevant in the train fold; see :func:`.data.read_judged`.
    """
    request, recipe = ctx.request, ctx.recipe
    with tempfile.TemporaryDirectory(prefix="encodr-judged-") as tmp:
        data = read_judged(request.index, request.data, Path(tmp) / "judged")
        encoder = load_encoder(request.models[0], recipe.pooling, recipe.raw_pooling, recipe.max_length, ctx.trainer.device)
        train_q, dev_q = data.queries(TRAIN), data.queries(DEV)
        counts = {
            "judgments": len(data.judgments),
            "train_queries": len(train_q),
            "dev_queries": len(dev_q),
            "left_out": data.unused,
        }
        base = {"base_model": encoder.name, "data": data.source, **counts}
        if (len(train_q) + len(dev_q) < recipe.min_queries or not dev_q or not train_q) and not request.no_dev:
            ctx.warn(
                f"only {len(train_q) + len(dev_q)} judged queries ({len(dev_q)} in the dev fold): too few to hold out "
                "a dev fold (at least "
                f"{recipe.min_queries}); saved the starting model unchanged (judge more queries, or pass {S.no_dev} to "
                "train without selection)"
            )
            ctx.save(".", encoder.save)
            return Outcome(
                {**base, "kept": "start"},
                [_row(encoder, data, {"kept": "start"})],
                None,
                ("base_model", "data", "judgments", "kept"),
            )
        folds = (TRAIN, DEV) if request.no_dev else (TRAIN,)
        dev = None if request.no_dev else DevFold(data.folder)
        items, result, first = _train_bi_encoder(ctx, data, encoder, folds, dev)
        components, log = [first], list(result.log)
        cross = None
        if recipe.cross and dev:
            cross, loop = _cross_and_loop(ctx, data, encoder, items, folds, dev, log)
            components += loop
        search: dict = {}
        if dev:
            with dev.index(encoder) as chosen:
                components += _choose_search(chosen, recipe, cross, search)
                if recipe.adapter:
                    components.append(_adapt(ctx, chosen, data))
        ctx.save(".", encoder.save)
        if cross is not None and "rerank" in search:
            cross.tuned = search.pop("rerank")
            ctx.save("cross", cross.save)
    kept = [c.name for c in components if c.kept]
    if dev and not kept:
        ctx.warn(
            f"nothing beat the starting model on the dev fold ({len(dev_q)} judged queries, p < "
            f"{recipe.significance:g}): saved the starting "
            "model unchanged, with the declared search defaults"
        )
    if request.index and search and ctx.trainer.is_main:
        from ...index import locate
        from ...index.judgments import write_tuned

        write_tuned(locate(request.index), encoder.fingerprint, search, ctx.out_path())
    lines = {c.name: c.line() for c in components}
    summary = {
        **base,
        **lines,
        "components": [c.__dict__ for c in components],
        "kept": kept or "start",
        "search": search,
        "steps": result.steps,
        "train_seconds": round(result.seconds, 2),
        "precision": result.precision,
        "device": result.device,
    }
    return Outcome(
        summary,
        [_row(encoder, data, {**lines, "kept": ", ".join(kept) or "start"})],
        log,
        ("base_model", "data", "judgments", "train_queries", "dev_queries", *lines, "kept", "train_seconds", "device"),
    )


def _train_bi_encoder(ctx: RunContext, data: JudgedData, encoder, folds: tuple[str, ...], dev: "DevFold | None"):
    """Mine each judged query's negatives in ``folds`` and train the bi-encoder on them (MNRL),
    kept only where it beats the start on ``dev`` (:meth:`DevFold.fit`); without a dev fold
    (``--no-dev``) trained and kept as it ends.

    Returns:
        (the mined examples, the fit's result, the bi-encoder's :class:`Component`).
    """
    recipe = ctx.recipe
    wanted = max(recipe.negatives, recipe.cross_negatives if recipe.cross else 0)
    ctx.progress(ProgressEvent("mine negatives", 0, 1))
    items = examples(data, encoder, recipe, folds, wanted)
    ctx.progress(ProgressEvent("mine negatives", 1, 1))
    negatives = min(recipe.negatives, min(len(e.negatives) for e in items))
    stream = mnrl_stream(encoder, items, recipe, ctx.trainer.world, negatives)
    if dev:
        result, first = dev.fit(ctx, encoder, stream, recipe.optim(), "bi-encoder", "bi-encoder")
        return items, result, first
    options = FitOptions(progress=ctx.progress, on_step=ctx.request.on_step, description="bi-encoder")
    result = ctx.trainer.fit(encoder.module, [stream], recipe.optim(), options)
    return items, result, Component("bi-encoder", "dense nDCG@10", None, None, True, "trained without selection (no_dev)")


def _adapt(ctx: RunContext, dev: DevIndex, data: JudgedData) -> Component:
    """Learn the query adapter from every judged query of the train and dev folds, kept by
    cross-validation (:func:`.adapter.cross_validated`); with ``--index``, store it with the
    index (:func:`encodr.index.adapter.write_adapter`), or remove the one stored there for this
    model when it is not kept. Returns its :class:`Component`."""
    from ...index import locate
    from ...index.adapter import read_adapter, remove_adapter, write_adapter
    from .adapter import cross_validated

    judged: dict[str, set[str]] = {}
    for j in data.judgments:
        if j.grade > 0:
            judged.setdefault(j.query, set()).add(j.doc)
    ctx.progress(ProgressEvent("query adapter", 0, 1))
    adapter, report = cross_validated(dev.searcher, judged, ctx.recipe)
    ctx.progress(ProgressEvent("query adapter", 1, 1))
    note = f"{report['queries']} queries, {report['folds']}-fold cross-validation, rank {report['rank']}"
    if ctx.request.index and ctx.trainer.is_main:
        root = locate(ctx.request.index)
        if adapter is not None:
            write_adapter(root, adapter)
        elif read_adapter(root, dev.searcher.fingerprint) is not None:
            remove_adapter(root)
            note += "; the adapter stored with the index before is removed"
    before, after, kept = report["cv_before"], report["cv_after"], report["kept"]
    metric = f"cross-validated {report['mode']} nDCG@10"
    return Component("query adapter", metric, before, after, kept, note, report["p"])


def _row(encoder, data: JudgedData, metrics: dict) -> dict:
    return {
        "kind": "tune",
        "model": encoder.name,
        "data": data.source,
        "strings": len(data.judgments),
        "out": ".",
        "metrics": metrics,
    }


def _cross_and_loop(
    ctx: RunContext, data: JudgedData, encoder, items: list[Example], folds: tuple[str, ...], dev: DevFold, log: list
) -> tuple:
    """Train the re-ranker on the judged pairs and mined negatives (BCE), then the seeded loop
    (the bi-encoder on its margins, MarginMSE), kept when dense dev nDCG@10 improves.
    Returns (the re-ranker, [the loop's :class:`Component`])."""
    from ...models.cross import new_cross_encoder
    from ..trans_encoder.method import cross_stream

    recipe = ctx.recipe
    cross = new_cross_encoder(ctx.request.models[0], recipe.cross_max_length, ctx.trainer.device, seed=recipe.seed)
    pairs = [(e.query, e.positive) for e in items] + [(e.query, n) for e in items for n in e.negatives[: recipe.cross_negatives]]
    labels = np.asarray([1.0] * len(items) + [0.0] * (len(pairs) - len(items)), dtype=np.float32)
    ctx.trainer.fit(
        cross.ce,
        [cross_stream(cross, pairs, labels, recipe.cross_batch_size, symmetric=False)],
        recipe.cross_optim(),
        FitOptions(progress=ctx.progress, on_step=ctx.request.on_step, description="re-ranker"),
    )
    if not recipe.distill:
        return cross, []
    triplets = distill_triplets(data, encoder, cross, recipe, folds, ctx.progress)
    result, loop = dev.fit(
        ctx,
        encoder,
        margin_stream(encoder, triplets, recipe),
        recipe.distill_optim(),
        "seeded loop",
        "seeded loop (cross → bi)",
        f"{len(triplets)} labelled triplets",
    )
    log += [{**r, "phase": "distill"} for r in result.log]
    return cross, [loop]


def _choose_search(dev: DevIndex, recipe: JudgedRecipe, cross, search: dict) -> list[Component]:
    """Choose the hybrid fusion's dense weight α (the default fusion's: one α for every text, in
    place of the declared per-kind ones), then the re-ranker's depth and weight, on the dev fold;
    each goes into ``search`` only when it beats the declared default (no re-ranking, for the
    re-ranker) significantly (:meth:`Component.compared`). Returns their :class:`Component` s."""
    from ...index.fusion import CODE_ALPHA, ZSCORE_ALPHA
    from ...index.options import DENSE, HYBRID, SearchOptions

    out = []
    first = SearchOptions(mode=DENSE)
    if dev.has_keywords:
        declared = dev.per_query(SearchOptions(mode=HYBRID))
        scored = {
            a: dev.per_query(SearchOptions(mode=HYBRID, fusion_weight=a)) for a in sorted(set(number_list(recipe.fusion_weights)))
        }
        alpha = max(scored, key=lambda a: scored[a].mean()) if scored else None
        best = scored[alpha] if alpha is not None and scored[alpha].mean() > declared.mean() else declared
        fusion = Component.compared(
            "fusion weight",
            "hybrid nDCG@10",
            declared,
            best,
            recipe.significance,
            f"α {alpha:g} (declared {ZSCORE_ALPHA:g}, source code {CODE_ALPHA:g})"
            if best is not declared
            else f"the declared α ({ZSCORE_ALPHA:g}, source code {CODE_ALPHA:g})",
        )
        if fusion.kept and best is not declared:
            search["fusion_weight"] = alpha
        out.append(fusion)
        first = SearchOptions(mode=HYBRID, fusion_weight=alpha if fusion.kept and best is not declared else None)
    if cross is None:
        return out
    plain = dev.per_query(first)
    cached = CachedScores(cross)
    grid = {
        (int(d), w): dev.per_query(replace(first, rerank_depth=int(d), rerank_weight=w), cached)
        for d in number_list(recipe.rerank_depths)
        for w in number_list(recipe.rerank_weights)
    }
    (depth, weight), best = max(grid.items(), key=lambda kv: kv[1].mean())
    reranker = Component.compared(
        "re-ranker", f"{first.label} nDCG@10 re-ranked", plain, best, recipe.significance, f"depth {depth}, weight {weight:g}"
    )
    if reranker.kept:
        search["rerank"] = {"depth": depth, "weight": weight}
    out.append(reranker)
    return out
