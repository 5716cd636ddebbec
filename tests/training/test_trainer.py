"""The shared trainer: sharding, gradient caching, mixed precision, devices, several processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from encodr import registry
from encodr.errors import EncodrError
from encodr.losses import CachedLoss, MirrorInfoNCELoss
from encodr.methods import load_recipe
from encodr.models import load_encoder
from encodr.training import ShardedBatchSampler, Trainer, mixed_precision
from tests.conftest import run_cli, run_tune


def test_sharded_sampler_splits_each_global_batch_into_equal_disjoint_shards():
    one = list(ShardedBatchSampler(23, 8, rank=0, world=1, seed=3))
    two = [list(ShardedBatchSampler(23, 8, rank=r, world=2, seed=3)) for r in range(2)]
    assert [len(b) for b in one] == [8, 8, 7] == ShardedBatchSampler(23, 8).global_sizes()
    assert len(two[0]) == len(two[1]) == 3 == len(ShardedBatchSampler(23, 8, world=2))
    for g, (a, b) in enumerate(zip(*two)):
        assert len(a) == len(b) and not set(a) & set(b)
        assert a + b == one[g][: len(a) + len(b)]  # the same global batch, cut in two
    assert [len(b) for b in two[0]] == [4, 4, 3]  # the last global batch of 7 loses one string
    assert ShardedBatchSampler(23, 8, world=2).global_sizes() == [8, 8, 6]
    assert list(ShardedBatchSampler(9, 8, min_batch=2)) == [
        list(ShardedBatchSampler(9, 8, min_batch=2))[0]
    ]  # a batch of 1 is dropped


def _tiny_mirror(tiny_model, dropout: float):
    from encodr.methods.mirror.views import set_dropout

    encoder = load_encoder(str(tiny_model), "mean", device="cpu")
    set_dropout(encoder.transformer, dropout)
    encoder.st.train()
    tok = encoder.tokenizer
    words = [
        "heart attack",
        "stone",
        "myocardial infarction of the left ventricle",
        "river",
        "blue sky",
        "a",
        "cardiac arrest",
        "kidney",
    ]
    features = tok(words + words, padding=True, return_tensors="pt")
    return encoder, dict(features)


def _grads(module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in module.parameters() if p.grad is not None])


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_gradcache_gradients_equal_the_uncached_ones(tiny_model, dropout):
    encoder, features = _tiny_mirror(tiny_model, dropout)
    st, loss_fn = encoder.st, MirrorInfoNCELoss(0.05)
    half = features["input_ids"].shape[0] // 2
    on_embeddings = lambda emb: loss_fn(emb[:half], emb[half:])  # noqa: E731
    embed = lambda chunk: st(dict(chunk))["sentence_embedding"]  # noqa: E731
    from encodr.losses import chunk_features

    # reference: the same chunks embedded with autograd in one pass (same dropout draws, in order)
    torch.manual_seed(0)
    reference = on_embeddings(torch.cat([embed(c) for c in chunk_features(features, 5)]))
    reference.backward()
    expected = _grads(st).clone()
    st.zero_grad(set_to_none=True)
    torch.manual_seed(0)
    cached = CachedLoss(embed, on_embeddings, mini_batch=5)(features)
    assert float(cached.detach()) == pytest.approx(float(reference.detach()), abs=1e-6)
    (2.0 * cached).backward()  # a weight on the loss scales the replayed gradients too
    assert torch.allclose(_grads(st), 2.0 * expected, atol=1e-5, rtol=0)
    if dropout == 0.0:  # without dropout the cached gradient is the plain full-batch one
        st.zero_grad(set_to_none=True)
        on_embeddings(embed(features)).backward()
        assert torch.allclose(_grads(st), expected, atol=1e-5, rtol=0)


def test_bf16_autocast_on_cpu_trains_and_saves_an_fp32_model(tiny_model, words_file, tmp_path):
    from sentence_transformers import SentenceTransformer

    recipe = load_recipe(
        "phrase", {"batch_size": 16, "epochs": 1, "lr": 5e-4, "max_length": 16, "amp": "bf16", "pooling": "mean"}
    )
    s = run_tune(str(words_file), recipe, str(tiny_model), tmp_path / "o")
    assert s["precision"] == "bf16" and all(
        np.isfinite(r["loss"]) for r in map(json.loads, (tmp_path / "o" / "train_log.jsonl").read_text().splitlines())
    )
    st = SentenceTransformer(str(tmp_path / "o"), device="cpu")
    assert all(p.dtype == torch.float32 for p in st.parameters())
    vectors = st.encode(["heart attack", "stone"], convert_to_numpy=True)
    assert vectors.dtype == np.float32 and np.isfinite(vectors).all()


def test_mixed_precision_choice(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert mixed_precision("auto", "cuda") == "fp16"  # an older GPU: fp16 with a gradient scaler
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert mixed_precision("auto", "cuda") == "bf16"
    assert (
        mixed_precision("auto", "cpu") == "no"
        and mixed_precision("bf16", "cpu") == "bf16"
        and mixed_precision("no", "cuda") == "no"
    )
    with pytest.raises(EncodrError, match="fp16 needs a CUDA GPU"):
        mixed_precision("fp16", "cpu")


def test_a_device_that_cannot_be_honoured_is_refused(tiny_model, words_file, tmp_path, capsys, monkeypatch):
    with pytest.raises(EncodrError, match="not available on this machine"):
        Trainer("cuda:3" if not torch.cuda.is_available() else "mps")
    for device in ("mps", "tpu"):
        code, _, err = run_cli(
            ["tune", str(words_file), "--model", str(tiny_model), "--device", device, "--out", str(tmp_path / device)],
            capsys,
            monkeypatch,
        )
        assert code == 2 and err.count("\n") <= 2 and "Traceback" not in err and not (tmp_path / device).exists()
    code, _, err = run_cli(
        ["tune", str(words_file), "--model", str(tiny_model), "--amp", "fp16", "--device", "cpu", "--out", str(tmp_path / "f")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "fp16 needs a CUDA GPU" in err and not (tmp_path / "f").exists()


def _tune_cmd(launcher: list[str], words, model, out) -> list[str]:
    return [
        *launcher,
        "-m",
        "encodr",
        "tune",
        str(words),
        "--recipe",
        "phrase",
        "--model",
        str(model),
        "--out",
        str(out),
        "--batch-size",
        "8",
        "--epochs",
        "1",
        "--lr",
        "1e-3",
        "--max-length",
        "16",
        "--pooling",
        "mean",
        "--set",
        "dropout=0",
    ]


def test_two_processes_give_the_loss_of_one_on_the_same_global_batch(tiny_model, tmp_path):
    # Two processes with global batch 8 (4 strings each, candidates gathered across processes)
    # must reproduce one process with batch 8: the same loss at step 1, and, since the averaged
    # gradients are the same, at step 2 too; also with GradCache. Span masking (k = 2) is on;
    # dropout is off.
    from encodr.data.text import top_words

    words = tmp_path / "w.txt"
    words.write_text("\n".join(top_words(16)))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    one = subprocess.Popen(  # beside the two-process run: most of each is imports, on the other core
        _tune_cmd([sys.executable], words, tiny_model, tmp_path / "one"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    two = subprocess.run(
        _tune_cmd([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"], words, tiny_model, tmp_path / "two"),
        capture_output=True,
        text=True,
        env=env,
    )
    _, one_err = one.communicate()
    assert one.returncode == 0, one_err[-2000:]
    assert two.returncode == 0, two.stderr[-3000:]
    # GradCache with gathered candidates: chunks of 3 views per process, same losses again
    cached = subprocess.run(
        [
            *_tune_cmd(
                [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"],
                words,
                tiny_model,
                tmp_path / "two-cached",
            ),
            "--set",
            "mini_batch=3",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert cached.returncode == 0, cached.stderr[-3000:]
    logs = [
        [json.loads(line) for line in (tmp_path / d / "train_log.jsonl").read_text().splitlines()]
        for d in ("one", "two", "two-cached")
    ]
    assert [len(log) for log in logs] == [2, 2, 2]
    for a, b, c in zip(*logs):
        assert abs(a["loss"] - b["loss"]) < 1e-5 and abs(a["loss"] - c["loss"]) < 1e-5
    summary = json.loads((tmp_path / "two" / "encodr.json").read_text())
    assert summary["processes"] == 2 and json.loads((tmp_path / "one" / "encodr.json").read_text())["processes"] == 1
    assert (
        two.stdout.count("encodr tune (mirror) →") == 1 and two.stderr.count("encodr: tuning") == 1
    )  # only the main process prints
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".two")] == []
    from sentence_transformers import SentenceTransformer

    texts = ["heart attack", "stone"]
    assert (
        np.abs(
            SentenceTransformer(str(tmp_path / "two"), device="cpu").encode(texts)
            - load_encoder(str(tmp_path / "one")).encode(texts)
        ).max()
        < 1e-4
    )
    rows = registry.runs()
    assert len(rows) == 3 and sorted(r["metrics"]["processes"] for r in rows) == [1, 2, 2]  # one row per run, not per process


def _constant_stream(name: str, size: int, batch: int, target: float, weight: float):
    """A stream of inputs x = 1 whose loss is the mean squared error to ``target``."""
    from encodr.training import Stream

    def loss(module, b):
        return torch.mean((module(b[0]).squeeze(-1) - b[1]) ** 2)

    return Stream(
        name, size, lambda idx, epoch: (torch.ones(len(idx), 1), torch.full((len(idx),), target)), loss, batch, weight=weight
    )


@pytest.mark.parametrize("accum", [1, 2])
def test_two_streams_mix_in_one_step_with_their_weights(accum):
    from encodr.training import OptimArgs

    module = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.zeros_(module.weight)  # prediction 0: first losses are target² = 1 and 4
    streams = [_constant_stream("a", 8, 2, 1.0, 1.0), _constant_stream("b", 3, 2, 2.0, 0.5)]
    with Trainer("cpu", "no") as trainer:
        result = trainer.fit(module, streams, OptimArgs(lr=1e-3, epochs=2, grad_accum=accum, batch_size=2))
    first = result.log[0]
    assert (
        first["loss/a"] == pytest.approx(1.0)
        and first["loss/b"] == pytest.approx(0.5 * 4.0)
        and first["loss"] == pytest.approx(3.0)
    )
    assert result.steps == 2 * 4 // accum and result.examples == 2 * 8  # the first stream sets the epoch; the second cycles
    assert float(module.weight.detach()) > 0  # both targets pull the prediction up


def test_dev_errors_and_warnings(tiny_model, words_file, tmp_path, capsys, monkeypatch):
    base = ["tune", str(words_file), "--model", str(tiny_model), "--batch-size", "16", "--epochs", "1"]
    code, _, err = run_cli([*base, "--dev", str(tmp_path / "nope.tsv"), "--out", str(tmp_path / "a")], capsys, monkeypatch)
    assert code == 2 and "--dev" in err and "no such file or bundled evaluation set" in err and "mesh-dev" in err
    assert "Traceback" not in err and not (tmp_path / "a").exists()
    code, _, err = run_cli(
        ["tune", "--recipe", "cross-encoder", "--model", str(tiny_model), "--dev", "mesh-dev", "--out", str(tmp_path / "b")],
        capsys,
        monkeypatch,
    )
    assert (
        code == 2
        and "--dev mesh-dev is scored by acc@1" in err
        and "selects on spearman" in err
        and not (tmp_path / "b").exists()
    )
    code, _, err = run_cli([*base, "--recipe", "word", "--dev", "simlex999", "--out", str(tmp_path / "c")], capsys, monkeypatch)
    assert code == 0 and "--dev simlex999 is a test set: selecting on it makes its score optimistic" in err


def test_a_batch_that_does_not_split_over_the_processes_is_refused(monkeypatch):
    from encodr.training import OptimArgs

    monkeypatch.setattr(Trainer, "world", property(lambda self: 2))
    with (
        Trainer("cpu", "no") as trainer,
        pytest.raises(EncodrError, match="batch size 3 of stream 'a' is not a multiple of the 2 processes"),
    ):
        trainer.fit(torch.nn.Linear(1, 1), [_constant_stream("a", 8, 3, 1.0, 1.0)], OptimArgs(batch_size=3))


def test_a_cancelled_run_writes_nothing_and_is_recorded_as_cancelled(tiny_model, tmp_path):
    from encodr import registry
    from encodr.methods import RunCancelled, load_recipe
    from tests.conftest import run_tune

    def stop(step, loss):
        if step == 2:
            raise RunCancelled()

    words = tmp_path / "words.txt"
    words.write_text("\n".join(f"word{i}" for i in range(64)) + "\n")
    with pytest.raises(RunCancelled):
        run_tune(words, load_recipe("word", {"batch_size": 8}), str(tiny_model), tmp_path / "out", on_step=stop)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.tmp-*"))
    row = registry.runs()[0]
    assert row["status"] == "cancelled" and row["recipe_name"] == "word" and row["out"] == str((tmp_path / "out").resolve())
