"""Cross-encoders: "[CLS] a [SEP] b [SEP]" → transformer → linear head on [CLS] → one score.

Wraps a :class:`sentence_transformers.CrossEncoder` (``num_labels=1``, sigmoid at
inference), so what encodr trains is what ``CrossEncoder(path)`` loads. Trans-Encoder
(Liu et al. 2022, §2.2) reads each pair in both orders; :meth:`CrossScorer.pair_scores`
averages the two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import EncodrError, first_line
from .encoder import pick_device, resolve
from .logs import quiet

TUNED_FILE = "encodr_rerank.json"  # a re-ranker's depth and weight chosen on judgments, saved beside it (CrossScorer.save_tuned)


class CrossScorer:
    """A cross-encoder scoring text pairs.

    Attributes:
        ce: the underlying :class:`sentence_transformers.CrossEncoder` (a ``torch.nn.Module``).
        name: the spec it was loaded or initialised from.
        tuned: the re-ranking ``depth`` and ``weight`` chosen for it on judgments (the ``judged``
            recipe; :data:`TUNED_FILE` in its folder), which a search uses unless it sets its own.
    """

    def __init__(self, ce, name: str, tuned: dict | None = None):
        self.ce = ce
        self.name = name
        self.tuned = dict(tuned or {})

    @property
    def tokenizer(self):
        """The Hugging Face tokenizer."""
        return self.ce.tokenizer

    def features(self, pairs: Sequence[tuple[str, str]]) -> dict:
        """Tokenised pairs ("[CLS] a [SEP] b [SEP]", truncated to the model's max length):
        a dict of (B, T) int64 tensors, as the module's forward takes them."""
        return self.ce.preprocess([list(p) for p in pairs])

    def logits(self, features: dict):
        """Raw scores x (float tensor (B,)) of tokenised pairs; σ(x) is the similarity."""
        return self.ce(features)["scores"].view(-1)

    def pair_scores(
        self,
        texts1: Sequence[str],
        texts2: Sequence[str],
        batch_size: int = 64,
        progress: bool = False,
        on_batch: Callable[[int], None] | None = None,
        symmetric: bool = True,
    ) -> np.ndarray:
        """Similarity σ(x) of each pair, averaged over both orders (a, b) and (b, a); with
        ``symmetric=False`` the order (a, b) only (a query and a passage, as a re-ranker reads them).

        Args:
            texts1, texts2: N strings each.
            batch_size: pairs per forward pass.
            progress: show sentence-transformers' progress bar.
            on_batch: called with the number of pairs done so far (both orders count once).
            symmetric: average both orders.

        Returns:
            float32 array (N,), values in (0, 1).
        """
        n = len(texts1)
        out = np.zeros(n, dtype=np.float32)
        step = max(1, batch_size * 8)
        for start in range(0, n, step):
            a, b = texts1[start : start + step], texts2[start : start + step]
            both = list(zip(a, b)) + (list(zip(b, a)) if symmetric else [])
            scores = np.asarray(self.ce.predict(both, batch_size=batch_size, show_progress_bar=progress), dtype=np.float32)
            out[start : start + len(a)] = (scores[: len(a)] + scores[len(a) :]) / 2 if symmetric else scores
            if on_batch is not None:
                on_batch(start + len(a))
        return out

    def query_scores(self, query: str, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Relevance of each text to a query, as a re-ranker reads it: one order, (query, text),
        through ``CrossEncoder.predict`` with the model's own activation (σ for one label).
        Unlike :meth:`pair_scores`, which averages both orders for symmetric similarity.

        Returns:
            float32 array (N,).
        """
        if not texts:
            return np.zeros(0, dtype=np.float32)
        scores = self.ce.predict([(query, t) for t in texts], batch_size=batch_size, show_progress_bar=False)
        return np.asarray(scores, dtype=np.float32).reshape(len(texts))

    def save(self, path: Path) -> None:
        """Save in the sentence-transformers format (``CrossEncoder(path)`` loads it), with
        :attr:`tuned` beside it when set (:func:`load_cross` reads it back)."""
        import json

        self.ce.save(str(path))
        if self.tuned:
            (Path(path) / TUNED_FILE).write_text(json.dumps(self.tuned))


def new_cross_encoder(base: str | None, max_length: int, device: str | None = None, seed: int = 42) -> CrossScorer:
    """A cross-encoder initialised from a base model's transformer weights with a new linear
    head on [CLS] (Trans-Encoder's "refreshing", §5.2).

    Args:
        base: model spec (alias, directory, Hub id); a bi-encoder's transformer is used.
        max_length: tokens of the concatenated pair, special tokens included.
        device: ``cpu``/``cuda``; default CUDA when available.
        seed: seeds the head's random initialisation.

    Raises:
        EncodrError: see :func:`encodr.models.resolve`, or the checkpoint cannot load.
    """
    import torch
    from sentence_transformers import CrossEncoder

    ref = resolve(base)
    quiet()
    torch.manual_seed(seed)
    try:
        ce = CrossEncoder(
            str(ref.transformer_dir()), num_labels=1, max_length=max_length, device=pick_device(device), local_files_only=True
        )
    except Exception as exc:
        raise EncodrError(f"could not build a cross-encoder from '{ref.spec}': {first_line(exc)}") from None
    return CrossScorer(ce, ref.spec)


def load_cross(spec: str, device: str | None = None) -> CrossScorer:
    """Load a saved cross-encoder.

    Raises:
        EncodrError: not a cross-encoder (e.g. a bi-encoder: the message says to drop
            ``--cross``), or it cannot be loaded.
    """
    from sentence_transformers import CrossEncoder

    ref = resolve(spec)
    if ref.encoder_type != "cross":
        raise EncodrError(
            f"'{ref.spec}' is not a cross-encoder (no CrossEncoder config); re-ranking and cross-encoder scores need one, "
            "such as an encodr cross/ output or a CrossEncoder from the Hub"
        )
    quiet()
    try:
        ce = CrossEncoder(str(ref.path), device=pick_device(device), local_files_only=True)
    except Exception as exc:
        raise EncodrError(f"could not load cross-encoder '{ref.spec}': {first_line(exc)}") from None
    return CrossScorer(ce, ref.spec, _tuned(Path(ref.path)))


def _tuned(folder: Path) -> dict:
    """The re-ranking settings saved beside a cross-encoder (:data:`TUNED_FILE`); empty when none or unreadable."""
    import json

    try:
        found = json.loads((folder / TUNED_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {k: found[k] for k in ("depth", "weight") if isinstance(found, dict) and k in found}
