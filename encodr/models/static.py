"""Training a static embedding model (sentence-transformers' ``StaticEmbedding``; model2vec's
potion models) with the recipes written for transformers: :class:`PaddedStatic` takes the padded
token batches the recipes build and gives the static model the token ids and offsets it reads."""

from __future__ import annotations

import torch


class PaddedStatic(torch.nn.Module):
    """A static SentenceTransformer behind the interface of a transformer one: called with a
    padded batch — ``input_ids`` and ``attention_mask``, int64 (B, T) — it drops the padding
    (the attention mask's zeros and every pad token: a span masked with it is deleted) and the
    special tokens, which ``StaticEmbedding.preprocess`` never adds, lays each row's
    tokens end to end with its offset, and returns ``{"sentence_embedding": (B, d)}``: the mean
    of each row's token vectors (through the model's own modules, a ``Normalize`` included).
    Its parameters are the model's, so training it trains the model, and the trainer's
    snapshots of its state restore the model."""

    def __init__(self, st, dropped: list[int]):
        """``dropped``: the token ids left out of every row besides its padding (the pad token's,
        which masks a span, and the special tokens': :attr:`encodr.models.Encoder.tokenizer`'s)."""
        super().__init__()
        self.st = st
        self.special = torch.tensor(sorted(set(dropped)), dtype=torch.long)

    def forward(self, features: dict) -> dict:
        """``{"sentence_embedding": float32 (B, d)}`` of a padded batch (see the class docstring)."""
        ids, mask = features["input_ids"], features["attention_mask"].bool()
        if len(self.special):
            mask = mask & ~torch.isin(ids, self.special.to(ids.device))
        lengths = mask.sum(dim=1)
        offsets = torch.cumsum(lengths, 0) - lengths
        return self.st({"input_ids": ids[mask], "offsets": offsets})
