"""Encoder.save and load_encoder are a matched pair: what the encoder needs comes back."""

import numpy as np


def test_save_and_load_round_trip_truncation_backend_and_prompts(tiny_model, tmp_path):
    from sentence_transformers import SentenceTransformer

    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_model), pooling="mean", device="cpu", backend="torch-bf16")
    encoder.st.prompts = {"query": "query: ", "document": "passage: "}
    encoder.truncate(16)
    encoder.save(tmp_path / "saved")

    again = load_encoder(str(tmp_path / "saved"), device="cpu")
    assert (again.truncate_dim, again.dimension, again.backend) == (16, 16, "torch-bf16")
    assert (again.prompt("query"), again.prompt("document")) == ("query: ", "passage: ")
    assert again.spec == encoder.spec  # fingerprint, backend, dimensions, prompts and max length: one record
    np.testing.assert_allclose(again.encode(["a cat sat"]), encoder.encode(["a cat sat"]), atol=1e-6)
    assert SentenceTransformer(str(tmp_path / "saved"), device="cpu").encode(["a cat sat"]).shape == (
        1,
        16,
    )  # the ecosystem loads it too
