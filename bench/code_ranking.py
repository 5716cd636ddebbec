"""Choosing the code-ranking stage's weights (encodr.index.ranking.CodeWeights) on the project's
own development set, bench/repo_questions.py's questions, and saying how well the choice holds on
repositories it was not chosen on.

Each repository's index (built by ``python bench/repo_questions.py --work DIR --keep``) is searched
once per question and mode with the stage off (``code_ranking=False``), 200 passages deep; the
stage is then applied to those candidates with each weight setting tried, and the top-10 distinct
files scored as repo_questions scores them (NDCG@10, relevant and secondary files gain 1). An
identifier-shaped query's hybrid candidates are fetched again at each dense weight tried for code
(``identifier_alpha``).

The search is coordinate ascent from the declared defaults over a small grid a weight, two
rounds, on the mean hybrid NDCG@10 over repositories. Leave-one-repository-out: the same search on
five repositories, scored on the sixth, for each; its mean is the estimate for an unseen
repository, printed beside the in-sample figure and the defaults'.

    python bench/code_ranking.py --work DIR [--out bench/results/code_ranking.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, write_json  # noqa: E402
from repo_questions import SET, ndcg10  # noqa: E402

DEPTH = 200
GRID = {
    "definition": (0.0, 0.5, 1.0, 1.5, 2.0),
    "embedded": (0.0, 0.2, 0.4, 0.8),
    "member": (0.0, 0.1, 0.2, 0.4),
    "stem": (0.0, 0.1, 0.25, 0.4, 0.6),
    "folder": (0.0, 0.1, 0.2),
    "coherence": (0.0, 0.1, 0.2, 0.4),
    "tests": (0.0, 0.2, 0.4, 0.8),
    "docs": (0.0, 0.2, 0.4, 0.8),
    "examples": (0.0, 0.2, 0.4, 0.8),
    "copy": (0.0, 0.2, 0.4, 0.8),
    "generated": (0.4,),
    "identifier_alpha": (0.1, 0.3, 0.5, 0.85),
}


def candidates(work: Path, repo: dict, modes: list[str]) -> dict:
    """Per question and mode: the candidates (ids, scores) with the stage off, and the rows."""
    from encodr.index import Searcher, SearchOptions
    from encodr.index.ranking import read_query

    searcher = Searcher(str(work / "idx" / repo["name"]))
    found: dict = {"questions": [], "rows": {}}
    for q in repo["questions"]:
        entry = {}
        for mode in modes:
            weights = (None, *GRID["identifier_alpha"]) if mode == "hybrid" and read_query(q["q"]).identifier else (None,)
            for alpha in weights:
                options = SearchOptions(k=DEPTH, mode=mode, passages=True, code_ranking=False, fusion_weight=alpha)
                hits = searcher.search([q["q"]], options)[0]
                entry[(mode, alpha)] = (np.array([h.id for h in hits], dtype=np.int64), np.array([h.score for h in hits]))
                for h in hits:
                    found["rows"][h.id] = {"source": h.source, "path": h.path, "section": h.section}
        found["questions"].append(entry)
    return found


def score_repo(repo: dict, found: dict, weights, mode: str, ranked: bool = True) -> float:
    """A repository's mean NDCG@10 in ``mode`` with the stage at ``weights`` (or off)."""
    from encodr.index.ranking import rank_code, read_query
    from encodr.index.search import _is_code

    total = 0.0
    for q, entry in zip(repo["questions"], found["questions"]):
        alpha = weights.identifier_alpha if mode == "hybrid" and ranked and read_query(q["q"]).identifier else None
        ids, scores = entry[(mode, alpha)] if (mode, alpha) in entry else entry[(mode, None)]
        if ranked and len(ids):
            ids, scores = rank_code(q["q"], ids, scores, found["rows"], _is_code, weights)
        files = [found["rows"][i]["path"] or found["rows"][i]["source"] for i in ids.tolist()]
        total += ndcg10(files, set(q["relevant"]) | set(q.get("secondary", [])))
    return 100 * total / len(repo["questions"])


def mean(repos: list[dict], found: dict, weights, mode: str = "hybrid", ranked: bool = True) -> float:
    return sum(score_repo(r, found[r["name"]], weights, mode, ranked) for r in repos) / len(repos)


def ascend(repos: list[dict], found: dict, start, rounds: int = 2):
    """Coordinate ascent over :data:`GRID` from ``start`` on the repositories' mean hybrid NDCG@10
    (a tie keeps the current value)."""
    best, best_score = start, mean(repos, found, start)
    for _ in range(rounds):
        for name, values in GRID.items():
            for value in values:
                trial = dataclasses.replace(best, **{name: value})
                value_score = mean(repos, found, trial)
                if value_score > best_score + 1e-9:
                    best, best_score = trial, value_score
    return best, best_score


def main() -> None:
    from encodr.index.ranking import WEIGHTS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="repo_questions.py's --work folder (its indexes)")
    parser.add_argument("--out", type=Path, default=RESULTS / "code_ranking.json")
    # the candidates are kept in --work/code_ranking_candidates.pkl: delete it after rebuilding the indexes
    args = parser.parse_args()
    repos = json.loads(SET.read_text())["repos"]
    modes = ["hybrid", "dense", "keyword"]
    cache = args.work / "code_ranking_candidates.pkl"
    if cache.exists():
        found = pickle.loads(cache.read_bytes())
    else:
        found = {r["name"]: candidates(args.work, r, modes) for r in repos}
        cache.write_bytes(pickle.dumps(found))
    chosen, fitted = ascend(repos, found, WEIGHTS)
    folds = []
    for held in repos:
        rest = [r for r in repos if r is not held]
        fold_weights, _ = ascend(rest, found, WEIGHTS)
        folds.append(
            {
                "held_out": held["name"],
                "defaults": score_repo(held, found[held["name"]], WEIGHTS, "hybrid"),
                "fitted on the others": score_repo(held, found[held["name"]], fold_weights, "hybrid"),
                "weights": {k: v for k, v in dataclasses.asdict(fold_weights).items() if v != getattr(WEIGHTS, k)},
            }
        )
    rows = []
    for mode in modes:
        rows.append(
            {
                "mode": mode,
                "stage off": mean(repos, found, WEIGHTS, mode, ranked=False),
                "defaults": mean(repos, found, WEIGHTS, mode),
                "chosen": mean(repos, found, chosen, mode),
            }
        )
    for row in rows:
        print(f"{row['mode']:8} off {row['stage off']:.2f}  defaults {row['defaults']:.2f}  chosen {row['chosen']:.2f}")
    for fold in folds:
        print(
            f"held out {fold['held_out']:15} defaults {fold['defaults']:.2f}  "
            f"fitted on the others {fold['fitted on the others']:.2f}  {fold['weights']}"
        )
    loro = sum(f["fitted on the others"] for f in folds) / len(folds)
    print(f"leave-one-repository-out mean {loro:.2f} (in-sample {fitted:.2f})")
    print("chosen:", dataclasses.asdict(chosen))
    write_json(
        args.out,
        {
            "bench": "code_ranking",
            "depth": DEPTH,
            "rows": rows,
            "folds": folds,
            "leave_one_out": loro,
            "in_sample": fitted,
            "chosen": dataclasses.asdict(chosen),
            "defaults": dataclasses.asdict(WEIGHTS),
        },
    )


if __name__ == "__main__":
    main()
