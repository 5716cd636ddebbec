"""Principal-component removal (CMLM, Yang et al. 2021, §5.2): remove the first principal
component of each language's embeddings, so vectors of different languages share one space.

Two ways to take "the first principal component" of a language's (n, d) embedding matrix V:

- ``uncentred`` (the paper's): the first right singular vector of V itself, i.e. the top
  eigenvector of VᵀV. With anisotropic embeddings this is close to the language's mean
  direction.
- ``centred`` (classic PCA, encodr's first version): the top eigenvector of the covariance
  VᵀV/n − μμᵀ, the direction of largest spread around the mean.
"""

from __future__ import annotations

from typing import Collection

import numpy as np

from ..errors import EncodrError, S, one_of

PCR_VARIANTS = ("centred", "uncentred")
DEFAULT_VARIANT = "uncentred"  # chosen on Tatoeba dev with bench/pcr_variants.py (docs/benchmarks/pcr_variants.md)


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


def check_variant(variant: str) -> str:
    """``variant`` if it is one of :data:`PCR_VARIANTS`.

    Raises:
        EncodrError: an unknown variant, naming the choices (field ``pcr_variant``).
    """
    if variant not in PCR_VARIANTS:
        one_of("pcr_variant", variant, PCR_VARIANTS)
    return variant


def first_component(covariance_sum: np.ndarray, vector_sum: np.ndarray, n: int, variant: str = DEFAULT_VARIANT) -> np.ndarray:
    """First principal component (unit vector (d,), float32) from the sums Σvvᵀ (d, d) and
    Σv (d,) over n vectors, ``centred`` or ``uncentred`` (see the module docstring)."""
    check_variant(variant)
    matrix = covariance_sum / n
    if variant == "centred":
        mean = vector_sum / n
        matrix = matrix - np.outer(mean, mean)
    _, vecs = np.linalg.eigh(matrix)
    return vecs[:, -1].astype(np.float32)


POOLED = "*"  # the component of all vectors together: for a language with too few texts of its own


def fit_and_remove(
    vectors: np.ndarray, langs: list[str], variant: str = DEFAULT_VARIANT, strict: bool = True
) -> dict[str, np.ndarray]:
    """Per language, fit the first principal component and remove it from that language's rows
    of ``vectors``, in place.

    Args:
        vectors: float32 (n, d) unit vectors (a NumPy array or memmap, written in place).
        langs: n language codes, one per row.
        variant: ``centred`` or ``uncentred``.
        strict: a language with a single vector is an error; otherwise (detected languages,
            where a lone label is likely a detector's mistake) its rows lose the component of
            all n vectors together, stored under :data:`POOLED`.

    Returns:
        language → component, unit vector (d,), plus :data:`POOLED`, the component of all
        vectors together: removed from lone languages' rows, and from queries in no language
        (:data:`UNDETERMINED`) later.

    Raises:
        EncodrError: with ``strict``, a language with a single vector; an unknown variant.
    """
    components = {}
    codes = np.asarray(langs)
    counts = {code: int((codes == code).sum()) for code in sorted(set(langs))}
    lone = [code for code, n in counts.items() if n < 2]
    if lone and strict:
        raise EncodrError(
            f"language '{lone[0]}' has only 1 distinct text; {S.pcr} fits a principal component per language and needs "
            f"at least 2 (add texts, or drop {S.pcr})"
        )
    components[POOLED] = _pooled_component(vectors, variant)  # fitted before any row changes
    for code in counts:
        idx = np.flatnonzero(codes == code)
        sub = np.asarray(vectors[idx])
        if code not in lone:
            components[code] = first_component(sub.T @ sub, sub.sum(axis=0), len(idx), variant)
        vectors[idx] = remove_component(sub, components[code] if code not in lone else components[POOLED])
    return components


def _pooled_component(vectors: np.ndarray, variant: str, chunk: int = 50_000) -> np.ndarray:
    """First component of all rows, summed in chunks (a memmap is never read whole)."""
    d = vectors.shape[1]
    outer, total = np.zeros((d, d), dtype=np.float64), np.zeros(d, dtype=np.float64)
    for start in range(0, len(vectors), chunk):
        part = np.asarray(vectors[start : start + chunk], dtype=np.float64)
        outer += part.T @ part
        total += part.sum(axis=0)
    return first_component(outer, total, len(vectors), variant)


def component_for(components: dict[str, np.ndarray], lang: str, pooled_for: Collection[str] | None = None) -> np.ndarray | None:
    """The component that PCR removes from a vector of language ``lang``: its own, else the
    pooled one (see :func:`fit_and_remove`), else ``None``. ``pooled_for``: the only languages
    that may take the pooled one (``None``: any; an index whose languages were given, not
    detected, passes ``("und",)``, so that a query in no language still works and an unknown
    language is an error)."""
    if lang in components:
        return components[lang]
    return components.get(POOLED) if (pooled_for is None or lang in pooled_for) else None


def remove_per_language(
    vectors: np.ndarray, langs: list[str], components: dict[str, np.ndarray], pooled_for: Collection[str] | None = None
) -> np.ndarray:
    """Remove from each vector its language's fitted component (:func:`component_for`), one
    call per language present (CMLM §5.2 at query and ``--add`` time).

    Args:
        vectors: float32 (n, d) unit vectors (not changed).
        langs: n language codes.
        components: language → unit component (d,), as :func:`fit_and_remove` returns.
        pooled_for: see :func:`component_for`.

    Returns:
        float32 (n, d), unit norm.

    Raises:
        KeyError: carrying the first language with neither its own nor a pooled component
            (callers turn it into their one-line error).
    """
    codes = np.asarray(langs)
    out = np.array(vectors, dtype=np.float32, copy=True)
    for code in sorted(set(langs)):
        component = component_for(components, code, pooled_for)
        if component is None:
            raise KeyError(code)
        out[codes == code] = remove_component(out[codes == code], component)
    return out
