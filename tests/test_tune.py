"""End-to-end Mirror-BERT tuning on a tiny model."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch

from encodr import recipes, registry
from encodr.data.text import top_words
from encodr.models import load_encoder
from encodr.tune import run_tune

FAST = {"batch_size": 16, "epochs": 3, "lr": 5e-4, "max_length": 16}


def tiny_recipe(name="phrase", **extra):
    return recipes.load(name, {**FAST, **extra})


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
    assert len(rows) == 1 and rows[0]["id"] == s["run_id"]
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
    assert registry.runs() == []


def test_ctrl_c_in_a_real_process(tiny_model, words_file, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "encodr", "tune", str(words_file), "--model", str(tiny_model), "--out", str(out),
         "--epochs", "100000", "--batch-size", "8"],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    first = proc.stderr.readline()  # printed just before training starts
    assert "encodr: tuning" in first
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "interrupted by Ctrl-C; nothing was written" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_false_negative_filter_marks_close_pairs_in_each_batch(tiny_model):
    from transformers import AutoTokenizer

    from encodr.train import mirror_batches

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    ids = [tok(w)["input_ids"] for w in ("heart", "cardiac", "stone", "river")]
    # guide: strings 0 and 1 share a direction (cos 0.8), 2 and 3 are orthogonal to all
    guide = np.array([[1, 0, 0, 0], [0.8, 0.6, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=np.float32)
    epoch = mirror_batches(tok, ids, tiny_recipe(batch_size=4, false_negative_cos=0.75), guide)
    (n, features), = list(epoch(np.random.default_rng(0)))
    flagged = features["false_negatives"]
    assert n == 4 and flagged.shape == (4, 4) and flagged.dtype == torch.bool
    pairs = {(i, j) for i in range(4) for j in range(4) if i != j and flagged[i, j]}
    words = [tok.decode(features["input_ids"][i][1:2]) for i in range(4)]
    assert {frozenset((words[i], words[j])) for i, j in pairs} == {frozenset(("heart", "cardiac"))}
    with pytest.raises(ValueError):
        mirror_batches(tok, ids, tiny_recipe(false_negative_cos=0.75), None)


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


def test_on_eval_sees_the_model_in_eval_mode_every_n_steps_and_at_epoch_ends(tiny_model, words_file, tmp_path):
    calls = []

    def on_eval(step, encoder):
        calls.append((step, encoder.st.training, encoder.encode(["heart attack"]).shape))

    run_tune(str(words_file), tiny_recipe(), str(tiny_model), tmp_path / "o", progress=False, eval_steps=4, on_eval=on_eval)
    # 3 epochs of 3 steps: every 4th step (4, 8) and each epoch end (3, 6, 9)
    assert [c[0] for c in calls] == [3, 4, 6, 8, 9]
    assert all(not training and shape == (1, 32) for _, training, shape in calls)


def test_roberta_views_mask_spans_with_its_own_mask_token_and_the_model_saves(tiny_roberta, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    from encodr.train import mirror_batches, tokenize

    tok = AutoTokenizer.from_pretrained(str(tiny_roberta))
    sentences = ["the quick brown fox jumps over the lazy dog", "a man is playing a guitar on the stage",
                 "someone is cooking pasta in the kitchen", "the stock market fell sharply today"]  # fmt: skip
    ids, _ = tokenize(tok, sentences, 50)
    recipe = tiny_recipe("sentence", batch_size=4)  # span mask k = 5
    n, features = next(mirror_batches(tok, ids, recipe)(np.random.default_rng(0)))
    rows = features["input_ids"]
    assert n == 4 and "token_type_ids" not in features  # RoBERTa takes no token types
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
