"""Cross-validation's arithmetic: a grid's setting is scored by nested choice (each fold by the
setting best on the other folds), and an unscored fold keeps the start's scores."""

from __future__ import annotations

import numpy as np

from encodr.methods.judged.crossval import Scores, nested


def test_nested_choice_scores_each_fold_with_the_setting_best_elsewhere():
    folds = np.array([0, 0, 1, 1])
    candidates = {
        "a": np.array([10.0, 10.0, 0.0, 0.0]),  # best on fold 0 only
        "b": np.array([0.0, 0.0, 10.0, 10.0]),  # best on fold 1 only
    }
    held, final = nested(candidates, folds)
    # fold 0 is ranked by b (best on fold 1) and fold 1 by a: the in-sample maximum (10) is not reported
    assert held.tolist() == [0.0, 0.0, 0.0, 0.0] and final == "a"
    steady = {"declared": np.array([5.0, 5.0, 5.0, 5.0]), "better": np.array([6.0, 6.0, 6.0, 6.0])}
    held, final = nested(steady, folds)
    assert held.tolist() == [6.0] * 4 and final == "better"


def test_a_fold_left_unscored_keeps_the_starts_scores():
    scores = Scores(start={"dense": np.array([1.0, 2.0, 3.0]), "hybrid": np.array([4.0, 5.0, 6.0])})
    scores.put("dense", np.array([0]), np.array([9.0]), 3)
    scores.put("rerank@10,1", np.array([1]), np.array([7.0]), 3)
    filled = scores.filled()
    assert filled["dense"].tolist() == [9.0, 2.0, 3.0]
    assert filled["rerank@10,1"].tolist() == [4.0, 7.0, 6.0]  # a re-ranking falls back to its first stage
