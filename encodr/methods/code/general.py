"""General text held in place while the code recipe tunes: learning without forgetting (Li and
Hoiem 2017) with the starting model as the teacher. Each step also takes a batch of general
English sentences (the bundled Wikipedia sentences) and pulls the model's vectors of them toward
the starting model's vectors of the same sentences, so that what the model knew of prose moves
less while it learns code.

sentence-transformers distils a teacher with ``MSELoss`` on the embeddings (its multilingual
distillation); this term is the mean of 1 − cos(student, teacher) instead: for unit vectors it has
the same minimum, and its scale (0 to 2) does not shrink with the model's dimension, so one weight
(``general_weight``) means the same for every model beside the code pairs' InfoNCE.
"""

from __future__ import annotations

import random

import torch

from ...training import Stream, to_device


def general_sentences(n: int, seed: int) -> list[str]:
    """``n`` of the bundled Wikipedia sentences (:func:`encodr.data.bundled.default_corpus`),
    a seeded sample (all of them when there are fewer)."""
    from ...data.bundled import default_corpus

    strings = list(default_corpus("wiki").strings)
    return random.Random(seed).sample(strings, min(n, len(strings)))


def general_stream(encoder, sentences: list[str], recipe) -> Stream:
    """The stream that keeps ``sentences`` where the starting model puts them: their vectors by
    ``encoder`` as it is now (before training: the teacher, float32 (n, d), computed once, in
    eval mode, from the same tokens the steps read), and per step the mean of 1 − cos between the
    training model's vector of a batch of them and the teacher's, weighted by
    ``recipe.general_weight`` in the step's loss. Sentences are encoded with the model's document
    prompt and cut at ``recipe.query_max_length`` tokens.

    Returns:
        A :class:`~encodr.training.Stream` named ``general`` of ``recipe.batch_size`` sentences a step.
    """
    prompt, tokenizer = encoder.prompt("document"), encoder.tokenizer

    def tokens(indices) -> dict:
        texts = [prompt + sentences[i] for i in indices]
        return dict(tokenizer(texts, max_length=recipe.query_max_length, truncation=True, padding=True, return_tensors="pt"))

    teacher = _vectors(encoder.st, tokens, len(sentences))

    def batch(indices: list[int], epoch: int):
        return tokens(indices), teacher[indices]

    def loss(module: torch.nn.Module, b) -> torch.Tensor:
        features, target = b
        device = next(module.parameters()).device
        vectors = module(to_device(features, device))["sentence_embedding"]
        return (1 - torch.nn.functional.cosine_similarity(vectors, target.to(device), dim=-1)).mean()

    return Stream("general", len(sentences), batch, loss, min(recipe.batch_size, len(sentences)), weight=recipe.general_weight)


def _vectors(st, tokens, n: int, chunk: int = 64) -> torch.Tensor:
    """float32 (n, d): ``st``'s sentence embeddings of examples 0..n−1 (``tokens(indices)``), in
    eval mode (no dropout), its mode restored after."""
    was = st.training
    st.eval()
    device = next(st.parameters()).device
    try:
        with torch.no_grad():
            parts = [
                st(to_device(tokens(list(range(i, min(i + chunk, n)))), device))["sentence_embedding"].float().cpu()
                for i in range(0, n, chunk)
            ]
    finally:
        st.train(was)
    return torch.cat(parts) if parts else torch.zeros((0, 0))
