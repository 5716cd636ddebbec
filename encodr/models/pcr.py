"""Principal-component removal (CMLM, Yang et al. 2021, §5.2): remove the first principal
component of each language's embeddings, so vectors of different languages share one space."""

from __future__ import annotations

import numpy as np


def remove_component(vectors: np.ndarray, component: np.ndarray) -> np.ndarray:
    """Principal-component removal (CMLM §5.2): v − (v·u)u, then L2-normalise.

    Args:
        vectors: float32 (n, d).
        component: unit vector (d,).

    Returns:
        float32 (n, d), unit norm.
    """
    out = vectors - np.outer(vectors @ component, component)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out.astype(np.float32)


def first_component(covariance_sum: np.ndarray, vector_sum: np.ndarray, n: int) -> np.ndarray:
    """First principal component (unit vector) from streamed sums Σvvᵀ and Σv over n vectors."""
    mean = vector_sum / n
    cov = covariance_sum / n - np.outer(mean, mean)
    _, vecs = np.linalg.eigh(cov)
    return vecs[:, -1].astype(np.float32)
