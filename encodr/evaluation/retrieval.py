"""Retrieval scored as BEIR and MTEB score it — nDCG@10 first — through encodr's own index:
the corpus goes through ``encodr index`` (reading, deduplication, language detection, FAISS)
and the queries through :class:`~encodr.index.Searcher`, so the number is the one a user's
search gets."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.beir import RetrievalSet
from ..errors import S
from ..index.options import DENSE, KEYWORD, SearchOptions
from .base import Evaluator, Score

if TYPE_CHECKING:
    import numpy as np


def ndcg_at_10(ranked: list[str], relevant) -> float:
    """nDCG@10 × 100 of one ranked list of document ids against those judged relevant (binary
    relevance, as sentence-transformers' evaluator scores it; 0 when none is judged relevant)."""
    import math

    relevant = set(relevant)
    if not relevant:
        return 0.0
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return 100 * dcg / ideal


DEPTH = 100  # hits kept per query: recall@100 and MAP@100 need 100
METRICS = (("ndcg@k", 10), ("mrr@k", 10), ("recall@k", 100), ("map@k", 100))  # sentence-transformers' key, k


def rerank_label(options: SearchOptions) -> str:
    """The label of a re-ranked ranking: the first stage's, ``+rerank``, and the weight when it is not 1."""
    return f"{options.label}+rerank" + (f"@{options.rerank_weight:g}" if options.rerank_weight not in (None, 1) else "")


def _below(hits: list, rank: int) -> list:
    """First-stage hits after the re-ranked ones: ranks from ``rank`` + 1, and scores below
    any cross-encoder score that keep their first-stage order."""
    from dataclasses import replace

    return [replace(h, rank=rank + i, score=-1e6 - i) for i, h in enumerate(hits, 1)]


class RetrievalEvaluator(Evaluator):
    """nDCG@10 (primary), MRR@10, recall@100 and MAP@100 (× 100) of a bi-encoder's search over
    a BEIR-layout set (:mod:`encodr.data.beir`).

    The corpus is indexed as ``encodr index`` indexes it — a document longer than the model's
    window split into passages and ranked by its best passage, unless ``whole`` — with the encoder being scored (exact
    ``flat`` index by default, so
    the score is the model's, not an approximate index's), each judged query of ``split``
    retrieves its top :data:`DEPTH` documents in ``mode`` (``dense``, ``keyword`` or
    ``hybrid`` with ``fusion``: :meth:`encodr.index.Searcher.query`), and the metrics are computed by
    sentence-transformers' ``InformationRetrievalEvaluator.compute_metrics`` on those ranked
    lists, so the numbers are defined exactly as that evaluator defines them. Unlike running
    that evaluator, the vectors come from the index (what ``encodr search`` returns), and
    documents with the same text — stored and encoded once by the index — are each a hit of
    their own, at the same score (:meth:`encodr.index.Searcher.query`).

    Relevance is binary, as in sentence-transformers' evaluator: a qrels grade > 0 is
    relevant. BEIR's pytrec_eval uses the grades in nDCG; on sets graded 0/1 (SciFact, XQuAD)
    the two agree. sentence-transformers' MAP@k divides by min(k, relevant documents).
    """

    # metadata filters every search applies (:mod:`encodr.index.filters`; ``eval retrieval --index --filter``)
    filters: tuple = ()

    def __init__(
        self,
        name: str,
        data: RetrievalSet,
        split: str = "test",
        limit: int | None = None,
        index_type: str = "flat",
        searches: tuple[SearchOptions, ...] = (SearchOptions(mode=DENSE),),
        rerank: str | None = None,
        whole: bool = False,
    ):
        """``searches``: the rankings scored, one row each (their ``k`` is :data:`DEPTH`); the
        first is :meth:`evaluate`'s. ``rerank``: a cross-encoder that re-scores each ranking's
        first ``rerank_depth`` hits (its ``rerank_weight``). :attr:`cache` (off by default for a
        library caller): keep the index built for a model and corpus in the workspace and reuse it."""
        self.name = name
        self.whole = whole
        self.cache = False
        self.searches = tuple(replace(o, k=DEPTH) for o in searches)
        self.rerank = rerank
        self.data = data
        self.split = split
        self.limit = limit
        self.index_type = index_type
        self.judged = data.judged(split)

    def query_ids(self) -> list[str]:
        """The judged queries scored, in file order (the first ``limit``)."""
        return [q for q in self.data.queries if q in self.judged][: self.limit]

    def ranked(
        self,
        encoder,
        searches: tuple[SearchOptions, ...] | None = None,
        reranker=None,
        first_stage: bool = False,
        reranked: tuple[SearchOptions, ...] | None = None,
    ) -> dict[str, list[list[tuple[str, float]]]]:
        """Each judged query's ranked (document id, score) list, at most :data:`DEPTH` long
        for each of ``searches`` (default:
        this evaluator's), keyed by its :attr:`~encodr.index.SearchOptions.label`, from one
        index built once. With ``reranker`` (a :class:`~encodr.models.CrossScorer`; default:
        loaded from ``rerank``), each ranking's first ``rerank_depth`` hits are re-scored by it
        (:func:`~encodr.index.search.rerank_hits`) and the rest follow in first-stage order, so
        recall@100 still sees 100 documents; its label gains ``+rerank``. ``reranked``: only
        these of ``searches`` are re-ranked (default: all). With ``first_stage`` too, a
        re-ranked ranking's list before re-ranking is returned beside it, under its plain
        label, from the same searches (one index, not two)."""
        from ..index import BuildOptions, Searcher, build

        reranker = self._reranker(reranker)
        options = BuildOptions(
            model=encoder, index_type=self.index_type, backend=getattr(encoder, "backend", "torch"), whole=self.whole
        )
        with tempfile.TemporaryDirectory(prefix="encodr-retrieval-") as tmp:
            where = self.cached_index(encoder) if self.cache else Path(tmp) / "index"
            if not (where / "current").exists():
                build([str(self.data.corpus_file)], where, options)
            searcher = Searcher(where, encoder=encoder)
            try:
                return self._rank(searcher, searches or self.searches, reranker, first_stage, reranked)
            finally:
                searcher.index.close()

    def cached_index(self, encoder) -> Path:
        """Where the index of this corpus by ``encoder`` is kept: ``$ENCODR_HOME/cache/retrieval/KEY``,
        KEY a hash of the encoder's :class:`~encodr.models.encoder.EncodingSpec`, the corpus file's path,
        size and modification time, how documents are indexed and encodr's version, so a
        change to any of them builds anew."""
        import hashlib
        import json

        from .. import __version__
        from ..paths import home

        stat = self.data.corpus_file.stat()
        key = {
            **encoder.spec.key(),
            "corpus": str(self.data.corpus_file.resolve()),
            "size": stat.st_size,
            "mtime": stat.st_mtime_ns,
            "whole": self.whole,
            "index_type": self.index_type,
            "encodr": __version__,
        }
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
        return home() / "cache" / "retrieval" / f"{self.name}-{digest}"

    def _reranker(self, reranker):
        """``reranker``, else the cross-encoder ``rerank`` names (loaded before any indexing, so a bad path fails first),
        else None."""
        if reranker is None and self.rerank:
            from ..models import load_cross

            return load_cross(self.rerank)
        return reranker

    def _rank(
        self,
        searcher,
        searches: tuple[SearchOptions, ...],
        reranker,
        first_stage: bool = False,
        reranked: tuple[SearchOptions, ...] | None = None,
    ) -> dict[str, list[list[tuple[str, float]]]]:
        """:meth:`ranked`'s lists from ``searcher``'s index."""
        from ..index.search import rerank_hits

        queries = [self.data.queries[q] for q in self.query_ids()]
        out: dict[str, list[list[tuple[str, float]]]] = {}
        for options in searches:
            options = replace(options, k=DEPTH, filter=options.filter or self.filters)
            _, hits = searcher.query(queries, options)
            label = options.label
            rerank = reranker is not None and (reranked is None or any(o.label == label for o in reranked))
            if rerank and first_stage:
                out[label] = [[(h.ext_id, h.score) for h in row] for row in hits]
            if rerank:
                settled = searcher.resolve(options, reranker)
                depth = settled.rerank_depth
                hits = [
                    rerank_hits(q, row[:depth], reranker, depth, settled.rerank_weight) + _below(row[depth:], depth)
                    for q, row in zip(queries, hits)
                ]
                label = rerank_label(options)
            out[label] = [[(h.ext_id, h.score) for h in row] for row in hits]
        return out

    def scores(self, ranked: list[list[tuple[str, float]]]) -> list[Score]:
        """nDCG@10, MRR@10, recall@100 and MAP@100 × 100 of ranked lists (one per judged query,
        in :meth:`query_ids` order), by sentence-transformers' ``compute_metrics``, each list in
        the order search gives it (ties broken as search breaks them, not by document id)."""
        from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

        qids = self.query_ids()
        reference = InformationRetrievalEvaluator(
            {q: self.data.queries[q] for q in qids},
            {d: "" for d in self.data.doc_ids},
            {q: set(self.judged[q]) for q in qids},
            mrr_at_k=[10],
            ndcg_at_k=[10],
            accuracy_at_k=[1],
            precision_recall_at_k=[100],
            map_at_k=[100],
            write_csv=False,
        )
        # each hit scored by its place, so that ties fall as search shows them (sentence-transformers breaks them by id)
        metrics = reference.compute_metrics(
            [[{"corpus_id": d, "score": float(len(row) - i)} for i, (d, _) in enumerate(row)] for row in ranked]
        )
        return [Score(self.name, f"{key.split('@')[0]}@{k}", 100 * float(metrics[key][k]), len(qids)) for key, k in METRICS]

    def per_query(self, ranked: list[list[tuple[str, float]]]) -> "np.ndarray":
        """nDCG@10 × 100 of each judged query (in :meth:`query_ids` order), defined as
        :meth:`scores` defines it (sentence-transformers' binary-relevance nDCG, in the order
        search gives, ties included), so its mean is :meth:`scores`' nDCG@10; for paired significance tests
        (:mod:`.significance`).

        Returns:
            float64 array (queries,).
        """
        import numpy as np

        out = [ndcg_at_10([doc for doc, _ in row], self.judged[q]) for q, row in zip(self.query_ids(), ranked)]
        return np.asarray(out, dtype=np.float64)

    def evaluate(self, encoder, progress: bool = False) -> list[Score]:
        """nDCG@10, MRR@10, recall@100 and MAP@100 × 100 over the judged queries of the split,
        for each of the evaluator's searches (from one encoding of the corpus), the dataset
        named with the search's label (``scifact · hybrid·zscore``); the first search's come first.

        Raises:
            EncodrError: see :func:`encodr.index.build` (the corpus cannot be indexed) and
                :meth:`encodr.index.Searcher.query`.
        """
        ranked = self.ranked(encoder)
        return [
            replace(score, dataset=f"{score.dataset} · {self.key(o)}")
            for o in self.searches
            for score in self.scores(ranked[self.key(o)])
        ]

    def key(self, options: SearchOptions) -> str:
        """The key of ``options``' ranking in :meth:`ranked`'s answer."""
        return rerank_label(options) if self.rerank else options.label


class IndexRetrievalEvaluator(RetrievalEvaluator):
    """:class:`RetrievalEvaluator`'s metrics for an index already built (``encodr eval retrieval
    --index IDX --queries Q --qrels R``): the queries are encoded by the index's own model and
    searched as ``encodr search`` searches that index, so the number is the one its users get.

    Unlike :class:`RetrievalEvaluator`, nothing is indexed: the qrels must name the documents by
    the ids the index stores (a JSONL's ``_id``, a CSV's id column, a document file's path).
    Documents with the same text are stored once, under the first one's id; qrels naming
    another of them are refused as naming a document the index lacks.
    """

    def __init__(
        self,
        index: str | Path,
        queries: str | Path | None,
        qrels: str | Path | None,
        limit: int | None = None,
        searches: tuple[SearchOptions, ...] = (SearchOptions(),),
        rerank: str | None = None,
        folds: tuple[str, ...] = ("test",),
    ):
        """``queries`` and ``qrels`` ``None``: the index's own judgments (:mod:`encodr.index.judgments`),
        the ``current`` ones of the queries in ``folds``."""
        from ..data.beir import read_qrels, read_queries
        from ..index import Searcher
        from ..models import load_encoder

        self.searcher = Searcher(
            index, encoder=lambda model, built: load_encoder(model, backend=built)
        )  # the built backend, as a folder is scored (not the faster query encoder)
        try:
            doc_ids = self.searcher.index.document_ids()
            if queries is None:
                asked, judged = own_judgments(self.searcher.index, folds)
            else:
                asked = read_queries(queries)
                judged = read_qrels(qrels, doc_ids, asked, corpus=f"the index {index}")
        except BaseException:
            self.searcher.index.close()  # a bad queries or qrels file leaves the index released
            raise
        data = RetrievalSet(Path(str(index)).name, None, doc_ids, asked, {"qrels": judged})
        has_keywords = self.searcher.index.has_keywords
        runnable = tuple(dict.fromkeys(o.for_index(has_keywords) for o in searches if has_keywords or o.mode != KEYWORD))
        searches = runnable or searches  # keyword alone on an index without a keyword index: its own refusal, when searched
        super().__init__(data.name, data, "qrels", limit, searches=searches, rerank=rerank)

    @property
    def model_name(self) -> str:
        """The index's model, which encodes the queries."""
        return str(self.searcher.index.meta.model)

    def ranked(
        self, encoder=None, searches: tuple[SearchOptions, ...] | None = None, reranker=None
    ) -> dict[str, list[list[tuple[str, float]]]]:
        """Each judged query's ranked (document id, score) list from the index (``encoder`` is
        unused: the index's model encodes the queries)."""
        return self._rank(self.searcher, searches or self.searches, self._reranker(reranker), {})

    def close(self) -> None:
        """Release the index."""
        self.searcher.index.close()


def own_judgments(index, folds: tuple[str, ...]) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """BEIR's queries and qrels (relevant documents only, grade > 0) of ``index``'s ``current``
    judgments in ``folds`` (:func:`encodr.index.judgments.qrels_of`).

    Raises:
        EncodrError: no judged query with a relevant document in those folds, naming the counts
            and the fix.
    """
    from ..errors import EncodrError
    from ..index.judgments import Judgments, qrels_of, with_status

    found = with_status(Judgments(index.path).all(), index.texts)
    queries, qrels = qrels_of(found, folds)
    judged = {q: {d: g for d, g in docs.items() if g > 0} for q, docs in qrels.items()}
    judged = {q: docs for q, docs in judged.items() if docs}
    if not judged:
        raise EncodrError(
            f"index {index.path.name} has no judged query with a relevant document in the {'/'.join(folds)} fold "
            f"({len(found)} judgment(s) in all); judge hits with encodr judge, or pass {S.split} all",
            field="split",
        )
    return {q: queries[q] for q in judged}, judged
