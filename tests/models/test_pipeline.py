"""The GPU encoding pipeline (encodr.models.pipeline), run on the CPU: its tokenizer gives the
model's own token ids, its batches keep to the token budget and cover every text once, and its
vectors equal Encoder.encode's."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from encodr.models.pipeline import CHUNK_TEXTS, TokenizerPool, encode_pipelined, token_batches, tokenizer_workers  # noqa: E402

TEXTS = ["", "a", "Ünïcödé wörds, with punctuation!", "a much longer text " * 40, "tab\tseparated\nand new lines", "short one"]


@pytest.fixture(scope="module")
def encoder(tiny_model):
    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_model), pooling="mean", device="cpu")
    encoder.max_length = 64
    return encoder


def texts(n: int) -> list[str]:
    return [TEXTS[i % len(TEXTS)] + f" number {i}" * (i % 7) for i in range(n)]


def test_token_batches_cover_every_text_once_longest_first_within_the_budget():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 300, size=1000)
    batches = token_batches(lengths, budget=4096, most=64)
    together = np.concatenate(batches)
    assert sorted(together.tolist()) == list(range(1000))
    assert all(len(b) * lengths[b].max() <= 4096 and len(b) <= 64 for b in batches)
    assert all(np.all(np.diff(lengths[b]) <= 0) for b in batches)  # longest first within a batch
    assert lengths[batches[0][0]] == lengths.max()
    assert token_batches(np.array([5000]), budget=4096)[0].tolist() == [0]  # a text over the budget still gets a batch


def test_a_batch_stops_at_a_narrower_band_of_lengths_once_a_quarter_full():
    lengths = np.array([100] * 20 + [10] * 200)
    first = token_batches(lengths, budget=8000)[0]
    assert set(lengths[first].tolist()) == {
        100
    }  # 20 texts of 100 tokens fill a quarter: the 10-token texts start a batch of their own


@pytest.mark.parametrize("workers", [0, 1])
def test_the_pool_gives_the_models_own_token_ids(encoder, workers):
    pool = TokenizerPool(encoder.st.tokenizer, encoder.max_length, workers=workers)
    batch = texts(2 * CHUNK_TEXTS + 7)  # enough for the worker processes
    try:
        got = {}
        for prepared in pool.batches(batch, budget=2048):
            features = prepared.on("cpu")
            assert set(features) == set(encoder.st.tokenizer.model_input_names)
            for row, ids, mask in zip(prepared.rows, features["input_ids"], features["attention_mask"]):
                got[int(row)] = ids[mask.bool()].tolist()
            assert prepared.tokens == int(features["attention_mask"].sum())
    finally:
        pool.close()
    expected = encoder.st.tokenizer(batch, truncation=True, max_length=encoder.max_length)["input_ids"]
    assert [got[i] for i in range(len(batch))] == expected


def test_pipelined_vectors_equal_encoder_encode(encoder):
    batch = texts(50)
    expected = encoder.encode(batch)
    out = np.full_like(expected, np.nan)
    finished, stats = [], {}
    encode_pipelined(
        encoder.forward,
        TokenizerPool(encoder.st.tokenizer, encoder.max_length, workers=0),
        batch,
        out,
        finished.append,
        budget=512,
        stats=stats,
    )
    assert np.abs(out - expected).max() < 1e-5
    assert sum(finished) == 50 and stats["batches"] == len(finished) > 1
    assert stats["tokens"] <= stats["padded"]


def test_float16_is_decided_on_a_gpu_only(encoder):
    features = TokenizerPool(encoder.st.tokenizer, encoder.max_length, workers=0)
    prepared = next(features.batches(["one text", "and another"]))
    with encoder.forward.on_device_mode():
        vectors = encoder.forward.on_device(prepared.on("cpu"))
    assert vectors.dtype == torch.float32 and encoder.forward.half is False  # a CPU keeps float32
    assert torch.allclose(vectors.norm(dim=-1), torch.ones(2), atol=1e-5)


def test_an_encoder_uses_the_pipeline_only_on_a_gpu(encoder):
    assert encoder._gpu_pool() is None  # a CPU: Encoder.encode's own loop (packing where it pays)
    assert tokenizer_workers(16) == 15 and tokenizer_workers(1) == 1
