"""Issue 16: the ONNX backends, windows and the writer thread, encoding on two processes,
IVF-PQ, search-time settings and two builds of one index at the same time."""

import json
import threading

import numpy as np
import onnx
import pytest

from encodr.errors import EncodrError
from encodr.index import BuildOptions, Index, Searcher, build
from encodr.index.faiss_types import auto_index_type, pq_codes
from encodr.index.options import SearchOptions
from encodr.models import load_encoder
from encodr.models.onnx import export_dir
from tests.conftest import run_cli

TEXTS = [
    f"text {i}: the {w} of {v}"
    for i, (w, v) in enumerate((w, v) for w in ("cat", "dog", "sea", "sun", "tax") for v in ("paris", "rome", "oslo", "lima"))
]


def lines(tmp_path, texts, name="c.txt"):
    f = tmp_path / name
    f.write_text("\n".join(texts) + "\n")
    return f


def stored(index_dir) -> tuple[list[str], np.ndarray]:
    """Texts in line order of their source and their vectors."""
    index = Index.open(index_dir)
    return index.texts.column("text"), index.faiss.reconstruct_n(0, len(index))


def test_onnx_backends_match_torch_and_are_cached_atomically(tiny_model):
    torch_enc = load_encoder(str(tiny_model), device="cpu")
    ref = torch_enc.encode(TEXTS)
    fp32 = load_encoder(str(tiny_model), backend="onnx")
    int8 = load_encoder(str(tiny_model), backend="onnx-int8")
    assert fp32.backend == "onnx" and fp32.fingerprint == torch_enc.fingerprint  # an index opens with either
    np.testing.assert_allclose(fp32.encode(TEXTS), ref, atol=1e-5)
    quantised = int8.encode(TEXTS)
    assert np.sum(quantised * ref, axis=1).min() > 0.99 and np.abs(quantised - ref).max() > 1e-4  # close, but not the same
    folder = export_dir(torch_enc)
    graph = onnx.load(str(folder / "model_qint8.onnx")).graph
    assert {n.op_type for n in graph.node} >= {"MatMulInteger", "DynamicQuantizeLinear"}  # weight matrices in int8
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["encoder.json", "model.onnx", "model_qint8.onnx", "tokenizer.json"]  # no temporary file left behind
    before = (folder / "model_qint8.onnx").stat().st_mtime_ns
    load_encoder(str(tiny_model), backend="onnx-int8")
    assert (folder / "model_qint8.onnx").stat().st_mtime_ns == before  # reused, not exported again


def test_unknown_backend_and_processes_with_onnx_are_refused(tiny_model, tmp_path, capsys, monkeypatch):
    with pytest.raises(EncodrError, match="backend: 'tensorrt' is not one of"):
        load_encoder(str(tiny_model), backend="tensorrt")
    corpus = lines(tmp_path, TEXTS)
    with pytest.raises(EncodrError, match="backend: 'tensorrt' is not one of"):
        build([str(corpus)], tmp_path / "b", BuildOptions(model=str(tiny_model), backend="tensorrt"))
    with pytest.raises(EncodrError, match="processes: 0 must be 1 or more"):
        build([str(corpus)], tmp_path / "b", BuildOptions(model=str(tiny_model), processes=0))
    assert not list(tmp_path.glob(".b*")) and not (tmp_path / "b").exists()  # refused before the lock file
    code, _, err = run_cli(
        [
            "index",
            str(corpus),
            "--model",
            str(tiny_model),
            "--out",
            str(tmp_path / "i"),
            "--backend",
            "onnx-int8",
            "--processes",
            "2",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "--processes works with --backend torch" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "i").exists()


def test_small_windows_and_the_writer_thread_store_every_text_once(tiny_model, tmp_path):
    texts = TEXTS + TEXTS[:7]  # duplicates across windows
    one = build([str(lines(tmp_path, texts))], tmp_path / "one", BuildOptions(model=str(tiny_model), lang="eng"))
    small = build(
        [str(lines(tmp_path, texts))], tmp_path / "small", BuildOptions(model=str(tiny_model), lang="eng", window=3, batch_size=2)
    )
    assert one["count"] == small["count"] == len(TEXTS) and small["skipped_duplicates"] == 7
    t1, v1 = stored(tmp_path / "one")
    t2, v2 = stored(tmp_path / "small")
    assert t1 == t2 == TEXTS
    np.testing.assert_allclose(v1, v2, atol=1e-5)


def test_index_records_backend_and_search_with_another_warns(tiny_model, tmp_path):
    out = tmp_path / "idx"
    meta = build([str(lines(tmp_path, TEXTS))], out, BuildOptions(model=str(tiny_model), lang="eng", backend="onnx-int8"))
    assert meta["backend"] == "onnx-int8" and meta["bytes_per_vector"] >= 32 * 4
    same = Searcher(out)
    assert same.encoder.backend == "onnx-int8" and same.warnings == []
    other = Searcher(out, backend="torch")
    assert other.encoder.backend == "torch" and len(other.warnings) == 1 and "built with backend onnx-int8" in other.warnings[0]
    assert other.search([TEXTS[3]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[3]  # compatible vectors


def test_an_index_built_in_bf16_queries_through_autos_onnx_backend_else_in_bf16(tiny_model, tmp_path, monkeypatch):
    import encodr.models.encoder as encoder_module

    out = tmp_path / "idx"
    meta = build([str(lines(tmp_path, TEXTS))], out, BuildOptions(model=str(tiny_model), lang="eng", backend="torch-bf16"))
    monkeypatch.setattr(encoder_module, "cpu_has_amx", lambda cpuinfo="/proc/cpuinfo": False)
    monkeypatch.setattr(encoder_module, "onnx_available", lambda: True)
    searcher = Searcher(out)  # a short query runs faster on onnxruntime than in torch, at float32's vectors
    assert meta["backend"] == "torch-bf16" and searcher.encoder.backend == "onnx" and searcher.warnings == []
    assert searcher.search([TEXTS[3]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[3]
    monkeypatch.setattr(encoder_module, "onnx_available", lambda: False)
    monkeypatch.setattr(encoder_module, "cpu_has_bf16", lambda cpuinfo="/proc/cpuinfo": True)
    searcher = Searcher(out)  # no ONNX backend for auto here: the index's own
    assert searcher.encoder.backend == "torch-bf16" and searcher.warnings == []
    assert searcher.search([TEXTS[3]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[3]


def test_two_processes_give_the_vectors_of_one(tiny_model, tmp_path):
    corpus = lines(tmp_path, TEXTS)
    build(
        [str(corpus)], tmp_path / "p1", BuildOptions(model=str(tiny_model), lang="eng", backend="torch")
    )  # the pool runs float32, as auto is with processes
    meta = build([str(corpus)], tmp_path / "p2", BuildOptions(model=str(tiny_model), lang="eng", processes=2))
    assert meta["count"] == len(TEXTS)
    t1, v1 = stored(tmp_path / "p1")
    t2, v2 = stored(tmp_path / "p2")
    assert t1 == t2
    assert np.abs(v1 - v2).max() < 1e-5


def test_concurrent_adds_lose_and_duplicate_nothing(tiny_model, tmp_path):
    out = tmp_path / "idx"
    build([str(lines(tmp_path, TEXTS[:4], "base.txt"))], out, BuildOptions(model=str(tiny_model), lang="eng"))
    a = [f"alpha {i} {w}" for i, w in enumerate(["red", "green", "blue"] * 40)]
    b = [f"beta {i} {w}" for i, w in enumerate(["red", "green", "blue"] * 40)]
    shared = [f"both {i}" for i in range(30)]  # in both files: stored once
    files = [lines(tmp_path, a + shared, "a.txt"), lines(tmp_path, shared + b, "b.txt")]
    start, errors = threading.Barrier(2), []

    def add(f):
        start.wait()  # both open the index at the same moment
        try:
            build([str(f)], out, BuildOptions(write="add", lang="eng", window=16))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=add, args=(f,)) for f in files]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    texts, _ = stored(out)
    assert len(texts) == len(set(texts)) == 4 + len(a) + len(b) + len(shared)
    assert set(texts) == set(TEXTS[:4] + a + b + shared)
    assert len(Index.open(out)) == len(texts)


def test_ivfpq_builds_compresses_and_finds_near_exact_neighbours(tiny_model, tmp_path):
    texts = [f"item {i} in row {i % 97} of block {i // 97}" for i in range(12_000)]
    corpus = str(lines(tmp_path, texts))
    meta = build([corpus], tmp_path / "pq", BuildOptions(model=str(tiny_model), index_type="ivfpq", lang="eng"))
    flat = build([corpus], tmp_path / "flat", BuildOptions(model=str(tiny_model), index_type="flat", lang="eng"))
    assert meta["index_type"] == "ivfpq" and meta["bytes_per_vector"] < 0.7 * flat["bytes_per_vector"]
    vectors = Index.open(tmp_path / "flat").faiss.reconstruct_n(0, len(texts))
    queries = vectors[::240]  # 50 stored texts
    best = (queries @ vectors.T).max(axis=1)
    for mmap in (True, False):
        _, ids = Index.open(tmp_path / "pq", mmap=mmap, nprobe=64).search(queries, 10)
        found = np.sum(queries * vectors[ids[:, 0]], axis=1)
        # the tiny random model's vectors are nearly parallel, so ties abound: the first hit must score
        # (exactly) within 0.005 of the best, read from the file or memory-mapped alike
        assert np.all(found >= best - 0.005) and len(set(ids[:, 0])) > 1


def test_pq_codes_divide_the_dimension_in_sub_vectors_of_four_or_more():
    dims = (3, 8, 32, 64, 128, 312, 384, 768, 1024)
    assert [pq_codes(d) for d in dims] == [1, 2, 8, 16, 32, 39, 48, 48, 32]
    assert all(d % pq_codes(d) == 0 and (d < 4 or d // pq_codes(d) >= 4) for d in range(1, 2049))


def test_ivfpq_trains_no_polysemous_codes_it_would_never_use():
    """FAISS's factory trains polysemous codes by default; they serve only a Hamming pre-filter,
    which an encodr index never turns on, and would cost most of the training time."""
    import faiss

    from encodr.index.faiss_types import new_faiss

    sample = np.random.default_rng(0).standard_normal((400, 16)).astype(np.float32)
    index = new_faiss("ivfpq", 16, 400, sample)  # held: the IVF part below points into it
    ivfpq = faiss.downcast_index(faiss.extract_index_ivf(index))
    assert ivfpq.is_trained and ivfpq.pq.M == 4 and not ivfpq.do_polysemous_training and ivfpq.polysemous_ht == 0


def test_ivfpq_needs_enough_texts_and_auto_picks_by_size(tiny_model, tmp_path):
    with pytest.raises(EncodrError, match="needs at least 10,000 texts"):
        build([str(lines(tmp_path, TEXTS))], tmp_path / "x", BuildOptions(model=str(tiny_model), index_type="ivfpq", lang="eng"))
    assert not (tmp_path / "x").exists()
    assert [auto_index_type(n) for n in (10, 50_000, 50_001, 250_000, 250_001, 5_000_000)] == [
        "flat",
        "flat",
        "hnsw",
        "hnsw",
        "ivfpq",
        "ivfpq",
    ]


def test_search_settings_are_checked(tiny_model, tmp_path):
    out = tmp_path / "idx"
    build([str(lines(tmp_path, TEXTS))], out, BuildOptions(model=str(tiny_model), lang="eng"))
    with pytest.raises(EncodrError, match="nprobe: 0 must be 1 or more"):
        Index.open(out, nprobe=0)


def test_eval_scores_the_backend_it_is_given(tiny_model, tmp_path):
    """An ONNX encoder is scored on its own vectors (sentence-transformers' evaluator would run torch)."""
    from scipy.stats import spearmanr

    from encodr import evaluation

    sts = tmp_path / "sts.tsv"
    rows = [(i % 6, TEXTS[i], TEXTS[(i * 7 + 3) % len(TEXTS)]) for i in range(len(TEXTS))]
    sts.write_text("".join(f"{g}\t{a}\t{b}\n" for g, a, b in rows))
    int8 = load_encoder(str(tiny_model), backend="onnx-int8")
    got = evaluation.run("sts", int8, [str(sts)]).scores[0].value
    expected = (
        spearmanr(int8.pair_scores([a for _, a, _ in rows], [b for _, _, b in rows]), [g for g, _, _ in rows]).statistic * 100
    )
    assert got == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["score", "a cat", "a kitten", "--backend", "tensorrt"],
            "--backend tensorrt: not one of torch, torch-bf16, onnx, onnx-int8",
        ),
        (["score", "a cat", "a kitten", "--cross", "--backend", "onnx"], "--backend onnx runs bi-encoders"),
        (["search", "cat", "--index", "IDX", "--nprobe", "0"], "--nprobe 0: must be 1 or more"),
        (["search", "cat", "--index", "IDX", "--backend", "tensorrt"], "--backend tensorrt: not one of"),
    ],
)
def test_cli_backend_and_search_settings_errors(args, message, tiny_model, tmp_path, capsys, monkeypatch):
    out = tmp_path / "idx"
    build([str(lines(tmp_path, TEXTS))], out, BuildOptions(model=str(tiny_model), lang="eng"))
    args = [str(out) if a == "IDX" else a for a in args] + (["--model", str(tiny_model)] if args[0] == "score" else [])
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_cli_eval_names_the_backend_beside_the_model(tiny_model, tmp_path, capsys, monkeypatch):
    sts = tmp_path / "sts.tsv"
    sts.write_text("".join(f"{i % 5}\t{TEXTS[i]}\t{TEXTS[-1 - i]}\n" for i in range(12)))
    args = ["eval", "sts", str(sts), "--model", str(tiny_model), "--backend", "onnx", "--compare", str(tiny_model)]
    code, out, _ = run_cli(args + ["--json"], capsys, monkeypatch)
    assert code == 0 and [m["backend"] for m in json.loads(out)["models"]] == ["onnx", "torch"]
    code, out, _ = run_cli(args, capsys, monkeypatch)
    assert code == 0 and "(onnx)" in out.replace("\n", "").replace("│", "").replace(" ", "")


@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_a_thread_on_fewer_cpu_threads_gets_the_same_vectors(tiny_model, backend):
    import torch

    encoder = load_encoder(str(tiny_model), device="cpu", backend=backend)
    expected = encoder.encode(TEXTS)
    threads_before = torch.get_num_threads()
    got = {}

    def worker():
        encoder.use_threads(1)
        got["vectors"] = encoder.encode(TEXTS)
        got["threads"] = torch.get_num_threads()
        if backend == "onnx":
            got["session"] = encoder.forward._local.session
        encoder.use_threads(threads_before)  # as it was (torch also sets MKL's count, which is the process's)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    np.testing.assert_allclose(got["vectors"], expected, atol=1e-5)
    if backend == "torch":
        assert got["threads"] == 1 and torch.get_num_threads() == threads_before  # the calling thread's count only
    else:
        assert got["session"] is not encoder.forward.session and got["session"].get_session_options().intra_op_num_threads == 1
        first = got["session"]
        again = threading.Thread(target=worker)  # another thread asking for 1 thread: the same session, not a new one
        again.start()
        again.join()
        assert got["session"] is first


OPENS = """
import json, sys
import numpy as np
from encodr.models import load_encoder
encoder = load_encoder(sys.argv[1], backend=sys.argv[2])
np.save(sys.argv[3], encoder.encode(json.loads(sys.argv[4])))
print(json.dumps({"type": type(encoder).__name__, "fingerprint": encoder.fingerprint, "pooling": encoder.pooling,
                  "heavy": sorted(m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)}))
"""


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8", "openvino"])
def test_a_second_load_opens_the_export_without_torch_and_gives_the_same_vectors(tiny_model, tmp_path, backend):
    import subprocess
    import sys

    first = load_encoder(str(tiny_model), backend=backend)  # loads torch, exports, remembers the folder
    expected = first.encode(TEXTS)
    out = tmp_path / "v.npy"
    done = subprocess.run(
        [sys.executable, "-c", OPENS, str(tiny_model), backend, str(out), json.dumps(TEXTS)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"type": "ExportedEncoder", "fingerprint": first.fingerprint, "pooling": first.pooling, "heavy": []}
    np.testing.assert_array_equal(np.load(out), expected)


@pytest.mark.parametrize("fixture", ["tiny_model", "tiny_roberta"])
def test_the_exported_tokenizer_tokenizes_and_pads_as_the_hugging_face_one(fixture, request):
    from encodr.models.encoder import tokenize
    from encodr.models.onnx import exported_encoder, source_key

    path = request.getfixturevalue(fixture)
    reference = load_encoder(str(path), backend="onnx", max_length=12)
    light = exported_encoder(source_key(path, "auto", "cls"), str(path), "onnx", full=lambda: None)
    light.max_length = 12
    texts = TEXTS[:5] + [
        "Été à Zürich: naïve café, 東京 and a sentence far longer than twelve tokens of any vocabulary at all",
        "x",
    ]
    want, got = tokenize(reference.st, texts), tokenize(light.st, texts)
    assert max(len(ids) for ids in got["input_ids"]) == 12  # truncated, special tokens included
    for name in want:
        assert got[name] == want[name], name
    padded, hf = light.tokenizer.pad(got), reference.tokenizer.pad(want, return_tensors="np")
    for name in want:
        np.testing.assert_array_equal(padded[name], hf[name])
    assert light.tokenizer.tokenize(texts[5]) == reference.tokenizer.tokenize(texts[5])  # no truncation when counting


def test_a_model_rewritten_in_its_folder_is_exported_again_and_the_full_model_loads_on_demand(tiny_model, tmp_path):
    import shutil

    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertModel

    folder = tmp_path / "m"
    shutil.copytree(tiny_model, folder)
    old = load_encoder(str(folder), backend="onnx")
    assert type(load_encoder(str(folder), backend="onnx")).__name__ == "ExportedEncoder"
    torch.manual_seed(1)
    BertModel(BertModel.from_pretrained(str(folder)).config).save_pretrained(folder)  # new weights, same folder
    new = load_encoder(str(folder), backend="onnx")
    assert new.fingerprint == load_encoder(str(folder), device="cpu").fingerprint != old.fingerprint
    light = load_encoder(str(folder), backend="onnx")
    assert type(light).__name__ == "ExportedEncoder" and light.st._full is None
    light.save(tmp_path / "saved")  # beyond encoding: the full model loads, once
    np.testing.assert_allclose(
        SentenceTransformer(str(tmp_path / "saved"), device="cpu").encode(TEXTS, normalize_embeddings=True),
        light.encode(TEXTS),
        atol=1e-5,
    )


def test_a_torch_index_queries_through_onnx_on_a_cpu(tiny_model, tmp_path, monkeypatch):
    """Queries of a float32 torch index run on the checked ONNX export (cosine ≥ 0.9999 of
    torch's), with no warning; a backend asked for is kept."""
    import encodr.models.encoder as encoder_module

    out = tmp_path / "idx"
    meta = build([str(lines(tmp_path, TEXTS))], out, BuildOptions(model=str(tiny_model), lang="eng", backend="torch"))
    monkeypatch.setattr(encoder_module, "cpu_has_amx", lambda cpuinfo="/proc/cpuinfo": False)
    searcher = Searcher(out)
    assert meta["backend"] == "torch" and searcher.encoder.backend == "onnx" and searcher.warnings == []
    assert searcher.search([TEXTS[3]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[3]
    assert Searcher(out, backend="torch").encoder.backend == "torch"
    if encoder_module.openvino_available():  # on an AMX CPU, auto's backend there: OpenVINO
        monkeypatch.setattr(encoder_module, "cpu_has_amx", lambda cpuinfo="/proc/cpuinfo": True)
        assert Searcher(out).encoder.backend == "openvino"


def test_a_warm_searcher_chooses_snippets_with_the_int8_twin_of_its_onnx_encoder(tiny_model, tmp_path, monkeypatch):
    """quantised_twin: the ONNX float32 encoder's int8 graph (the same dimension, the base left
    as it is; none for torch); a warm searcher encodes its snippets' sentences with it, and a
    one-off searcher with its query encoder; where the quantiser refuses, a warm one too. A batched
    encoder's twin is its own encoder's, made once."""
    import encodr.models.encoder as encoder_module
    from encodr.models.onnx import quantised_twin
    from encodr.serve.batcher import BatchedEncoder

    monkeypatch.setattr(encoder_module, "cpu_has_amx", lambda cpuinfo="/proc/cpuinfo": False)  # queries on onnx, not openvino
    out = tmp_path / "idx"
    long_passage = (
        ". ".join(t.capitalize() for t in TEXTS[:6]) + "."
    )  # sentences that hold none of the query's words: the keywords do not choose
    build([str(lines(tmp_path, [long_passage]))], out, BuildOptions(model=str(tiny_model), lang="eng", backend="torch"))
    assert quantised_twin(load_encoder(str(tiny_model), backend="torch")) is None
    searcher = Searcher(out)
    base = searcher.encoder
    assert searcher.sentence_encoder is base  # a one-off search loads nothing more
    twin = quantised_twin(BatchedEncoder(base, batcher=None))
    assert twin.backend == "onnx-int8" and base.backend == "onnx" and twin.encode(TEXTS[:3]).shape == (3, base.dimension)
    assert quantised_twin(base) is twin  # one twin an encoder, for every searcher that queries through it
    seen = []
    original = type(searcher.index).encode_passages
    monkeypatch.setattr(
        type(searcher.index),
        "encode_passages",
        lambda self, encoder, texts: seen.append(encoder.backend) or original(self, encoder, texts),
    )
    from encodr.core.commands import search
    from encodr.core.requests import SearchRequest

    request = SearchRequest(query=["purple quiet evening"], index=str(out), k=1, mode="dense")
    search(request, searcher=searcher)
    assert seen == ["onnx"]
    searcher.warm()
    seen.clear()
    hits = search(request, searcher=searcher).results[0].hits
    assert searcher.sentence_encoder.backend == "onnx-int8" and seen == ["onnx-int8"] and hits[0].snippet

    def refused(*args, **kwargs):
        raise EncodrError("could not quantise the model")

    monkeypatch.setattr("encodr.models.onnx.export", refused)  # the quantiser refuses: the snippets keep float32
    again = Searcher(out)
    again.warm()
    assert again.sentence_encoder is again.encoder and again.encoder.backend == "onnx"


def test_openvino_keeps_the_vectors_it_was_checked_for(tiny_model):
    pytest.importorskip("openvino")
    from encodr.models.onnx import AGREEMENT, OPENVINO_CACHE, OPENVINO_RECORD

    expected = load_encoder(str(tiny_model), device="cpu").encode(TEXTS)
    encoder = load_encoder(str(tiny_model), backend="openvino")
    kept = json.loads((encoder.forward.path.parent / OPENVINO_RECORD).read_text())
    assert encoder.backend == "openvino" and kept[encoder.forward.session.precision] >= AGREEMENT  # checked at this precision
    got = encoder.encode(TEXTS)
    assert np.sum(got * expected, axis=1).min() > 0.999
    cache = encoder.forward.path.parent / OPENVINO_CACHE
    assert any(cache.iterdir())  # the compiled model, kept for the next load
    again = load_encoder(str(tiny_model), backend="openvino")  # compiled from the cache: the same vectors
    assert again.forward.session.precision == encoder.forward.session.precision
    np.testing.assert_allclose(again.encode(TEXTS), got, atol=1e-6)


def test_openvino_is_refused_where_its_vectors_differ_and_auto_then_takes_torch_bf16(tiny_model, tmp_path, capsys, monkeypatch):
    import importlib

    pytest.importorskip("openvino")
    monkeypatch.setattr(importlib.import_module("encodr.models.onnx"), "agreement", lambda first, second: 0.99)
    with pytest.raises(EncodrError, match="OpenVINO's .* differ from torch's .*; use .*backend onnx"):
        load_encoder(str(tiny_model), backend="openvino")
    monkeypatch.setattr(importlib.import_module("encodr.index.build"), "choose_backend", lambda backend, device: "openvino")
    args = ["index", str(lines(tmp_path, TEXTS)), "--model", str(tiny_model), "--out", str(tmp_path / "idx"), "--lang", "eng"]
    code, out, err = run_cli([*args, "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["backend"] == "torch-bf16", err
    assert "OpenVINO" in err and "encoding with torch-bf16" in err  # one warning line says why


@pytest.mark.parametrize("fault", ["differs", "missing"])
def test_encodr_index_with_openvino_refused_says_why_in_one_line_and_writes_nothing(
    fault, tiny_model, tmp_path, capsys, monkeypatch
):
    import importlib
    import sys

    if fault == "differs":
        pytest.importorskip("openvino")
        monkeypatch.setattr(importlib.import_module("encodr.models.onnx"), "agreement", lambda first, second: 0.99)
        expected = "differ from torch's (cosine 0.99000 < 0.9999); use --backend onnx"
    else:
        monkeypatch.setitem(sys.modules, "openvino", None)  # not installed: importing it raises ImportError
        expected = "--backend openvino needs OpenVINO: pip install openvino (or use --backend onnx)"
    args = [
        "index",
        str(lines(tmp_path, TEXTS)),
        "--model",
        str(tiny_model),
        "--out",
        str(tmp_path / "i"),
        "--backend",
        "openvino",
    ]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "i").exists()


@pytest.mark.parametrize(("backend", "cpus"), [("onnx", 2), ("onnx-int8", 4), ("openvino", 2)])
def test_a_bulk_encode_runs_its_batches_on_streams_with_the_vectors_of_one_at_a_time(tiny_model, backend, cpus, monkeypatch):
    if backend == "openvino":
        pytest.importorskip("openvino")
    import encodr.models.encoder as encoder_module
    import encodr.models.onnx as onnx_module

    encoder = load_encoder(str(tiny_model), backend=backend)
    texts = TEXTS * 3
    expected = encoder.encode(texts, batch_size=4)  # 15 batches, under STREAM_BATCHES: one at a time, on this thread
    monkeypatch.setattr(encoder_module, "STREAM_BATCHES", 2)
    monkeypatch.setattr(onnx_module, "usable_cpus", lambda: cpus)
    passes, run = [], onnx_module.OnnxForward.__call__

    def recorded(self, features):
        passes.append((threading.current_thread().name, self._local.session))
        return run(self, features)

    monkeypatch.setattr(onnx_module.OnnxForward, "__call__", recorded)
    done = []
    got = encoder.encode(texts, batch_size=4, on_batch=done.append)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert sum(done) == len(texts) and len(done) == 15
    sessions = encoder.forward._streams
    assert len(passes) == 15
    if backend == "openvino":  # its throughput mode's streams, as many as OpenVINO asks for on this machine's cores
        assert str(sessions[0].compiled.get_property("PERFORMANCE_HINT")) == "THROUGHPUT" and len(set(map(id, sessions))) == 1
        if len(sessions) == 1:  # one stream (a one-core machine): the passes run on the calling thread
            return
    assert all(name.startswith("encodr-stream") for name, _ in passes)
    assert {id(s) for _, s in passes} <= {id(s) for s in sessions}
    if (
        backend != "openvino"
    ):  # two streams on half the cores each: one single-threaded session shared on 2 CPUs, one each on more
        assert len(sessions) == 2 and len({id(s) for s in sessions}) == (1 if cpus == 2 else 2)
        assert {s.get_session_options().intra_op_num_threads for s in sessions} == {cpus // 2}


def test_a_bulk_encode_makes_its_stream_sessions_on_a_thread_while_it_tokenizes(tiny_model, monkeypatch):
    import encodr.models.encoder as encoder_module
    import encodr.models.onnx as onnx_module

    encoder = load_encoder(str(tiny_model), backend="onnx-int8")
    texts = TEXTS * 3
    expected = encoder.encode(texts, batch_size=4)  # one batch at a time: no streams
    monkeypatch.setattr(encoder_module, "STREAM_BATCHES", 2)
    monkeypatch.setattr(onnx_module, "usable_cpus", lambda: 2)
    made, making = threading.Event(), []
    stream_sessions, tokenize = onnx_module.OnnxForward._stream_sessions, encoder_module.Encoder._tokenize

    def sessions(self):
        making.append(threading.current_thread().name)
        made.set()
        return stream_sessions(self)

    def tokenizing(self, texts):
        making.append(made.wait(30))  # the sessions are made meanwhile, on their own thread
        return tokenize(self, texts)

    monkeypatch.setattr(onnx_module.OnnxForward, "_stream_sessions", sessions)
    monkeypatch.setattr(encoder_module.Encoder, "_tokenize", tokenizing)
    np.testing.assert_allclose(encoder.encode(texts, batch_size=4), expected, atol=1e-5)
    assert making == ["encodr-sessions", True] and len(encoder.forward._streams) == 2
    encoder.encode(texts, batch_size=4)  # made once: the next bulk encode waits for nothing
    assert making == ["encodr-sessions", True, True]


def test_stream_sessions_that_fail_on_their_thread_fail_the_encode(tiny_model, monkeypatch):
    import encodr.models.encoder as encoder_module
    import encodr.models.onnx as onnx_module

    encoder = load_encoder(str(tiny_model), backend="onnx")
    monkeypatch.setattr(encoder_module, "STREAM_BATCHES", 2)
    monkeypatch.setattr(onnx_module, "usable_cpus", lambda: 2)

    def failing(self):
        raise RuntimeError("no session")

    monkeypatch.setattr(onnx_module.OnnxForward, "_stream_sessions", failing)
    with pytest.raises(RuntimeError, match="no session"):
        encoder.encode(TEXTS * 3, batch_size=4)


def test_a_thread_that_chose_its_threads_runs_its_batches_itself(tiny_model, monkeypatch):
    import encodr.models.onnx as onnx_module

    monkeypatch.setattr(onnx_module, "usable_cpus", lambda: 2)
    encoder = load_encoder(str(tiny_model), backend="onnx")
    got = {}

    def worker():
        encoder.use_threads(1)  # as a server's batcher does
        got["streams"] = encoder.forward.streams()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert got["streams"] == 1 and encoder.forward.streams() == 2


def test_streamed_passes_come_in_order_and_a_failing_one_raises_at_its_turn():
    from encodr.models.encoder import streamed

    class Forward:
        entered = []

        def enter_stream(self, stream):
            self.entered.append(stream)

    def run(rows):
        if rows[0] == 6:
            raise ValueError("pass 3 failed")
        return rows * 10

    batches = [np.array([i, i + 1]) for i in range(0, 20, 2)]
    got = []
    with pytest.raises(ValueError, match="pass 3 failed"):
        for rows, vectors in streamed(run, batches, 2, Forward()):
            got.append((rows.tolist(), vectors.tolist()))
    assert got == [([0, 1], [0, 10]), ([2, 3], [20, 30]), ([4, 5], [40, 50])]
    assert len(Forward.entered) == len(set(Forward.entered)) and set(Forward.entered) <= {0, 1}  # a stream a thread


RACE = """
import sys, threading, numpy as np
from pathlib import Path
from encodr.models.onnx import OpenVinoSession
session = OpenVinoSession(Path(sys.argv[1]), None, hint="THROUGHPUT")
feeds = {i.name: np.ones((4, 9), np.int64) for i in session.get_inputs()}
barrier = threading.Barrier(2)
def first_pass():
    barrier.wait()  # both threads' first passes at once, as a bulk encode's streams start
    session.run(None, feeds)
threads = [threading.Thread(target=first_pass) for _ in range(2)]
[t.start() for t in threads]
[t.join() for t in threads]
print("done")
"""


def test_an_openvino_session_runs_once_where_it_is_made_so_its_streams_first_passes_do_not_deadlock(tiny_model, monkeypatch):
    pytest.importorskip("openvino")
    import subprocess
    import sys

    import encodr.models.onnx as onnx_module

    encoder = load_encoder(str(tiny_model), backend="openvino")
    calls, run = [], onnx_module.OpenVinoSession.run

    def recorded(self, outputs, feeds):
        calls.append(threading.get_ident())
        return run(self, outputs, feeds)

    monkeypatch.setattr(onnx_module.OpenVinoSession, "run", recorded)
    onnx_module.OpenVinoSession(encoder.forward.path, None, hint="THROUGHPUT")
    assert calls == [threading.get_ident()]  # the warm-up pass, on the thread that made it
    for _ in range(3):  # without it, about 1 fresh process in 7 hung here (two threads in OpenVINO's static initialisation)
        done = subprocess.run(
            [sys.executable, "-c", RACE, str(encoder.forward.path)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0 and done.stdout.strip().endswith("done"), done.stderr


def test_the_int8_session_keeps_add_and_layer_norm_unfused(tiny_model, tmp_path, monkeypatch):
    """onnxruntime's fused SkipLayerNormalization is slower on a CPU than the Add and
    LayerNormalization it would replace: the session a load makes leaves them apart."""
    import onnxruntime as ort

    from encodr.models import onnx as exported

    made, real = [], ort.InferenceSession

    def session(path, options, *args, **kwargs):
        options.optimized_model_filepath = str(tmp_path / f"optimized{len(made)}.onnx")  # the graph it runs, written out
        made.append(options.optimized_model_filepath)
        return real(path, options, *args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", session)
    load_encoder(str(tiny_model), backend="onnx-int8").encode(TEXTS[:2])
    ops = {n.op_type for n in onnx.load(made[0]).graph.node}
    assert "SkipLayerNormalization" not in ops and {"LayerNormalization", "DynamicQuantizeMatMul"} <= ops
    monkeypatch.setattr(exported, "DISABLED_FUSIONS", ())
    made.clear()
    load_encoder(str(tiny_model), backend="onnx-int8").encode(TEXTS[:2])
    assert "SkipLayerNormalization" in {n.op_type for n in onnx.load(made[0]).graph.node}  # what onnxruntime fuses unasked
