"""A self-trained re-ranker for a user's own documents: Trans-Encoder cycles (Liu et al. 2022,
§2.2–2.3) on (pseudo-query, passage) pairs mined from the documents — an inverse-cloze query
(Lee et al. 2019, ORQA §5), its passage, and the passages the starting bi-encoder ranks highest
for it (hard negatives). The output ``cross/`` is a CrossEncoder for ``--rerank``.

- :mod:`.config`: the recipe (``recipes/reranker.yaml``);
- :mod:`.method`: mining the pairs and ``run``.
"""

from ..base import Method
from .config import RerankerRecipe
from .method import run

METHOD = Method(
    "reranker",
    RerankerRecipe,
    run,
    inputs=("report",),
    summary="Re-ranker: Trans-Encoder cycles on pseudo-query → passage pairs mined from your documents",
)
