"""Mirror-BERT training (Liu et al. 2021, §2): read strings, load a base model, train on
two views of each string with Eq. 1, keep the best checkpoint on a dev set if one is given,
save a SentenceTransformer. Runs through :func:`encodr.training.run.run`."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch

from ...data.bundled import default_corpus
from ...data.text import Corpus, read_corpus
from ...errors import EncodrError
from ...losses import CachedLoss, MirrorInfoNCELoss
from ...models import load_encoder
from ...training import FitOptions, Outcome, RunContext, Stream, to_device
from .config import MirrorRecipe
from .views import add_drophead, collate, set_dropout, span_mask, tokenize

MIN_STRINGS = 2  # InfoNCE needs at least one in-batch negative


def load_training_strings(data: str | Corpus | None, recipe: MirrorRecipe, limit: int | None = None) -> Corpus:
    """The deduplicated training strings: from ``data`` (a file or a :class:`Corpus`), or
    the recipe's bundled default.

    Raises:
        EncodrError: unreadable input (see :func:`encodr.data.text.read_corpus`), or fewer
            than two distinct strings.
    """
    if isinstance(data, Corpus):
        corpus = data
    else:
        corpus = read_corpus(data, recipe.max_length) if data else default_corpus(recipe.default_data)
    if limit:
        corpus.strings = corpus.strings[:limit]
    if len(corpus.strings) < MIN_STRINGS:
        raise EncodrError(
            f"{corpus.source} has {len(corpus.strings)} distinct string after dropping {corpus.blank} blank and "
            f"{corpus.duplicates} duplicate lines; Mirror-BERT needs at least {MIN_STRINGS} (in-batch negatives), "
            f"ideally {recipe.batch_size}: add more lines"
        )
    return corpus


def mirror_stream(tokenizer, ids: Sequence[Sequence[int]], recipe: MirrorRecipe, guide: np.ndarray | None = None) -> Stream:
    """The Mirror-BERT training stream: each string twice, span-masking the second view (§2).

    Args:
        tokenizer: the model's tokenizer (gives mask, pad and special ids).
        ids: token ids of the N distinct training strings.
        recipe: uses ``batch_size``, ``span_mask``, ``seed``, ``temperature``,
            ``false_negative_cos``, ``mini_batch`` and ``loss``.
        guide: (N, d) float32 unit-norm embeddings of the strings under the frozen base
            model; required when ``recipe.false_negative_cos > 0``.

    Returns:
        A :class:`~encodr.training.Stream` whose batches are features of shape (2n, T)
        for this process's n strings: rows 0..n−1 the plain views, n..2n−1 the masked
        views (and ``guide``, (n, d), with the filter on). The span of string i in epoch e
        is drawn from a generator seeded by (seed, e, i), so it does not depend on the
        batch or the number of processes. Its loss is Eq. 1 over the global batch, with
        GradCache when ``mini_batch`` > 0. A global batch of one string is dropped.

    Raises:
        EncodrError: span masking is on and the tokenizer has no mask token.
        ValueError: the filter is on without one guide vector per string.
    """
    if recipe.span_mask > 0 and tokenizer.mask_token_id is None:
        raise EncodrError("this tokenizer has no mask token, so span masking cannot work; set span_mask: 0")
    if recipe.false_negative_cos > 0 and (guide is None or len(guide) != len(ids)):
        raise ValueError("false_negative_cos > 0 needs one guide embedding per string")
    special = frozenset(tokenizer.all_special_ids)
    with_types = "token_type_ids" in tokenizer.model_input_names
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    loss_fn = MirrorInfoNCELoss(
        recipe.temperature, recipe.false_negative_cos
    )  # the recipe's loss: mirror_infonce, its one choice

    def batch(indices: list[int], epoch: int) -> dict:
        chosen = [ids[i] for i in indices]
        masked = chosen
        if recipe.span_mask:
            masked = [
                span_mask(
                    ids[i], recipe.span_mask, tokenizer.mask_token_id, special, np.random.default_rng([recipe.seed, epoch, i])
                )
                for i in indices
            ]
        features = collate(chosen + masked, pad_id, with_types)
        if guide is not None and recipe.false_negative_cos > 0:
            features["guide"] = torch.from_numpy(guide[indices])
        return features

    def loss(module: torch.nn.Module, features: dict) -> torch.Tensor:
        device = next(module.parameters()).device
        features = to_device(features, device)
        guide_rows = features.pop("guide", None)
        half = features["input_ids"].shape[0] // 2

        def on_embeddings(emb: torch.Tensor) -> torch.Tensor:
            return loss_fn(emb[:half], emb[half:], guide=guide_rows)

        if recipe.mini_batch:
            return CachedLoss(lambda chunk: module(chunk)["sentence_embedding"], on_embeddings, recipe.mini_batch)(features)
        return on_embeddings(module(features)["sentence_embedding"])

    return Stream("mirror", len(ids), batch, loss, recipe.batch_size, min_batch=2)


def run(ctx: RunContext) -> Outcome:
    """Fine-tune ``ctx.request.models[0]`` on the request's strings with Mirror-BERT.

    With ``--dev``, the starting model, every ``eval_steps`` steps and every epoch end are
    scored on the dev set and the best weights are saved; when no step beats the starting
    model, the run says so and saves the starting weights.

    Raises:
        EncodrError: bad input (data, dev set, model), checked before training.
    """
    from ..base import fit_report, load_dev

    request, recipe = ctx.request, ctx.recipe
    corpus = load_training_strings(request.data, recipe, request.limit)
    dev = load_dev(ctx, request.dev)  # a bad --dev fails before the model loads
    n = len(corpus.strings)
    if n < recipe.batch_size:
        size = n - n % ctx.trainer.world  # a multiple of the number of processes
        ctx.warn(f"only {n} distinct strings, fewer than batch_size {recipe.batch_size}: training with batch size {size}")
        recipe = ctx.recipe = dataclasses.replace(recipe, batch_size=size)
    encoder = load_encoder(request.models[0], recipe.pooling, recipe.raw_pooling, recipe.max_length, ctx.trainer.device)
    ids, truncated = tokenize(encoder.tokenizer, corpus.strings, recipe.max_length)
    if truncated or corpus.long_lines:
        first = f" (first: line {corpus.long_lines[0]})" if corpus.long_lines else ""
        ctx.warn(
            f"{max(truncated, len(corpus.long_lines))} strings are longer than max_length={recipe.max_length} tokens "
            f"and were truncated{first}"
        )
    guide = encoder.encode(corpus.strings, batch_size=256) if recipe.false_negative_cos > 0 else None  # frozen base model
    hooks = []
    if encoder.static:  # a table of token vectors: no dropout or heads; the two views differ by the deleted span alone
        ctx.warn(
            "a static model has no dropout or attention heads: its two views differ by span masking alone (span_mask "
            "deletes the span)"
        )
    else:
        set_dropout(encoder.transformer, recipe.dropout)
        hooks = add_drophead(encoder.transformer, recipe.drophead) if recipe.drophead > 0 else []
    try:
        result = ctx.trainer.fit(
            encoder.module,
            [mirror_stream(encoder.tokenizer, ids, recipe, guide)],
            recipe.optim(),
            FitOptions(
                evaluate=(lambda: dev.score(encoder)) if dev else None,
                dev_metric=dev.metric if dev else "dev",
                eval_steps=recipe.eval_steps,
                progress=ctx.progress,
                on_step=request.on_step,
            ),
        )
    finally:
        for h in hooks:
            h.remove()
    ctx.save(".", encoder.save)
    report, metrics, shown = fit_report(ctx, result, dev)
    summary = {
        "base_model": encoder.name,
        "pooling": encoder.pooling,
        "data": corpus.source,
        "data_sha256": corpus.sha256,
        "strings": n,
        **report,
    }
    rows = [
        {
            "kind": "tune",
            "model": encoder.name,
            "data": corpus.source,
            "data_sha256": corpus.sha256,
            "strings": n,
            "out": ".",
            "metrics": metrics,
        }
    ]
    return Outcome(summary, rows, result.log, ("base_model", "pooling", "data", "strings", *shown))
