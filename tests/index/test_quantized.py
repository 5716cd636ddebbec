"""--quantize int8 and binary (with int8 rescoring): what they store, what they find, --add, and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from encodr.index import BuildOptions, Searcher, build
from encodr.index.options import SearchOptions
from tests.conftest import run_cli
from tests.index.test_index import TEXTS


@pytest.fixture
def corpus(tmp_path):
    f = tmp_path / "corpus.txt"
    f.write_text("\n".join(TEXTS[:20]) + "\n")
    return f


def test_binary_rescoring_returns_the_int8_best_of_the_hamming_candidates():
    from encodr.index.quantized import RESCORE_FACTOR, BinaryRescored, from_int8, to_int8

    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 64)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    index = BinaryRescored.new(64, x)
    index.add(x)
    assert index.ntotal == 500 and index.binary.code_size == 8  # 64 dimensions → 8 bytes of bits a vector
    q = x[:5] + 0.05 * rng.normal(size=(5, 64)).astype(np.float32)
    scores, ids = index.search(q, 3)
    assert list(ids[:, 0]) == [0, 1, 2, 3, 4]  # each query's own vector, found through its bits
    decoded = from_int8(to_int8(x, index.ranges), index.ranges)
    assert np.allclose(decoded, x, atol=float((index.ranges[1] - index.ranges[0]).max()) / 255)  # within one int8 bucket
    for row in range(5):  # the scores are the float query against the dequantised int8 vectors, best first
        assert np.allclose(scores[row], decoded[ids[row]] @ q[row], atol=1e-5) and np.all(np.diff(scores[row]) <= 0)
    _, hamming = index.binary.search(np.packbits(q > 0, axis=-1), RESCORE_FACTOR * 3)
    assert all(set(ids[row]) <= set(hamming[row]) for row in range(5))  # only Hamming candidates are rescored


def test_int8_and_binary_indexes_find_each_text_and_are_smaller(corpus, tmp_path):
    sizes = {}
    for quantize in ("none", "int8", "binary"):  # the real MiniLM: a random tiny model maps these texts to nearly one vector
        meta = build([str(corpus)], tmp_path / quantize, BuildOptions(model="minilm", quantize=quantize))
        assert meta["quantize"] == quantize and meta["index_type"] == "flat" and meta["count"] == 20
        hits = Searcher(tmp_path / quantize).search(TEXTS[:20], SearchOptions(k=2, mode="dense"))
        assert [h[0].text for h in hits] == TEXTS[:20]
        assert all(abs(h[0].score - 1.0) < 0.05 for h in hits)  # still on the cosine scale
        sizes[quantize] = meta["bytes_per_vector"]
    assert sizes["binary"] < sizes["int8"] < sizes["none"]
    files = sorted(p.name for p in (tmp_path / "binary" / "current").iterdir())
    assert files == ["index.json", "rescore.i8.npy", "texts.db", "vectors.faiss"]


def test_add_to_a_binary_index_keeps_its_quantisation(corpus, tmp_path):
    build([str(corpus)], tmp_path / "b", BuildOptions(model="minilm", quantize="binary"))
    more = tmp_path / "more.txt"
    more.write_text("\n".join(TEXTS[20:30]) + "\n")
    meta = build([str(more)], tmp_path / "b", BuildOptions(write="add"))
    assert meta["count"] == 30 and meta["quantize"] == "binary"
    s = Searcher(tmp_path / "b")
    assert len(s.index) == 30 and s.search([TEXTS[25]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[25]
    assert s.index.faiss.codes.shape == (30, s.index.meta.dimension)


def test_quantize_refuses_what_the_index_type_cannot_hold(corpus, tiny_model, tmp_path, capsys, monkeypatch):
    for args, message in [
        (["--quantize", "int4"], "--quantize int4: not one of none, int8, binary"),
        (["--quantize", "binary", "--index-type", "hnsw"], "--quantize binary searches every vector's bits"),
        (["--quantize", "int8", "--index-type", "ivfpq"], "--index-type ivfpq already compresses vectors"),
    ]:
        code, _, err = run_cli(
            ["index", str(corpus), "--model", str(tiny_model), "--out", str(tmp_path / "x"), *args], capsys, monkeypatch
        )
        assert code == 2 and message in err and "Traceback" not in err and not (tmp_path / "x").exists()


def test_a_binary_index_without_its_int8_file_names_that_file(corpus, tiny_model, tmp_path):
    from encodr.errors import EncodrError
    from encodr.index.reader import IndexReader as Index

    build([str(corpus)], tmp_path / "b", BuildOptions(model=str(tiny_model), quantize="binary"))
    rescore = tmp_path / "b" / "current" / "rescore.i8.npy"
    rescore.write_bytes(b"not numpy")
    with pytest.raises(EncodrError, match="vectors.faiss or rescore.i8.npy is corrupted"):
        Index.open(tmp_path / "b")
    rescore.unlink()
    with pytest.raises(EncodrError, match="is missing rescore.i8.npy; rebuild it"):
        Index.open(tmp_path / "b")


def test_dim_keeps_the_first_dimensions_renormalised_for_texts_and_queries(corpus, tiny_model, tmp_path):
    from encodr.models.encoder import truncated

    full = build([str(corpus)], tmp_path / "full", BuildOptions(model=str(tiny_model)))
    meta = build([str(corpus)], tmp_path / "d8", BuildOptions(model=str(tiny_model), dim=8))
    assert (
        meta["dimension"] == 8
        and meta["truncate_dim"] == 8
        and full["truncate_dim"] is None
        and meta["bytes_per_vector"] < full["bytes_per_vector"]
    )
    a, b = Searcher(tmp_path / "full"), Searcher(tmp_path / "d8")
    n = len(a.index)
    expected = truncated(a.index.vectors_of(list(range(n))), 8)
    assert np.allclose(
        b.index.vectors_of(list(range(n))), expected, atol=1e-5
    )  # each text: the full vector's first 8 dimensions, renormalised
    query = truncated(a.encoder.encode([TEXTS[3]]), 8)[0]
    hit = b.search([TEXTS[3]], SearchOptions(k=1, mode="dense"))[0][0]
    assert abs(hit.score - float((expected @ query).max())) < 1e-4  # the query is truncated the same way
    a.index.close()
    b.index.close()
    more = tmp_path / "more.txt"
    more.write_text("\n".join(TEXTS[20:30]) + "\n")
    added = build([str(more)], tmp_path / "d8", BuildOptions(write="add"))
    assert added["count"] == 30 and added["dimension"] == 8  # --add keeps the index's truncation
    with pytest.raises(Exception, match="dim 16 differs from index .* 8 dimensions"):
        build([str(more)], tmp_path / "d8", BuildOptions(write="add", dim=16))


def test_dim_above_the_models_is_refused_and_writes_nothing(corpus, tiny_model, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        ["index", str(corpus), "--model", str(tiny_model), "--out", str(tmp_path / "x"), "--dim", "4096"], capsys, monkeypatch
    )
    assert code == 2 and "--dim 4096 is outside what" in err and "Traceback" not in err and not (tmp_path / "x").exists()


def test_dim_warns_when_the_model_was_not_trained_for_it(corpus, tiny_model, tmp_path, capsys, monkeypatch):
    import json
    import shutil

    code, _, err = run_cli(
        ["index", str(corpus), "--model", str(tiny_model), "--out", str(tmp_path / "a"), "--dim", "8"], capsys, monkeypatch
    )
    assert code == 0 and "was not trained with a Matryoshka loss" in err
    tuned = tmp_path / "tuned"
    shutil.copytree(tiny_model, tuned)
    (tuned / "encodr.json").write_text(
        json.dumps({"recipe": {"method": "retrieval", "matryoshka_dims": "16,8"}})
    )  # as encodr tune writes it
    code, _, err = run_cli(
        ["index", str(corpus), "--model", str(tuned), "--out", str(tmp_path / "b"), "--dim", "8"], capsys, monkeypatch
    )
    assert code == 0 and "Matryoshka" not in err and "truncated to" not in err
    code, _, err = run_cli(
        ["index", str(corpus), "--model", str(tuned), "--out", str(tmp_path / "c"), "--dim", "4"], capsys, monkeypatch
    )
    assert code == 0 and "trained to be truncated to 16, 8 dimensions, not 4" in err
