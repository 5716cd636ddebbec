"""Retrieval adaptation without labels: (pseudo-query, passage) pairs built from the user's own
documents — the inverse cloze task (Lee et al. 2019), independent cropping (Izacard et al.
2022, Contriever) and titles — trained with InfoNCE over in-batch passages
(sentence-transformers' ``MultipleNegativesRankingLoss``), checkpoints chosen on a label-free
dev set cut from the same documents (:mod:`encodr.evaluation.pseudo`).

- :mod:`.config`: the recipe (``recipes/retrieval.yaml``);
- :mod:`.pairs`: the label-free pairs and the training stream;
- :mod:`.method`: reading the documents, the dev set and ``run``.
"""

from ..base import Method
from .config import RetrievalRecipe
from .method import run

METHOD = Method(
    "retrieval",
    RetrievalRecipe,
    run,
    inputs=("dev", "report"),
    summary="Retrieval: query → passage pairs from your own documents (inverse cloze, crops, titles), InfoNCE",
)
