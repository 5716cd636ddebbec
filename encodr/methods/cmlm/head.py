"""The training-only parts of CMLM: the projection of s1's vector and the MLM head over s2."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

# the MLM head's transform and output bias under BERT / RoBERTa (XLM-R) names in a checkpoint
TRANSFORM_KEYS = {
    "bert": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias"),
    "roberta": ("lm_head.dense", "lm_head.layer_norm", "lm_head.bias"),
}


class CMLMHead(nn.Module):
    """Projection P and masked-LM head (CMLM §2, appendix C).

    P is the paper's three-layer MLP, FC(h, 2h, ReLU), FC(2h, 2h, ReLU), FC(2h, ·): the paper
    does not say how an MLP yields N vectors, so here its last layer outputs (N − 1)·h values,
    read as N − 1 vectors of size h, and s1's own vector is the N-th ("one of the projections
    being the identity mapping"). The MLM head is BERT's: a transform (dense, GELU,
    LayerNorm) and a decoder tied to the encoder's word embeddings, plus an output bias.

    Args:
        hidden: h, the encoder's hidden size.
        projections: N ≥ 1.
        word_embeddings: the encoder's input embedding (V, h); tied, not copied, and not a
            parameter of this module (it belongs to the encoder).
        layer_norm_eps: ε of the transform's LayerNorm.
    """

    def __init__(self, hidden: int, projections: int, word_embeddings: nn.Embedding, layer_norm_eps: float = 1e-12):
        super().__init__()
        self.hidden, self.projections = hidden, projections
        self.projection = (
            nn.Sequential(
                nn.Linear(hidden, 2 * hidden),
                nn.ReLU(),
                nn.Linear(2 * hidden, 2 * hidden),
                nn.ReLU(),
                nn.Linear(2 * hidden, (projections - 1) * hidden),
            )
            if projections > 1
            else None
        )
        self.dense = nn.Linear(hidden, hidden)
        self.layer_norm = nn.LayerNorm(hidden, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(word_embeddings.num_embeddings))
        object.__setattr__(self, "_word_embeddings", word_embeddings)  # tied: a reference, not a submodule
        self.from_checkpoint = False

    def condition(self, vectors: torch.Tensor) -> torch.Tensor:
        """s1's vectors (B, h) → the N conditioning vectors (B, N, h): s1's own first."""
        if self.projection is None:
            return vectors[:, None, :]
        projected = self.projection(vectors).view(vectors.shape[0], self.projections - 1, self.hidden)
        return torch.cat([vectors[:, None, :], projected], dim=1)

    def logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """Hidden states (M, h) of masked positions → vocabulary logits (M, V)."""
        x = self.layer_norm(nn.functional.gelu(self.dense(hidden_states)))
        return x @ self._word_embeddings.weight.T + self.bias

    def load_transform(self, checkpoint: Path) -> bool:
        """Take the MLM transform and bias from ``checkpoint`` (a folder with
        ``model.safetensors``) when it has a BERT or RoBERTa MLM head; returns whether it did.
        Otherwise the head keeps its fresh initialisation."""
        path = Path(checkpoint) / "model.safetensors"
        if not path.is_file():
            return False
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            keys = set(f.keys())
            for dense, norm, bias in TRANSFORM_KEYS.values():
                if f"{dense}.weight" in keys and f"{norm}.weight" in keys and bias in keys:
                    with torch.no_grad():
                        self.dense.weight.copy_(f.get_tensor(f"{dense}.weight"))
                        self.dense.bias.copy_(f.get_tensor(f"{dense}.bias"))
                        self.layer_norm.weight.copy_(f.get_tensor(f"{norm}.weight"))
                        self.layer_norm.bias.copy_(f.get_tensor(f"{norm}.bias"))
                        self.bias.copy_(f.get_tensor(bias)[: self.bias.numel()])
                    self.from_checkpoint = True
                    return True
        return False
