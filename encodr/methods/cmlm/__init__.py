"""CMLM (Yang et al. 2021): conditional masked language modelling on adjacent sentences —
s1's sentence vector, projected into N vectors, is placed before s2's token embeddings and the
model fills in s2's masked tokens — co-trained with bitext retrieval (bidirectional
additive-margin softmax over in-batch translations), for language-agnostic sentence vectors.

- :mod:`.config`: the recipe (``recipes/multilingual.yaml``);
- :mod:`.head`: the projection MLP and the MLM head, used in training only;
- :mod:`.method`: the two streams and ``run``.
"""

from ..base import Method
from .config import CMLMRecipe
from .method import run

METHOD = Method(
    "cmlm", CMLMRecipe, run, inputs=("dev", "bitext"), summary="CMLM + bitext retrieval: language-agnostic sentence encoders"
)
