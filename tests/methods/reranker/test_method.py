"""The re-ranker recipe: pairs mined from documents (inverse-cloze query, its passage, the
bi-encoder's nearest others), one order, known positives kept through every labelling, and a
saved CrossEncoder."""

from __future__ import annotations

import json

import numpy as np

from encodr.methods import load_recipe
from tests.conftest import run_tune
from tests.methods.retrieval.test_method import corpus


def test_pairs_are_mined_one_order_and_the_positive_keeps_its_label(tiny_model, tmp_path, monkeypatch):
    from sentence_transformers import CrossEncoder

    from encodr.methods.trans_encoder import method as trans

    seen = {}
    original_label, original_stream = trans.TransEncoderRun.label, trans.cross_stream

    def label(self, kind, scorers, cycle):
        labels = original_label(self, kind, scorers, cycle)
        seen.setdefault("labels", []).append((kind, labels.copy()))
        seen["pairs"] = list(self.pairs)
        return labels

    def stream(scorer, pairs, labels, batch_size, symmetric=True):
        s = original_stream(scorer, pairs, labels, batch_size, symmetric)
        seen["examples"] = s.size
        return s

    monkeypatch.setattr(trans.TransEncoderRun, "label", label)
    monkeypatch.setattr(trans, "cross_stream", stream)
    recipe = load_recipe(
        "reranker",
        {
            "queries": 5,
            "candidates": 3,
            "ict_keep": 0,
            "bi_max_length": 48,
            "cross_max_length": 96,
            "cross_batch_size": 4,
            "bi_batch_size": 4,
            "cross_loss": "bce",
        },
    )
    warnings = []
    summary = run_tune(corpus(tmp_path / "docs.jsonl"), recipe, str(tiny_model), tmp_path / "o", warn=warnings.append)
    pairs = seen["pairs"]
    assert len(pairs) == 15 and summary["pairs"] == 15  # 5 queries × (its passage + 2 others)
    for q in range(5):
        query, positive = pairs[3 * q]
        assert query not in positive  # inverse cloze: the sentence is cut out of its passage
        assert all(p[0] == query and p[1] != positive for p in pairs[3 * q + 1 : 3 * q + 3])
    assert seen["examples"] == 15  # one order: a query, then a passage
    for kind, labels in seen["labels"]:
        assert np.allclose(labels[::3], 1.0), kind  # the known positive, whoever labels
        assert not np.allclose(np.delete(labels, np.arange(0, 15, 3)), 1.0)
    from encodr.models import load_encoder

    bi = load_encoder(str(tiny_model), recipe.pooling, recipe.raw_pooling, recipe.bi_max_length, "cpu")
    expected = np.clip(bi.pair_scores([a for a, _ in pairs], [b for _, b in pairs]), 0, 1)
    expected[::3] = 1.0
    kind, first = seen["labels"][0]
    assert kind == "bi" and np.allclose(
        first, expected, atol=1e-4
    )  # the mining's cosines serve as the first labels: what labelling would give
    assert CrossEncoder(str(tmp_path / "o" / "cross"), device="cpu").predict([("a query", "a passage")]).shape == (1,)
    assert any("takes no dev" in w for w in warnings)
    assert json.loads((tmp_path / "o" / "encodr.json").read_text())["mined"] is True


def test_listnet_ranks_each_querys_group_against_its_labels_over_tau(tiny_model):
    # a batch is whole groups; the loss is the cross-entropy between softmax(labels / τ) and softmax(logits) over each group
    import torch

    from encodr.methods.reranker.method import listwise_stream
    from encodr.models import new_cross_encoder

    scorer = new_cross_encoder(str(tiny_model), 32, "cpu")
    pairs = [("q1", "own 1"), ("q1", "near"), ("q1", "far"), ("q2", "own 2"), ("q2", "other")]
    groups = [range(0, 3), range(3, 5)]
    labels = np.array([1.0, 0.7, 0.2, 1.0, 0.6])
    stream = listwise_stream(scorer, pairs, groups, labels, queries_per_step=2, temperature=0.1)
    assert stream.size == 2 and stream.batch_size == 2  # queries, not pairs
    batch = stream.collate([1, 0], 0)
    queries, passages, targets = batch
    assert queries == ["q2", "q1"] and passages == [["own 2", "other"], ["own 1", "near", "far"]]
    assert torch.allclose(targets[0], torch.tensor([10.0, 6.0])) and torch.allclose(targets[1], torch.tensor([10.0, 7.0, 2.0]))
    scorer.ce.eval()  # no dropout: the two computations see the same logits
    with torch.no_grad():
        loss = stream.loss(scorer.ce, batch)
        expected = []
        for g in (groups[1], groups[0]):
            logits = torch.tensor(
                scorer.ce.predict([pairs[j] for j in g], activation_fn=torch.nn.Identity()), dtype=torch.float32
            )
            target = torch.softmax(torch.tensor(labels[list(g)] / 0.1, dtype=torch.float32), 0)
            expected.append(-(target * torch.log_softmax(logits, 0)).sum())
    assert abs(float(loss) - float(torch.stack(expected).mean())) < 1e-4


def test_the_default_run_trains_listwise_on_whole_groups(tiny_model, tmp_path, monkeypatch):
    from sentence_transformers import CrossEncoder

    from encodr.methods.reranker import method

    seen = {}
    original = method.listwise_stream

    def stream(scorer, pairs, groups, labels, queries_per_step, temperature):
        seen.update(groups=list(groups), per_step=queries_per_step, tau=temperature, pairs=len(pairs))
        return original(scorer, pairs, groups, labels, queries_per_step, temperature)

    monkeypatch.setattr(method, "listwise_stream", stream)
    recipe = load_recipe(
        "reranker",
        {
            "queries": 4,
            "candidates": 3,
            "ict_keep": 0,
            "bi_max_length": 48,
            "cross_max_length": 96,
            "cross_batch_size": 6,
            "bi_batch_size": 4,
        },
    )
    assert recipe.cross_loss == "listnet"
    run_tune(corpus(tmp_path / "docs.jsonl"), recipe, str(tiny_model), tmp_path / "o")
    assert seen["groups"] == [range(0, 3), range(3, 6), range(6, 9), range(9, 12)] and seen["pairs"] == 12
    assert seen["per_step"] == 2 and seen["tau"] == recipe.label_temperature  # 6 pairs a step: two groups of 3
    assert CrossEncoder(str(tmp_path / "o" / "cross"), device="cpu").predict([("a query", "a passage")]).shape == (1,)


def test_negatives_come_from_other_documents():
    # the query's own document's other passages share its text (the splitter's overlap): never negatives
    from encodr.methods.reranker.method import mine

    class Stub:
        def prompt(self, role):
            return ""

        def encode(self, texts, prompt="", on_batch=None):
            table = {"q": [1, 0], "own": [0.9, 0.1], "same doc": [1, 0], "near": [0.8, 0.2], "far": [0, 1]}
            v = np.array([table[t] for t in texts], dtype=np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    passages = ["own", "same doc", "near", "far"]
    found, scores, _ = mine(Stub(), passages, [("q", "own", 0)], candidates=3, document_of=[0, 0, 1, 2])
    assert found == [[2, 3]] and np.allclose(scores, [[0.8 / np.hypot(0.8, 0.2), 0.0]], atol=1e-6)
    # positive-aware: a negative closer to the query than c × its positive's cosine is dropped
    own = 0.9 / np.hypot(0.9, 0.1)  # cos(q, own)
    near = 0.8 / np.hypot(0.8, 0.2)
    assert near < own
    found, scores, _ = mine(Stub(), passages, [("q", "own", 0)], candidates=3, document_of=[0, 0, 1, 2], ceiling=0.99)
    assert found == [[2, 3]]  # near < 0.99 × own: kept
    found, scores, _ = mine(
        Stub(), passages, [("q", "own", 0)], candidates=3, document_of=[0, 0, 1, 2], ceiling=near / own - 1e-3
    )
    assert found == [[3]] and np.allclose(scores, [[0.0]], atol=1e-6)  # near is above the ceiling: only far is left


def test_documents_without_two_sentence_passages_are_refused(tiny_model, tmp_path):
    import pytest

    from encodr.errors import EncodrError

    docs = tmp_path / "short.jsonl"
    docs.write_text("".join(json.dumps({"_id": str(i), "text": f"only one sentence here number {i}"}) + "\n" for i in range(4)))
    with pytest.raises(
        EncodrError, match="0 passage\\(s\\) of two or more sentences; the re-ranker's pseudo-queries need at least 2"
    ):
        run_tune(docs, load_recipe("reranker", {"bi_max_length": 48}), str(tiny_model), tmp_path / "o")
    assert not (tmp_path / "o").exists()  # nothing half-written
