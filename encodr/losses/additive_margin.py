"""Bidirectional additive-margin softmax for bitext retrieval (CMLM §4.2, after Yang et al.
2019b), with the candidates of all processes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .mirror_infonce import gather


class AdditiveMarginLoss(nn.Module):
    """L_br = L_br^s + L_br^t: each source sentence must find its translation among the batch's
    targets, and each target its source, with the true pair's score lowered by a margin m:

        L_br^s = −1/B Σ_i log( e^{s(φ(s_i,t_i) − m)} / (e^{s(φ(s_i,t_i) − m)} + Σ_{j≠i} e^{s·φ(s_i,t_j)}) )

    and L_br^t the same with sources and targets swapped (CMLM §4.2; the paper prints the
    fraction without its log, which it must have for a loss).

    How this differs from the paper: φ is the cosine of the two (unit) vectors times a scale
    s (20 by default, sentence-transformers' ``MultipleNegativesRankingLoss`` default), because
    encodr's sentence vectors are L2-normalised and a softmax over raw cosines in [−1, 1] is
    nearly flat; the paper's φ is the raw inner product. sentence-transformers'
    ``MultipleNegativesSymmetricRankingLoss`` is the same without the margin, and averages the
    two directions instead of adding them.

    Under several processes the candidates are the global batch (gathered with gradients);
    each process scores its own rows. B is the global batch.

    Args:
        margin: m ≥ 0, subtracted from the scaled positive's cosine before scaling (0.3 in the paper).
        scale: s > 0.
    """

    def __init__(self, margin: float = 0.3, scale: float = 20.0):
        super().__init__()
        self.margin, self.scale = float(margin), float(scale)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Loss of this process's pairs.

        Args:
            source: (n, d) embeddings of this process's source sentences.
            target: (n, d) embeddings of their translations, row i with row i.

        Returns:
            Scalar float32 tensor: L_br^s + L_br^t, each a mean over the n local rows (nats).
        """
        n = source.shape[0]
        all_source, offset = gather(source, with_grad=True)
        all_target, _ = gather(target, with_grad=True)
        s, t = F.normalize(source.float(), dim=-1), F.normalize(target.float(), dim=-1)
        all_s, all_t = F.normalize(all_source.float(), dim=-1), F.normalize(all_target.float(), dim=-1)
        positive = torch.arange(n, device=source.device) + offset
        rows = torch.arange(n, device=source.device)
        loss = 0.0
        for anchors, candidates in ((s, all_t), (t, all_s)):
            cosine = anchors @ candidates.T
            cosine = cosine.index_put((rows, positive), cosine[rows, positive] - self.margin)
            loss = loss + F.cross_entropy(self.scale * cosine, positive)
        return loss
