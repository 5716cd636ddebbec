import time

import pytest

from encodr.errors import EncodrError
from encodr.models import list_models, load_encoder, resolve


def test_offline_hub_id_fails_within_seconds():
    started = time.perf_counter()
    with pytest.raises(EncodrError, match="not in the local Hugging Face cache"):
        resolve("someone/uncached-model")
    assert time.perf_counter() - started < 10


def test_paths_that_are_not_models(tmp_path):
    with pytest.raises(EncodrError, match="does not exist"):
        resolve(str(tmp_path / "missing"))
    with pytest.raises(EncodrError, match="not a model directory"):
        resolve(str(tmp_path))
    f = tmp_path / "file.bin"
    f.write_text("x")
    with pytest.raises(EncodrError, match="is a file"):
        resolve(str(f))


def test_raw_checkpoint_gets_the_requested_pooling(tiny_model):
    assert load_encoder(str(tiny_model), raw_pooling="cls").pooling == "cls"
    assert load_encoder(str(tiny_model), raw_pooling="mean").pooling == "mean"
    enc = load_encoder(str(tiny_model), pooling="mean", max_length=12)
    assert enc.pooling == "mean" and enc.max_length == 12 and enc.dimension == 32
    v = enc.encode(["a", "b c d"])
    assert v.shape == (2, 32)
    assert abs(float((v**2).sum(axis=1)[0]) - 1.0) < 1e-5


def test_models_lists_the_default_alias():
    rows = list_models()
    assert rows[0]["name"] == "minilm" and rows[0]["path"]
