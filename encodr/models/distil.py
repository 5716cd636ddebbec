"""Distilling a bi-encoder into a static embedding model (model2vec's ``distill_from_model``;
Tulkens & van Dongen 2024), and the cache of the static models an index's fast stage encodes with."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import EncodrError, S
from .encoder import Encoder

POOLINGS = {
    "mean": "mean",
    "cls": "first",
}  # encodr's pooling → model2vec's PoolingMode: each token's vector is pooled as the model pools a text
FAST_PCA_DIMS = 256  # the fast stage's static model: model2vec's default dimensions
FAST_SIF = 1e-4  # and its default SIF coefficient


def distil(encoder: Encoder, pca_dims: int | None, sif_coefficient: float | None):
    """``encoder`` distilled into a static SentenceTransformer (one ``StaticEmbedding`` module):
    each vocabulary token's output vector under the model's pooling, PCA to ``pca_dims``, SIF
    weights (model2vec, Tulkens & van Dongen 2024, §3).

    Args:
        encoder: a transformer bi-encoder, mean- or CLS-pooled.
        pca_dims: dimensions kept by PCA (None: all).
        sif_coefficient: SIF weighting's a (None: none).

    Raises:
        EncodrError: the model is static already, or pools otherwise.
    """
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

    with contextlib.redirect_stderr(io.StringIO()):  # model2vec draws its own tqdm bar; the front end draws the task's
        static = distill_from_model(
            encoder.transformer,
            encoder.tokenizer,
            device=encoder.device,
            pca_dims=pca_dims,
            sif_coefficient=sif_coefficient,
            pooling=pooling,
        )
    module = StaticEmbedding(static.tokenizer, embedding_weights=static.embedding.astype("float32"))
    return SentenceTransformer(modules=[module], device="cpu")


def fast_key(path: Path) -> str:
    """What names a model folder's static model in the cache: its resolved path and its files'
    sizes and modification times (a model saved again over the same folder gets a new one)."""
    h = hashlib.sha256(str(Path(path).resolve()).encode())
    for name in sorted(os.listdir(path)):
        stat = (Path(path) / name).stat()
        h.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def cached_static(home: Path, path: Path) -> Path | None:
    """The static model distilled from the model at ``path`` (:func:`fast_static`), where the cache
    under ``home`` holds it."""
    folder = home / "static" / fast_key(path)
    return folder if (folder / "modules.json").is_file() else None


def fast_static(home: Path, path: Path, encoder: Encoder) -> Path:
    """The static model distilled from ``encoder`` (loaded from ``path``), cached under
    ``home/static/KEY`` (:func:`fast_key`): made once (written to a temporary folder, then renamed
    into place), reused by every index built with the model after.

    Raises:
        EncodrError: as :func:`distil`; OSError: the cache cannot be written.
    """
    folder = home / "static" / fast_key(path)
    if (folder / "modules.json").is_file():
        return folder
    model = distil(encoder, FAST_PCA_DIMS if encoder.dimension > FAST_PCA_DIMS else None, FAST_SIF)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        model.save(str(tmp))
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (folder / "modules.json").is_file():  # another build made it first: its copy serves
            raise
    return folder
