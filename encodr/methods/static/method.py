"""Distilling a bi-encoder into a static embedding model with model2vec's ``distill_from_model``,
saved as a sentence-transformers ``StaticEmbedding`` model (``SentenceTransformer(path)`` loads
it, and so does every encodr command)."""

from __future__ import annotations

import contextlib
import io

from ...errors import EncodrError, S
from ...models import load_encoder
from ...progress import ProgressEvent
from ...training.run import Outcome, RunContext

POOLINGS = {
    "mean": "mean",
    "cls": "first",
}  # encodr's pooling → model2vec's PoolingMode: each token's vector is pooled as the model pools a text


def preflight(recipe, job) -> None:
    """Refuse training text: distillation reads the model alone.

    Raises:
        EncodrError: a FILE was given.
    """
    if job.data:
        raise EncodrError(f"recipe '{recipe.name}' distils the model alone and reads no training text; drop {job.data}")


def run(ctx: RunContext) -> Outcome:
    """Distil ``ctx.request.models[0]`` into a static model (model2vec, Tulkens & van Dongen 2024:
    each vocabulary token's output vector under the model's pooling, PCA to ``pca_dims``, SIF
    weights) and save it in the output folder.

    Raises:
        EncodrError: the model is static already, or its pooling is neither mean nor CLS.
    """
    recipe, request = ctx.recipe, ctx.request
    encoder = load_encoder(request.models[0], recipe.pooling, recipe.raw_pooling, None, ctx.trainer.device)
    if encoder.static:
        raise EncodrError(
            f"'{encoder.name}' is a static model already; distil from a transformer bi-encoder (minilm, mpnet, me5 or "
            "a tuned one)"
        )
    pooling = POOLINGS.get(encoder.pooling)
    if pooling is None:
        raise EncodrError(
            f"'{encoder.name}' pools with {encoder.pooling}; distillation takes a mean- or CLS-pooled model (set "
            f"{S.set} pooling=mean)"
        )
    from model2vec.distill import distill_from_model
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    ctx.progress(ProgressEvent("distil", 0, 1))
    with contextlib.redirect_stderr(io.StringIO()):  # model2vec draws its own tqdm bar; the front end draws this task's
        static = distill_from_model(
            encoder.transformer,
            encoder.tokenizer,
            device=encoder.device,
            pca_dims=recipe.pca_dims or None,
            sif_coefficient=recipe.sif_coefficient or None,
            pooling=pooling,
        )
    ctx.progress(ProgressEvent("distil", 1, 1))
    module = StaticEmbedding(static.tokenizer, embedding_weights=static.embedding.astype("float32"))
    model = SentenceTransformer(modules=[module], device="cpu")
    vocabulary, dim = (int(n) for n in static.embedding.shape)
    ctx.save(".", lambda path: model.save(str(path)))
    summary = {"base_model": encoder.name, "pooling": encoder.pooling, "vocabulary": vocabulary, "dimension": dim}
    rows = [
        {
            "kind": "distil",
            "model": encoder.name,
            "data": None,
            "data_sha256": None,
            "strings": vocabulary,
            "out": ".",
            "metrics": {},
        }
    ]
    return Outcome(summary, rows, None, ("base_model", "pooling", "vocabulary", "dimension"))
