"""Mirror-BERT augmentations (§2): input-space random span masking and feature-space
dropout / drophead.

Data flow: strings → token ids (lists of int, :func:`tokenize`) → two views per string →
a padded batch of 2N rows (:func:`collate`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from ...errors import EncodrError


def tokenize(tokenizer, strings: Sequence[str], max_length: int) -> tuple[list[list[int]], int]:
    """Token ids with special tokens, truncated to ``max_length`` (last special token kept).

    Returns:
        (one id list per string, number of strings that were truncated).
    """
    ids = tokenizer(list(strings), add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    truncated = 0
    for i, seq in enumerate(ids):
        if len(seq) > max_length:
            ids[i] = seq[: max_length - 1] + seq[-1:]
            truncated += 1
    return ids, truncated


def span_mask(ids: Sequence[int], k: int, mask_id: int, special_ids: frozenset[int], rng: np.random.Generator) -> list[int]:
    """Replace k consecutive content tokens with the mask token (Mirror-BERT §2, Fig. 2).

    Works on token ids, so it is tokenizer-agnostic (BERT's ``[MASK]``, RoBERTa's
    ``<mask>``) and never cuts inside a character sequence by hand. Special tokens
    ([CLS], [SEP], <s>, </s>) are never masked, and at least one content token is left
    visible: a string of n content tokens gets ``min(k, n - 1)`` masked tokens.

    Args:
        ids: token ids of one sequence, special tokens included.
        k: span length in tokens (0: no masking).
        mask_id: the tokenizer's mask token id.
        special_ids: ids of special tokens.
        rng: NumPy generator choosing the span start (uniform over valid starts).

    Returns:
        A new list of the same length.
    """
    out = list(ids)
    content = [i for i, t in enumerate(out) if t not in special_ids]
    span = min(k, len(content) - 1)
    if span <= 0:
        return out
    start = int(rng.integers(0, len(content) - span + 1))
    for pos in content[start : start + span]:
        out[pos] = mask_id
    return out


def collate(sequences: Sequence[Sequence[int]], pad_id: int, with_token_types: bool) -> dict[str, torch.Tensor]:
    """Pad token-id lists into a batch.

    Args:
        sequences: B lists of token ids.
        pad_id: the tokenizer's pad token id.
        with_token_types: add ``token_type_ids`` (all zeros), for BERT-style models.

    Returns:
        ``input_ids`` and ``attention_mask`` (int64, shape (B, T) with T the longest
        sequence), and ``token_type_ids`` when asked.
    """
    longest = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), longest), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    batch = {"input_ids": ids, "attention_mask": mask}
    if with_token_types:
        batch["token_type_ids"] = torch.zeros_like(ids)
    return batch


def set_dropout(model: nn.Module, p: float) -> None:
    """Set the probability of every ``nn.Dropout`` in ``model`` (hidden and attention)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = p


def _self_attention_modules(model: nn.Module) -> list[nn.Module]:
    """Self-attention blocks whose first output is the concatenation of head outputs,
    (B, T, H·d_head), before the output projection (BERT, RoBERTa, XLM-R, MiniLM…)."""
    found = []
    for module in model.modules():
        if (
            type(module).__name__.endswith("SelfAttention")
            and hasattr(module, "num_attention_heads")
            and hasattr(module, "attention_head_size")
            and not hasattr(module, "o")  # MPNet projects inside the block: heads already mixed
        ):
            found.append(module)
    return found


def add_drophead(model: nn.Module, p: float) -> list:
    """DropHead (Zhou et al. 2020; Mirror-BERT Table 7): in training mode, zero each
    attention head's output for each example with probability p and rescale the kept
    heads by 1/(1−p). Inactive in eval mode.

    Args:
        model: a Hugging Face transformer.
        p: drop probability in [0, 1).

    Returns:
        Hook handles; call ``.remove()`` on each to switch DropHead off.

    Raises:
        EncodrError: the architecture exposes no per-head attention output.
    """
    modules = _self_attention_modules(model)
    if not modules:
        raise EncodrError(f"drophead is not supported for {type(model).__name__}; set drophead: 0 and use dropout")

    def hook(module, inputs, output):
        if not module.training:
            return output
        context = output[0] if isinstance(output, tuple) else output
        b, t, width = context.shape
        heads = module.num_attention_heads
        keep = (torch.rand(b, 1, heads, 1, device=context.device) >= p).to(context.dtype) / (1.0 - p)
        context = (context.view(b, t, heads, width // heads) * keep).view(b, t, width)
        return (context, *output[1:]) if isinstance(output, tuple) else context

    return [m.register_forward_hook(hook) for m in modules]
