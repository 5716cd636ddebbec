"""Static embedding models against the transformers they are distilled from: nDCG@10 of dense,
keyword and hybrid search on the shared retrieval sets, and how fast each builds an index.

Four models, all through ``encodr tune`` and ``encodr eval retrieval``'s pipeline in one run:

- ``minilm``: the bundled all-MiniLM-L6-v2 (the anchor);
- ``static(minilm)``: ``encodr tune --recipe static --model minilm`` (model2vec distillation);
- ``sentence``: MiniLM tuned by encodr's Mirror-BERT sentence recipe on the bundled Wikipedia
  sentences (``encodr tune --recipe sentence``);
- ``static(sentence)``: ``--recipe static`` distilled from that tuned model.

Per model and dataset: nDCG@10 × 100 of dense, keyword (SQLite FTS5 BM25: the same for every
model) and hybrid (RRF) search, each document ranked by its best passage as ``encodr eval
retrieval`` ranks them; and the index build of the corpus (``encodr index``'s code, one process,
model already loaded): seconds and passages per second. Every model cuts passages at 256 tokens
(MiniLM's window, and a static model's), the tuned one too, which saves its training length (50). Datasets: SciFact (its
809 train queries)
and XQuAD-en (test; nothing here is tuned on either).

    python bench/static.py [--data scifact xquad-en] [--limit N] [--strings N]

Prints a table and writes bench/results/static.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, run_tune, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval"
SPLITS = {"scifact": "train", "xquad-en": "test"}

# python -m bench run static --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--data", "xquad-en", "--limit", "20", "--strings", "400", "--out", "{tmp}/static.json"]


def models(folder: Path, strings: int | None) -> dict[str, str]:
    """Label → model path: the four models of the module docstring, tuned and distilled here."""
    from encodr.methods import load_recipe

    run_tune(None, load_recipe("static"), "minilm", folder / "static-minilm")
    run_tune(None, load_recipe("sentence"), "minilm", folder / "sentence", limit=strings)
    run_tune(None, load_recipe("static"), str(folder / "sentence"), folder / "static-sentence")
    return {
        "minilm": "minilm",
        "static(minilm)": str(folder / "static-minilm"),
        "sentence": str(folder / "sentence"),
        "static(sentence)": str(folder / "static-sentence"),
    }


def index_speed(encoder, corpus: Path, where: Path) -> dict:
    """Seconds and passages per second of building ``corpus``'s index with ``encoder`` at ``where``."""
    from encodr.index import BuildOptions, build

    started = time.perf_counter()
    meta = build([str(corpus)], where, BuildOptions(model=encoder, index_type="flat", backend=encoder.backend))
    seconds = time.perf_counter() - started
    return {"index_s": round(seconds, 1), "passages": meta["count"], "passages_per_s": round(meta["count"] / seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    parser.add_argument("--limit", type=int, default=None, help="only the first N judged queries")
    parser.add_argument(
        "--strings", type=int, default=None, help="train the sentence recipe on the first N Wikipedia sentences (default: all)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "static.json")
    args = parser.parse_args()

    from encodr.data.beir import read_retrieval
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.index import SearchOptions
    from encodr.models import load_encoder

    searches = (SearchOptions(mode="dense"), SearchOptions(mode="keyword"), SearchOptions(mode="hybrid", fusion="rrf"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="encodr-bench-static-") as tmp:
        specs = models(Path(tmp) / "models", args.strings)
        for name in args.data:
            evaluator = RetrievalEvaluator(
                name, read_retrieval(DATA / name), split=SPLITS[name], limit=args.limit, searches=searches
            )
            evaluator.cache = True  # the index built for the speed column is the one searched
            for label, spec in specs.items():
                encoder = load_encoder(spec, backend="torch")
                # one window for all: the sentence recipe trains (and saves) 50 tokens; MiniLM's and a static model's
                # are 256
                encoder.max_length = 256
                row = {
                    "model": label,
                    "data": name,
                    "queries": len(evaluator.query_ids()),
                    "dim": encoder.dimension,
                    "backend": encoder.backend,
                }
                row.update(index_speed(encoder, evaluator.data.corpus_file, evaluator.cached_index(encoder)))
                ranked = evaluator.ranked(encoder)
                for options in searches:
                    row[options.mode] = next(s.value for s in evaluator.scores(ranked[options.label]) if s.metric == "ndcg@10")
                rows.append(row)
                print(row, flush=True)
    columns = ["model", "data", "queries", "dim", "dense", "keyword", "hybrid", "index_s", "passages_per_s"]
    print_table("nDCG@10 × 100 and index speed: static models against their teachers (one run)", rows, columns)
    write_json(args.out, {"machine": {**machine(), "cpu_flags": cpu_flags()}, "splits": SPLITS, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
