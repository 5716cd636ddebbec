"""Retrieval quality (nDCG@10, BEIR's main score) of encodr's search modes, with the anchors in
the same run on the same data:

- encodr ``dense``, ``keyword`` (SQLite FTS5 BM25), ``hybrid`` with RRF and with the convex
  combination, all through ``encodr eval retrieval``'s pipeline (one exact index per model
  and dataset, every mode queried from it);
- sentence-transformers' ``InformationRetrievalEvaluator`` (dense, exact cosine; the corpus
  text is title + " " + text, as encodr indexes it);
- ``bm25s`` (keyword; Lucene's BM25 variant, k1 = 1.5, b = 0.75; its own tokenizer, no
  stemming, no stop words — the same as the FTS5 index here).

Datasets (``../shared/data/retrieval``, BEIR layout): SciFact with its 809 train queries, and
XQuAD en, de and es; and ``xquad-x``: the de and es queries against one index of the en, de and
es paragraphs (720), where a parallel paragraph counts as relevant in any language.

    python bench/retrieval.py                                   # minilm on every dataset
    python bench/retrieval.py --models me5 --data xquad-en xquad-de xquad-es xquad-x

Prints a table and writes bench/results/retrieval.json (rows are kept by model and dataset
across runs, so several invocations build one table).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"
SPLITS = {"scifact": "train", "xquad-en": "test", "xquad-de": "test", "xquad-es": "test", "xquad-x": "test"}
MODES = [("dense", "rrf"), ("keyword", "rrf"), ("hybrid", "rrf"), ("hybrid", "convex")]


def cross_lingual(root: Path) -> Path:
    """A BEIR folder: the de and es queries against the en + de + es paragraphs; a query's
    relevant paragraphs are its paragraph in each language (XQuAD is parallel: the three
    languages share the query ids)."""
    from encodr.data.beir import read_retrieval

    sets = {lang: read_retrieval(DATA / f"xquad-{lang}") for lang in ("en", "de", "es")}
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w") as out:
        for lang in sets:
            out.write((DATA / f"xquad-{lang}" / "corpus.jsonl").read_text())
    relevant: dict[str, set[str]] = {}
    for data in sets.values():
        for qid, docs in data.qrels["test"].items():
            relevant.setdefault(qid, set()).update(docs)
    (root / "qrels").mkdir(exist_ok=True)
    with open(root / "queries.jsonl", "w") as queries, open(root / "qrels" / "test.tsv", "w") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for lang in ("de", "es"):
            for qid, text in sets[lang].queries.items():
                if qid in sets[lang].qrels["test"]:
                    queries.write(json.dumps({"_id": f"{lang}:{qid}", "text": text}) + "\n")
                    qrels.writelines(f"{lang}:{qid}\t{doc}\t1\n" for doc in sorted(relevant[qid]))
    return root


def corpus_texts(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        d = json.loads(line)
        out[str(d["_id"])] = f"{d.get('title') or ''} {d['text']}".strip()
    return out


def st_anchor(encoder, evaluator) -> float:
    """nDCG@10 × 100 of sentence-transformers' InformationRetrievalEvaluator (exact cosine)."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    qids = evaluator.query_ids()
    ir = InformationRetrievalEvaluator(
        {q: evaluator.data.queries[q] for q in qids},
        corpus_texts(evaluator.data.corpus_file),
        {q: set(evaluator.judged[q]) for q in qids},
        ndcg_at_k=[10],
        write_csv=False,
        batch_size=32,
        query_prompt=encoder.prompt("query") or None,
        corpus_prompt=encoder.prompt("document") or None,
    )
    return 100 * ir(encoder.st)["cosine_ndcg@10"]


def bm25s_anchor(evaluator) -> float:
    """nDCG@10 × 100 of bm25s (top 100), scored by the same metric code."""
    import bm25s
    import numpy as np

    corpus = corpus_texts(evaluator.data.corpus_file)
    ids = list(corpus)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([corpus[i] for i in ids], stopwords=None, show_progress=False), show_progress=False)
    qids = evaluator.query_ids()
    tokens = bm25s.tokenize([evaluator.data.queries[q] for q in qids], stopwords=None, show_progress=False)
    docs, scores = retriever.retrieve(tokens, k=min(100, len(ids)), show_progress=False)
    ranked = [[(ids[int(d)], float(s)) for d, s in zip(row, srow) if np.isfinite(s) and s > 0] for row, srow in zip(docs, scores)]
    return next(s.value for s in evaluator.scores(ranked) if s.metric == "ndcg@10")


# python -m bench run retrieval --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--data", "scifact", "--limit", "20", "--no-anchors", "--out", "{tmp}/retrieval.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["minilm"])
    parser.add_argument("--data", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    parser.add_argument("--no-anchors", action="store_true", help="skip sentence-transformers and bm25s")
    parser.add_argument(
        "--whole", action="store_true", help="index documents whole, cut at the window (default: passages, as encodr index does)"
    )
    parser.add_argument(
        "--rerank", default=None, help="a CrossEncoder: adds hybrid (convex) + re-ranking of the first 50 (a second index build)"
    )
    parser.add_argument(
        "--rerank-weight",
        type=float,
        default=1.0,
        help="with --rerank: w of the cross-encoder's scores against the first stage's (1: alone)",
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N judged queries (every column on the same ones)")
    parser.add_argument("--tag", default="", help="a label for the rows (kept apart from untagged rows in the JSON)")
    parser.add_argument("--out", type=Path, default=RESULTS / "retrieval.json")
    args = parser.parse_args()

    from encodr.data.beir import read_retrieval
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.models import load_encoder

    previous = json.loads(args.out.read_text())["rows"] if args.out.is_file() else []
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.data:
            folder = cross_lingual(Path(tmp) / name) if name == "xquad-x" else DATA / name
            from encodr.index import SearchOptions

            searches = tuple(SearchOptions(mode=mode, fusion=fusion, rerank_weight=args.rerank_weight) for mode, fusion in MODES)
            labels = {
                o.label: (o.mode if o.mode != "hybrid" else f"hybrid-{o.fusion}") for o in searches
            }  # the result JSON's column names
            evaluator = RetrievalEvaluator(
                name, read_retrieval(folder), split=SPLITS[name], whole=args.whole, limit=args.limit, searches=searches
            )
            for model in args.models:
                encoder = load_encoder(model)
                row = {
                    "model": model,
                    "data": name,
                    "documents as": ("whole" if args.whole else "passages") + (f", {args.tag}" if args.tag else ""),
                    "queries": len(evaluator.query_ids()),
                    "docs": len(evaluator.data.doc_ids),
                    "prompts": [encoder.prompt("query"), encoder.prompt("document")],
                }
                started = time.perf_counter()
                if args.rerank:  # one index: every mode's first stage, and the hybrid (convex) lists re-ranked
                    from encodr.models import load_cross

                    convex = tuple(o for o in searches if o.label == "hybrid·convex")
                    ranked = evaluator.ranked(
                        encoder, searches, reranker=load_cross(args.rerank), first_stage=True, reranked=convex
                    )
                else:
                    ranked = evaluator.ranked(encoder, searches)
                row["encodr_seconds"] = round(time.perf_counter() - started, 1)
                for label, column in labels.items():
                    row[column] = next(s.value for s in evaluator.scores(ranked[label]) if s.metric == "ndcg@10")
                if args.rerank:
                    reranked = next(k for k in ranked if k.startswith("hybrid·convex+rerank"))
                    row["hybrid-convex+rerank"] = next(
                        s.value for s in evaluator.scores(ranked[reranked]) if s.metric == "ndcg@10"
                    )
                    row["reranker"], row["rerank_weight"] = args.rerank, args.rerank_weight
                if not args.no_anchors:
                    row["st_dense"] = st_anchor(encoder, evaluator)
                    row["bm25s"] = bm25s_anchor(evaluator)
                rows.append(row)
                print(row, flush=True)
    key = lambda r: (r["model"], r["data"], r.get("documents as", "whole"))  # noqa: E731
    kept = [r for r in previous if key(r) not in {key(x) for x in rows}]
    table = kept + rows
    columns = [
        "model",
        "data",
        "documents as",
        "queries",
        "docs",
        "dense",
        "keyword",
        "hybrid-rrf",
        "hybrid-convex",
        "hybrid-convex+rerank",
        "st_dense",
        "bm25s",
    ]
    print_table("nDCG@10 × 100 (encodr eval retrieval's pipeline; anchors in the same run)", table, columns)
    write_json(args.out, {"machine": machine(), "splits": SPLITS, "rows": table})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
