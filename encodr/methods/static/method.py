"""Distilling a bi-encoder into a static embedding model with model2vec's ``distill_from_model``,
saved as a sentence-transformers ``StaticEmbedding`` model (``SentenceTransformer(path)`` loads
it, and so does every encodr command)."""

from __future__ import annotations

from ...errors import EncodrError
from ...models import load_encoder
from ...models.distil import distil
from ...progress import ProgressEvent
from ...training.run import Outcome, RunContext


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
    ctx.progress(ProgressEvent("distil", 0, 1))
    model = distil(encoder, recipe.pca_dims or None, recipe.sif_coefficient or None)
    ctx.progress(ProgressEvent("distil", 1, 1))
    static = model[0]
    vocabulary, dim = (int(n) for n in static.embedding.weight.shape)
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
