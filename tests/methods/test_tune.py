"""End-to-end Mirror-BERT tuning on a tiny model."""

import json
import math
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch

from encodr import registry
from encodr.data.text import top_words
from encodr.losses import MirrorInfoNCELoss
from encodr.methods import load_recipe
from encodr.models import load_encoder
from tests.conftest import run_tune

FAST = {"batch_size": 16, "epochs": 3, "lr": 5e-4, "max_length": 16}


def tiny_recipe(name="phrase", **extra):
    return load_recipe(name, {**FAST, **extra})


def mean_offdiag_cosine(vectors: np.ndarray) -> float:
    sims = vectors @ vectors.T
    n = len(vectors)
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def test_tune_writes_a_sentence_transformer_with_its_pooling(tiny_model, words_file, tmp_path):
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "out"
    summary = run_tune(str(words_file), tiny_recipe(pooling="cls"), str(tiny_model), out, progress=False)
    assert summary["strings"] == 40 and summary["pooling"] == "cls"
    assert summary["steps"] == 3 * 3  # ceil(40 / 16) per epoch
    for name in ("modules.json", "recipe.yaml", "train_log.jsonl", "encodr.json"):
        assert (out / name).is_file()
    st = SentenceTransformer(str(out), device="cpu")
    assert st[1].pooling_mode == "cls"
    assert (
        st.max_seq_length == load_encoder(str(tiny_model)).max_length == 128
    )  # trained at 16 tokens (FAST), saved with the base's window
    texts = ["heart attack", "the", "myocardial infarction of the left ventricle"]
    ours = load_encoder(str(out)).encode(texts)
    theirs = st.encode(texts, normalize_embeddings=True)
    assert ours.shape == (3, 32) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-5
    assert len((out / "train_log.jsonl").read_text().splitlines()) == summary["steps"]


def test_training_lowers_the_loss_and_spreads_the_space(tiny_model, tmp_path):
    # Mirror-BERT §5: the tuned space is more isotropic, i.e. distinct strings move apart.
    words = top_words(64)
    f = tmp_path / "w.txt"
    f.write_text("\n".join(words))
    # mean pooling: a randomly initialised BERT gives the same [CLS] vector for every input
    before = mean_offdiag_cosine(load_encoder(str(tiny_model), pooling="mean").encode(words))
    recipe = tiny_recipe("word", epochs=8, lr=2e-3, pooling="mean")
    summary = run_tune(str(f), recipe, str(tiny_model), tmp_path / "o", progress=False)
    log = [json.loads(line) for line in (tmp_path / "o" / "train_log.jsonl").read_text().splitlines()]
    assert np.mean([r["loss"] for r in log[-4:]]) < 0.5 * np.mean([r["loss"] for r in log[:4]])
    after = mean_offdiag_cosine(load_encoder(summary["out"]).encode(words))
    assert before > 0.8 and after < 0.3


def test_same_seed_same_model(tiny_model, words_file, tmp_path):
    a = run_tune(str(words_file), tiny_recipe(), str(tiny_model), tmp_path / "a", progress=False)
    b = run_tune(str(words_file), tiny_recipe(), str(tiny_model), tmp_path / "b", progress=False)
    c = run_tune(str(words_file), tiny_recipe(seed=7), str(tiny_model), tmp_path / "c", progress=False)
    va, vb, vc = (load_encoder(s["out"]).encode(["reproducible"]) for s in (a, b, c))
    assert np.array_equal(va, vb)
    assert not np.array_equal(va, vc)


def test_drophead_and_small_data_train(tiny_model, tmp_path):
    f = tmp_path / "few.txt"
    f.write_text("alpha beta\ngamma delta\nepsilon zeta\n")
    warnings = []
    s = run_tune(str(f), tiny_recipe(drophead=0.2), str(tiny_model), tmp_path / "o", progress=False, warn=warnings.append)
    assert s["recipe"]["batch_size"] == 3 and s["steps"] == 3
    assert warnings == ["only 3 distinct strings, fewer than batch_size 16: training with batch size 3"]


def test_run_is_recorded_in_the_registry(tiny_model, words_file, tmp_path):
    s = run_tune(str(words_file), tiny_recipe(), str(tiny_model), tmp_path / "o", progress=False)
    rows = registry.runs()
    assert len(rows) == 1 and s["run_ids"] == [rows[0]["id"]]
    assert rows[0]["recipe_name"] == "phrase" and rows[0]["strings"] == 40
    assert rows[0]["data_sha256"] == s["data_sha256"] and rows[0]["metrics"]["steps"] == 9


def test_interrupt_leaves_no_output(tiny_model, words_file, tmp_path):
    def stop(step, loss):
        if step == 2:
            raise KeyboardInterrupt

    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_tune(str(words_file), tiny_recipe(), str(tiny_model), out, progress=False, on_step=stop)
    assert not out.exists()
    assert list(tmp_path.glob(".out.tmp-*")) == []
    assert [r["status"] for r in registry.runs()] == ["cancelled"]  # the registry says so; no finished run


def test_ctrl_c_in_a_real_process(tiny_model, words_file, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "encodr",
            "tune",
            str(words_file),
            "--model",
            str(tiny_model),
            "--out",
            str(out),
            "--epochs",
            "100000",
            "--batch-size",
            "8",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(
            signal.SIGINT, signal.SIG_DFL
        ),  # a suite started in the background (cmd &) ignores SIGINT, and so would the child
    )
    first = proc.stderr.readline()  # printed just before training starts
    assert "encodr: tuning" in first
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "interrupted by Ctrl-C; nothing was written" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_false_negative_filter_sends_guide_rows_and_the_loss_drops_close_pairs(tiny_model):
    from transformers import AutoTokenizer

    from encodr.methods.mirror.method import mirror_stream

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    ids = [tok(w)["input_ids"] for w in ("heart", "cardiac", "stone", "river")]
    # guide: strings 0 and 1 share a direction (cos 0.8), 2 and 3 are orthogonal to all
    guide = np.array([[1, 0, 0, 0], [0.8, 0.6, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=np.float32)
    stream = mirror_stream(tok, ids, tiny_recipe(batch_size=4, false_negative_cos=0.75), guide)
    features = stream.collate([2, 0, 1, 3], 1)
    assert torch.equal(features["guide"], torch.from_numpy(guide[[2, 0, 1, 3]]))
    # identical views: every logit ties, so a string with one excluded neighbour has 2N-3 terms
    n = 4
    v = torch.ones(n, 3)
    expected = (4 * math.log(2 * n - 3) + 4 * math.log(2 * n - 1)) / (2 * n)
    loss = MirrorInfoNCELoss(0.2, 0.75)
    assert loss(v, v.clone(), guide=torch.from_numpy(guide)).item() == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError):
        mirror_stream(tok, ids, tiny_recipe(false_negative_cos=0.75), None)


def test_false_negative_filter_below_every_cosine_leaves_no_negative(tiny_model, words_file, tmp_path):
    # A random tiny BERT gives nearly the same [CLS] vector for every string, so at a
    # threshold of 0.5 every pair is flagged: no negatives are left, every step's loss is
    # −log(1) = 0 and the weights do not move.
    recipe = tiny_recipe(false_negative_cos=0.5)
    s = run_tune(str(words_file), recipe, str(tiny_model), tmp_path / "o", progress=False)
    log = [json.loads(line) for line in (tmp_path / "o" / "train_log.jsonl").read_text().splitlines()]
    assert s["recipe"]["false_negative_cos"] == 0.5 and len(log) == s["steps"]
    assert all(r["loss"] == pytest.approx(0.0, abs=1e-6) for r in log)
    base = load_encoder(str(tiny_model), pooling="cls").encode(["myocardial infarction"])
    assert np.allclose(load_encoder(s["out"]).encode(["myocardial infarction"]), base, atol=1e-6)


def test_evaluate_sees_the_model_in_eval_mode_at_start_every_n_steps_and_at_epoch_ends(tiny_model, words_file):
    from encodr.methods.mirror.method import load_training_strings, mirror_stream
    from encodr.methods.mirror.views import tokenize
    from encodr.training import FitOptions, Trainer

    recipe = tiny_recipe()
    encoder = load_encoder(str(tiny_model), "mean", device="cpu")
    ids, _ = tokenize(encoder.tokenizer, load_training_strings(str(words_file), recipe).strings, 16)
    calls, scores = [], iter([50.0, 40.0, 60.0, 55.0, 70.0, 65.0])

    def evaluate():
        calls.append((encoder.st.training, encoder.encode(["heart attack"]).shape))
        return next(scores)

    with Trainer("cpu", "no") as trainer:
        result = trainer.fit(
            encoder.st,
            [mirror_stream(encoder.tokenizer, ids, recipe)],
            recipe.optim(),
            FitOptions(evaluate=evaluate, eval_steps=4),
        )
    # the start (step 0), then 3 epochs of 3 steps: every 4th step (4, 8) and each epoch end (3, 6, 9)
    assert [p["step"] for p in result.dev_curve] == [0, 3, 4, 6, 8, 9]
    assert {r["step"]: r["dev"] for r in result.log if "dev" in r} == {
        3: 40.0,
        4: 60.0,
        6: 55.0,
        8: 70.0,
        9: 65.0,
    }  # the run log has the curve
    assert all(not training and shape == (1, 32) for training, shape in calls)
    assert result.best == {"step": 8, "epoch": 3, "dev": 70.0} and not result.kept_start


def test_dev_selection_keeps_the_start_when_no_step_beats_it_and_says_so(tiny_model, words_file, tmp_path):
    # A random tiny BERT scores near zero on SimLex; a dev file whose gold order is the start
    # model's own cosine order gives the start ρ = 100, which no training step can beat.
    pairs = [("heart", "attack"), ("stone", "river"), ("blue", "green"), ("city", "town"), ("fast", "slow"), ("dog", "cat")]
    start = load_encoder(str(tiny_model), pooling="mean").pair_scores([a for a, _ in pairs], [b for _, b in pairs])
    ranks = np.argsort(np.argsort(start))
    assert len(set(start.tolist())) == len(pairs)  # no ties: ρ of the start is exactly 100
    dev = tmp_path / "dev.tsv"
    dev.write_text("".join(f"{r}\t{a}\t{b}\n" for r, (a, b) in zip(ranks, pairs)))
    warnings = []
    s = run_tune(
        str(words_file), tiny_recipe(pooling="mean"), str(tiny_model), tmp_path / "o", dev=str(dev), warn=warnings.append
    )
    assert s["dev_curve"][0] == {"step": 0, "epoch": 0, "dev": 100.0} and len(s["dev_curve"]) == 4  # start + 3 epoch ends
    assert s["best"]["step"] == 0
    assert any("no training step beat the starting model" in w and "saved the starting weights" in w for w in warnings)
    texts = ["myocardial infarction", "stone"]
    assert np.allclose(
        load_encoder(s["out"]).encode(texts), load_encoder(str(tiny_model), pooling="mean").encode(texts), atol=1e-6
    )
    row = registry.runs()[0]
    assert row["metrics"]["best"]["step"] == 0 and len(row["metrics"]["dev_curve"]) == 4


def test_roberta_views_mask_spans_with_its_own_mask_token_and_the_model_saves(tiny_roberta, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    from encodr.methods.mirror.method import mirror_stream
    from encodr.methods.mirror.views import tokenize

    tok = AutoTokenizer.from_pretrained(str(tiny_roberta))
    sentences = [
        "the quick brown fox jumps over the lazy dog",
        "a man is playing a guitar on the stage",
        "someone is cooking pasta in the kitchen",
        "the stock market fell sharply today",
    ]
    ids, _ = tokenize(tok, sentences, 50)
    recipe = tiny_recipe("sentence", batch_size=4)  # span mask k = 5
    features = mirror_stream(tok, ids, recipe).collate([0, 1, 2, 3], 1)
    rows = features["input_ids"]
    assert rows.shape[0] == 8 and "token_type_ids" not in features  # RoBERTa takes no token types
    assert [int((r == tok.mask_token_id).sum()) for r in rows] == [0] * 4 + [5] * 4
    assert all(r[0] == tok.bos_token_id for r in rows)  # <s> is never masked
    assert "<mask><mask><mask><mask><mask>" in tok.decode(rows[4])  # <mask>, never the text "[MASK]"
    f = tmp_path / "s.txt"
    f.write_text("\n".join(sentences))
    summary = run_tune(str(f), recipe, str(tiny_roberta), tmp_path / "out", progress=False)
    assert summary["steps"] == 3
    st = SentenceTransformer(str(tmp_path / "out"), device="cpu")
    ours = load_encoder(str(tmp_path / "out")).encode(sentences)
    assert np.abs(ours - st.encode(sentences, normalize_embeddings=True)).max() < 1e-5
