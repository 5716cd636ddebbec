"""Mirror-BERT's InfoNCE over two views (Liu et al. 2021, Eq. 1), with the candidates of all
processes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def gather(tensor: torch.Tensor, with_grad: bool) -> tuple[torch.Tensor, int]:
    """All processes' rows of ``tensor`` (equal shapes), concatenated in rank order, and the
    offset of this process's rows. Without a process group: ``(tensor, 0)``.

    With ``with_grad`` the gradient flows back to every process's rows (sentence-transformers'
    ``all_gather_with_grad``, i.e. ``torch.distributed.nn.all_gather``), as in SimCSE and
    sentence-transformers' ``gather_across_devices``.
    """
    import warnings

    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor, 0
    from sentence_transformers.util import all_gather

    with warnings.catch_warnings():  # torch deprecates the collective the library calls; nothing for a user to do
        warnings.filterwarnings("ignore", message=".*all_gather is deprecated", category=FutureWarning)
        return all_gather(tensor.contiguous(), with_grad=with_grad), dist.get_rank() * tensor.shape[0]


class MirrorInfoNCELoss(nn.Module):
    """Symmetric InfoNCE with temperature τ over in-batch negatives (Mirror-BERT Eq. 1).

    For a batch of N strings with views a_i and b_i, every one of the 2N views is an
    anchor: its positive is the other view of the same string and its negatives are the
    2N − 2 views of the other strings (never itself). With z the L2-normalised views,

        ℓ_i = −log exp(cos(z_i, z_i⁺)/τ) / Σ_{j ≠ i} exp(cos(z_i, z_j)/τ),

    averaged over all 2N anchors. As in SimCSE and Mirror-BERT's released code (NT-Xent),
    the positive is part of the denominator. This differs from sentence-transformers'
    ``MultipleNegativesRankingLoss`` on (x, x) pairs, which scores each a_i against the N
    b views only, in one direction (N − 1 negatives).

    Under several processes the candidates are the views of the *global* batch: each
    process gathers all processes' views (with gradients) and computes ℓ for its own 2n
    anchors, so the negatives grow with the number of processes and the mean over
    processes equals the single-process loss on the global batch.

    Optionally (``false_negative_cos`` > 0, an encodr addition, not part of Eq. 1), two
    strings whose frozen base-model vectors (``guide``) have cosine ≥ the threshold are
    removed from each other's denominators: all four view pairs.

    Args:
        temperature: τ > 0.
        false_negative_cos: threshold in (0, 1] on the guide cosine; 0: off.
    """

    def __init__(self, temperature: float, false_negative_cos: float = 0.0):
        super().__init__()
        self.temperature = float(temperature)
        self.false_negative_cos = float(false_negative_cos)

    def forward(
        self, a: torch.Tensor, b: torch.Tensor, exclude: torch.Tensor | None = None, guide: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Loss of this process's anchors.

        Args:
            a: (n, d) embeddings of this process's first views, any float dtype.
            b: (n, d) second views; row i pairs with ``a[i]``.
            exclude: optional (n, N) bool, N the global batch; ``exclude[i, j]`` drops
                global string j's views from local string i's negatives. Entries on a
                string's own column are ignored (positives are kept).
            guide: optional (n, d') float, unit-norm base-model vectors of this process's
                strings; with ``false_negative_cos`` > 0 they give ``exclude``.

        Returns:
            Scalar float32 tensor: mean loss over the 2n local anchors (nats).
        """
        n = a.shape[0]
        all_a, offset = gather(a, with_grad=True)
        all_b, _ = gather(b, with_grad=True)
        big = all_a.shape[0]
        anchors = F.normalize(torch.cat([a, b]).float(), dim=-1)
        candidates = F.normalize(torch.cat([all_a, all_b]).float(), dim=-1)
        logits = anchors @ candidates.T / self.temperature  # (2n, 2N)
        own = torch.arange(n, device=a.device) + offset  # global index of each local string
        cols = torch.arange(big, device=a.device)
        if exclude is None and guide is not None and self.false_negative_cos > 0:
            all_guide, _ = gather(guide.float(), with_grad=False)
            exclude = guide.float() @ all_guide.T >= self.false_negative_cos
        blocked = cols[None, :] == own[:, None]  # (n, N): the string itself
        if exclude is not None:
            blocked = blocked | exclude.to(device=a.device, dtype=torch.bool)
        mask = blocked.repeat(2, 2)  # (2n, 2N): both views of each blocked string
        rows = torch.arange(2 * n, device=a.device)
        positive = torch.cat([own + big, own])  # a_i → b_i, b_i → a_i
        mask[rows, positive] = False  # the positive stays in the denominator; the anchor itself does not
        return F.cross_entropy(logits.masked_fill(mask, float("-inf")), positive)
