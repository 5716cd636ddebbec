"""Gradient caching for contrastive losses (GradCache, Gao et al. 2021).

A contrastive loss needs every embedding of the batch at once, so the batch size is bounded
by the memory of one forward pass with activations. GradCache removes that bound:

1. embed the batch in chunks of ``mini_batch`` rows *without* autograd, remembering each
   chunk's random state (dropout, DropHead);
2. compute the loss on the detached embeddings and its gradient with respect to them;
3. in the backward pass, re-embed each chunk with autograd under the same random state and
   backpropagate the cached embedding gradient through it.

The parameter gradients equal those of the uncached loss (up to float rounding), at the cost
of a second forward pass, with the activation memory of one chunk.

sentence-transformers' ``CachedMultipleNegativesRankingLoss`` does the same for its MNRL;
this one wraps *any* loss on embeddings (here Mirror-BERT's Eq. 1 with its 2N − 2 negatives
and gathered candidates), replays autocast as well as the random state, and trims each
chunk's padding to its own longest row.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import torch


class _RandomState:
    """The CPU and CUDA generator states at one moment, to replay random ops (dropout)."""

    def __init__(self, device: torch.device):
        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        self.device = device

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        devices = [self.device] if self.cuda is not None else []
        with torch.random.fork_rng(devices=devices, device_type=self.device.type if devices else "cuda"):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state(self.cuda, self.device)
            yield


def chunk_features(features: dict[str, torch.Tensor], size: int) -> list[dict[str, torch.Tensor]]:
    """Split a padded batch into row chunks of at most ``size`` rows, each cut to the
    longest ``attention_mask`` in it.

    Args:
        features: ``input_ids``, ``attention_mask`` (and any other (B, T) tensor), B rows.
        size: rows per chunk (≥ 1).

    Returns:
        ⌈B / size⌉ dicts of (≤ size, T_chunk) tensors, in row order.
    """
    rows = features["input_ids"].shape[0]
    chunks = []
    for start in range(0, rows, size):
        part = {k: v[start : start + size] for k, v in features.items()}
        width = int(part["attention_mask"].sum(dim=1).max())
        chunks.append({k: v[:, :width] if v.dim() == 2 else v for k, v in part.items()})
    return chunks


class CachedLoss:
    """Computes ``loss_fn(embed(features))`` with GradCache (see the module docstring).

    Args:
        embed: ``features chunk → (rows, d) embeddings`` (the model's forward pass).
        loss_fn: ``(B, d) embeddings of the whole batch, in row order → scalar loss``.
        mini_batch: rows per chunk.

    Call with the batch's features (a dict of (B, T) tensors); returns a scalar loss
    tensor whose ``backward()`` fills the parameter gradients. Under autocast, the replay
    runs under the same autocast as the first pass.
    """

    def __init__(self, embed: Callable[[dict], torch.Tensor], loss_fn: Callable[[torch.Tensor], torch.Tensor], mini_batch: int):
        self.embed, self.loss_fn, self.mini_batch = embed, loss_fn, mini_batch

    def __call__(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        chunks = chunk_features(features, self.mini_batch)
        device = features["input_ids"].device
        autocast = self._autocast_state(device)
        states, reps = [], []
        with torch.no_grad():
            for chunk in chunks:
                states.append(_RandomState(device))
                reps.append(self.embed(chunk))
        leaves = [r.detach().requires_grad_() for r in reps]
        with torch.enable_grad():
            loss = self.loss_fn(torch.cat(leaves))
            grads = torch.autograd.grad(loss, leaves)
        out = loss.detach().requires_grad_()
        out.register_hook(lambda grad_output: self._replay(chunks, states, grads, grad_output, autocast))
        return out

    @staticmethod
    def _autocast_state(device: torch.device) -> tuple[str, bool, torch.dtype]:
        kind = device.type if device.type in ("cpu", "cuda") else "cpu"
        return kind, torch.is_autocast_enabled(kind), torch.get_autocast_dtype(kind)

    def _replay(self, chunks, states, grads, grad_output: torch.Tensor, autocast) -> None:
        kind, enabled, dtype = autocast
        for chunk, state, grad in zip(chunks, states, grads):
            with torch.enable_grad(), state.replay(), torch.autocast(kind, dtype=dtype, enabled=enabled):
                emb = self.embed(chunk)
            emb.backward(grad.to(emb.dtype) * grad_output.to(emb.dtype))
