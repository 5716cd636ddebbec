"""Which keyword analysis serves BM25 best: nDCG@10 of keyword search alone, with the FTS5
tokenizers SQLite ships and encodr's analysis, and ``bm25s`` as the anchor, in one run.

Rows, each an SQLite FTS5 table over the same texts (title + " " + text, as encodr indexes
them), ranked by FTS5's ``bm25()`` (k1 = 1.2, b = 0.75), queries as an OR of their terms:

- ``unicode61``: words, case and diacritics folded, no stemming (encodr's keyword index before);
- ``porter``: FTS5's built-in Porter stemmer over unicode61 (English rules, for every language);
- ``trigram``: FTS5's trigram tokenizer (substrings; for scripts without spaces);
- ``encodr``: :func:`encodr.index.keywords.keyword_text`: each text stemmed by the Snowball
  stemmer of its language (here the dataset's), CJK runs as bigrams, then unicode61 (the
  keyword index ``encodr index`` builds now);
- ``bm25s`` and ``bm25s + stemmer``: the anchor, Lucene's BM25 (k1 = 1.5, b = 0.75), its own
  tokenizer, no stop words, without and with the same PyStemmer stemmer.

Datasets: SciFact (train queries), XQuAD en, de, es (``../shared/data/retrieval``). No CJK
retrieval set is available offline, so CJK bigrams are tested (tests/index/test_keywords.py)
but not measured here.

    python bench/keyword_analysis.py

Prints a table and writes bench/results/keyword_analysis.json.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402
from retrieval import DATA, SPLITS  # noqa: E402

LANGS = {"scifact": "eng", "xquad-en": "eng", "xquad-de": "deu", "xquad-es": "spa"}
TOKENIZERS = {
    "unicode61": "unicode61 remove_diacritics 2",
    "porter": "porter unicode61 remove_diacritics 2",
    "trigram": "trigram case_sensitive 0",
    "encodr": "unicode61 remove_diacritics 2",
}


def fts_ranked(ids, texts, queries, tokenizer, analyse=None, depth=100):
    """Each query's ranked (id, score) list from an in-memory FTS5 table."""
    import re

    db = sqlite3.connect(":memory:")
    db.execute(f"create virtual table t using fts5(text, tokenize='{tokenizer}')")
    db.executemany("insert into t(rowid, text) values (?, ?)", ((i, analyse(x) if analyse else x) for i, x in enumerate(texts)))
    out = []
    for q in queries:
        if analyse:
            terms = analyse(q).split()
        elif tokenizer.startswith("trigram"):
            terms = [w for w in re.findall(r"\w+", q.lower()) if len(w) >= 3]  # a trigram table matches substrings of 3 or more
        else:
            terms = re.findall(r"\w+", q.lower())
        expression = " OR ".join(f'"{t}"' for t in dict.fromkeys(terms))
        rows = (
            db.execute("select rowid, -bm25(t) from t where t match ? order by bm25(t) limit ?", (expression, depth)).fetchall()
            if expression
            else []
        )
        out.append([(ids[i], s) for i, s in rows])
    return out


def bm25s_ranked(ids, texts, queries, stemmer=None, depth=100):
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords=None, stemmer=stemmer, show_progress=False), show_progress=False)
    docs, scores = retriever.retrieve(
        bm25s.tokenize(queries, stopwords=None, stemmer=stemmer, show_progress=False),
        k=min(depth, len(texts)),
        show_progress=False,
    )
    return [[(ids[int(d)], float(s)) for d, s in zip(row_d, row_s) if s > 0] for row_d, row_s in zip(docs, scores)]


# python -m bench run keyword_analysis --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--out", "{tmp}/keyword_analysis.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", default=list(LANGS))
    parser.add_argument("--out", type=Path, default=RESULTS / "keyword_analysis.json")
    args = parser.parse_args()
    import Stemmer

    from encodr.data.beir import read_retrieval
    from encodr.data.records import read_records
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.index.keywords import STEMMERS, keyword_text

    rows = []
    for name in args.data:
        lang = LANGS[name]
        data = read_retrieval(DATA / name)
        evaluator = RetrievalEvaluator(name, data, split=SPLITS[name])
        records = list(read_records(data.corpus_file))
        ids, texts = [r.ext_id for r in records], [r.text for r in records]
        queries = [data.queries[q] for q in evaluator.query_ids()]
        stemmer = Stemmer.Stemmer(STEMMERS[lang])
        setups = {
            name_: (
                lambda t=tok, a=(name_ == "encodr"): fts_ranked(
                    ids, texts, queries, t, (lambda x: keyword_text(x, lang)) if a else None
                )
            )
            for name_, tok in TOKENIZERS.items()
        }
        setups["bm25s"] = lambda: bm25s_ranked(ids, texts, queries)
        setups["bm25s + stemmer"] = lambda: bm25s_ranked(ids, texts, queries, stemmer)
        row = {"data": name, "lang": lang, "queries": len(queries)}
        for label, rank in setups.items():
            started = time.perf_counter()
            ranked = rank()
            row[label] = round(evaluator.scores(ranked)[0].value, 2)
            print(f"{name:9s} {label:16s} nDCG@10 {row[label]:6.2f}  ({time.perf_counter() - started:.1f} s)", flush=True)
        rows.append(row)
    print_table("keyword search alone: nDCG@10 by analysis (FTS5 bm25 unless bm25s)", rows, list(rows[0]))
    write_json(args.out, {"machine": machine(), "rows": rows})


if __name__ == "__main__":
    main()
