"""The judged recipe's run: every judged query teaches a bi-encoder (and, when asked, a
re-ranker and the seeds' distillation loop); k-fold cross-validation over the queries
(:mod:`.crossval`) keeps each component only when it beats what it replaces on queries its model
never saw, and chooses the hybrid fusion weight and the re-ranker's depth and weight; the final
model is trained on every judged query with the kept components.

Each component is compared through a real index of the corpus
(:class:`~encodr.evaluation.retrieval.RetrievalEvaluator`), by cross-validated nDCG@10:

1. bi-encoder: dense search against the starting model's;
2. the seeded loop: dense search against the bi-encoder before the loop;
3. fusion weight: hybrid search with α chosen on the other folds against the declared fusion;
4. re-ranker: its re-ranking of the first stage, at the depth and weight chosen on the other
   folds, against the first stage alone;
5. the query adapter: the default search with an adapter fitted on the other folds' queries
   against the same model without it (:meth:`~.crossval.Folds.score_adapter`), on each fold's
   model's index (the starting model's, when the bi-encoder is not kept).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from ...errors import EncodrError, S
from ...models import load_encoder
from ...progress import ProgressEvent
from ...training import Outcome, RunContext, Stream, to_device
from .config import JudgedRecipe
from .crossval import Folds, Plan, default_key, each_fold, nested
from .data import JUDGED, JudgedData, read_judged

EXTRA_MINED = 8  # candidates mined beyond those kept, so that judged-relevant documents can be dropped


@dataclass
class Example:
    """A judged query with one relevant passage and its negatives (judged not relevant first, then mined)."""

    query: str
    positive: str
    negatives: list[str]


@dataclass
class Component:
    """One component's comparison: cross-validated nDCG@10 × 100 before and after, and whether it was kept."""

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
        verdict = "kept" if self.kept else ("not kept: no better" if self.after <= self.before else "not kept: not significant")
        return f"{self.metric} {self.before:.2f} → {self.after:.2f} (p {self.p:.3f}), {verdict}" + (
            f"; {self.note}" if self.note else ""
        )

    @classmethod
    def compared(cls, name: str, metric: str, before, after, level: float, note: str = "") -> "Component":
        """A component kept when ``after`` (per-query scores, float (n,)) beats ``before`` on
        average with a one-sided paired randomization test's p below ``level``
        (:mod:`encodr.evaluation.significance`)."""
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


def _judged(data: JudgedData) -> tuple[dict[str, set[str]], dict[str, list[str]], list[tuple[str, str]]]:
    """(query → its relevant document ids, query → its documents judged not relevant, every
    (query, relevant document id) pair).

    Raises:
        EncodrError: no judgment grades a document relevant.
    """
    relevant: dict[str, set[str]] = {}
    rejected: dict[str, list[str]] = {}
    for j in data.judgments:
        if j.grade > 0:
            relevant.setdefault(j.query, set()).add(j.doc)
        else:
            rejected.setdefault(j.query, []).append(j.doc)
    pairs = [(q, d) for q, docs in relevant.items() for d in sorted(docs)]
    if not pairs:
        raise EncodrError("no judgment grades a document relevant (grade 1 or 2); judge some hits relevant")
    return relevant, rejected, pairs


def _assembled(data: JudgedData, judged: tuple, mined: list[list[str]], wanted: int) -> list[Example]:
    """One :class:`Example` per pair of ``judged`` (:func:`_judged`): the query's documents judged not
    relevant first, then its ``mined`` texts, leaving out texts equal to a relevant document's."""
    relevant, rejected, pairs = judged
    out = []
    for (query, doc), candidates in zip(pairs, mined):
        bad = {data.corpus[d] for d in relevant[query]}
        first = [data.corpus[d] for d in rejected.get(query, []) if d in data.corpus]
        negatives = list(dict.fromkeys(t for t in first + candidates if t not in bad))[:wanted]
        out.append(Example(query, data.corpus[doc], negatives))
    return out


def examples(data: JudgedData, encoder, recipe: JudgedRecipe, wanted: int) -> list[Example]:
    """One :class:`Example` per judged (query, relevant document), each with up to
    ``wanted`` negatives: the query's documents judged not relevant (grade 0), then hard
    negatives mined from the corpus by ``encoder`` (sentence-transformers' ``mine_hard_negatives``,
    ``relative_margin`` = ``recipe.margin``: near-duplicates of the positive skipped), leaving out
    every document judged relevant to the query (and texts equal to one).

    Raises:
        EncodrError: no judgment grades a document relevant.
    """
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    judged = _judged(data)
    pairs = [(q, data.corpus[d]) for q, d in judged[2]]
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
    return _assembled(data, judged, mined, wanted)


def indexed_examples(data: JudgedData, dev: "DevIndex", recipe: JudgedRecipe, wanted: int) -> list[Example]:
    """:func:`examples`, its negatives mined from ``dev`` (the starting model's index of the
    corpus, which cross-validation builds anyway) instead of a second encoding of the corpus:
    each query's documents in the order of its dense search (best passage), with the rule of
    sentence-transformers' ``mine_hard_negatives`` ("top", ``relative_margin``): a candidate whose
    cosine exceeds (1 − ``recipe.margin``) × the positive's (its whole text, encoded by the same
    model) is a near-duplicate and skipped.

    Raises:
        EncodrError: no judgment grades a document relevant.
    """
    from ...index.options import DENSE, SearchOptions

    judged = _judged(data)
    relevant, _, pairs = judged
    if not wanted:
        return _assembled(data, judged, [[] for _ in pairs], wanted)
    queries = list(relevant)
    depth = wanted + EXTRA_MINED + max(len(d) for d in relevant.values())
    _, hits = dev.searcher.query(queries, SearchOptions(mode=DENSE, k=depth))
    found = dict(zip(queries, hits))
    encoder = dev.searcher.encoder
    asked = encoder.encode([q for q, _ in pairs], prompt=encoder.prompt("query"))
    positive = encoder.encode([data.corpus[d] for _, d in pairs], prompt=encoder.prompt("document"))
    ceiling = (asked * positive).sum(axis=1) * (1 - recipe.margin)
    mined = [
        [data.corpus[h.ext_id] for h in found[q] if h.ext_id in data.corpus and h.ext_id not in relevant[q] and h.score <= top]
        for (q, _), top in zip(pairs, ceiling)
    ]
    return _assembled(data, judged, mined, wanted)


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

    size = min(recipe.batch_size, max(2, len(usable)))
    size = max(world, size - size % world)  # a global batch splits evenly across the processes
    return Stream(name, len(usable), batch, loss, size, min_batch=2)


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
    """A re-ranker whose (query, text) scores are computed once: the depth and weight grid reads
    them many times. With ``bf16``, scored under bfloat16 autocast (:func:`bf16_keeps_scores`)."""

    def __init__(self, scorer, bf16: bool = False):
        self.scorer, self.seen, self.bf16 = scorer, {}, bf16

    def query_scores(self, query: str, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if (query, t) not in self.seen]
        if todo:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
                scores = self.scorer.query_scores(query, todo)
            for t, s in zip(todo, scores):
                self.seen[(query, t)] = float(s)
        return np.asarray([self.seen[(query, t)] for t in texts], dtype=np.float32)


CROSS_AGREEMENT = 0.005  # the largest difference of a re-ranker's σ scores under bfloat16 autocast from float32's


def bf16_keeps_scores(cross, has_bf16=None) -> bool:
    """Whether ``cross`` (a :class:`~encodr.models.cross.CrossScorer`) may score the run's
    re-ranking under bfloat16 autocast: on a CPU with native bfloat16 products (``has_bf16``,
    default :func:`~encodr.models.encoder.cpu_has_bf16`), when its scores of every pair of
    :data:`~encodr.models.onnx.AGREEMENT_TEXTS` stay within :data:`CROSS_AGREEMENT` of float32's.
    The scores rank the same passages at a fraction of the cost of float32 on such a CPU
    (``bench/notes/judged.md``)."""
    from ...models.encoder import cpu_has_bf16
    from ...models.onnx import AGREEMENT_TEXTS

    if cross.ce.device.type != "cpu" or not (has_bf16 or cpu_has_bf16)():
        return False
    texts, exact, fast = list(AGREEMENT_TEXTS), CachedScores(cross), CachedScores(cross, bf16=True)
    return all(np.max(np.abs(fast.query_scores(q, texts) - exact.query_scores(q, texts))) <= CROSS_AGREEMENT for q in texts)


def cached_scores(cross) -> CachedScores:
    """``cross``'s scores, computed once each, in bfloat16 where :func:`bf16_keeps_scores` allows."""
    return CachedScores(cross, bf16_keeps_scores(cross))


def remembered(keyword_search):
    """``keyword_search`` (:meth:`~encodr.index.reader.IndexReader.keyword_search`) answering a
    call it has answered before from memory: a run's index does not change while it is open, and
    its keyword side is the same for every fusion weight a grid tries, so each ranking after the
    first pays for its dense side and fusion only. Calls with gathered statistics (not a plain
    value) are not remembered."""
    seen: dict = {}

    def search(queries, k, where=None, query_langs=None, stats="shard"):
        if not isinstance(stats, str):
            return keyword_search(queries, k, where, query_langs, stats)
        key = (tuple(queries), k, where, tuple(query_langs) if query_langs is not None else None, stats)
        try:
            hash(key)
        except TypeError:  # a filter holding a list
            return keyword_search(queries, k, where, query_langs, stats)
        if key not in seen:
            seen[key] = keyword_search(queries, k, where, query_langs, stats)
        return seen[key]

    return search


class DevIndex:
    """The judged queries searched in an index of the corpus built by one encoder
    (:class:`~encodr.evaluation.retrieval.RetrievalEvaluator`'s index and metrics)."""

    def __init__(self, folder: Path, encoder, where: Path):
        from ...data.beir import read_retrieval
        from ...evaluation.retrieval import RetrievalEvaluator
        from ...index import BuildOptions, Searcher, build

        self.evaluator = RetrievalEvaluator("judged", read_retrieval(folder), split=JUDGED)
        self.parts: dict[tuple[str, ...], RetrievalEvaluator] = {}
        build(
            [str(folder / "corpus.jsonl")],
            where,
            BuildOptions(model=encoder, index_type="flat", backend=getattr(encoder, "backend", "torch")),
        )
        self.searcher = Searcher(where, encoder=encoder)
        self.has_keywords = self.searcher.index.has_keywords
        if self.has_keywords:
            self.searcher.index.keyword_search = remembered(self.searcher.index.keyword_search)

    def per_query(self, options, reranker=None, only: tuple[str, ...] | None = None) -> np.ndarray:
        """nDCG@10 × 100 of each judged query (only the query ids ``only``, in the evaluator's
        order, when given) with ``options`` (re-ranked by ``reranker`` at its depth and weight):
        float64 (queries,) (:meth:`~encodr.evaluation.retrieval.RetrievalEvaluator.per_query`)."""
        from ...evaluation.retrieval import DEPTH, RetrievalEvaluator

        evaluator = self.evaluator
        if only is not None:
            if only not in self.parts:
                keep = set(only)
                data = replace(evaluator.data, queries={q: t for q, t in evaluator.data.queries.items() if q in keep})
                self.parts[only] = RetrievalEvaluator("judged", data, split=JUDGED)
            evaluator = self.parts[only]
        ranked = evaluator._rank(self.searcher, (replace(options, k=DEPTH),), reranker)
        return evaluator.per_query(next(iter(ranked.values())))

    @contextlib.contextmanager
    def adapted(self, u: np.ndarray, v: np.ndarray):
        """This index's searches, inside the block, with the query adapter ``u``, ``v``
        (float32 (d, r) each, :class:`~encodr.index.adapter.QueryAdapter`)."""
        from ...index.adapter import QueryAdapter

        self.searcher.adapter = QueryAdapter(u, v, self.searcher.fingerprint, {})
        try:
            yield
        finally:
            self.searcher.adapter = None

    def close(self) -> None:
        self.searcher.index.close()


def scoring_encoder(encoder, where: Path, has_bf16=None):
    """The encoder the run's own indexes (and so its mining and its searches) use, on a CPU: the
    fastest that keeps ``encoder``'s vectors, sharing its modules (it serves until they are
    trained again).

    - On a CPU with native bfloat16 products (``has_bf16``, default
      :func:`~encodr.models.encoder.cpu_has_bf16`): ``encoder``'s modules under bfloat16
      autocast (backend ``torch-bf16``), when their vectors of
      :data:`~encodr.models.onnx.AGREEMENT_TEXTS` are within cosine
      :data:`~encodr.models.onnx.AGREEMENT` of float32's: long passages encode faster than in
      ONNX float32 there (``bench/notes/judged.md``), and nothing is exported.
    - Else ``encoder``'s weights exported to ONNX float32 in ``where`` (a temporary folder,
      :func:`~encodr.models.onnx.onnx_encoder`), whose vectors are torch's (the export is
      checked against them) and which encodes long passages about twice as fast as torch.
    - On a GPU, for a static or an already exported model, or where the export cannot be made:
      ``encoder`` itself.
    """
    from ...models.encoder import Encoder, TorchForward, cpu_has_bf16
    from ...models.onnx import AGREEMENT, agreement, onnx_encoder

    if getattr(encoder, "backend", None) != "torch" or encoder.st.device.type != "cpu" or encoder.static:
        return encoder
    if (has_bf16 or cpu_has_bf16)():
        half = Encoder(encoder.st, encoder.name, TorchForward(encoder.st, bf16=True))
        if agreement(encoder, half) >= AGREEMENT:
            return half
    try:
        return onnx_encoder(encoder, "onnx", folder=where)
    except EncodrError:
        return encoder


@contextlib.contextmanager
def corpus_index(folder: Path, encoder):
    """A :class:`DevIndex` of the run's corpus encoded by ``encoder`` (through
    :func:`scoring_encoder`), removed after the block."""
    with tempfile.TemporaryDirectory(prefix="encodr-judged-dev-") as where:
        found = DevIndex(folder, scoring_encoder(encoder, Path(where) / "onnx"), Path(where) / "index")
        try:
            yield found
        finally:
            found.close()


def distill_triplets(
    data: JudgedData, encoder, labeller: CachedScores, recipe: JudgedRecipe, queries: set[str], progress
) -> list[tuple[str, str, str, float]]:
    """(query, passage, passage, σ-margin) labelled by a re-ranker's ``labeller``
    (:func:`cached_scores`, whose scores the run's re-ranking may have computed): the judged ``queries`` and
    ``recipe.distill_queries`` pseudo-queries cut from the corpus (inverse cloze: a sentence
    of a document), each against the ``distill_candidates`` documents ``encoder`` ranks highest
    (a judged query's relevant document among them); the passage the cross-encoder scores highest
    is paired with each other one (AugSBERT's silver labels, GPL's margins)."""
    import faiss

    from ..retrieval.pairs import Passage, ict_pair

    rng = np.random.default_rng(recipe.seed)
    texts = list(dict.fromkeys(data.corpus.values()))
    judged = {j.query: data.corpus[j.doc] for j in data.judgments if j.query in queries and j.grade > 0}
    asked_texts = list(judged)
    for i in rng.permutation(len(texts))[: recipe.distill_queries]:
        pair = ict_pair(Passage.of(texts[int(i)][:2000]), rng, 0.0)
        if pair:
            asked_texts.append(pair[0])
    with tempfile.TemporaryDirectory(prefix="encodr-judged-distill-") as where:
        fast = scoring_encoder(encoder, Path(where) / "onnx")
        vectors = fast.encode(texts, prompt=encoder.prompt("document"))
        asked = fast.encode(asked_texts, prompt=encoder.prompt("query"))
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    _, top = index.search(np.ascontiguousarray(asked, dtype=np.float32), min(recipe.distill_candidates, len(texts)))
    out = []
    for n, (query, row) in enumerate(zip(asked_texts, top)):
        candidates = list(dict.fromkeys(([judged[query]] if query in judged else []) + [texts[int(j)] for j in row if j >= 0]))
        scores = labeller.query_scores(query, candidates)
        best = int(np.argmax(scores))
        out += [
            (query, candidates[best], c, float(scores[best] - s)) for c, s in zip(candidates, scores) if c != candidates[best]
        ]
        progress(ProgressEvent("label pairs", n + 1, len(asked_texts)))
    return out


def run(ctx: RunContext) -> Outcome:
    """Learn from judgments (see the module docstring); saves the bi-encoder at the output's root,
    the re-ranker in ``cross/`` when it was kept, and the chosen search settings as ``search`` in
    ``encodr.json`` (and, with ``--index``, with the index: :func:`encodr.index.judgments.write_tuned`).

    Raises:
        EncodrError: no judgments, none relevant; see :func:`.data.read_judged`.
    """
    request, recipe = ctx.request, ctx.recipe
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="encodr-judged-") as tmp:
        data = read_judged(request.index, request.data, Path(tmp) / "judged")
        encoder = load_encoder(request.models[0], recipe.pooling, recipe.raw_pooling, recipe.max_length, ctx.trainer.device)
        queries = data.queries()
        base = {
            "base_model": encoder.name,
            "data": data.source,
            "judgments": len(data.judgments),
            "queries": len(queries),
            "folds": None if request.no_dev else recipe.folds,
            "left_out": data.unused,
        }
        if len(queries) < recipe.min_queries and not request.no_dev:
            return _start_kept(ctx, data, encoder, base, len(queries))
        if request.no_dev:
            run_ = _without_selection(ctx, encoder, _mine(ctx, data, encoder))
        else:
            run_ = _cross_validated(ctx, data, encoder)
        ctx.save(".", encoder.save)
        if run_.cross is not None and "rerank" in run_.search:
            run_.cross.tuned = run_.search.pop("rerank")
            ctx.save("cross", run_.cross.save)
    components, search = run_.components, run_.search
    kept = [c.name for c in components if c.kept]
    if not request.no_dev and not kept:
        ctx.warn(
            f"nothing beat the starting model in {recipe.folds}-fold cross-validation over {len(queries)} judged queries "
            f"(a gain with p < {recipe.significance:g}): saved the starting model unchanged, with the declared search defaults"
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
        "seconds": {**run_.seconds, "total": round(time.perf_counter() - started, 2)},
        "device": ctx.trainer.device,
    }
    return Outcome(
        summary,
        [_row(encoder, data, {**lines, "kept": ", ".join(kept) or "start"})],
        run_.log,
        ("base_model", "data", "judgments", "queries", "folds", *lines, "kept"),
    )


@dataclass
class Chosen:
    """What a judged run chose: its :class:`Component` s, the search settings kept, the
    re-ranker (None unless kept), the training log and the seconds of each phase."""

    components: list[Component]
    search: dict
    cross: object | None
    log: list
    seconds: dict


def _start_kept(ctx: RunContext, data: JudgedData, encoder, base: dict, n: int) -> Outcome:
    """Too few judged queries: the starting model saved unchanged, said in one line."""
    recipe = ctx.recipe
    ctx.warn(
        f"only {n} judged queries: too few to cross-validate (at least {recipe.min_queries}); saved the starting "
        f"model unchanged (judge more queries, or pass {S.no_dev} to train without selection)"
    )
    ctx.save(".", encoder.save)
    return Outcome(
        {**base, "kept": "start"}, [_row(encoder, data, {"kept": "start"})], None, ("base_model", "data", "judgments", "kept")
    )


def _mine(ctx: RunContext, data: JudgedData, encoder, dev: "DevIndex | None" = None) -> list[Example]:
    """Every judged pair with its negatives, mined once by the starting model: from ``dev``, its
    index of the corpus, when there is one (:func:`indexed_examples`), else by encoding the corpus
    (:func:`examples`)."""
    recipe = ctx.recipe
    wanted = max(recipe.negatives, recipe.cross_negatives if recipe.cross else 0)
    ctx.progress(ProgressEvent("mine negatives", 0, 1))
    items = indexed_examples(data, dev, recipe, wanted) if dev is not None else examples(data, encoder, recipe, wanted)
    ctx.progress(ProgressEvent("mine negatives", 1, 1))
    return items


def _bi_stream(ctx: RunContext, encoder, items: list[Example]) -> Stream:
    """MNRL over ``items`` with as many hard negatives as the recipe asks and every item has."""
    recipe = ctx.recipe
    negatives = min(recipe.negatives, min((len(e.negatives) for e in items), default=0))
    return mnrl_stream(encoder, items, recipe, ctx.trainer.world, negatives)


def _without_selection(ctx: RunContext, encoder, items: list[Example]) -> Chosen:
    """``--no-dev``: the bi-encoder trained on every judged pair and kept as it ends."""
    folds = Folds(Plan([], [], [], np.zeros(0, dtype=int), [], []))
    folds.fit(ctx, encoder.module, _bi_stream(ctx, encoder, items), ctx.recipe.optim(), "final train", "bi-encoder")
    component = Component("bi-encoder", "dense nDCG@10", None, None, True, "trained without selection (no_dev)")
    return Chosen([component], {}, None, folds.log, folds.seconds)


def _train_cross(ctx: RunContext, folds: Folds, items: list[Example], phase: str, label: str):
    """A re-ranker (a cross-encoder from the base model) trained on ``items``' judged pairs and
    their first ``cross_negatives`` negatives (BCE)."""
    from ...models.cross import new_cross_encoder
    from ..trans_encoder.method import cross_stream

    recipe = ctx.recipe
    cross = new_cross_encoder(ctx.request.models[0], recipe.cross_max_length, ctx.trainer.device, seed=recipe.seed)
    pairs = [(e.query, e.positive) for e in items] + [(e.query, n) for e in items for n in e.negatives[: recipe.cross_negatives]]
    labels = np.asarray([1.0] * len(items) + [0.0] * (len(pairs) - len(items)), dtype=np.float32)
    stream = cross_stream(cross, pairs, labels, recipe.cross_batch_size, symmetric=False)
    folds.fit(ctx, cross.ce, stream, recipe.cross_optim(), phase, f"re-ranker, {label}")
    return cross


def _one_fold(ctx: RunContext, data: JudgedData, work, items: list[Example], state: dict, start_dev, folds: Folds):
    """The body of each fold: the components trained from the start on the other folds' queries,
    and the fold's queries scored with them (:class:`~.crossval.Folds`)."""
    from ...index.judgments import query_key

    recipe = ctx.recipe
    fold_of = {query_key(t): f for t, f in zip(folds.plan.texts, folds.plan.folds.tolist())}

    def body(f: int, label: str) -> None:
        train = [e for e in items if fold_of.get(query_key(e.query), -1) != f]
        if len(train) < 2:  # every query in this fold: its queries keep the start's scores (:meth:`Folds.filled`)
            return
        work.st.load_state_dict(state)
        folds.fit(ctx, work.module, _bi_stream(ctx, work, train), recipe.optim(), "train", f"bi-encoder, {label}")
        scores = cached_scores(_train_cross(ctx, folds, train, "train", label)) if recipe.cross else None
        if scores is not None:
            folds.score_reranker(start_dev, f, scores)
        _score_index(folds, data, work, f, adapter=recipe if recipe.adapter else None)
        if scores is not None and recipe.distill:
            triplets = distill_triplets(data, work, scores, recipe, {e.query for e in train}, ctx.progress)
            folds.fit(ctx, work.module, margin_stream(work, triplets, recipe), recipe.distill_optim(), "train", f"loop, {label}")
            _score_index(folds, data, work, f, ("dense",), {"dense": "loop"})

    return body


def _score_index(folds: Folds, data: JudgedData, encoder, fold: int, keys=None, rename=None, adapter=None) -> None:
    """Index the corpus with ``encoder`` and score fold ``fold``'s queries
    (:meth:`~.crossval.Folds.score_fold`; with ``adapter``, the recipe, also with a query
    adapter at its settings, :meth:`~.crossval.Folds.score_adapter`)."""
    started = time.perf_counter()
    with corpus_index(data.folder, encoder) as dev:
        folds.timed("index", started)
        folds.score_fold(dev, fold, keys, rename)
        if adapter is not None:
            folds.score_adapter(dev, fold, adapter)


def _cross_validated(ctx: RunContext, data: JudgedData, encoder) -> Chosen:
    """The starting model's index of the corpus, every judged pair's negatives mined from it,
    k-fold cross-validation of every component (:mod:`.crossval`; the query adapter on the same
    folds), then the final model trained on every judged query with the kept components, and
    the final adapter when it was kept."""
    recipe = ctx.recipe
    state = {k: v.detach().to("cpu", copy=True) for k, v in encoder.st.state_dict().items()}
    frozen = load_encoder(ctx.request.models[0], recipe.pooling, recipe.raw_pooling, recipe.max_length, ctx.trainer.device)
    started = time.perf_counter()
    with corpus_index(data.folder, frozen) as start_dev:
        folds = Folds(Plan.of(start_dev, recipe))
        folds.timed("index", started)
        started = time.perf_counter()
        items = _mine(ctx, data, frozen, start_dev)
        folds.timed("mine negatives", started)
        folds.score_start(start_dev)
        start_pairs = folds.score_adapter(start_dev, None, recipe) if recipe.adapter else None
        each_fold(ctx, folds, _one_fold(ctx, data, encoder, items, state, start_dev, folds))
        encoder.st.load_state_dict(state)
        components, search = _decide(folds, recipe, start_dev.has_keywords)
        cross = _final(ctx, data, encoder, items, folds, {c.name for c in components if c.kept})
        adapter = next((c for c in components if c.name == "query adapter"), None)
        if adapter is not None:
            tuned = any(c.kept for c in components if c.name == "bi-encoder")
            _store_adapter(ctx, data, encoder, (start_dev, start_pairs, tuned), folds, adapter)
    return Chosen(components, search, cross, folds.log, folds.seconds)


def _final(ctx: RunContext, data: JudgedData, encoder, items: list[Example], folds: Folds, kept: set[str]):
    """The final model on every judged query, with the kept components only: the bi-encoder,
    the re-ranker (trained also when the loop needs its labels) and the seeded loop. Returns
    the re-ranker, or None."""
    recipe = ctx.recipe
    if "bi-encoder" in kept:
        folds.fit(ctx, encoder.module, _bi_stream(ctx, encoder, items), recipe.optim(), "final train", "bi-encoder, all")
    cross = None
    if "re-ranker" in kept or "seeded loop" in kept:
        cross = _train_cross(ctx, folds, items, "final train", "all")
    if "seeded loop" in kept:
        triplets = distill_triplets(data, encoder, cached_scores(cross), recipe, {e.query for e in items}, ctx.progress)
        stream = margin_stream(encoder, triplets, recipe)
        folds.fit(ctx, encoder.module, stream, recipe.distill_optim(), "final train", "loop, all")
    return cross if "re-ranker" in kept else None


def _decide(folds: Folds, recipe: JudgedRecipe, keywords: bool) -> tuple[list[Component], dict]:
    """Each component's cross-validated comparison (:meth:`Component.compared`, at the recipe's
    ``significance``) and the search settings kept (``fusion_weight``; ``rerank``: depth and
    weight)."""
    from ...index.fusion import CODE_ALPHA, ZSCORE_ALPHA

    start, held, plan, level = folds.scores.start, folds.scores.filled(), folds.plan, recipe.significance
    bi = Component.compared("bi-encoder", "cross-validated dense nDCG@10", start["dense"], held["dense"], level)
    out = [bi]
    if "loop" in held:
        loop = Component.compared("seeded loop", "cross-validated dense nDCG@10", held["dense"], held["loop"], level)
        if loop.kept and not bi.kept:
            loop.kept, loop.note = False, "it builds on the bi-encoder, which was not kept"
        out.append(loop)
    search: dict = {}
    source = held if bi.kept else start
    if keywords:
        grid = {k: v for k, v in source.items() if k.startswith("hybrid@")}
        chosen, pick = nested({"hybrid": source["hybrid"], **grid}, plan.folds)
        fusion = Component.compared(
            "fusion weight",
            "cross-validated hybrid nDCG@10",
            source["hybrid"],
            chosen,
            level,
            f"α {pick.split('@')[1]} (declared {ZSCORE_ALPHA:g}, source code {CODE_ALPHA:g})"
            if pick != "hybrid"
            else f"the declared α ({ZSCORE_ALPHA:g}, source code {CODE_ALPHA:g})",
        )
        fusion.kept = fusion.kept and pick != "hybrid"
        if fusion.kept:
            search["fusion_weight"] = float(pick.split("@")[1])
        out.append(fusion)
    reranked = {k: v for k, v in held.items() if k.startswith("rerank@")}
    if reranked:
        first = default_key(keywords)
        chosen, pick = nested({first: start[first], **reranked}, plan.folds)
        depth, weight = pick.split("@")[1].split(",") if pick != first else ("", "")
        reranker = Component.compared(
            "re-ranker",
            f"cross-validated {first} nDCG@10 re-ranked",
            start[first],
            chosen,
            level,
            f"depth {depth}, weight {weight}" if depth else "no re-ranking",
        )
        reranker.kept = reranker.kept and pick != first
        if reranker.kept:
            search["rerank"] = {"depth": int(depth), "weight": float(weight)}
        out.append(reranker)
    if "adapter" in source:
        out.append(_adapter_component(folds, recipe, source, default_key(keywords), source is start))
    return out, search


def _adapter_component(folds: Folds, recipe: JudgedRecipe, source: dict, key: str, start: bool) -> Component:
    """The query adapter's comparison: ``source[key]`` (the default search of the model kept,
    ``start`` or the folds' models) against the same with the adapter fitted on the other folds."""
    note = f"{len(folds.plan.qids)} queries, rank {recipe.adapter_rank}, on the {'starting' if start else 'tuned'} model"
    return Component.compared(
        "query adapter", f"cross-validated {key} nDCG@10", source[key], source["adapter"], recipe.adapter_keep_p, note
    )


def _store_adapter(ctx: RunContext, data: JudgedData, encoder, start: tuple, folds: Folds, component: Component) -> None:
    """With ``--index``, store the adapter fitted on every judged query with the saved model
    (:func:`encodr.index.adapter.write_adapter`) when ``component`` kept it, or remove the one
    stored there for this model when it is not kept. ``start``: the starting model's index, its
    mined pairs and whether the model was tuned; the adapter is fitted on those pairs when it
    was not, else on pairs mined from an index of the corpus by the final model."""
    from ...index import locate
    from ...index.adapter import QueryAdapter, read_adapter, remove_adapter, write_adapter
    from .adapter import fit, mine

    if not ctx.request.index or not ctx.trainer.is_main:
        return
    root, recipe = locate(ctx.request.index), ctx.recipe
    if not component.kept:
        if read_adapter(root, encoder.fingerprint) is not None:
            remove_adapter(root)
            component.note += "; the adapter stored with the index before is removed"
        return
    started = time.perf_counter()
    report = {
        "kept": True,
        "metric": component.metric,
        "queries": len(folds.plan.qids),
        "folds": recipe.folds,
        "rank": recipe.adapter_rank,
        "cv_before": component.before,
        "cv_after": component.after,
        "p": component.p,
    }
    dev, pairs, tuned = start
    with contextlib.ExitStack() as stack:
        if tuned:
            dev = stack.enter_context(corpus_index(data.folder, encoder))
            pairs = mine(dev.searcher, folds.plan.texts, folds.plan.relevant)
        u, v = fit(pairs, recipe.adapter_rank, recipe.scale, recipe.seed)
        write_adapter(root, QueryAdapter(u, v, dev.searcher.fingerprint, report))
    folds.timed("query adapter", started)


def _row(encoder, data: JudgedData, metrics: dict) -> dict:
    return {
        "kind": "tune",
        "model": encoder.name,
        "data": data.source,
        "strings": len(data.judgments),
        "out": ".",
        "metrics": metrics,
    }
