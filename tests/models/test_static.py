"""Static embedding models (sentence-transformers' ``StaticEmbedding``, model2vec's potion
models) through every command: encode, index and search, serve, evaluate, tune with a
transformer's recipe, and the ``static`` recipe that distils one from a transformer."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from tests.conftest import run_cli, run_tune

TEXTS = [
    "the cat sat on the mat",
    "a dog barked at the mailman",
    "stock prices fell sharply today",
    "the kitten slept on the rug",
    "rain is expected tomorrow",
    "the market rallied after the news",
]


@pytest.fixture(scope="session")
def tiny_static(tmp_path_factory):
    """A static model: MiniLM's WordPiece vocabulary, 16-dimensional random token vectors."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer

    from encodr.models import resolve

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("static") / "static"
    tokenizer = Tokenizer.from_file(str(resolve("minilm").path / "tokenizer.json"))
    SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_dim=16)]).save(str(path))
    return path


def test_a_static_model_encodes_as_sentence_transformers_does(tiny_static):
    from sentence_transformers import SentenceTransformer

    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_static), device="cpu")
    assert encoder.static and encoder.pooling == "static" and encoder.backend == "torch" and encoder.max_length == 256
    expected = SentenceTransformer(str(tiny_static), device="cpu").encode(TEXTS, normalize_embeddings=True)
    assert np.allclose(encoder.encode(TEXTS), expected, atol=1e-5)
    assert np.allclose(encoder.encode([""]), 0)  # no tokens: a zero vector, where sentence-transformers gives NaN
    encoder.max_length = 3  # a window cuts the token list
    assert np.allclose(encoder.encode([TEXTS[0]]), encoder.encode(["the cat sat"]))


def test_auto_on_an_onnx_cpu_loads_a_static_model_once(tiny_static, tmp_path, capsys, monkeypatch):
    loading = importlib.import_module("encodr.models.loading")
    loads = []
    real = loading._sentence_transformer
    monkeypatch.setattr(loading, "_sentence_transformer", lambda *a: loads.append(a) or real(*a))
    monkeypatch.setattr(importlib.import_module("encodr.index.build"), "choose_backend", lambda backend, device: "onnx")
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    code, out, err = run_cli(
        ["index", str(corpus), "--model", str(tiny_static), "--out", str(tmp_path / "idx"), "--lang", "eng", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0 and json.loads(out)["backend"] == "torch", err
    assert not loads  # a static model is opened from its table: no SentenceTransformer is loaded


def test_a_static_model_indexes_searches_and_evaluates(tiny_static, tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    monkeypatch.setattr(
        importlib.import_module("encodr.index.build"), "choose_backend", lambda backend, device: "onnx"
    )  # auto on a CPU where it means onnx
    code, out, err = run_cli(
        ["index", str(corpus), "--model", str(tiny_static), "--out", str(tmp_path / "idx"), "--lang", "eng", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0 and "warning" not in err, err  # a static model runs in torch: auto takes it without a word
    assert json.loads(out)["pooling"] == "static" and json.loads(out)["backend"] == "torch"
    code, out, err = run_cli(
        ["search", "the kitten slept on the rug", "--index", str(tmp_path / "idx"), "--mode", "dense", "-k", "1", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert json.loads(out)["results"][0]["hits"][0]["text"] == "the kitten slept on the rug"
    code, out, err = run_cli(["eval", "sts", "--model", str(tiny_static), "--limit", "50", "--json"], capsys, monkeypatch)
    assert code == 0 and "Traceback" not in err


def test_a_static_model_is_served(tiny_static):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient
    from sentence_transformers import SentenceTransformer

    from encodr.serve import Limits, create_app, load

    served = load([str(tiny_static)], [], Limits(max_texts=8, max_chars=200))
    try:
        got = TestClient(create_app(served)).post("/v1/embeddings", json={"model": str(tiny_static), "input": TEXTS[:3]}).json()
    finally:
        served.close()
    expected = SentenceTransformer(str(tiny_static), device="cpu").encode(TEXTS[:3], normalize_embeddings=True)
    assert np.allclose(np.array([d["embedding"] for d in got["data"]]), expected, atol=1e-5)


def test_a_static_model_tunes_with_mirror_bert_and_saves_a_static_model(tiny_static, tmp_path):
    """The sentence recipe trains the token table (span masking deletes a span; no dropout) and
    saves a model that still loads as a static one."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    from encodr.data.text import top_words
    from encodr.methods import load_recipe

    data = tmp_path / "s.txt"
    words = top_words(400)
    data.write_text("\n".join(" ".join(words[i : i + 6]) for i in range(0, 384, 6)) + "\n")
    warnings = []
    summary = run_tune(
        str(data),
        load_recipe("sentence", {"batch_size": 16, "epochs": 1, "lr": 0.05, "span_mask": 2}),
        str(tiny_static),
        tmp_path / "out",
        warn=warnings.append,
    )
    assert summary["pooling"] == "static" and summary["steps"] == 4 and any("static model" in w for w in warnings)
    tuned = SentenceTransformer(str(tmp_path / "out"), device="cpu")
    before = SentenceTransformer(str(tiny_static), device="cpu")
    assert isinstance(tuned[0], StaticEmbedding)
    assert not np.allclose(tuned[0].embedding.weight.detach().numpy(), before[0].embedding.weight.detach().numpy())


def test_the_static_recipe_distils_a_transformer(tiny_model, tmp_path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    from encodr.methods import load_recipe
    from encodr.models import load_encoder

    summary = run_tune(None, load_recipe("static", {"pca_dims": 8, "pooling": "mean"}), str(tiny_model), tmp_path / "out")
    assert summary["dimension"] == 8 and summary["vocabulary"] > 1000
    st = SentenceTransformer(str(tmp_path / "out"), device="cpu")
    assert isinstance(st[0], StaticEmbedding) and st.encode(TEXTS[:2]).shape == (2, 8)
    assert load_encoder(str(tmp_path / "out")).static


def test_what_a_static_model_cannot_do_is_one_line(tiny_static, tmp_path, capsys, monkeypatch):
    from encodr.errors import EncodrError
    from encodr.methods import load_recipe
    from encodr.models import load_encoder

    with pytest.raises(EncodrError, match="static embedding model.*pooling cls does not apply"):
        load_encoder(str(tiny_static), pooling="cls")
    with pytest.raises(EncodrError, match="static model already"):
        run_tune(None, load_recipe("static"), str(tiny_static), tmp_path / "out")
    (tmp_path / "c.txt").write_text("the cat sat\nstock markets fell\n")
    code, _, err = run_cli(
        ["index", str(tmp_path / "c.txt"), "--model", str(tiny_static), "--out", str(tmp_path / "idx"), "--backend", "onnx"],
        capsys,
        monkeypatch,
    )
    assert (
        code == 2
        and "is a static embedding model, which runs in torch" in err
        and "Traceback" not in err
        and not (tmp_path / "idx").exists()
    )
    (tmp_path / "words.txt").write_text("alpha\nbeta\n")
    code, _, err = run_cli(
        ["tune", str(tmp_path / "words.txt"), "--recipe", "static", "--out", str(tmp_path / "out")], capsys, monkeypatch
    )
    assert code == 2 and "distils the model alone and reads no training text" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
