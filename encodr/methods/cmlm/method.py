"""CMLM training (Yang et al. 2021): the conditional-MLM stream on adjacent sentences (§2),
the bitext-retrieval stream on translation pairs (§4.2), mixed in each step with weights
(L = L_CMLM + 0.2 · L_BR), through the shared trainer and run wrapper."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from ...data.adjacent import read_documents
from ...data.bitext import Translation, hold_out, read_bitext_any
from ...errors import EncodrError, S
from ...losses import AdditiveMarginLoss, CachedLoss
from ...models import Encoder, load_encoder, resolve
from ...paths import bundled
from ...training import FitOptions, Outcome, RunContext, Stream, to_device
from .config import CMLMRecipe
from .head import CMLMHead

# default_data "bible-sample": Mark 1–8 in 7 public-domain translations (tools/make_bible_sample.py)
BIBLE_SAMPLE = ("bible/mark_documents.tsv", "bible/mark_bitext.tsv")


def mask_tokens(
    ids: Sequence[int], rate: float, tokenizer, special: frozenset[int], rng: np.random.Generator
) -> tuple[list[int], list[int]]:
    """BERT-style masking of one sequence for the MLM target (CMLM §2: 80 of 256 tokens).

    ``round(rate · n)`` of the n content tokens (at least 1; special tokens never) are chosen;
    each becomes the mask token with probability 0.8, a random vocabulary token with 0.1, and
    stays with 0.1.

    Returns:
        (input ids, labels): labels hold the original id at chosen positions and −100 elsewhere.
    """
    content = [i for i, t in enumerate(ids) if t not in special]
    out, labels = list(ids), [-100] * len(ids)
    if not content:
        return out, labels
    chosen = rng.choice(content, size=max(1, min(len(content), round(rate * len(content)))), replace=False)
    for pos in chosen:
        labels[pos] = ids[pos]
        draw = rng.random()
        if draw < 0.8:
            out[pos] = tokenizer.mask_token_id
        elif draw < 0.9:
            out[pos] = int(rng.integers(len(tokenizer)))
    return out, labels


def pooled(encoder: Encoder, features: dict) -> torch.Tensor:
    """s1's sentence vector as CMLM conditions on it (§2: the average-pooled sequence output):
    the encoder's modules up to its pooling, without the final L2 normalisation (B, h)."""
    from sentence_transformers.sentence_transformer.modules import Normalize

    out = features
    for module in encoder.st:
        if isinstance(module, Normalize):
            break
        out = module(out)
    return out["sentence_embedding"]


def _pad(rows: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    longest = max(len(r) for r in rows)
    return torch.tensor([list(r) + [value] * (longest - len(r)) for r in rows], dtype=torch.long)


def cmlm_stream(encoder: Encoder, head: CMLMHead, pairs: Sequence[tuple[str, str]], recipe: CMLMRecipe) -> Stream:
    """The conditional-MLM stream: for each pair of adjacent sentences (s1, s2) — swapped with
    probability ½ — s1's pooled sentence vector (:func:`pooled`, before normalisation) is projected into N vectors
    that are placed before s2's token embeddings at the input layer, and the model predicts
    s2's masked tokens (cross-entropy over the vocabulary, on masked positions only).

    Randomness (swap, mask positions, replacements) is drawn from a generator seeded by
    (seed, epoch, pair), so batches do not depend on the number of processes.

    Raises:
        EncodrError: the tokenizer has no mask token.
    """
    tok = encoder.tokenizer
    if tok.mask_token_id is None:
        raise EncodrError(f"model '{encoder.name}' has no mask token, so CMLM cannot mask s2; use an MLM-pretrained model")
    ids = tok([s for pair in pairs for s in pair], truncation=True, max_length=recipe.max_length)["input_ids"]
    special = frozenset(tok.all_special_ids)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0

    def batch(indices: list[int], epoch: int) -> dict:
        s1, s2, labels = [], [], []
        for i in indices:
            rng = np.random.default_rng([recipe.seed, epoch, i])
            a, b = ids[2 * i], ids[2 * i + 1]
            if rng.random() < 0.5:
                a, b = b, a
            masked, target = mask_tokens(b, recipe.mask_rate, tok, special, rng)
            s1.append(a)
            s2.append(masked)
            labels.append(target)
        return {
            "s1_ids": _pad(s1, pad),
            "s1_mask": _pad([[1] * len(r) for r in s1], 0),
            "s2_ids": _pad(s2, pad),
            "s2_mask": _pad([[1] * len(r) for r in s2], 0),
            "labels": _pad(labels, -100),
        }

    def loss(module: nn.Module, b: dict) -> torch.Tensor:
        b = to_device(b, head.bias.device)
        vectors = pooled(encoder, {"input_ids": b["s1_ids"], "attention_mask": b["s1_mask"]})
        condition = head.condition(vectors)  # (B, N, h)
        bert = encoder.transformer
        embeds = torch.cat([condition, bert.get_input_embeddings()(b["s2_ids"])], dim=1)
        mask = torch.cat([torch.ones(condition.shape[:2], dtype=b["s2_mask"].dtype, device=embeds.device), b["s2_mask"]], dim=1)
        hidden = bert(inputs_embeds=embeds, attention_mask=mask).last_hidden_state[:, condition.shape[1] :]
        chosen = b["labels"] != -100
        return nn.functional.cross_entropy(head.logits(hidden[chosen]).float(), b["labels"][chosen])

    return Stream("cmlm", len(pairs), batch, loss, recipe.batch_size, weight=recipe.cmlm_weight)


def bitext_stream(encoder: Encoder, pairs: Sequence[Translation], recipe: CMLMRecipe) -> Stream:
    """The bitext-retrieval stream: sources and targets embedded in one batch, the
    bidirectional additive-margin loss over the global batch (GradCache when ``mini_batch``)."""
    tok = encoder.tokenizer
    loss_fn = AdditiveMarginLoss(recipe.margin, recipe.scale)

    def batch(indices: list[int], epoch: int) -> dict:
        texts = [pairs[i].source for i in indices] + [pairs[i].target for i in indices]
        return dict(tok(texts, truncation=True, max_length=recipe.max_length, padding=True, return_tensors="pt"))

    def loss(module: nn.Module, features: dict) -> torch.Tensor:
        features = to_device(features, encoder.st.device)
        half = features["input_ids"].shape[0] // 2

        def on_embeddings(emb: torch.Tensor) -> torch.Tensor:
            return loss_fn(emb[:half], emb[half:])

        if recipe.mini_batch:
            return CachedLoss(lambda chunk: encoder.st(chunk)["sentence_embedding"], on_embeddings, recipe.mini_batch)(features)
        return on_embeddings(encoder.st(features)["sentence_embedding"])

    return Stream("bitext", len(pairs), batch, loss, recipe.bitext_batch_size, weight=recipe.bitext_weight, min_batch=2)


def held_out_dev(pairs: Sequence[Translation]):
    """The dev set of a run given bitext and no ``--dev``: translation retrieval on pairs held
    out of training (:func:`~encodr.data.bitext.hold_out`), acc@1 in both directions, averaged
    over language pairs (:class:`~encodr.evaluation.bitext.BitextEvaluator`; CMLM §5 scores
    Tatoeba so). Its name is how the run log and warnings name it."""
    from ...evaluation import DevSet
    from ...evaluation.bitext import BitextEvaluator

    name = f"{len(pairs)} held-out bitext pairs"
    return DevSet(name, BitextEvaluator(name, list(pairs)), "acc@1", "dev")


def run(ctx: RunContext) -> Outcome:
    """Train ``ctx.request.models[0]`` with CMLM on the request's documents (TEXT: one sentence a
    line, a blank line between documents, or a TSV with a doc id) and/or bitext retrieval on
    its ``--bitext`` files, and save the encoder as a SentenceTransformer. The projection and
    MLM head are for training only and are not saved. With neither TEXT nor ``--bitext`` and
    ``default_data: bible-sample``, both come from the bundled sample (:data:`BIBLE_SAMPLE`).
    Without ``--dev``, ``bitext_dev`` pairs of the bitext are held out as the dev set
    (:func:`held_out_dev`); with any dev set the best checkpoint is kept, the start included.

    Raises:
        EncodrError: no usable input (neither documents with 2+ sentences nor bitext, or both
            parts weighted 0), or bad files, checked before the model loads.
    """
    from ..base import fit_report, load_dev

    request, recipe = ctx.request, ctx.recipe
    data, bitext = request.data, list(request.bitext)
    if not data and not bitext and recipe.default_data == "bible-sample":
        data, bitext = str(bundled(BIBLE_SAMPLE[0])), [str(bundled(BIBLE_SAMPLE[1]))]
    documents = read_documents(data) if data and recipe.cmlm_weight > 0 else None
    translations = [t for path in bitext for t in read_bitext_any(path)] if recipe.bitext_weight > 0 else []
    if documents is None and not translations:
        raise EncodrError(
            f"the multilingual recipe needs documents (TEXT) or {S.bitext} FILE with a weight above 0; pass TEXT, "
            f"{S.bitext}, or both"
        )
    dev = load_dev(ctx, request.dev)
    held: list[Translation] = []
    if dev is None and translations and recipe.bitext_dev:
        translations, held = hold_out(translations, recipe.bitext_dev, recipe.seed)
        if held:
            dev = held_out_dev(held)
    encoder = load_encoder(request.models[0], recipe.pooling, recipe.raw_pooling, recipe.max_length, ctx.trainer.device)
    bert = encoder.transformer
    head = CMLMHead(
        bert.config.hidden_size, recipe.projections, bert.get_input_embeddings(), getattr(bert.config, "layer_norm_eps", 1e-12)
    )
    if documents is not None and not head.load_transform(resolve(request.models[0]).transformer_dir()):
        ctx.warn(
            f"'{encoder.name}' has no MLM head in its checkpoint: the CMLM head's transform starts from a fresh initialisation"
        )
    head.to(ctx.trainer.device)
    adjacent = documents.adjacent_pairs() if documents is not None else []
    streams = []
    if adjacent:
        streams.append(cmlm_stream(encoder, head, adjacent, recipe))
    if translations:
        streams.append(bitext_stream(encoder, translations, recipe))
    module = nn.ModuleDict({"encoder": encoder.st, "head": head})
    result = ctx.trainer.fit(
        module,
        streams,
        recipe.optim(),
        FitOptions(
            evaluate=(lambda: dev.score(encoder)) if dev else None,
            dev_metric=dev.metric if dev else "dev",
            eval_steps=recipe.eval_steps,
            progress=ctx.progress,
            on_step=request.on_step,
        ),
    )
    ctx.save(".", encoder.save)
    report, metrics, shown = fit_report(ctx, result, dev)
    sources = ([documents.source] if documents else []) + (bitext if translations else [])
    summary = {
        "base_model": encoder.name,
        "pooling": encoder.pooling,
        "data": ", ".join(sources),
        "cmlm_pairs": len(adjacent),
        "bitext_pairs": len(translations),
        "bitext_dev_pairs": len(held),
        "mlm_head_from_checkpoint": head.from_checkpoint,
        **report,
    }
    metrics.update(cmlm_pairs=len(adjacent), bitext_pairs=len(translations))
    rows = [
        {
            "kind": "tune",
            "model": encoder.name,
            "data": summary["data"],
            "data_sha256": documents.sha256 if documents else "",
            "strings": len(adjacent) + len(translations),
            "out": ".",
            "metrics": metrics,
        }
    ]
    return Outcome(summary, rows, result.log, ("base_model", "pooling", "data", "cmlm_pairs", "bitext_pairs", *shown))
