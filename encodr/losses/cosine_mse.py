"""Mean squared error on cosine similarity for cross → bi distillation (Trans-Encoder Eq. 3)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


class CosineMSELoss(torch.nn.Module):
    """L_MSE = 1/N Σ_n (cos(u_n, v_n) − y_n)²  (Liu et al. 2022, Eq. 3; the paper's printed
    minus sign is a typo: the loss is minimised).

    The bi-encoder (student) regresses the cross-encoder's (teacher's) sigmoid scores with
    the cosine of its two separately encoded sentences.

    Call with:
        u, v: float tensors (N, d), embeddings of the first and second sentences
            (normalised here, so any scale works).
        labels: float tensor (N,), pseudo-labels y_n in [0, 1].

    Returns:
        Scalar float tensor.

    Raises:
        ValueError: shapes do not match.
    """

    def forward(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if u.shape != v.shape or u.shape[0] != labels.shape[0]:
            raise ValueError(f"u {tuple(u.shape)}, v {tuple(v.shape)} and labels {tuple(labels.shape)} do not match")
        cosine = F.cosine_similarity(u.float(), v.float(), dim=-1)
        return F.mse_loss(cosine, labels.float())
