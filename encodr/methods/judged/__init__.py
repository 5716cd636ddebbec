"""Learning from relevance judgments (the ``judged`` recipe): a person's or an agent's grades of
search hits (:mod:`encodr.index.judgments`), or a BEIR folder's train qrels, teach the
bi-encoder, the hybrid fusion weight, a query adapter and, when asked, a re-ranker; each is kept
only when it beats what it replaces in k-fold cross-validation over the judged queries, and the
final model learns from all of them.

- :mod:`.config`: the recipe (``recipes/judged.yaml``);
- :mod:`.data`: the judgments over a corpus, as a BEIR folder;
- :mod:`.crossval`: the folds, the held-out scores and the nested choice of a grid's setting;
- :mod:`.method`: the bi-encoder (MNRL with mined hard negatives), the cross-encoder and the
  seeded distillation loop (AugSBERT / Trans-Encoder with MarginMSE), the keep decisions, the
  final training, and ``run``;
- :mod:`.adapter`: the query adapter: its training pairs, its fit and its held-out scores.
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
    "query adapter, re-ranker, each kept only if cross-validation says it helps",
)
