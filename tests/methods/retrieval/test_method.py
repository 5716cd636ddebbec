import json

import numpy as np
import pytest

from encodr.errors import EncodrError
from encodr.methods import load_recipe
from encodr.methods.retrieval.pairs import Passage, crop_pair, ict_pair, make_pair
from tests.conftest import run_cli

TOPICS = [
    "river",
    "mountain",
    "kitchen",
    "violin",
    "planet",
    "garden",
    "winter",
    "harbour",
    "engine",
    "forest",
    "castle",
    "desert",
]


def corpus(path, n=24):
    rows = [
        {
            "_id": f"doc{i}",
            "title": f"On the {TOPICS[i % 12]}",
            "text": f"The {TOPICS[i % 12]} number {i} is described here in words. It has a long history of "
            f"{TOPICS[(i + 1) % 12]} visits. "
            f"People say the {TOPICS[i % 12]} {i} changed every year since then. The end of note {i} is here.",
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_pairs_inverse_cloze_crops_and_titles():
    recipe = load_recipe("retrieval", {"ict_keep": 0})
    p = Passage.of("Alpha beta gamma one. Delta epsilon zeta two. Eta theta iota three.", "A title")
    rng = np.random.default_rng(0)
    query, positive = ict_pair(p, rng, keep=0)
    assert query in p.text and query not in positive and len(positive) < len(p.text)
    assert ict_pair(Passage.of("one sentence only"), rng, keep=0) is None
    for _ in range(20):
        a, b = crop_pair(p, rng, 0.2, 0.5)
        assert 1 <= len(a.split()) <= 6 and a in " ".join(p.text.split())
    assert make_pair(p, ["title"], rng, recipe) == ("A title", p.text)
    assert (
        make_pair(Passage.of("no title, one sentence"), ["title"], rng, recipe)[0] in "no title, one sentence"
    )  # falls back to a crop


def test_tune_retrieval_with_auto_dev_saves_a_sentence_transformer_and_its_dev_curve(tiny_model, tmp_path, capsys, monkeypatch):
    from sentence_transformers import SentenceTransformer

    docs = corpus(tmp_path / "docs.jsonl")
    out = tmp_path / "run"
    code, stdout, err = run_cli(
        [
            "tune",
            str(docs),
            "--recipe",
            "retrieval",
            "--model",
            str(tiny_model),
            "--dev",
            "auto",
            "--out",
            str(out),
            "--set",
            "batch_size=8",
            "--set",
            "max_length=48",
            "--set",
            "dev_queries=6",
            "--set",
            "eval_steps=2",
            "--set",
            "lr=1e-3",
            "--json",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    summary = json.loads((out / "encodr.json").read_text())
    assert summary["documents"] == 24 and summary["dev_queries"] == 6 and summary["dev_metric"] == "ndcg@10"
    assert len(summary["dev_curve"]) >= 3 and summary["dev_curve"][0]["step"] == 0  # the start, every 2 steps, the epoch end
    assert SentenceTransformer(str(out), device="cpu").encode(["a river"]).shape == (1, 32)


def test_retrieval_never_hands_back_a_worse_model(tiny_model, tmp_path):
    from encodr.models import load_encoder
    from tests.conftest import run_tune

    warnings = []
    recipe = load_recipe(
        "retrieval", {"batch_size": 8, "max_length": 48, "dev_queries": 6, "eval_steps": 1, "lr": 1e-12}
    )  # no step moves far enough to beat the start
    s = run_tune(corpus(tmp_path / "docs.jsonl"), recipe, str(tiny_model), tmp_path / "o", dev="auto", warn=warnings.append)
    assert s["best"]["step"] == 0
    assert any("no training step beat the starting model" in w and "saved the starting weights" in w for w in warnings)
    texts = ["a river", "the castle number 3"]
    assert np.allclose(
        load_encoder(s["out"]).encode(texts), load_encoder(str(tiny_model), pooling="mean").encode(texts), atol=1e-6
    )


def test_dev_holdout_documents_trains_without_the_dev_sets_documents(tiny_model, tmp_path):
    from tests.conftest import run_tune

    recipe = load_recipe(
        "retrieval", {"batch_size": 8, "max_length": 48, "dev_queries": 6, "eval_steps": 0, "dev_holdout": "documents"}
    )
    s = run_tune(corpus(tmp_path / "docs.jsonl"), recipe, str(tiny_model), tmp_path / "o", dev="auto")
    assert s["documents"] == 24 - 6 and s["dev_queries"] == 6  # the 6 pseudo-queries' documents are searched, not trained on
    with pytest.raises(EncodrError, match="dev_holdout documents leaves 0 document"):
        run_tune(
            corpus(tmp_path / "docs.jsonl"),
            load_recipe("retrieval", {"dev_queries": 24, "dev_holdout": "documents"}),
            str(tiny_model),
            tmp_path / "p",
            dev="auto",
        )


def test_the_recipe_needs_documents_and_auto_dev_is_its_own(tiny_model, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        ["tune", "--recipe", "retrieval", "--model", str(tiny_model), "--out", str(tmp_path / "x")], capsys, monkeypatch
    )
    assert code == 2 and "the retrieval recipe learns from your documents; pass a file or folder" in err
    code, _, err = run_cli(
        ["tune", "--recipe", "word", "--dev", "auto", "--model", str(tiny_model), "--out", str(tmp_path / "y")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "--dev auto works with the retrieval recipe only" in err
    with pytest.raises(EncodrError, match="crop_min 0.6 is above crop_max 0.5"):
        from encodr.methods.retrieval.pairs import retrieval_stream

        retrieval_stream(None, [], load_recipe("retrieval", {"crop_min": 0.6}))
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_matryoshka_dims_add_the_loss_of_each_prefix_to_the_full_one(tiny_model):
    import torch
    from sentence_transformers import SentenceTransformer

    from encodr.methods.retrieval.pairs import retrieval_stream

    model = SentenceTransformer(str(tiny_model), device="cpu")
    passages = [Passage.of(f"The {t} is here. It has a long {t} history. People like the {t}.") for t in TOPICS[:4]]
    plain = retrieval_stream(model.tokenizer, passages, load_recipe("retrieval", {"batch_size": 4, "max_length": 32}))
    nested = retrieval_stream(
        model.tokenizer, passages, load_recipe("retrieval", {"batch_size": 4, "max_length": 32, "matryoshka_dims": "8"})
    )
    features = plain.collate([0, 1, 2, 3], 0)
    with torch.no_grad():
        q, p = (torch.nn.functional.normalize(model(dict(f))["sentence_embedding"][:, :8], dim=-1) for f in features)
        prefix = torch.nn.functional.cross_entropy(20.0 * q @ p.T, torch.arange(4))  # InfoNCE on the first 8 dimensions, scale 20
        full = plain.loss(model, features)
        both = nested.loss(model, features)
    assert torch.allclose(both, full + prefix, atol=1e-4) and not torch.allclose(both, full)


def test_matryoshka_dims_above_the_models_dimension_are_refused_before_training(tiny_model, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        [
            "tune",
            str(corpus(tmp_path / "docs.jsonl")),
            "--recipe",
            "retrieval",
            "--model",
            str(tiny_model),
            "--out",
            str(tmp_path / "o"),
            "--set",
            "matryoshka_dims=64,16",
        ],
        capsys,
        monkeypatch,
    )
    assert (
        code == 2
        and "matryoshka_dims 64,16: the model gives 32 dimensions; list dimensions of at most 32" in err
        and "Traceback" not in err
        and not (tmp_path / "o").exists()
    )
    code, _, err = run_cli(
        [
            "tune",
            str(corpus(tmp_path / "docs.jsonl")),
            "--recipe",
            "retrieval",
            "--model",
            str(tiny_model),
            "--out",
            str(tmp_path / "o"),
            "--set",
            "matryoshka_dims=a,b",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "matryoshka_dims" in err and "comma-separated dimensions" in err
