"""Which fusion of the dense and keyword rankings should hybrid search use by default? Each
candidate fusion scored on the shared sets, from the same two candidate lists per query.

The sets (never a test split):

- ``scifact``: SciFact's 809 shared train claims over its 5,183 abstracts (BEIR layout, ``qrels/train.tsv``);
- ``answers-en``, ``-de``, ``-es``: bench/answers.py's folders (XQuAD's 48 articles a language as
  files), every question, the answer's article as the one relevant document;
- ``code-rich``, ``code-sentence_transformers``: bench/code_search.py's folders (docstrings of a
  hashed half of the functions removed; their first sentences are the queries), a hit relevant
  when it is the function's file and its passage's lines meet the function's.

Each folder is indexed with ``encodr index`` (the bundled MiniLM); each query's 100 best passages
by cosine and by BM25 are taken once (``--passages``), and each fusion ranks their union. Its
documents are its passages' documents in order of their best passage (the default, collapsed
ranking), and each set is scored by nDCG@10 over them (a code hit's relevance: the document's
best passage meets the function). ``dense`` and ``keyword`` rows are the two lists alone;
``zscore``, ``convex`` and ``rrf`` are encodr's fusions as search runs them (``zscore`` with
its per-kind weights: every candidate of a code set is source code), the rest the candidates
considered for the default (:data:`FUSIONS`).

The rule the default must keep (issue 62): on every set, hybrid ≥ max(dense, keyword) − 1.

    python bench/fusion.py [--sets scifact,answers,code] [--questions N]

Prints a table and writes bench/results/fusion.json.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "scifact"
DEPTH = 100
QUICK = ["--sets", "answers", "--langs", "en", "--questions", "20", "--out", "{tmp}/fusion.json"]


def index(folder: Path, out: Path, *extra: str) -> None:
    """``encodr index FOLDER --out OUT`` through the CLI (Typer's test runner)."""
    from typer.testing import CliRunner

    from encodr.cli import app

    done = CliRunner().invoke(app, ["index", str(folder), "--out", str(out), *extra])
    if done.exit_code != 0:
        raise SystemExit(f"encodr index failed: {done.output.strip()[-400:]}")


def candidates(idx: Path, queries: list[str]):
    """Per query: its language, and the 100 best passages by cosine and by BM25 (hit lists)."""
    from encodr.core.commands import open_searcher
    from encodr.core.requests import SearchRequest

    lists = {}
    for mode in ("dense", "keyword"):
        request = SearchRequest(query=queries, index=str(idx), k=DEPTH, mode=mode, passages=True)
        searcher = open_searcher(request)
        langs, lists[mode] = searcher.query(queries, request.options())
    return langs, lists["dense"], lists["keyword"]


# ── the candidate fusions ─────────────────────────────────────────────────────
def _z(ranked: list[tuple[int, float]]) -> dict[int, float]:
    if not ranked:
        return {}
    scores = [s for _, s in ranked]
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores)) or 1.0
    return {i: (s - mean) / sd for i, s in ranked}


def _dbsf(ranked: list[tuple[int, float]]) -> dict[int, float]:
    """Qdrant's distribution-based score fusion: scores mapped by mean ± 3 standard deviations to [0, 1]."""
    if not ranked:
        return {}
    scores = [s for _, s in ranked]
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if sd == 0:
        return {i: 1.0 for i, _ in ranked}
    low, high = mean - 3 * sd, mean + 3 * sd
    return {i: min(1.0, max(0.0, (s - low) / (high - low))) for i, s in ranked}


def _minmax(ranked):
    from encodr.index.fusion import _min_max

    return _min_max(ranked)


def _bonus(i: int, dense_rank: dict, keyword_rank: dict) -> float:
    """qmd's top-rank bonus: +0.05 for first place in either list, +0.02 for second or third."""
    best = min(dense_rank.get(i, 99), keyword_rank.get(i, 99))
    return 0.05 if best == 1 else 0.02 if best <= 3 else 0.0


def fused(name: str, dense, keyword, code: bool = False) -> list[int]:
    """Passage ids in the order fusion ``name`` ranks the union of two (id, score) lists
    (``code``: every candidate is a passage of source code)."""
    from encodr.index.fusion import fuse

    if name == "dense":
        return [i for i, _ in dense]
    if name == "keyword":
        return [i for i, _ in keyword]
    if name in ("convex", "rrf", "zscore"):  # encodr's own, as search runs them
        return [i for i, _ in fuse(dense, keyword, name, code={i for i, _ in dense + keyword} if code else frozenset())]
    alpha = float(name.split("@")[1]) if "@" in name else 0.5
    if name.startswith("zscore@"):
        return [i for i, _ in fuse(dense, keyword, "zscore", alpha=alpha)]
    norm, bonus = {
        "zscore-own-lists": (_z, False),
        "dbsf": (_dbsf, False),
        "convex+bonus": (_minmax, True),
        "dbsf+bonus": (_dbsf, True),
        "zscore-own-lists+bonus": (_z, True),
    }[name]
    d, k = norm(dense), norm(keyword)
    floor_d, floor_k = (min(d.values(), default=0.0), min(k.values(), default=0.0)) if norm is _z else (0.0, 0.0)
    d_rank = {i: r for r, (i, _) in enumerate(dense, 1)}
    k_rank = {i: r for r, (i, _) in enumerate(keyword, 1)}
    order = list(dict.fromkeys([i for i, _ in dense] + [i for i, _ in keyword]))
    score = {
        i: alpha * d.get(i, floor_d) + (1 - alpha) * k.get(i, floor_k) + (_bonus(i, d_rank, k_rank) if bonus else 0.0)
        for i in order
    }
    return sorted(order, key=lambda i: -score[i])


# encodr's fusions, then the candidates considered: one α for all texts, z-scores over each
# list alone (absent: the list's lowest), Qdrant's DBSF, qmd's top-rank bonus
FUSIONS = (
    "dense",
    "keyword",
    "zscore",
    "convex",
    "rrf",
    "zscore@0.6",
    "zscore@0.7",
    "zscore@0.8",
    "zscore-own-lists",
    "dbsf",
    "convex+bonus",
    "dbsf+bonus",
    "zscore-own-lists+bonus",
)


def ndcg10(gains: list[float], ideal: int) -> float:
    dcg = sum(g / math.log2(r + 2) for r, g in enumerate(gains[:10]))
    best = sum(1 / math.log2(r + 2) for r in range(min(ideal, 10)))
    return 100 * dcg / best if best else 0.0


def scored(dense_hits, keyword_hits, relevance, ideal: int) -> dict:
    """One query's two candidate lists as the scoring needs them: (id, score, document, gain) each."""

    def rows(hits):
        return [(h.id, h.score, h.document, relevance(h)) for h in hits]

    return {"dense": rows(dense_hits), "keyword": rows(keyword_hits), "ideal": ideal}


def score_set(name: str, queries: list[dict], fusions=FUSIONS) -> list[dict]:
    """A row per fusion: nDCG@10 over the collapsed documents of each query's fused ranking."""
    rows = []
    for fusion in fusions:
        total = 0.0
        for q in queries:
            about = {i: (doc, gain) for i, _, doc, gain in q["dense"] + q["keyword"]}
            order = fused(
                fusion, [(i, s) for i, s, _, _ in q["dense"]], [(i, s) for i, s, _, _ in q["keyword"]], name.startswith("code-")
            )
            seen, gains = set(), []
            for i in order:
                doc, gain = about[i]
                if doc not in seen:
                    seen.add(doc)
                    gains.append(gain)
            total += ndcg10(gains, q["ideal"])
        rows.append({"set": name, "fusion": fusion, "queries": len(queries), "nDCG@10": total / max(len(queries), 1)})
    return rows


def scifact_set(tmp: Path, questions: int | None) -> list[dict]:
    idx = tmp / "scifact.idx"
    index(SCIFACT / "corpus.jsonl", idx)
    queries = {r["_id"]: r["text"] for r in map(json.loads, (SCIFACT / "queries.jsonl").read_text().splitlines())}
    qrels: dict[str, set] = {}
    for line in (SCIFACT / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        if int(grade) > 0:
            qrels.setdefault(qid, set()).add(doc)
    ids = [q for q in queries if q in qrels][:questions]
    _, dense, keyword = candidates(idx, [queries[q] for q in ids])
    return [scored(d, k, lambda hit, q=q: float(hit.document in qrels[q]), len(qrels[q])) for q, d, k in zip(ids, dense, keyword)]


def answers_set(tmp: Path, lang: str, questions: int | None) -> list[dict]:
    from answers import write_folder

    folder = tmp / f"answers-{lang}"
    folder.mkdir()
    asked = write_folder(lang, folder)
    random.Random(0).shuffle(asked)
    asked = asked[:questions]
    idx = tmp / f"answers-{lang}.idx"
    index(folder, idx)
    _, dense, keyword = candidates(idx, [q["question"] for q in asked])
    return [
        scored(d, k, lambda hit, q=q: float(Path(hit.path or hit.source).name == q["file"]), 1)
        for q, d, k in zip(asked, dense, keyword)
    ]


def code_set(tmp: Path, package: str, questions: int | None) -> list[dict]:
    from code_search import located, write_package

    folder = tmp / f"code-{package}"
    queries = write_package(package, folder)
    random.Random(0).shuffle(queries)
    queries = queries[:questions]
    idx = tmp / f"code-{package}.idx"
    index(folder, idx, "--glob", "*.py")
    _, dense, keyword = candidates(idx, [q["query"] for q in queries])
    return [scored(d, k, lambda hit, q=q: float(located([hit], q, 1)), 1) for q, d, k in zip(queries, dense, keyword)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="scifact,answers,code")
    parser.add_argument("--langs", default="en,de,es", help="the answers sets' languages")
    parser.add_argument("--packages", default="rich,sentence_transformers", help="the code sets' packages")
    parser.add_argument("--questions", type=int, default=None, help="at most N queries a set (a seeded sample)")
    parser.add_argument("--out", type=Path, default=RESULTS / "fusion.json")
    parser.add_argument(
        "--cache", type=Path, default=None, help="keep the candidate lists in this JSON file, and score from it when it exists"
    )
    args = parser.parse_args()
    sets = args.sets.split(",")
    found: dict[str, list[dict]] = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}
    if not found:
        with tempfile.TemporaryDirectory() as tmp:
            if "scifact" in sets:
                found["scifact"] = scifact_set(Path(tmp), args.questions)
            for lang in args.langs.split(",") if "answers" in sets else []:
                found[f"answers-{lang}"] = answers_set(Path(tmp), lang, args.questions)
            for package in args.packages.split(",") if "code" in sets else []:
                found[f"code-{package}"] = code_set(Path(tmp), package, args.questions)
        if args.cache:
            args.cache.write_text(json.dumps(found))
    rows = [row for name, queries in found.items() for row in score_set(name, queries)]
    print_table("Fusion: nDCG@10 of the collapsed documents", rows, ["set", "fusion", "queries", "nDCG@10"])
    for name in found:  # the rule the default keeps
        at = {r["fusion"]: r["nDCG@10"] for r in rows if r["set"] == name}
        print(
            f"{name}: zscore {at['zscore']:.2f} vs max(dense, keyword) − 1 = {max(at['dense'], at['keyword']) - 1:.2f}"
            f" → {'holds' if at['zscore'] >= max(at['dense'], at['keyword']) - 1 else 'FAILS'}"
        )
    write_json(args.out, {"bench": "fusion", "model": "minilm", "depth": DEPTH, "rows": rows})


if __name__ == "__main__":
    main()
