"""Static embedding models by distillation (model2vec; Tulkens & van Dongen 2024): every token
of a transformer's vocabulary is passed through it once, alone, and its output vector, reduced by
PCA and weighted by its rarity (SIF), becomes that token's row of a table; a text's vector is the
mean of its tokens' rows. No attention at inference, so it encodes on a CPU tens to hundreds of
times faster than the transformer it came from, at a cost in quality (``bench/static.py``).

- :mod:`.config`: the recipe (``recipes/static.yaml``);
- :mod:`.method`: ``run``: distil ``--model`` (any bi-encoder encodr loads, a tuned one too) and
  save it as a sentence-transformers ``StaticEmbedding`` model.
"""

from ..base import Method
from .config import StaticRecipe
from .method import preflight, run

METHOD = Method(
    "static",
    StaticRecipe,
    run,
    inputs=(),
    preflight=preflight,
    summary="A static embedding model distilled from a bi-encoder (model2vec): a table of token vectors, no attention",
)
