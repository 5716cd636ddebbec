"""Learning from relevance judgments (the ``judged`` recipe): a person's or an agent's grades of
search hits (:mod:`encodr.index.judgments`), or a BEIR folder's train qrels, teach the
bi-encoder, the hybrid fusion weight and a re-ranker; each is kept only when it beats what it
replaces on the judged queries of the dev fold, which training never sees.

- :mod:`.config`: the recipe (``recipes/judged.yaml``);
- :mod:`.data`: the judgments as train and dev folds over a corpus;
- :mod:`.method`: the bi-encoder (MNRL with mined hard negatives), the cross-encoder and the
  seeded distillation loop (AugSBERT / Trans-Encoder with MarginMSE), the fusion weight and
  the re-ranker's depth and weight chosen on dev, and ``run``.
"""

from ..base import Method
from .config import JudgedRecipe
from .data import check_source
from .method import run

METHOD = Method(
    "judged",
    JudgedRecipe,
    run,
    inputs=("index", "no_dev"),
    preflight=lambda recipe, job: check_source(job.index, job.data),
    summary="Judged: learn from relevance judgments (the index's or a BEIR folder's): bi-encoder, fusion weight, "
    "re-ranker, each kept only if dev improves",
)
