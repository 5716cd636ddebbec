"""Training objectives that encodr implements itself, one per file, because the papers'
formulation differs from what sentence-transformers ships: Mirror-BERT's Eq. 1
(:class:`MirrorInfoNCELoss`, 2N − 2 negatives, gathered across processes), CMLM's bidirectional
additive-margin softmax for bitext retrieval (:class:`AdditiveMarginLoss`) and gradient
caching for any loss on embeddings (:class:`CachedLoss`). Trans-Encoder's Eq. 2 and Eq. 3
are exactly sentence-transformers' ``BinaryCrossEntropyLoss`` (cross-encoder) and
``CosineSimilarityLoss``, which it uses directly."""

from .additive_margin import AdditiveMarginLoss
from .cached import CachedLoss, chunk_features
from .mirror_infonce import MirrorInfoNCELoss, gather

__all__ = ["AdditiveMarginLoss", "CachedLoss", "MirrorInfoNCELoss", "chunk_features", "gather"]
