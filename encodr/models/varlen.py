"""Padding-free attention for packed rows on a CPU, through transformers' attention interface.

A batch of B texts packed end to end into one row of T real tokens runs the transformer's
linear layers (projections, feed-forward, layer norms: nearly all of a short text's cost) on
those T tokens alone. Attention must still keep each text to its own tokens. Flash attention's
varlen kernels (``cu_seq_lens``), which text-embeddings-inference uses, do that on a GPU;
PyTorch's CPU ``scaled_dot_product_attention`` has no such kernel, and a block-diagonal mask
over the packed row would compute all T² pairs. :func:`varlen_attention` instead scatters the
row's queries, keys and values into a (B, heads, L, head_dim) batch padded to the longest text
L, runs SDPA with a key-padding mask there, and gathers the real tokens back: attention costs
what the padded batch's does (B·L² pairs), the linear layers only the real tokens.

It is registered with transformers' ``AttentionInterface`` under :data:`ATTENTION`; a model
switched to it (:func:`use_varlen`) runs a forward call without :class:`Unpadding` exactly as
``sdpa`` (same attention function, same mask).
"""

from __future__ import annotations

from dataclasses import dataclass

ATTENTION = "encodr_varlen"  # the name registered with transformers' AttentionInterface and AttentionMaskInterface
KWARG = "encodr_unpad"  # the forward keyword that carries an Unpadding to every attention layer


@dataclass(frozen=True)
class Unpadding:
    """Where each token of a packed row goes in the padded batch.

    Attributes:
        index: int64 (T,): the flat position (``text · longest + offset``) of each of the
            row's T tokens in a (B·L) padded layout.
        keys: bool (B, 1, 1, L): True where a padded position holds a real token (SDPA's
            boolean ``attn_mask``: True attends).
        texts: B.
        longest: L, the longest text's tokens.
    """

    index: object
    keys: object
    texts: int
    longest: int

    @classmethod
    def of(cls, lengths, device) -> "Unpadding":
        """The unpadding of texts of ``lengths`` (int64 tensor (B,), each ≥ 1) laid end to end
        in that order, on ``device``."""
        import torch

        texts, longest = len(lengths), int(lengths.max())
        real = torch.arange(longest)[None] < lengths[:, None]  # (B, L)
        index = (torch.arange(texts)[:, None] * longest + torch.arange(longest)[None])[real]
        return cls(index.to(device), real[:, None, None, :].to(device), texts, longest)


def varlen_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling: float | None = None, **kwargs):
    """Scaled dot-product attention (Vaswani et al. 2017, eq. 1) of a packed row, each text
    attending to its own tokens only.

    Args:
        module: the attention layer (passed on to sdpa's function when there is no unpadding).
        query, key, value: float (1, heads, T, head_dim): the packed row's T tokens.
        attention_mask: ignored for a packed row (None there); else as for ``sdpa``.
        dropout: attention dropout (0 at inference).
        scaling: the product's scale (1/√head_dim when None).
        **kwargs: :data:`KWARG` an :class:`Unpadding` of the row; without it the call is
            transformers' ``sdpa_attention_forward`` with these arguments.

    Returns:
        (output, None): float (1, T, heads, head_dim), the layout transformers' attention
        functions return.
    """
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    unpad: Unpadding | None = kwargs.pop(KWARG, None)
    if unpad is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    heads, _, width = query.shape[1:]
    shape = (unpad.texts, unpad.longest, heads, width)

    def padded(x):  # (1, heads, T, width) → (B, heads, L, width), zeros where a text has no token
        out = x.new_zeros(unpad.texts * unpad.longest, heads, width)
        out[unpad.index] = x[0].transpose(0, 1)
        return out.view(shape).transpose(1, 2)

    out = torch.nn.functional.scaled_dot_product_attention(
        padded(query), padded(key), padded(value), attn_mask=unpad.keys, dropout_p=dropout, scale=scaling
    )
    return out.transpose(1, 2).reshape(-1, heads, width)[unpad.index][None], None


def use_varlen(model) -> bool:
    """Switch transformers ``model`` from ``sdpa`` attention to :func:`varlen_attention`
    (registering it once); True when done. A model on another attention implementation is left
    as it is (False): its unpadded calls would not match its padded ones."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    current = getattr(model.config, "_attn_implementation", None)
    if current == ATTENTION:
        return True
    if current != "sdpa":
        return False
    AttentionInterface.register(ATTENTION, varlen_attention)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)  # padded calls get sdpa's mask, as before the switch
    model.set_attn_implementation(ATTENTION)
    return True


def undo_varlen(model) -> None:
    """Put ``model`` back on ``sdpa`` attention if :func:`use_varlen` switched it."""
    if getattr(model.config, "_attn_implementation", None) == ATTENTION:
        model.set_attn_implementation("sdpa")
