"""Mirror-BERT (Liu et al. 2021): two views of each string, differing by dropout / DropHead
and a masked token span, pulled together by InfoNCE over in-batch negatives (Eq. 1).

- :mod:`.config`: the recipe (``recipes/word.yaml``, ``phrase.yaml``, ``sentence.yaml``);
- :mod:`.views`: span masking, dropout and DropHead, padding;
- :mod:`.method`: the training stream and ``run``.
"""

from ..base import Method
from .config import MirrorRecipe
from .method import run

METHOD = Method(
    "mirror", MirrorRecipe, run, inputs=("dev",), summary="Mirror-BERT: word, phrase and sentence encoders from identity pairs"
)
