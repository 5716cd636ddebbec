"""A query adapter: a low-rank linear map on query vectors, learned from an index's judgments
and applied at search time, so that judged queries and queries like them move toward the
documents judged relevant without re-encoding a single document.

The map is ``q' = normalise(q + (q U) Vᵀ)`` with ``U`` and ``V`` of shape (d, r): the identity
plus a rank-r correction (``V`` starts at zero, so an untrained adapter changes nothing). It is
Chroma's embedding adapter and LlamaIndex's ``EmbeddingAdapterFinetuneEngine`` (a linear layer on
the query side only, documents untouched), here residual and low-rank so that a few hundred
judged queries cannot move the whole space.

It is stored beside the index (``query_adapter.npz``) for the model of one fingerprint, as the
search settings learned on judgments are (:func:`.judgments.read_tuned`), and a searcher of an
index built by that model applies it to every query vector (:meth:`.search.Searcher`). It is
written by ``encodr tune --recipe judged --index IDX`` when cross-validation keeps it
(:mod:`encodr.methods.judged.adapter`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ADAPTER_FILE = "query_adapter.npz"  # the adapter stored beside an index (:func:`write_adapter`)


@dataclass(frozen=True)
class QueryAdapter:
    """A learned map on query vectors (see the module docstring).

    Attributes:
        u, v: float32 (d, r) each.
        fingerprint: the weights of the model whose query vectors it maps.
        report: how it was chosen (cross-validated nDCG@10 before and after, queries, folds).
    """

    u: np.ndarray
    v: np.ndarray
    fingerprint: str
    report: dict

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """``vectors`` mapped and renormalised: float32 (n, d) in, float32 (n, d) out, unit length."""
        x = np.asarray(vectors, dtype=np.float32)
        moved = x + (x @ self.u) @ self.v.T
        norms = np.linalg.norm(moved, axis=1, keepdims=True)
        return (moved / np.maximum(norms, 1e-12)).astype(np.float32)


def read_adapter(root: Path, fingerprint: str) -> QueryAdapter | None:
    """The adapter stored with the index at ``root`` for the model of weights ``fingerprint``;
    None when there is none, it is for another model, or it cannot be read."""
    try:
        with np.load(Path(root) / ADAPTER_FILE, allow_pickle=False) as found:
            about = json.loads(str(found["meta"]))
            if about.get("fingerprint") != fingerprint:
                return None
            return QueryAdapter(
                found["u"].astype(np.float32), found["v"].astype(np.float32), fingerprint, about.get("report", {})
            )
    except (OSError, ValueError, KeyError):
        return None


def write_adapter(root: Path, adapter: QueryAdapter) -> None:
    """Store ``adapter`` with the index at ``root``, atomically (a temporary file, then a rename).

    Raises:
        EncodrError: the file cannot be written, naming it and the fix.
    """
    from ..outputs import atomic_file, os_fault

    meta = json.dumps({"fingerprint": adapter.fingerprint, "report": adapter.report})
    try:
        with atomic_file(Path(root) / ADAPTER_FILE) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, u=adapter.u, v=adapter.v, meta=np.asarray(meta))
    except OSError as exc:
        raise os_fault(exc, Path(root) / ADAPTER_FILE, kept="the index's queries are searched as before") from None


def remove_adapter(root: Path) -> bool:
    """Remove the adapter stored with the index at ``root`` (a file encodr wrote); True when there was one."""
    try:
        (Path(root) / ADAPTER_FILE).unlink()
        return True
    except FileNotFoundError:
        return False
