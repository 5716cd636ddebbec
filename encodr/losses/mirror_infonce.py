"""Mirror-BERT's InfoNCE over two views (Liu et al. 2021, Eq. 1)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MirrorInfoNCELoss(nn.Module):
    """Symmetric InfoNCE with temperature τ over in-batch negatives (Mirror-BERT Eq. 1).

    For a batch of N strings with views a_i and b_i, every one of the 2N views is an
    anchor: its positive is the other view of the same string and its negatives are the
    2N − 2 views of the other strings (never itself). With z the L2-normalised views,

        ℓ_i = −log exp(cos(z_i, z_i⁺)/τ) / Σ_{j ≠ i} exp(cos(z_i, z_j)/τ),

    averaged over all 2N anchors. As in SimCSE and Mirror-BERT's released code
    (NT-Xent), the positive is part of the denominator.

    Optionally, pairs of strings flagged as likely false negatives (``exclude``, e.g.
    near-synonyms under the frozen base model; see ``Recipe.false_negative_cos``) are
    removed from each other's denominators: all four view pairs (a_i, a_j), (a_i, b_j),
    (b_i, a_j), (b_i, b_j) are masked. This is an encodr addition, not part of Eq. 1.

    Args:
        temperature: τ > 0.
    """

    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = float(temperature)

    def forward(self, a: torch.Tensor, b: torch.Tensor, exclude: torch.Tensor | None = None) -> torch.Tensor:
        """Loss for one batch.

        Args:
            a: (N, d) embeddings of the first views, any float dtype.
            b: (N, d) embeddings of the second views, row i pairs with ``a[i]``.
            exclude: optional (N, N) bool; ``exclude[i, j]`` (i ≠ j) drops string j's views
                from string i's negatives. The diagonal is ignored (positives are kept).

        Returns:
            Scalar float32 tensor: mean loss over the 2N anchors (nats).
        """
        n = a.shape[0]
        z = F.normalize(torch.cat([a, b]).float(), dim=-1)
        logits = z @ z.T / self.temperature
        self_mask = torch.eye(2 * n, dtype=torch.bool, device=z.device)
        if exclude is not None:
            off_diagonal = exclude.to(device=z.device, dtype=torch.bool) & ~torch.eye(n, dtype=torch.bool, device=z.device)
            self_mask = self_mask | off_diagonal.repeat(2, 2)
        logits = logits.masked_fill(self_mask, float("-inf"))
        idx = torch.arange(n, device=z.device)
        targets = torch.cat([idx + n, idx])
        return F.cross_entropy(logits, targets)
