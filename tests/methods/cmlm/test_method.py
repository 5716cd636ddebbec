"""CMLM (the multilingual recipe) on a tiny model with a small multilingual vocabulary."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from encodr.methods import load_recipe
from tests.conftest import TOY_KEYS, run_cli, run_tune


def _documents(tmp_path):
    f = tmp_path / "docs.txt"
    f.write_text("\n\n".join(f"{k} one\n{k} two" for k in TOY_KEYS) + "\n")
    return f


def _mean_mlm_loss(stream, module, pairs_count: int, epochs=range(1, 6)) -> float:
    with torch.no_grad():
        return float(np.mean([float(stream.loss(module, stream.collate(list(range(pairs_count)), e))) for e in epochs]))


def test_mask_tokens_masks_the_paper_share_and_never_specials():
    from transformers import AutoTokenizer

    from encodr.methods.cmlm.method import mask_tokens
    from encodr.models import resolve

    tok = AutoTokenizer.from_pretrained(str(resolve("minilm").path))
    ids = tok("the quick brown fox jumps over the lazy dog near the old river bank today")["input_ids"]
    special = frozenset(tok.all_special_ids)
    masked, labels = mask_tokens(ids, 0.3125, tok, special, np.random.default_rng(0))
    chosen = [i for i, y in enumerate(labels) if y != -100]
    assert len(chosen) == round(0.3125 * (len(ids) - 2)) and 0 not in chosen and len(ids) - 1 not in chosen
    assert all(labels[i] == ids[i] for i in chosen) and all(masked[i] == ids[i] for i in range(len(ids)) if i not in chosen)
    counts = {"mask": 0, "other": 0}
    for seed in range(300):  # 80 / 10 / 10
        m, y = mask_tokens(ids, 0.3125, tok, special, np.random.default_rng(seed))
        for i, label in enumerate(y):
            if label != -100:
                counts["mask" if m[i] == tok.mask_token_id else "other"] += 1
    assert 0.76 < counts["mask"] / sum(counts.values()) < 0.84


def test_cmlm_loss_falls_and_the_conditioning_matters(tiny_multilingual, tmp_path):
    from encodr.methods.cmlm.head import CMLMHead
    from encodr.methods.cmlm.method import cmlm_stream
    from encodr.models import load_encoder

    recipe = load_recipe(
        "multilingual", {"lr": 3e-3, "epochs": 300, "batch_size": 10, "warmup": 0.0, "projections": 4, "max_length": 8}
    )
    encoder = load_encoder(str(tiny_multilingual), "mean", device="cpu")
    bert = encoder.transformer
    torch.manual_seed(0)
    head = CMLMHead(32, recipe.projections, bert.get_input_embeddings())
    pairs = [(f"{k} one", f"{k} two") for k in TOY_KEYS]
    shuffled = [(pairs[(i + 7) % len(pairs)][0], pairs[i][1]) for i in range(len(pairs))]  # s1 from another document
    stream, wrong = cmlm_stream(encoder, head, pairs, recipe), cmlm_stream(encoder, head, shuffled, recipe)
    module = torch.nn.ModuleDict({"encoder": encoder.st, "head": head})
    from encodr.training import Trainer

    with Trainer("cpu", "no") as trainer:
        result = trainer.fit(module, [stream], recipe.optim())
    losses = [r["loss"] for r in result.log]
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])  # the CMLM loss falls on the toy corpus
    module.eval()
    true_s1, other_s1 = _mean_mlm_loss(stream, module, len(pairs)), _mean_mlm_loss(wrong, module, len(pairs))
    assert true_s1 < 0.7 * other_s1  # the key word of s2 is only in s1: the model reads it from s1's vectors


def test_multilingual_recipe_end_to_end_with_bitext_and_dev(tiny_multilingual, tmp_path):
    from sentence_transformers import SentenceTransformer

    bitext = tmp_path / "bi.tsv"
    bitext.write_text("".join(f"{k} one\t{k} two\teng\tspa\n" for k in TOY_KEYS))
    dev = tmp_path / "dev.tsv"
    dev.write_text("".join(f"{i % 5}\t{k} one\t{k} two\n" for i, k in enumerate(TOY_KEYS[:8])))
    recipe = load_recipe(
        "multilingual", {"batch_size": 8, "bitext_batch_size": 8, "epochs": 2, "lr": 1e-3, "max_length": 8, "projections": 3}
    )
    warnings = []
    s = run_tune(
        str(_documents(tmp_path)), recipe, str(tiny_multilingual), tmp_path / "out", bitext=[str(bitext)], warn=warnings.append
    )
    # without --dev, a tenth of the bitext (2 of 20 pairs) is held out as the dev set, and the best checkpoint is kept
    assert (
        s["cmlm_pairs"] == 20 and s["bitext_pairs"] == 18 and s["bitext_dev_pairs"] == 2 and s["steps"] == 2 * 3
    )  # 20 CMLM pairs / 8 → 3 steps an epoch
    assert (
        s["dev"] == "2 held-out bitext pairs"
        and s["dev_metric"] == "acc@1"
        and s["dev_curve"][0]["step"] == 0
        and s["best"] is not None
    )
    log = [json.loads(line) for line in (tmp_path / "out" / "train_log.jsonl").read_text().splitlines()]
    assert all("loss/cmlm" in r and "loss/bitext" in r for r in log)
    assert log[0]["loss"] == pytest.approx(
        log[0]["loss/cmlm"] + log[0]["loss/bitext"], rel=1e-5
    )  # the bitext part is already × 0.2
    assert any("no MLM head in its checkpoint" in w for w in warnings)
    st = SentenceTransformer(str(tmp_path / "out"), device="cpu")
    assert st.encode(["alpha one"]).shape == (1, 32)
    # bitext alone (no TEXT), refused without either, and --bitext only for methods that take it
    s = run_tune(None, recipe, str(tiny_multilingual), tmp_path / "bi-only", bitext=[str(bitext)])
    assert s["cmlm_pairs"] == 0 and s["steps"] == 2 * 3  # 18 pairs / 8: two full batches and one of 2
    # with --dev, nothing is held out of the bitext
    s = run_tune(None, recipe, str(tiny_multilingual), tmp_path / "with-dev", bitext=[str(bitext)], dev=str(dev))
    assert s["bitext_pairs"] == 20 and s["bitext_dev_pairs"] == 0 and s["dev"] == str(dev) and s["dev_metric"] == "spearman"


def test_multilingual_recipe_needs_text_or_bitext(tiny_multilingual, tmp_path, capsys, monkeypatch):
    args = [
        "tune",
        "--recipe",
        "multilingual",
        "--model",
        str(tiny_multilingual),
        "--out",
        str(tmp_path / "o"),
        "--set",
        "default_data=none",
    ]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and "needs documents (TEXT) or --bitext FILE" in err and not (tmp_path / "o").exists()


def test_multilingual_recipe_defaults_to_the_bundled_bible_sample(tiny_multilingual, tmp_path):
    from encodr.methods import load_recipe
    from encodr.paths import bundled

    recipe = load_recipe("multilingual", {"batch_size": 512, "bitext_batch_size": 512})
    s = run_tune(None, recipe, str(tiny_multilingual), tmp_path / "o")
    assert (
        s["cmlm_pairs"] == 2261 - 7 * 8 and s["bitext_pairs"] + s["bitext_dev_pairs"] == 1938
    )  # Mark 1–8: 7 languages × 8 chapters
    assert 193 <= s["bitext_dev_pairs"] < 193 + 6  # a tenth held out as the dev set, whole English verses (6 languages each)
    assert "mark_documents.tsv" in s["data"] and "mark_bitext.tsv" in s["data"]
    # the sample ships no German (the Elberfelder 1932 is never shipped)
    langs = {line.split("\t")[3] for line in bundled("bible/mark_bitext.tsv").read_text(encoding="utf-8").splitlines()}
    assert langs == {"spa", "fra", "ita", "rus", "ara", "vie"}
