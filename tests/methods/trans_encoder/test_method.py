"""Trans-Encoder: losses, pair reading and mining, ROC-AUC, the recipe, and one full cycle
on a tiny model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from encodr.data.pairs import mine_pairs, read_pairs
from encodr.errors import EncodrError
from encodr.methods import load_recipe
from encodr.methods.trans_encoder.config import TransEncoderRecipe
from tests.conftest import run_cli

PAIRS = [
    ("a man is playing a guitar", "a man plays the guitar"),
    ("a woman is slicing an onion", "a woman cuts an onion"),
    ("a dog runs in the park", "a cat sleeps on the sofa"),
    ("the stock market fell today", "shares dropped sharply"),
    ("children are playing football", "kids play soccer outside"),
    ("a plane is taking off", "an airplane departs"),
    ("the sun is shining", "it is raining heavily"),
    ("a man is cooking pasta", "someone is making spaghetti"),
    ("two birds sit on a wire", "the car is red"),
    ("she reads a book", "a woman is reading"),
    ("the train arrives late", "a boy eats an apple"),
    ("he is writing a letter", "a man writes a note"),
]


def test_cross_stream_loss_is_equation_2(tiny_model):
    # Eq. 2: mean soft BCE of the cross-encoder's logits against the bi-encoder's labels,
    # every pair read in both orders with the same label.
    from encodr.methods.trans_encoder.method import cross_stream
    from encodr.models import new_cross_encoder

    scorer = new_cross_encoder(str(tiny_model), 32, "cpu")
    scorer.ce.eval()
    labels = np.array([0.9, 0.2])
    stream = cross_stream(scorer, PAIRS[:2], labels, batch_size=4)
    assert stream.size == 4
    batch = stream.collate([0, 1, 2, 3], 1)
    assert batch[0][2:] == [PAIRS[0][1], PAIRS[1][1]] and batch[2].tolist() == pytest.approx([0.9, 0.2, 0.9, 0.2])
    x = scorer.logits(scorer.features(list(zip(batch[0], batch[1])))).detach().double()
    y = torch.tensor([0.9, 0.2, 0.9, 0.2], dtype=torch.float64)
    expected = -(y * torch.log(torch.sigmoid(x)) + (1 - y) * torch.log(1 - torch.sigmoid(x))).mean()
    assert float(stream.loss(scorer.ce, batch).detach()) == pytest.approx(float(expected), abs=1e-5)


def test_bi_stream_loss_is_equation_3(tiny_model):
    # Eq. 3: mean squared difference between the cosine of the two sentences and the label.
    from encodr.methods.trans_encoder.method import bi_stream
    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_model), "mean", device="cpu")
    encoder.st.eval()
    labels = np.array([0.9, 0.1, 0.5])
    stream = bi_stream(encoder, PAIRS[:3], labels, batch_size=3)
    cos = encoder.pair_scores([a for a, _ in PAIRS[:3]], [b for _, b in PAIRS[:3]]).astype(np.float64)
    expected = float(np.mean((cos - labels) ** 2))
    assert float(stream.loss(encoder.st, stream.collate([0, 1, 2], 1)).detach()) == pytest.approx(expected, abs=1e-5)


def test_mining_pairs_each_sentence_with_a_near_neighbour_and_adds_random_pairs():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(5, 16))
    vectors = np.concatenate([c + 0.01 * rng.normal(size=(4, 16)) for c in centres]).astype(np.float32)  # 5 clusters of 4
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = mine_pairs(vectors, k=3, random_fraction=0.5, seed=0)
    neighbour_pairs = [p for p in pairs[: len(pairs) - round(len(pairs) / 3)]]
    assert all(i // 4 == j // 4 for i, j in neighbour_pairs)  # the 3 nearest are the cluster mates
    assert len({(min(p), max(p)) for p in pairs}) == len(pairs) and all(i != j for i, j in pairs)
    assert any(i // 4 != j // 4 for i, j in pairs)  # random pairs cross clusters
    assert pairs == mine_pairs(vectors, k=3, random_fraction=0.5, seed=0)  # seeded


def test_read_pairs_layouts(tmp_path):
    f = tmp_path / "pairs.tsv"
    f.write_text("a b\tc d\nc d\ta b\ne f\te f\ng h\ti j\n")
    data = read_pairs(f)
    assert data.pairs == [("a b", "c d"), ("g h", "i j")] and not data.mined  # reversed duplicate and self-pair dropped
    f.write_text("one\ntwo\nthree\ntwo\n")
    data = read_pairs(f)
    assert data.mined and data.sentences == ["one", "two", "three"] and data.pairs == []
    f.write_text("4.0\ta b\tc d\n1.0\te f\tg h\n")
    assert read_pairs(f).labels_ignored


def test_roc_auc_and_binary_pair_layouts(tmp_path):
    from encodr.data.readers import read_binary_pairs
    from encodr.evaluation.similarity import roc_auc

    assert roc_auc(np.array([0.9, 0.8, 0.3, 0.1]), np.array([1, 0, 1, 0])) == pytest.approx(0.75)
    qqp = tmp_path / "qqp.tsv"
    qqp.write_text("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n1\t1\t2\tq a\tq b\t1\n2\t3\t4\tq c\tq d\t0\n")
    assert [(p.label, p.text1) for p in read_binary_pairs(qqp)] == [(1, "q a"), (0, "q c")]
    qnli = tmp_path / "qnli.tsv"
    qnli.write_text("index\tquestion\tsentence\tlabel\n0\tq\ts\tentailment\n1\tq2\ts2\tnot_entailment\n")
    assert [p.label for p in read_binary_pairs(qnli)] == [1, 0]
    plain = tmp_path / "plain.tsv"
    plain.write_text("label\ts1\ts2\n\n1\ta\tb\n0\tc\td\n")  # a header line is optional
    assert [(p.label, p.text1, p.text2) for p in read_binary_pairs(plain)] == [(1, "a", "b"), (0, "c", "d")]


@pytest.mark.parametrize(
    ("reader", "content", "message"),
    [
        ("read_pairs", "a\tb\nc\nd\te\n", "line 2 has no tab"),
        ("read_pairs", "one\none\n\n", "has 1 distinct sentence; mining pairs needs at least 3"),
        ("read_binary_pairs", "1\ta\tb\n1\tc\td\n", "ROC-AUC needs both"),
        ("read_binary_pairs", "1\ta\tb\n\n0\tc\n", "line 3 has 2 tab-separated columns, fewer than the layout's 3"),
        ("read_binary_pairs", "1\ta\tb\n2\tc\td\n", "line 2 has no 0/1 label in column 1 \\(got '2'\\)"),
    ],
)
def test_bad_pair_files_are_named(tmp_path, reader, content, message):
    from encodr.data import pairs, readers

    f = tmp_path / "bad.tsv"
    f.write_text(content)
    with pytest.raises(EncodrError, match=message):
        getattr(pairs if reader == "read_pairs" else readers, reader)(f)


def test_cross_encoder_recipe_has_table_16_defaults_and_rejects_mirror_keys():
    r = load_recipe("cross-encoder")
    assert isinstance(r, TransEncoderRecipe) and r.cycles == 3
    assert (r.cross_lr, r.cross_batch_size, r.cross_epochs, r.cross_max_length) == (2e-5, 32, 1, 64)
    assert (r.bi_lr, r.bi_batch_size, r.bi_epochs, r.bi_max_length) == (5e-5, 128, 10, 32)
    with pytest.raises(EncodrError, match="unknown recipe key 'temperature' for method 'trans_encoder'"):
        load_recipe("cross-encoder", {"temperature": 0.1})
    with pytest.raises(EncodrError, match="recipe key 'bi_batch_size' must be 2 or more"):
        load_recipe("cross-encoder", {"bi_batch_size": 1})


@pytest.fixture(scope="module")
def spread_model(tmp_path_factory):
    """A tiny BERT (2 layers, hidden 32) initialised with std 0.2 instead of 0.02, so its
    mean-pooled cosines of different pairs differ (0.65–0.98 on PAIRS) and make usable
    pseudo-labels; with std 0.02 they are all ≈ 0.99999."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from encodr.models import resolve

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("spread-bert")
    tokenizer = AutoTokenizer.from_pretrained(str(resolve("minilm").path))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        initializer_range=0.2,
    )
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _tiny_recipe(**extra):
    settings = {
        "pooling": "mean",
        "cycles": 1,
        "cross_epochs": 40,
        "cross_lr": 1e-3,
        "cross_batch_size": 8,
        "bi_epochs": 2,
        "bi_lr": 1e-3,
        "bi_batch_size": 4,
        "warmup": 0.0,
        "eval_steps": 1000,
        "cross_max_length": 24,
        "bi_max_length": 12,
    }
    settings.update(extra)
    return load_recipe("cross-encoder", settings)


def test_one_cycle_writes_both_models_and_the_cross_encoder_learns_its_pseudo_labels(spread_model, tmp_path):
    from scipy.stats import spearmanr
    from sentence_transformers import CrossEncoder, SentenceTransformer

    from encodr.models import load_cross, load_encoder
    from encodr.registry import runs
    from tests.conftest import run_trans_encoder

    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{a}\t{b}\n" for a, b in PAIRS))
    out = tmp_path / "tenc"
    summary = run_trans_encoder(
        str(data), _tiny_recipe(), [str(spread_model)], out, device="cpu", progress=False, warn=lambda m: None
    )

    assert (out / "bi" / "modules.json").is_file() and (out / "cross" / "config.json").is_file()
    a, b = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    bi = SentenceTransformer(str(out / "bi"), device="cpu")
    assert bi.encode(a).shape == (len(PAIRS), 32)
    ce = CrossEncoder(str(out / "cross"), device="cpu")
    assert ce.predict(list(zip(a, b))).shape == (len(PAIRS),)

    # the cross-encoder learned the start bi-encoder's cosine (clipped to [0, 1]) as soft labels
    labels = np.clip(load_encoder(str(spread_model), pooling="mean", max_length=12, device="cpu").pair_scores(a, b), 0, 1)
    assert labels.max() - labels.min() > 0.2
    learned = load_cross(str(out / "cross"), device="cpu").pair_scores(a, b)
    assert spearmanr(learned, labels).statistic > 0.5

    assert summary["selection"].startswith("no dev set") and [h["phase"] for h in summary["chains"][0]["history"]] == [
        "cross",
        "bi",
    ]
    assert {r["kind"] for r in runs()} == {"tenc-bi", "tenc-cross"}
    assert json.loads((out / "encodr.json").read_text())["pairs"] == len(PAIRS)


def test_mutual_distillation_with_dev_selection_and_mined_pairs(tiny_model, tmp_path):
    from tests.conftest import run_trans_encoder

    sentences = tmp_path / "sentences.txt"
    sentences.write_text("".join(f"{s}\n" for p in PAIRS for s in p))
    dev = tmp_path / "dev.tsv"
    dev.write_text("".join(f"{i % 5}\t{a}\t{b}\n" for i, (a, b) in enumerate(PAIRS)))
    out = tmp_path / "mutual"
    recipe = _tiny_recipe(cross_epochs=2, bi_epochs=1, eval_steps=2, mine_k=3)
    summary = run_trans_encoder(
        str(sentences), recipe, [str(tiny_model), str(tiny_model)], out, device="cpu", dev=str(dev), progress=False
    )
    assert summary["mined"] and summary["mutual"] and summary["pairs"] >= len(PAIRS)
    assert [c["bi"].rsplit("/", 1)[-1] for c in summary["chains"]] == ["bi", "bi-2"]
    for name in ("bi", "cross", "bi-2", "cross-2"):
        assert (out / name / "config.json").is_file()
    history = summary["chains"][1]["history"]
    assert all(h["dev"] is not None and h["evaluations"] for h in history)  # selection on dev, every 2 steps + epoch ends
    phases = [p["phase"] for p in summary["phases"]]
    assert phases[:2] == ["mine pairs", "label (bi)"] and "label (cross)" in phases
    # two chains on the same base model still get their own cross-encoder (own seed: head and order)
    from sentence_transformers import CrossEncoder

    pair = [PAIRS[0]]
    assert (
        abs(float(CrossEncoder(str(out / "cross")).predict(pair)[0]) - float(CrossEncoder(str(out / "cross-2")).predict(pair)[0]))
        > 1e-6
    )


def test_cli_eval_and_score_with_a_cross_encoder(tiny_model, tmp_path, capsys, monkeypatch):
    from encodr.models import new_cross_encoder

    cross = tmp_path / "cross"
    new_cross_encoder(str(tiny_model), 24, "cpu").save(cross)
    sts = tmp_path / "sts.tsv"
    sts.write_text("".join(f"{i % 5}\t{a}\t{b}\n" for i, (a, b) in enumerate(PAIRS)))
    code, out, err = run_cli(["eval", "sts", "--data", str(sts), "--model", str(cross), "--cross", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["scores"][0]["n"] == len(PAIRS)
    binary = tmp_path / "binary.tsv"
    binary.write_text("".join(f"{i % 2}\t{a}\t{b}\n" for i, (a, b) in enumerate(PAIRS)))
    code, out, err = run_cli(["eval", "pairs", str(binary), "--model", str(tiny_model), "--json"], capsys, monkeypatch)
    assert code == 0, err
    score = json.loads(out)["scores"][0]
    assert score["metric"] == "roc_auc" and 0 <= score["value"] <= 100
    code, out, err = run_cli(["score", "a cat", "a cat", "--model", str(cross), "--cross", "--json"], capsys, monkeypatch)
    assert code == 0 and 0 < json.loads(out)["score"] < 1
    code, out, err = run_cli(["eval", "sts", "--data", str(sts), "--model", str(cross)], capsys, monkeypatch)
    assert code == 2 and "is a cross-encoder" in err and "--cross" in err
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a cat\na dog\n")
    code, out, err = run_cli(["index", str(corpus), "--model", str(cross), "--out", str(tmp_path / "i")], capsys, monkeypatch)
    assert code == 2 and "is a cross-encoder: it scores pairs but does not embed texts; use a bi-encoder here" in err
    code, out, err = run_cli(["eval", "linking", "--model", str(cross), "--cross"], capsys, monkeypatch)
    assert code == 2 and "--cross works with" in err
    code, out, err = run_cli(["tune", str(sts), "--recipe", "word", "--model", "a", "--model", "b"], capsys, monkeypatch)
    assert code == 2 and "mutual distillation" in err
    code, out, err = run_cli(["tune", str(sts), "--recipe", "word", "--bitext", str(sts)], capsys, monkeypatch)
    assert code == 2 and "does not take --bitext" in err and "encodr: tuning" not in err
    code, out, err = run_cli(
        ["tune", str(sts), "--recipe", "cross-encoder", "--dev", str(tmp_path / "nope.tsv")], capsys, monkeypatch
    )
    assert code == 2 and "nope.tsv: no such file" in err and "Traceback" not in err
    flat = tmp_path / "flat.tsv"
    flat.write_text("3\ta cat\ta dog\n3\ta man\ta woman\n")
    code, out, err = run_cli(
        ["tune", str(sts), "--recipe", "cross-encoder", "--dev", str(flat), "--out", str(tmp_path / "te-flat")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "at least two different gold scores" in err and not (tmp_path / "te-flat").exists()
    code, out, err = run_cli(["eval", "pairs", "--model", str(tiny_model)], capsys, monkeypatch)
    assert code == 2 and "'encodr eval pairs' needs a FILE" in err


def test_the_starting_bi_encoder_is_saved_when_no_trained_one_beats_it_on_dev(spread_model, tmp_path):
    # A dev file whose gold order is the start model's own cosine order gives the start ρ = 100:
    # no trained bi-encoder can beat it, so bi/ holds the starting weights and the run says so.
    from encodr.models import load_encoder
    from tests.conftest import run_trans_encoder

    start = load_encoder(str(spread_model), pooling="mean", max_length=12, device="cpu")
    a, b = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    cos = start.pair_scores(a, b)
    assert len(set(cos.tolist())) == len(PAIRS)
    dev = tmp_path / "dev.tsv"
    dev.write_text("".join(f"{r}\t{x}\t{y}\n" for r, x, y in zip(np.argsort(np.argsort(cos)), a, b)))
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{x}\t{y}\n" for x, y in PAIRS))
    warnings = []
    s = run_trans_encoder(
        str(data),
        _tiny_recipe(eval_steps=1),
        [str(spread_model)],
        tmp_path / "tenc",
        device="cpu",
        dev=str(dev),
        warn=warnings.append,
    )
    chain = s["chains"][0]
    assert chain["start_dev"] == pytest.approx(100.0) and chain["best"]["bi"] == {"dev": 100.0, "cycle": 0}
    assert any("no trained bi-encoder beat the starting model" in w for w in warnings)
    saved = load_encoder(str(tmp_path / "tenc" / "bi"), device="cpu").encode(a)
    assert np.allclose(saved, start.encode(a), atol=1e-6)
