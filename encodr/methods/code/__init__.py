"""The code recipe: a repository's own documented functions teach the model its code. Each
documented function, method or class is a (documentation, code without it) pair, as
CodeSearchNet builds them (Husain et al. 2019), trained with InfoNCE over in-batch code and one
hard negative mined from the same repository (sentence-transformers'
``MultipleNegativesRankingLoss``); a dev fold of the documented definitions, hashed by
qualified name, chooses the checkpoint, and the starting model is a candidate.

- :mod:`.config`: the recipe (``recipes/code.yaml``);
- :mod:`.pairs`: the pairs, the dev fold, the mined negatives and the training stream;
- :mod:`.method`: ``run``.
"""

from ..base import Method
from .config import CodeRecipe
from .method import run
from .pairs import preflight

METHOD = Method(
    "code",
    CodeRecipe,
    run,
    inputs=("report", "no_dev"),
    preflight=preflight,
    summary="Code: a repository's documented functions as (documentation → code) pairs, InfoNCE, dev fold of its own",
)
