"""Padding-free attention (encodr.models.varlen): each text of a packed row attends to its own
tokens only, as it would alone, and a switched model's padded calls are sdpa's."""

import pytest

torch = pytest.importorskip("torch")

from encodr.models.varlen import KWARG, Unpadding, undo_varlen, use_varlen, varlen_attention  # noqa: E402


def test_each_text_of_a_packed_row_gets_the_attention_it_gets_alone():
    torch.manual_seed(0)
    lengths = torch.tensor([3, 1, 5, 2])
    q, k, v = (torch.randn(1, 4, int(lengths.sum()), 8) for _ in range(3))
    out, weights = varlen_attention(None, q, k, v, None, scaling=0.3, **{KWARG: Unpadding.of(lengths, "cpu")})
    assert weights is None and out.shape == (1, int(lengths.sum()), 4, 8)
    start = 0
    for n in lengths.tolist():
        alone = torch.nn.functional.scaled_dot_product_attention(
            q[..., start : start + n, :], k[..., start : start + n, :], v[..., start : start + n, :], scale=0.3
        )
        assert torch.allclose(out[0, start : start + n], alone[0].transpose(0, 1), atol=1e-6)
        start += n
    whole = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3)[0].transpose(0, 1)
    assert not torch.allclose(out[0], whole, atol=1e-3)  # attending across the whole row would differ


def test_a_switched_model_runs_padded_batches_as_sdpa_and_switches_back(tiny_model):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(tiny_model), attn_implementation="sdpa").eval()
    batch = AutoTokenizer.from_pretrained(str(tiny_model))(
        ["a short one", "a much longer text than the first one"], padding=True, return_tensors="pt"
    )
    with torch.inference_mode():
        before = model(**batch).last_hidden_state
        assert use_varlen(model) and model.config._attn_implementation == "encodr_varlen"
        after = model(**batch).last_hidden_state
    assert torch.allclose(before, after, atol=1e-6)
    undo_varlen(model)
    assert model.config._attn_implementation == "sdpa"


def test_a_model_on_another_attention_is_left_as_it_is(tiny_model):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(tiny_model), attn_implementation="eager")
    assert use_varlen(model) is False and model.config._attn_implementation == "eager"
