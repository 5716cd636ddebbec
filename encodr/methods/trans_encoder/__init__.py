"""Trans-Encoder (Liu et al. 2022): bi- and cross-encoders label unlabelled pairs for each
other in cycles (self-distillation), optionally across several base models (mutual
distillation).

- :mod:`.config`: the recipe (``recipes/cross-encoder.yaml``);
- :mod:`.method`: pairs, labelling, the two training streams and ``run``.
"""

from ..base import Method
from .config import TransEncoderRecipe
from .method import run

METHOD = Method(
    "trans_encoder",
    TransEncoderRecipe,
    run,
    inputs=("dev", "report", "models"),
    summary="Trans-Encoder: unsupervised cross-encoder and bi-encoder by self-distillation",
)
