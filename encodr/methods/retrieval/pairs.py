"""Label-free (query, positive) pairs from passages, and the InfoNCE training stream over them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...errors import EncodrError
from ...evaluation.pseudo import sentence_spans
from ...training import Stream, to_device
from .config import RetrievalRecipe, check_dims, dims_list, signal_list


@dataclass(frozen=True)
class Passage:
    """A passage that fits the model's window, with its document's title and its sentence spans."""

    text: str
    title: str | None
    sentences: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, text: str, title: str | None = None) -> "Passage":
        """A passage of ``text`` (its sentences found by :func:`~encodr.evaluation.pseudo.sentence_spans`)."""
        return cls(text, title, tuple(sentence_spans(text)))


def ict_pair(p: Passage, rng: np.random.Generator, keep: float) -> tuple[str, str] | None:
    """Inverse cloze (ORQA §5): a random sentence is the query; the passage without it is the
    positive, or with it at probability ``keep``. ``None`` for a passage of one sentence."""
    if len(p.sentences) < 2:
        return None
    start, end = p.sentences[int(rng.integers(len(p.sentences)))]
    query = p.text[start:end]
    if rng.random() < keep:
        return query, p.text
    return query, (p.text[:start].rstrip() + " " + p.text[end:].lstrip()).strip()


def crop_pair(p: Passage, rng: np.random.Generator, low: float, high: float) -> tuple[str, str]:
    """Independent cropping (Contriever §3.1): two random spans of the passage's words, each a
    share in [``low``, ``high``] of them (at least one word)."""
    words = p.text.split()

    def crop() -> str:
        size = max(1, int(round(len(words) * rng.uniform(low, high))))
        start = int(rng.integers(len(words) - size + 1))
        return " ".join(words[start : start + size])

    return crop(), crop()


def make_pair(p: Passage, signals: list[str], rng: np.random.Generator, recipe: RetrievalRecipe) -> tuple[str, str]:
    """One pair from ``p`` by the first signal drawn (in a random order) that applies to it;
    cropping applies to every passage, so it is the last resort."""
    for signal in [signals[i] for i in rng.permutation(len(signals))] + ["crop"]:
        if signal == "ict":
            pair = ict_pair(p, rng, recipe.ict_keep)
            if pair:
                return pair
        elif signal == "title" and p.title:
            return p.title, p.text
        elif signal == "crop":
            return crop_pair(p, rng, recipe.crop_min, recipe.crop_max)
    raise AssertionError("unreachable: crop always applies")


def retrieval_stream(tokenizer, passages: list[Passage], recipe: RetrievalRecipe, world: int = 1) -> Stream:
    """The training stream: each passage gives a (query, positive) pair each epoch, drawn from
    a generator seeded by (seed, epoch, index), so a batch does not depend on the number of
    processes; the loss is InfoNCE over the batch's positives (sentence-transformers'
    ``MultipleNegativesRankingLoss``: the cosine of the query with its positive against its
    cosines with every other positive of the global batch, scaled by ``scale``), gathered
    across processes when there are several, and with GradCache
    (``CachedMultipleNegativesRankingLoss``) when ``mini_batch`` > 0. With ``matryoshka_dims``,
    sentence-transformers' ``MatryoshkaLoss`` wraps it: the same InfoNCE summed over the full
    vectors and each prefix of the listed dimensions (Kusupati et al. 2022, §3), weight 1 each.

    Args:
        tokenizer: the model's tokenizer.
        passages: the N passages to draw pairs from.
        recipe: uses ``signals``, ``ict_keep``, ``crop_min``/``crop_max``, ``scale``,
            ``query_max_length``, ``max_length``, ``batch_size``, ``mini_batch``,
            ``matryoshka_dims`` and ``seed``.
        world: the number of processes (candidates are gathered across them when > 1).

    Returns:
        A :class:`~encodr.training.Stream` whose batches are (query features, positive
        features), each a dict of (n, T) tensors for this process's n pairs.

    Raises:
        EncodrError: ``crop_min`` above ``crop_max``; a ``matryoshka_dims`` entry above the
            model's dimension (on the first step).
    """
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MatryoshkaLoss,
        MultipleNegativesRankingLoss,
    )

    if recipe.crop_min > recipe.crop_max:
        raise EncodrError(f"crop_min {recipe.crop_min} is above crop_max {recipe.crop_max}; set crop_min ≤ crop_max")
    signals = signal_list(recipe.signals)
    losses: dict[int, torch.nn.Module] = {}

    def tokens(texts: list[str], length: int) -> dict:
        return dict(tokenizer(texts, max_length=length, truncation=True, padding=True, return_tensors="pt"))

    def batch(indices: list[int], epoch: int) -> tuple[dict, dict]:
        pairs = [make_pair(passages[i], signals, np.random.default_rng([recipe.seed, epoch, i]), recipe) for i in indices]
        return tokens([q for q, _ in pairs], recipe.query_max_length), tokens([p for _, p in pairs], recipe.max_length)

    def loss(module: torch.nn.Module, features: tuple[dict, dict]) -> torch.Tensor:
        if id(module) not in losses:  # sentence-transformers' losses hold the model they embed with
            gather = world > 1
            inner = (
                CachedMultipleNegativesRankingLoss(
                    module, scale=recipe.scale, mini_batch_size=recipe.mini_batch, gather_across_devices=gather
                )
                if recipe.mini_batch
                else MultipleNegativesRankingLoss(module, scale=recipe.scale, gather_across_devices=gather)
            )
            losses[id(module)] = matryoshka(module, inner, dims_list(recipe.matryoshka_dims), MatryoshkaLoss)
        device = next(module.parameters()).device
        queries, positives = (to_device(f, device) for f in features)
        return losses[id(module)]([queries, positives], labels=None)

    return Stream("retrieval", len(passages), batch, loss, recipe.batch_size, min_batch=2)


def matryoshka(module: torch.nn.Module, loss: torch.nn.Module, dims: list[int], wrapper) -> torch.nn.Module:
    """``loss`` itself when ``dims`` is empty, else ``wrapper`` (sentence-transformers'
    ``MatryoshkaLoss``) over the full dimension d and each of ``dims`` below it, largest first.

    Raises:
        EncodrError: a dimension above d (naming the field and d).
    """
    if not dims:
        return loss
    full = int(
        getattr(module, "module", module).get_embedding_dimension()
    )  # a DDP-wrapped model holds the SentenceTransformer as .module
    check_dims(dims, full)
    return wrapper(module, loss, sorted({full, *dims}, reverse=True))
