import numpy as np
import torch

from encodr.methods.mirror.views import add_drophead, collate, set_dropout, span_mask

CLS, SEP, MASK = 101, 102, 103
SPECIAL = frozenset({CLS, SEP, 0})


def test_span_mask_masks_k_consecutive_content_tokens():
    ids = [CLS, 10, 11, 12, 13, 14, 15, 16, SEP]
    rng = np.random.default_rng(0)
    for _ in range(50):
        out = span_mask(ids, 5, MASK, SPECIAL, rng)
        masked = [i for i, t in enumerate(out) if t == MASK]
        assert len(masked) == 5
        assert masked == list(range(masked[0], masked[0] + 5))  # consecutive
        assert out[0] == CLS and out[-1] == SEP
        assert len(out) == len(ids)


def test_span_mask_leaves_one_token_visible_and_k0_is_identity():
    rng = np.random.default_rng(0)
    out = span_mask([CLS, 10, 11, SEP], 5, MASK, SPECIAL, rng)
    assert out.count(MASK) == 1
    assert span_mask([CLS, 10, SEP], 2, MASK, SPECIAL, rng) == [CLS, 10, SEP]
    assert span_mask([CLS, 10, 11, 12, SEP], 0, MASK, SPECIAL, rng) == [CLS, 10, 11, 12, SEP]


def test_span_mask_uses_tokenizer_mask_token_not_text(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    ids = tok("the quick brown fox jumps over the lazy dog")["input_ids"]
    out = span_mask(ids, 2, tok.mask_token_id, frozenset(tok.all_special_ids), np.random.default_rng(1))
    assert out.count(tok.mask_token_id) == 2
    assert "[MASK] [MASK]" in tok.decode(out)


def test_collate_pads_and_masks():
    batch = collate([[1, 2, 3], [4]], pad_id=0, with_token_types=True)
    assert batch["input_ids"].tolist() == [[1, 2, 3], [4, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["token_type_ids"].shape == (2, 3)


def test_drophead_zeroes_whole_heads_only_in_training(tiny_model):
    from transformers import BertModel

    model = BertModel.from_pretrained(str(tiny_model))
    set_dropout(model, 0.0)
    ids = torch.tensor([[101, 2000, 2001, 2002, 102]])
    model.eval()
    with torch.no_grad():
        ref = model(input_ids=ids).last_hidden_state
    seen = []
    attn = model.encoder.layer[0].attention.self
    handles = add_drophead(model, 0.5)
    grab = attn.register_forward_hook(lambda m, i, o: seen.append(o[0].detach()))  # runs after DropHead's hook
    with torch.no_grad():
        same = model(input_ids=ids).last_hidden_state  # eval mode: DropHead inactive
        model.train()
        torch.manual_seed(3)
        dropped = model(input_ids=ids.repeat(50, 1)).last_hidden_state
    assert torch.allclose(ref, same)
    assert not torch.allclose(ref.expand_as(dropped), dropped)
    heads = seen[-1].view(50, 5, 4, 8)  # (B, T, H, d_head) after the hook
    zero = heads.abs().sum(dim=3) == 0  # (B, T, H)
    assert (zero.all(dim=1) | ~zero.any(dim=1)).all()  # a head is dropped at every position or none
    assert 0.35 < zero[:, 0, :].float().mean().item() < 0.65  # about p of the heads
    for h in handles:
        h.remove()
    grab.remove()
