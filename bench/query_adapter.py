"""The query adapter learned from judgments, cross-validated: does a low-rank map on query vectors,
fitted on some judged queries, lift queries it never saw, with no document re-encoded?

The set: SciFact's shared train judgments (``../shared/data/retrieval/scifact``: ``qrels/train.tsv``,
809 queries). As the judged recipe does, only the train and dev folds of
``encodr.index.judgments.fold`` (a hash of the query: 80 % of the queries) are read; the test fold
and SciFact's test split are never read. The corpus is indexed once (``encodr.index.build``, flat,
the model's default backend). The queries are split into 5 folds (``FOLDS``) by
``encodr.methods.judged.adapter.fold_of``; each fold is searched with an adapter fitted on the
others (``fit``, the recipe's rank and scale), and the per-query nDCG@10 (documents by their best
passage, binary relevance) is compared with the model alone, dense and hybrid (the default fusion):
over all held-out queries, and apart for those one of whose relevant documents is also relevant
to a query of the other folds (SciFact's claims often share an abstract: there the adapter may
have learned the document rather than the kind of query) and those whose documents it never saw.
The keep rule's p is the one-sided paired randomization test of ``encodr.evaluation.significance``.
The time of each phase (indexing, mining, fitting all folds, searching) is recorded.

    python bench/query_adapter.py [--model minilm] [--queries N] [--documents N]

Prints a table and writes bench/results/query_adapter.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "scifact"
FOLDS = 5  # the folds of this bench's cross-validation (the judged recipe's adapter is scored on the recipe's own folds)
QUICK = ["--documents", "300", "--queries", "40", "--out", "{tmp}/query_adapter.json"]


def judged_queries(data: Path, documents: set[str] | None, limit: int) -> dict[str, set[str]]:
    """Query text → its relevant documents, for the train and dev folds of SciFact's train qrels."""
    from encodr.index.judgments import fold

    texts = {}
    for line in (data / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        texts[row["_id"]] = row["text"]
    judged: dict[str, set[str]] = {}
    for line in (data / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        q, d, score = line.split("\t")
        text = texts[q]
        if int(score) > 0 and fold(text) != "test" and (documents is None or d in documents):
            judged.setdefault(text, set()).add(d)
    return dict(list(judged.items())[:limit] if limit else judged.items())


def corpus(data: Path, limit: int, out: Path) -> set[str] | None:
    """SciFact's corpus as a JSONL file at ``out`` (its first ``limit`` documents; 0: all); the ids kept (None: all)."""
    lines = (data / "corpus.jsonl").read_text().splitlines()
    kept = lines[:limit] if limit else lines
    out.write_text("\n".join(kept) + "\n")
    return {json.loads(line)["_id"] for line in kept} if limit else None


GRID = [(16, 150, 3e-3, 1e-2), (16, 50, 1e-3, 1e-2), (4, 50, 1e-3, 1e-2), (1, 50, 1e-3, 1e-2)]  # --grid: rank, steps, lr, decay


def measure(searcher, judged: dict[str, set[str]], recipe, config: tuple | None = None) -> tuple[list[dict], dict]:
    """The table's rows (per protocol, mode and subset of held-out queries) and seconds per phase;
    with ``config`` (rank, steps, lr, decay), that adapter in place of the recipe's (dense only)."""
    import numpy as np

    from encodr.evaluation.significance import improvement_p
    from encodr.index.options import DENSE, HYBRID
    from encodr.methods.judged.adapter import SCHEDULE, Judged, document_folds, fold_of, held_out, mine, searched_ndcg

    queries = list(judged)
    relevant = [judged[q] for q in queries]
    seconds, started = {"fit": 0.0, "search": 0.0}, time.perf_counter()
    pairs = mine(searcher, queries, relevant)
    seconds["mine"] = time.perf_counter() - started
    modes = (DENSE, HYBRID) if searcher.index.has_keywords and config is None else (DENSE,)
    rank, *schedule = config or (recipe.adapter_rank, *SCHEDULE)
    before = {m: searched_ndcg(searcher, queries, relevant, m) for m in modes}
    protocols = {
        "by query": np.asarray([fold_of(q, FOLDS) for q in queries]),
        "by document": np.asarray(document_folds(queries, relevant, FOLDS)),
    }
    rows = []
    judged_set = Judged(queries, relevant, pairs)
    settings = replace(recipe, adapter_rank=rank)
    for protocol, folds in protocols.items():
        found = held_out(searcher, judged_set, folds, settings, modes, seconds, tuple(schedule))
        after = {m: np.where(np.isnan(found[m]), before[m], found[m]) for m in modes}
        seen = np.asarray(
            [
                bool(relevant[i] & set().union(*[relevant[j] for j in np.flatnonzero(folds != folds[i])]))
                for i in range(len(queries))
            ]
        )  # one of the held-out query's relevant documents is relevant to a training query too
        subsets = {"all": np.ones(len(queries), bool), "docs seen": seen, "docs unseen": ~seen}
        for m in modes:
            for subset, chosen in subsets.items():
                if not chosen.any() or (subset != "all" and chosen.all()):
                    continue
                b, a = before[m][chosen], after[m][chosen]
                p = improvement_p(b, a)
                rows.append(
                    {
                        "adapter": "default" if config is None else "r{} s{} lr{:g} wd{:g}".format(*config),
                        "protocol": protocol,
                        "mode": m,
                        "subset": subset,
                        "queries": int(chosen.sum()),
                        "before": float(b.mean()),
                        "after": float(a.mean()),
                        "gain": float(a.mean() - b.mean()),
                        "p": round(p, 4),
                    }
                )
    return rows, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--documents", type=int, default=0, help="a quick run: the first N documents (0: all)")
    parser.add_argument("--queries", type=int, default=0, help="a quick run: the first N judged queries (0: all)")
    parser.add_argument("--grid", action="store_true", help="also the adapters of GRID (dense): rank, steps, lr, weight decay")
    parser.add_argument("--out", type=Path, default=RESULTS / "query_adapter.json")
    args = parser.parse_args()

    from encodr.index import BuildOptions, Searcher, build
    from encodr.methods import load_recipe

    recipe = load_recipe("judged", {})
    with tempfile.TemporaryDirectory(prefix="encodr-adapter-") as tmp:
        kept = corpus(args.data, args.documents, Path(tmp) / "corpus.jsonl")
        judged = judged_queries(args.data, kept, args.queries)
        started = time.perf_counter()
        build([str(Path(tmp) / "corpus.jsonl")], Path(tmp) / "idx", BuildOptions(model=args.model, index_type="flat"))
        index_seconds = time.perf_counter() - started
        searcher = Searcher(Path(tmp) / "idx")
        rows, seconds = measure(searcher, judged, recipe)
        for config in GRID if args.grid else []:
            rows += measure(searcher, judged, recipe, config)[0]
        searcher.index.close()
    timing = {"index": index_seconds, **seconds}
    print_table(
        "Query adapter, cross-validated nDCG@10 on held-out judged queries",
        rows,
        ["adapter", "protocol", "mode", "subset", "queries", "before", "after", "gain", "p"],
    )
    print_table("Seconds", [{"phase": k, "s": round(v, 1)} for k, v in timing.items()], ["phase", "s"])
    write_json(
        args.out,
        {
            "model": args.model,
            "data": "scifact qrels/train.tsv, folds train+dev",
            "folds": FOLDS,
            "rank": recipe.adapter_rank,
            "documents": args.documents or "all",
            "cpu_flags": cpu_flags(),
            "seconds": {k: round(v, 2) for k, v in timing.items()},
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
