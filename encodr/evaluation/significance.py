"""Whether a ranking beats another on the same judged queries: the paired randomization test.

Smucker, Allan & Carterette (2007, "A comparison of statistical significance tests for
information retrieval evaluation", CIKM) recommend the randomization (permutation) test for
paired per-query scores: under the null hypothesis the two systems are exchangeable on each
query, so each per-query difference is as likely to have either sign. The p-value is the share
of the 2^n sign assignments (sampled) whose mean difference is at least the observed one.
Ours is one-sided (the question is "is B better than A", never "do they differ"), uses a fixed
seed so a run is reproducible, and counts the observed assignment among the samples (Phipson &
Smyth 2010), so p is never 0.
"""

from __future__ import annotations

import numpy as np

ROUNDS = 10_000  # sampled sign assignments


def improvement_p(before, after, rounds: int = ROUNDS, seed: int = 0) -> float:
    """One-sided p-value that ``after`` is better than ``before`` on average.

    Args:
        before, after: float arrays (n,), per-query scores of two rankings of the same n
            queries, in the same order (e.g. nDCG@10 × 100).
        rounds: sign assignments sampled.
        seed: seeds the sampling.

    Returns:
        p in (0, 1]; 1.0 when ``after`` is not better on average (or n = 0).

    Raises:
        ValueError: the two arrays differ in length.
    """
    d = np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64)
    if np.shape(before) != np.shape(after):
        raise ValueError(f"paired scores differ in length: {np.shape(before)} and {np.shape(after)}")
    if d.size == 0 or d.mean() <= 0:
        return 1.0
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(rounds, d.size))
    null = (signs * d).mean(axis=1)
    return float((np.sum(null >= d.mean() - 1e-12) + 1) / (rounds + 1))
