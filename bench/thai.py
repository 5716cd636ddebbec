"""Thai search: does hybrid search keep up with dense search on Thai text, now that the keyword
index cuts Thai into words (PyThaiNLP's ``newmm``), and did it before (each run of Thai script
one term)? nDCG@10 × 100 of dense, keyword and hybrid (RRF) search with me5, both analyses in one
run, through ``encodr eval retrieval``'s pipeline.

Two sets built here from public Thai text (BEIR layout, in a temporary folder):

- ``tatoeba-tha`` (known item): the 548 Thai sentences of the Tatoeba tha–eng test set (Artetxe &
  Schwenk 2019; Tatoeba, CC BY 2.0 FR: ``../shared/data/tatoeba``) are the documents; each query is
  a contiguous half of one sentence's words (cut by PyThaiNLP's ``longest`` matcher, not the
  ``newmm`` the index uses, so queries are not cut the index's way), at a seeded offset; its one
  relevant document is its sentence. Someone looking for a sentence they half remember.
- ``wordnet-th`` (synonyms): Thai WordNet (NICT 2011, Thoongsup et al. 2009; its own permissive
  licence, shipped in PyThaiNLP as ``corpus/wordnet_th.db``, see PyThaiNLP's
  ``corpus/corpus_license.md``): 1,500 seeded synsets with at least three Thai lemmas; a synset's
  first lemma is the query and its other lemmas are the relevant documents, among all chosen
  synsets' other lemmas. Different words for one meaning: where keyword search is weakest and
  could pull hybrid below dense.

Both sets are written to a temporary folder and removed after the run.

    python bench/thai.py [--model me5] [--synsets 1500]

Prints a table and writes bench/results/thai.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

TATOEBA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tatoeba" / "tatoeba.tha-eng.tha"

# python -m bench run thai --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--synsets", "100", "--limit", "40", "--out", "{tmp}/thai.json"]


def write_beir(root: Path, corpus: dict[str, str], queries: dict[str, str], qrels: dict[str, list[str]]) -> Path:
    """A BEIR folder at ``root`` (corpus.jsonl, queries.jsonl, qrels/test.tsv). Returns ``root``."""
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": "", "text": t}, ensure_ascii=False) + "\n" for i, t in corpus.items())
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in queries.items())
    )
    rows = [f"{q}\t{d}\t1\n" for q, docs in qrels.items() for d in docs]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(rows))
    return root


def tatoeba_set(root: Path, seed: int = 0) -> Path:
    """The known-item set of the module docstring."""
    from pythainlp.tokenize import word_tokenize

    rng = random.Random(seed)
    sentences = [line.strip() for line in TATOEBA.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus, queries, qrels = {}, {}, {}
    for i, sentence in enumerate(sentences):
        words = [w for w in word_tokenize(sentence, engine="longest", keep_whitespace=True)]
        if len(words) < 4:
            continue
        size = max(2, len(words) // 2)
        start = rng.randrange(0, len(words) - size + 1)
        query = "".join(words[start : start + size]).strip()
        if query:
            corpus[f"s{i}"], queries[f"q{i}"], qrels[f"q{i}"] = sentence, query, [f"s{i}"]
    return write_beir(root, corpus, queries, qrels)


def wordnet_set(root: Path, synsets: int, seed: int = 0) -> Path:
    """The synonym set of the module docstring."""
    import pythainlp

    db = Path(pythainlp.__file__).parent / "corpus" / "wordnet_th.db"
    groups: dict[str, list[str]] = {}
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        for synset, lemma in conn.execute("SELECT synsetid, li FROM word_synset ORDER BY synsetid, li"):
            groups.setdefault(synset, []).append(lemma.strip())
    usable = sorted(s for s, lemmas in groups.items() if len(set(lemmas)) >= 3)
    chosen = random.Random(seed).sample(usable, min(synsets, len(usable)))
    corpus, queries, qrels = {}, {}, {}
    for n, synset in enumerate(chosen):
        first, *others = list(dict.fromkeys(groups[synset]))
        queries[f"q{n}"] = first
        qrels[f"q{n}"] = []
        for m, lemma in enumerate(others):
            corpus[f"d{n}-{m}"] = lemma
            qrels[f"q{n}"].append(f"d{n}-{m}")
    return write_beir(root, corpus, queries, qrels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="me5")
    parser.add_argument("--synsets", type=int, default=1500)
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries of each set")
    parser.add_argument("--out", type=Path, default=RESULTS / "thai.json")
    args = parser.parse_args()

    from encodr.data.beir import read_retrieval
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.index import SearchOptions, keywords
    from encodr.models import load_encoder

    encoder = load_encoder(args.model)
    searches = (SearchOptions(mode="dense"), SearchOptions(mode="keyword"), SearchOptions(mode="hybrid", fusion="rrf"))
    segmented = keywords.thai_words
    rows = []
    with tempfile.TemporaryDirectory(prefix="encodr-bench-thai-") as tmp:
        sets = {
            "tatoeba-tha": tatoeba_set(Path(tmp) / "tatoeba-tha"),
            "wordnet-th": wordnet_set(Path(tmp) / "wordnet-th", args.synsets),
        }
        for name, folder in sets.items():
            data = read_retrieval(folder)
            from pythainlp.corpus import thai_stopwords

            stop = thai_stopwords()
            analyses = (
                ("thai-newmm", segmented),
                ("thai-newmm, stop words removed", lambda run: [w for w in segmented(run) if w not in stop]),
                ("whole runs (before)", lambda run: [run]),
            )
            for analysis, split in analyses:
                keywords.thai_words = split  # the keyword index and the queries both go through keyword_terms → thai_words
                try:
                    evaluator = RetrievalEvaluator(name, data, split="test", limit=args.limit, searches=searches)
                    ranked = evaluator.ranked(encoder)
                finally:
                    keywords.thai_words = segmented
                row = {
                    "data": name,
                    "analysis": analysis,
                    "model": args.model,
                    "queries": len(evaluator.query_ids()),
                    "docs": len(data.doc_ids),
                }
                for options in searches:
                    row[options.mode] = next(s.value for s in evaluator.scores(ranked[options.label]) if s.metric == "ndcg@10")
                row["hybrid - dense"] = row["hybrid"] - row["dense"]
                rows.append(row)
                print(row, flush=True)
    columns = ["data", "analysis", "queries", "docs", "dense", "keyword", "hybrid", "hybrid - dense"]
    print_table(
        f"Thai: nDCG@10 × 100 with {args.model}, keyword analysis with and without Thai word segmentation (one run)",
        rows,
        columns,
    )
    write_json(args.out, {"machine": machine(), "model": args.model, "synsets": args.synsets, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
