"""The judged recipe on tiny models: never worse than the start (each component kept only when
cross-validation says it helps; too few judged queries, random grades or shuffled qrels give the start
back, said in one line), its outputs load as sentence-transformers models, and the search settings it
learns are used by default."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from encodr.methods import load_recipe
from tests.conftest import run_cli, run_tune

FAST = {
    "max_length": 32,
    "query_max_length": 16,
    "cross_max_length": 48,
    "distill_queries": 10,
    "distill_candidates": 3,
    "epochs": 1,
    "rerank_depths": "5",
    "rerank_weights": "1",
}


def toy_beir(root, queries: int, seed: int = 0, shuffled: bool = False):
    """A BEIR folder of 60 documents of 12 random words; each query is 3 words of its document
    (``shuffled``: judged relevant to a random other document instead: random grades)."""
    from encodr.data.text import top_words

    rng = random.Random(seed)
    words = top_words(2000)[300:]
    docs = [rng.sample(words, 12) for _ in range(60)]
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "title": "", "text": " ".join(d)}) + "\n" for i, d in enumerate(docs))
    )
    rows, lines = [], []
    for q in range(queries):
        d = rng.randrange(len(docs))
        lines.append(json.dumps({"_id": f"q{q}", "text": " ".join(rng.sample(docs[d], 3))}) + "\n")
        rows.append(f"q{q}\td{rng.randrange(len(docs)) if shuffled else d}\t1\n")
    (root / "queries.jsonl").write_text("".join(lines))
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(rows))
    return root


def vectors(path, texts):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu").encode(texts)


def test_too_few_judged_queries_give_the_start_back_in_one_line(tmp_path, tiny_model):
    data = toy_beir(tmp_path / "five", 5)
    warnings = []
    summary = run_tune(data, load_recipe("judged", FAST), str(tiny_model), tmp_path / "m", warn=warnings.append)
    assert summary["kept"] == "start"
    assert len(warnings) == 1 and "too few to cross-validate" in warnings[0] and "pass no_dev to train" in warnings[0]
    from encodr.models import load_encoder

    base = load_encoder(str(tiny_model), "auto", "mean", 32)  # the saved model encodes as the starting model does
    assert np.allclose(vectors(tmp_path / "m", ["pump pressure"]), base.encode(["pump pressure"]), atol=1e-5)


def test_no_dev_trains_without_selection(tmp_path, tiny_model):
    data = toy_beir(tmp_path / "five", 5)
    summary = run_tune(
        data,
        load_recipe("judged", {**FAST, "cross": False}),
        str(tiny_model),
        tmp_path / "m",
        no_dev=True,
        warn=lambda line: None,
    )
    assert summary["kept"] == ["bi-encoder"] and "without selection" in summary["bi-encoder"]


def random_grades(root, queries: int, seed: int = 0):
    """A BEIR folder like :func:`toy_beir`, each query judged relevant to a random document with a
    random grade (1 or 2): random grades."""
    toy_beir(root, queries, seed, shuffled=True)
    rng = random.Random(seed + 1)
    lines = (root / "qrels" / "train.tsv").read_text().splitlines()
    rows = [f"{q}\t{d}\t{rng.choice((1, 2))}" for q, d, _ in (line.split("\t") for line in lines[1:])]
    (root / "qrels" / "train.tsv").write_text("\n".join([lines[0], *rows]) + "\n")
    return root


def shuffled_qrels(root, queries: int, seed: int = 0):
    """A BEIR folder whose qrels are :func:`toy_beir`'s true ones, shuffled among the queries."""
    toy_beir(root, queries, seed)
    lines = (root / "qrels" / "train.tsv").read_text().splitlines()
    docs = [line.split("\t")[1] for line in lines[1:]]
    random.Random(seed).shuffle(docs)
    rows = [f"q{i}\t{d}\t1" for i, d in enumerate(docs)]
    (root / "qrels" / "train.tsv").write_text("\n".join([lines[0], *rows]) + "\n")
    return root


@pytest.mark.parametrize("make", [random_grades, shuffled_qrels], ids=["random grades", "shuffled qrels"])
def test_judgments_without_signal_keep_the_start_and_say_so(tmp_path, tiny_model, make):
    data = make(tmp_path / "noise", 60)
    warnings = []
    summary = run_tune(data, load_recipe("judged", FAST), str(tiny_model), tmp_path / "m", warn=warnings.append)
    for c in summary["components"]:
        assert c["kept"] == (c["after"] > c["before"] and c["p"] < 0.1)  # kept only when cross-validation gains
    assert summary["kept"] == "start" and summary["search"] == {}
    assert [w for w in warnings if "nothing beat the starting model in 2-fold cross-validation" in w]
    assert not (tmp_path / "m" / "cross").exists()


def test_a_real_signal_is_learned_and_every_output_loads(tmp_path, tiny_model):
    from sentence_transformers import CrossEncoder, SentenceTransformer

    data = toy_beir(tmp_path / "beir", 150)
    recipe = load_recipe("judged", {**FAST, "epochs": 3, "lr": 1e-3, "cross": True})
    summary = run_tune(data, recipe, str(tiny_model), tmp_path / "m", warn=lambda line: None)
    names = [c["name"] for c in summary["components"]]
    assert names == ["bi-encoder", "seeded loop", "fusion weight", "re-ranker", "query adapter"]
    bi = summary["components"][0]
    assert bi["kept"] and bi["after"] > bi["before"] + 10  # the queries' words are in their documents: dense search learns it
    assert summary["queries"] > 0 and summary["folds"] == 2 and summary["left_out"]["test"] > 0  # the test fold is never read
    assert {"index", "train", "final train", "search"} <= set(summary["seconds"])  # where the time went
    assert SentenceTransformer(str(tmp_path / "m"), device="cpu").encode(["a"]).shape == (1, 32)
    if (tmp_path / "m" / "cross").exists():
        assert CrossEncoder(str(tmp_path / "m" / "cross"), device="cpu").predict([("a", "b")]).shape == (1,)
    record = json.loads((tmp_path / "m" / "encodr.json").read_text())
    assert record["method"] == "judged" and record["bi-encoder"].startswith("cross-validated dense nDCG@10")


def test_the_cli_refuses_a_judged_run_without_judgments_and_other_recipes_refuse_index(tmp_path, tiny_model, capsys, monkeypatch):
    code, _, err = run_cli(
        ["tune", "--recipe", "judged", "--model", str(tiny_model), "--out", str(tmp_path / "m")], capsys, monkeypatch
    )
    assert code == 2 and "pass --index INDEX" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["tune", "--recipe", "sentence", "--index", "kb", "--out", str(tmp_path / "n")], capsys, monkeypatch)
    assert code == 2 and "does not take --index" in err
    assert not (tmp_path / "m").exists() and not (tmp_path / "n").exists()


def test_tuned_search_settings_are_the_defaults_a_search_uses(tmp_path, tiny_model, tiny_cross):
    from encodr.core import commands
    from encodr.core.requests import IndexRequest
    from encodr.index import Searcher
    from encodr.index.judgments import write_tuned
    from encodr.index.options import SearchOptions
    from encodr.models import load_cross
    from encodr.models.cross import CrossScorer

    corpus = tmp_path / "c.txt"
    corpus.write_text("the pump pressure\nvalve grease\nboiler water\n")
    commands.index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(tmp_path / "idx"), lang="eng"))
    searcher = Searcher(tmp_path / "idx")
    assert searcher.resolve(SearchOptions()).fusion_weight is None  # the fusion's declared weights
    write_tuned(tmp_path / "idx", "another model's weights", {"fusion_weight": 0.8}, "elsewhere")
    searcher.tuned = __import__("encodr.index.search", fromlist=["tuned_search"]).tuned_search(searcher.index)
    assert searcher.resolve(SearchOptions()).fusion_weight is None  # tuned for another model: not this index's
    write_tuned(tmp_path / "idx", searcher.fingerprint, {"fusion_weight": 0.8}, "here")
    fresh = Searcher(tmp_path / "idx")
    assert (
        fresh.resolve(SearchOptions()).fusion_weight == 0.8
        and fresh.resolve(SearchOptions(fusion_weight=0.3)).fusion_weight == 0.3
    )
    cross = load_cross(str(tiny_cross))
    tuned = CrossScorer(cross.ce, "tuned", {"depth": 7, "weight": 0.25})
    tuned.save(tmp_path / "cross")
    again = load_cross(str(tmp_path / "cross"))
    settled = fresh.resolve(SearchOptions(), again)
    assert (settled.rerank_depth, settled.rerank_weight) == (7, 0.25)
    assert (
        fresh.resolve(SearchOptions(rerank_depth=3), again).rerank_depth == 3
        and fresh.resolve(SearchOptions(), cross).rerank_depth == 50
    )


def test_negatives_mined_from_the_start_index_are_never_judged_relevant(tmp_path, tiny_model):
    from encodr.methods.judged.data import read_judged
    from encodr.methods.judged.method import corpus_index, indexed_examples
    from encodr.models import load_encoder

    root = toy_beir(tmp_path / "beir", 40)
    lines = (root / "qrels" / "train.tsv").read_text().splitlines()
    rejected = [f"{line.split()[0]}\td59\t0" for line in lines[1:] if line.split()[1] != "d59"]
    (root / "qrels" / "train.tsv").write_text("\n".join([*lines, *rejected]) + "\n")  # d59 judged not relevant
    data = read_judged(None, str(root), tmp_path / "judged")
    recipe = load_recipe("judged", FAST)
    with corpus_index(data.folder, load_encoder(str(tiny_model), "auto", "mean", 32)) as dev:
        items = indexed_examples(data, dev, recipe, 3)
    relevant = {}
    for j in data.judgments:
        if j.grade > 0:
            relevant.setdefault(j.query, set()).add(data.corpus[j.doc])
    assert items and all(len(e.negatives) <= 3 and not relevant[e.query] & set(e.negatives) for e in items)
    other = [e for e in items if data.corpus["d59"] not in relevant[e.query]]
    assert other and all(e.negatives[0] == data.corpus["d59"] for e in other)  # the one judged not relevant comes first


def test_the_runs_own_indexes_encode_through_onnx_with_torchs_vectors_and_leave_the_workspace_alone(
    tmp_path, tiny_model, monkeypatch
):
    from encodr.methods.judged.method import scoring_encoder
    from encodr.models import load_encoder

    monkeypatch.setenv("ENCODR_HOME", str(tmp_path / "empty-home"))  # not the test's workspace, which holds tiny_model's exports
    encoder = load_encoder(str(tiny_model), "auto", "mean", 32)
    texts = ["the pump lost pressure", "valve grease and a boiler", "a"]
    scoring = scoring_encoder(encoder, tmp_path / "run" / "onnx", has_bf16=lambda: False)
    assert scoring.backend == "onnx" and scoring.fingerprint == encoder.fingerprint
    assert np.min(np.sum(scoring.encode(texts) * encoder.encode(texts), axis=1)) > 0.9999
    assert (tmp_path / "run" / "onnx" / "model.onnx").is_file()
    assert not list((tmp_path / "empty-home").rglob("*.onnx"))  # a fold's model is not cached for later runs


def test_on_a_bfloat16_cpu_the_runs_own_indexes_encode_in_bfloat16_only_where_it_keeps_the_vectors(tmp_path, tiny_model):
    from encodr.methods.judged import method
    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_model), "auto", "mean", 32)
    texts = ["the pump lost pressure", "valve grease and a boiler", "a"]
    scoring = method.scoring_encoder(encoder, tmp_path / "onnx", has_bf16=lambda: True)
    assert scoring.backend == "torch-bf16" and scoring.st is encoder.st and scoring.fingerprint == encoder.fingerprint
    assert np.min(np.sum(scoring.encode(texts) * encoder.encode(texts), axis=1)) > 0.999
    assert not (tmp_path / "onnx").exists()  # nothing exported

    import encodr.models.encoder as encoders

    class Moved(encoders.TorchForward):  # bfloat16 that moves the vectors
        def __call__(self, features):
            vectors = super().__call__(features)
            return np.roll(vectors, 1, axis=1) if self.bf16 else vectors

    with pytest.MonkeyPatch.context() as patch:  # … is not used: ONNX float32 instead
        patch.setattr(encoders, "TorchForward", Moved)
        assert method.scoring_encoder(encoder, tmp_path / "onnx", has_bf16=lambda: True).backend == "onnx"


def test_a_rerankers_run_scores_in_bfloat16_only_on_a_bfloat16_cpu_and_only_where_its_scores_hold(tiny_cross):
    from encodr.methods.judged import method
    from encodr.models.cross import load_cross

    cross = load_cross(str(tiny_cross), device="cpu")
    texts = ["the pump lost pressure", "valve grease and a boiler", "a"]
    assert not method.bf16_keeps_scores(cross, has_bf16=lambda: False)
    assert method.bf16_keeps_scores(cross, has_bf16=lambda: True)
    fast, exact = method.CachedScores(cross, bf16=True), method.CachedScores(cross)
    scored = fast.query_scores("pump", texts)
    assert scored.dtype == np.float32 and np.max(np.abs(scored - exact.query_scores("pump", texts))) <= method.CROSS_AGREEMENT
    assert fast.query_scores("pump", texts[::-1])[0] == scored[-1]  # computed once, read again

    with pytest.MonkeyPatch.context() as patch:  # bfloat16 that moves the scores: float32 kept
        patch.setattr(method, "CROSS_AGREEMENT", -1.0)
        assert not method.bf16_keeps_scores(cross, has_bf16=lambda: True)


def test_the_keyword_side_is_searched_once_for_every_fusion_weight():
    from encodr.index.filters import Where
    from encodr.methods.judged.method import remembered

    calls = []

    def keyword_search(queries, k, where=None, query_langs=None, stats="shard"):
        calls.append(tuple(queries))
        return np.full((len(queries), k), float(len(calls))), np.zeros((len(queries), k), dtype=np.int64)

    search = remembered(keyword_search)
    first = search(["pump", "valve"], 5, Where(), ["eng", "eng"])
    again = search(["pump", "valve"], 5, Where(), ["eng", "eng"])
    assert again[0] is first[0] and len(calls) == 1
    assert search(["pump"], 5, Where(), ["eng"])[0][0, 0] == 2.0 and len(calls) == 2  # other queries: searched
    gathered = object()  # statistics gathered from several indexes: never remembered
    search(["pump"], 5, Where(), ["eng"], gathered)
    search(["pump"], 5, Where(), ["eng"], gathered)
    assert len(calls) == 4


def test_a_kept_adapter_is_stored_with_the_index_for_the_saved_model_and_one_not_kept_is_removed(tmp_path, tiny_model):
    from types import SimpleNamespace

    from encodr.core import commands
    from encodr.core.requests import IndexRequest
    from encodr.index.adapter import read_adapter
    from encodr.methods.judged.crossval import Folds, Plan
    from encodr.methods.judged.data import read_judged
    from encodr.methods.judged.method import Component, _store_adapter, corpus_index
    from encodr.models import load_encoder

    root = toy_beir(tmp_path / "beir", 40)
    commands.index(IndexRequest(corpus=[str(root / "corpus.jsonl")], model=str(tiny_model), out=str(tmp_path / "idx")))
    data = read_judged(None, str(root), tmp_path / "judged")
    recipe = load_recipe("judged", FAST)
    encoder = load_encoder(str(tiny_model), "auto", "mean", 32)
    ctx = SimpleNamespace(
        request=SimpleNamespace(index=str(tmp_path / "idx")), trainer=SimpleNamespace(is_main=True), recipe=recipe
    )
    with corpus_index(data.folder, encoder) as dev:
        folds = Folds(Plan.of(dev, recipe))
        folds.score_start(dev)
        pairs = folds.score_adapter(dev, None, recipe)
        assert np.isfinite(folds.scores.start["adapter"]).all() and len(pairs.queries) == len(folds.plan.qids)
        kept = Component("query adapter", "cross-validated hybrid nDCG@10", 50.0, 52.0, True, "", 0.01)
        _store_adapter(ctx, data, encoder, (dev, pairs, False), folds, kept)
        stored = read_adapter(tmp_path / "idx", encoder.fingerprint)
        assert stored is not None and stored.report["cv_after"] == 52.0
        dropped = Component("query adapter", "cross-validated hybrid nDCG@10", 50.0, 49.0, False, "", 0.9)
        _store_adapter(ctx, data, encoder, (dev, pairs, False), folds, dropped)
        assert read_adapter(tmp_path / "idx", encoder.fingerprint) is None and "removed" in dropped.note
        # a tuned model: its adapter is fitted on pairs mined from an index built by that model
        _store_adapter(ctx, data, encoder, (dev, None, True), folds, kept)
    stored = read_adapter(tmp_path / "idx", encoder.fingerprint)
    assert stored is not None and stored.u.shape == (32, recipe.adapter_rank) and stored.report["folds"] == recipe.folds


def test_a_folds_batch_splits_evenly_across_processes(tiny_model):
    from encodr.methods.judged.method import Example, mnrl_stream
    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_model), "auto", "mean", 32)
    items = [Example(f"query {i}", f"passage {i}", []) for i in range(23)]  # a fold's 23 training queries
    recipe = load_recipe("judged", FAST)
    assert mnrl_stream(encoder, items, recipe, 1, 0).batch_size == 23
    assert mnrl_stream(encoder, items, recipe, 2, 0).batch_size == 22  # torchrun --nproc_per_node 2 refused 23


def test_a_judged_run_on_an_index_without_judgments_is_one_line_and_writes_nothing(tmp_path, tiny_model, capsys, monkeypatch):
    from encodr.core import commands
    from encodr.core.requests import IndexRequest

    corpus = tmp_path / "c.txt"
    corpus.write_text("the pump pressure\nvalve grease\nboiler water\n")
    commands.index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(tmp_path / "idx"), lang="eng"))
    args = ["tune", "--recipe", "judged", "--index", str(tmp_path / "idx"), "--model", str(tiny_model)]
    code, _, err = run_cli([*args, "--out", str(tmp_path / "m")], capsys, monkeypatch)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "has no judgments to learn from" in lines[0] and "encodr judge" in lines[0], err
    assert not (tmp_path / "m").exists()


def test_a_judged_run_on_an_index_starts_from_the_indexs_model_unless_one_is_named(tmp_path, tiny_model, capsys, monkeypatch):
    import encodr.methods as methods
    from encodr.core.commands import index, tuned_models
    from encodr.core.requests import IndexRequest, TuneRequest
    from encodr.errors import EncodrError
    from tests.conftest import run_cli

    corpus = tmp_path / "notes.txt"
    corpus.write_text("the pump pressure stays below four bar\nthe valve stem is greased monthly\n")
    index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(tmp_path / "idx"), lang="eng"))
    assert tuned_models(TuneRequest(recipe="judged", index=str(tmp_path / "idx"))) == [str(tiny_model)]
    assert tuned_models(TuneRequest(recipe="judged", index=str(tmp_path / "idx"), model=["mpnet"])) == ["mpnet"]
    assert tuned_models(TuneRequest(recipe="sentence")) == ["minilm"]
    seen = []

    def stop(recipe, job):
        seen.append(job.models)
        raise EncodrError("stopped before any work")

    monkeypatch.setattr(methods, "check_request", stop)
    code, _, err = run_cli(["tune", "--recipe", "judged", "--index", str(tmp_path / "idx")], capsys, monkeypatch)
    assert code == 2 and "stopped before any work" in err and seen == [[str(tiny_model)]]  # the CLI, as the request
