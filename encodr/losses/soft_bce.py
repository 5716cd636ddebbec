"""Soft binary cross-entropy for bi → cross distillation (Trans-Encoder Eq. 2)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


class SoftBCELoss(torch.nn.Module):
    """L_BCE = −1/N Σ_n [y_n log σ(x_n) + (1 − y_n) log(1 − σ(x_n))]  (Liu et al. 2022, Eq. 2).

    The cross-encoder (student) learns the bi-encoder's (teacher's) similarity scores as
    soft labels. BCE rather than MSE keeps a student–teacher discrepancy, so the cycle can
    go on (§2.3, App. A.2: BCE is a sigmoid-sharpened MSE that tolerates numerical gaps).

    Call with:
        logits: float tensor (N,), the cross-encoder's raw scores x_n.
        labels: float tensor (N,), pseudo-labels y_n in [0, 1].

    Returns:
        Scalar float tensor, the mean over the batch (nats).

    Raises:
        ValueError: shapes differ.
    """

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if logits.shape != labels.shape:
            raise ValueError(f"logits {tuple(logits.shape)} and labels {tuple(labels.shape)} differ in shape")
        return F.binary_cross_entropy_with_logits(logits.float(), labels.float())
