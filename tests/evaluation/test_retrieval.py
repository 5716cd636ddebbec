import json

import numpy as np
import pytest

from encodr.data.beir import read_retrieval
from encodr.errors import EncodrError
from tests.conftest import run_cli

TOPICS = ["river", "mountain", "kitchen", "violin", "planet", "garden", "winter", "harbour"]


def beir_folder(root, split="dev", extra_qrels="", same_filler=True):
    """A small BEIR-layout set: 3 documents per topic (one of them, with ``same_filler``, a text
    the other topics' fillers share), one query per topic."""
    root.mkdir()
    docs = []
    for i, topic in enumerate(TOPICS):
        docs += [
            {"_id": f"{topic}-a", "title": topic.title(), "text": f"all about the {topic} and its {topic} things"},
            {"_id": f"{topic}-b", "title": "", "text": f"a note that mentions a {topic} once, number {i}"},
            {"_id": f"{topic}-c", "title": "", "text": "an unrelated filler line" + ("" if same_filler else f" {i}")},
        ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": f"{t} facts"}) + "\n" for i, t in enumerate(TOPICS))
    )
    (root / "qrels").mkdir()
    rows = "".join(f"q{i}\t{t}-a\t1\nq{i}\t{t}-b\t1\n" for i, t in enumerate(TOPICS))
    (root / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows + extra_qrels)
    return root


def test_scores_equal_sentence_transformers_information_retrieval_evaluator(tmp_path, tiny_model):
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.models import load_encoder

    data = read_retrieval(beir_folder(tmp_path / "toy"))
    encoder = load_encoder(str(tiny_model), pooling="mean", device="cpu")
    ours = {s.metric: s.value for s in RetrievalEvaluator("toy", data, split="dev").evaluate(encoder)}
    corpus = {}
    for line in data.corpus_file.read_text().splitlines():
        d = json.loads(line)
        corpus[d["_id"]] = f"{d['title']} {d['text']}".strip()
    judged = {q: set(r) for q, r in data.qrels["dev"].items()}
    st = InformationRetrievalEvaluator(
        data.queries, corpus, judged, mrr_at_k=[10], ndcg_at_k=[10], precision_recall_at_k=[100], map_at_k=[100], write_csv=False
    )(encoder.st)
    expected = {
        "ndcg@10": st["cosine_ndcg@10"],
        "mrr@10": st["cosine_mrr@10"],
        "recall@100": st["cosine_recall@100"],
        "map@100": st["cosine_map@100"],
    }
    assert set(ours) == set(expected)
    for metric, value in expected.items():
        assert ours[metric] == pytest.approx(100 * value, abs=0.1), metric
    assert 0 < ours["ndcg@10"] < 100  # a real ranking, not a degenerate one


def test_qrels_naming_a_missing_document_is_one_error(tmp_path):
    folder = beir_folder(tmp_path / "toy", extra_qrels="q0\tnot-a-doc\t1\n")
    with pytest.raises(EncodrError, match=r"names 1 document not in corpus.jsonl \(first: 'not-a-doc'\)"):
        read_retrieval(folder)


def test_a_corpus_line_that_is_not_json_names_its_line(tmp_path):
    folder = beir_folder(tmp_path / "toy")
    with open(folder / "corpus.jsonl", "a") as f:
        f.write("{not json\n")
    with pytest.raises(EncodrError, match=r"corpus.jsonl, line 25: not JSON"):
        read_retrieval(folder)


def test_cli_eval_retrieval_names_the_splits_there_are(tmp_path, capsys, monkeypatch, tiny_model):
    folder = beir_folder(tmp_path / "toy")
    code, _, err = run_cli(["eval", "retrieval", str(folder), "--model", str(tiny_model)], capsys, monkeypatch)
    assert code == 2 and "no qrels/test.tsv; its splits are dev (use --split)" in err and "Traceback" not in err
    code, _, err = run_cli(["eval", "sts", "--split", "dev"], capsys, monkeypatch)
    assert code == 2 and "--split picks the qrels of 'eval retrieval'" in err
    code, _, err = run_cli(["eval", "retrieval", str(folder / "corpus.jsonl")], capsys, monkeypatch)
    assert code == 2 and "takes a BEIR-layout folder" in err


def test_cli_eval_retrieval_prints_ndcg_and_json(tmp_path, capsys, monkeypatch, tiny_model):
    folder = beir_folder(tmp_path / "toy")
    code, out, err = run_cli(
        ["eval", "retrieval", str(folder), "--split", "dev", "--model", str(tiny_model), "--limit", "4", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    payload = json.loads(out)
    scores = {s["metric"]: s for s in payload["scores"]}
    assert payload["suite"] == "retrieval"
    assert set(scores) == {"ndcg@10", "mrr@10", "recall@100", "map@100"}
    assert scores["ndcg@10"]["n"] == 4  # --limit: the first 4 judged queries
    assert scores["recall@100"]["value"] == pytest.approx(100.0)  # 24 documents, all retrieved within 100


def test_every_mode_scores_from_one_index(tmp_path, tiny_model):
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.models import load_encoder

    evaluator = RetrievalEvaluator("toy", read_retrieval(beir_folder(tmp_path / "toy")), split="dev")
    encoder = load_encoder(str(tiny_model), pooling="mean", device="cpu")
    from encodr.index import SearchOptions

    modes = (
        SearchOptions(mode="dense"),
        SearchOptions(mode="keyword"),
        SearchOptions(mode="hybrid", fusion="rrf"),
        SearchOptions(mode="hybrid"),
    )
    ranked = evaluator.ranked(encoder, modes)
    assert list(ranked) == ["dense", "keyword", "hybrid·rrf", "hybrid·zscore"]  # one row each, one index
    ndcg = {m: evaluator.scores(ranked[m])[0].value for m in ranked}
    assert ndcg["keyword"] == pytest.approx(100.0)  # each query's topic word is in both relevant documents only
    assert ndcg["dense"] < 100  # a random tiny encoder: the keyword list is what lifts hybrid
    assert ndcg["hybrid·rrf"] > ndcg["dense"]
    from tests.index.test_hybrid import LengthReranker

    both = evaluator.ranked(encoder, modes, reranker=LengthReranker(), first_stage=True, reranked=modes[3:])
    assert set(both) == {*ranked, "hybrid·zscore+rerank"}  # only the ranking asked for is re-ranked, from the same index
    for label in ranked:
        assert [[d for d, _ in row] for row in both[label]] == [[d for d, _ in row] for row in ranked[label]]
    assert both["hybrid·zscore+rerank"] != ranked["hybrid·zscore"]  # re-scored by the stand-in re-ranker
    kept = evaluator.ranked(
        encoder, (SearchOptions(mode="hybrid", rerank_weight=0.0),), reranker=LengthReranker()
    )  # w = 0: the first stage's order
    assert [[d for d, _ in row] for row in kept["hybrid·zscore+rerank@0"]] == [
        [d for d, _ in row] for row in ranked["hybrid·zscore"]
    ]


def test_a_beir_folder_is_a_dev_set_but_never_its_test_split(tmp_path, tiny_model):
    from encodr.evaluation import dev_set
    from encodr.models import load_encoder

    dev = dev_set(str(beir_folder(tmp_path / "toy", split="train")))
    assert (dev.metric, dev.split) == ("ndcg@10", "train")
    assert 0 < dev.score(load_encoder(str(tiny_model), pooling="mean", device="cpu")) <= 100
    with pytest.raises(EncodrError, match="never a test split; it has test"):
        dev_set(str(beir_folder(tmp_path / "held-out", split="test")))


def test_an_existing_index_is_scored_as_the_folder_it_was_built_from(tmp_path, capsys, monkeypatch, tiny_model):
    folder = beir_folder(
        tmp_path / "toy", same_filler=False
    )  # the folder's score counts a shared text once per document, the index's once
    code, _, err = run_cli(
        ["index", str(folder / "corpus.jsonl"), "--model", str(tiny_model), "--out", str(tmp_path / "idx"), "--backend", "torch"],
        capsys,
        monkeypatch,
    )  # eval scores a folder on torch
    assert code == 0, err
    scored = {}
    for mode in ("dense", "hybrid"):
        for name, args in (
            ("folder", [str(folder), "--split", "dev", "--model", str(tiny_model)]),
            (
                "index",
                [
                    "--index",
                    str(tmp_path / "idx"),
                    "--queries",
                    str(folder / "queries.jsonl"),
                    "--qrels",
                    str(folder / "qrels" / "dev.tsv"),
                ],
            ),
        ):
            code, out, err = run_cli(["eval", "retrieval", *args, "--mode", mode, "--json"], capsys, monkeypatch)
            assert code == 0, err
            scored[name, mode] = {s["metric"]: s["value"] for s in json.loads(out)["scores"]}
        assert scored["index", mode] == pytest.approx(scored["folder", mode], abs=1e-6), mode
    assert scored["index", "hybrid"]["ndcg@10"] > scored["index", "dense"]["ndcg@10"]  # the mode reaches the index's own search


def test_scoring_an_index_with_queries_needs_all_three_and_names_a_missing_document(tmp_path, capsys, monkeypatch, tiny_model):
    folder = beir_folder(tmp_path / "toy")
    run_cli(
        ["index", str(folder / "corpus.jsonl"), "--model", str(tiny_model), "--out", str(tmp_path / "idx")], capsys, monkeypatch
    )
    code, _, err = run_cli(
        ["eval", "retrieval", "--index", str(tmp_path / "idx"), "--queries", str(folder / "queries.jsonl")], capsys, monkeypatch
    )
    assert code == 2 and "or --index, --queries and --qrels together; pass --qrels too" in err
    bad = tmp_path / "bad.tsv"
    bad.write_text("q0\tgarden-c\t1\n")  # the filler text is stored once, under its first document's id (river-c)
    code, _, err = run_cli(
        ["eval", "retrieval", "--index", str(tmp_path / "idx"), "--queries", str(folder / "queries.jsonl"), "--qrels", str(bad)],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "names 1 document not in the index" in err and "(first: 'garden-c')" in err
    code, _, err = run_cli(["eval", "sts", "--index", str(tmp_path / "idx")], capsys, monkeypatch)
    assert code == 2 and "--index scores an existing index with 'eval retrieval', not 'sts'" in err


def test_eval_retrieval_of_an_index_takes_a_filter(tmp_path, capsys, monkeypatch, tiny_model):
    """--filter restricts the index's search as search --filter does: judged documents it leaves out are missed."""
    folder = beir_folder(tmp_path / "toy", same_filler=False)
    run_cli(
        ["index", str(folder / "corpus.jsonl"), "--model", str(tiny_model), "--out", str(tmp_path / "idx")], capsys, monkeypatch
    )
    args = [
        "eval",
        "retrieval",
        "--index",
        str(tmp_path / "idx"),
        "--queries",
        str(folder / "queries.jsonl"),
        "--qrels",
        str(folder / "qrels" / "dev.tsv"),
        "--mode",
        "keyword",
        "--json",
    ]
    scores = {}
    for name, extra in (("all", []), ("none", ["--filter", "id=no-such-document"])):
        code, out, err = run_cli([*args, *extra], capsys, monkeypatch)
        assert code == 0, err
        scores[name] = {s["metric"]: s["value"] for s in json.loads(out)["scores"]}
    assert scores["all"]["ndcg@10"] > 0 and scores["none"]["ndcg@10"] == 0
    code, _, err = run_cli([*args, "--filter", "year"], capsys, monkeypatch)
    assert code == 2 and "write FIELD=VALUE" in err


def test_eval_retrieval_keeps_its_index_and_reuses_it_until_the_model_or_corpus_changes(tmp_path, tiny_model, monkeypatch):
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.index import build as real_build
    from encodr.models import load_encoder

    built = []
    monkeypatch.setattr("encodr.index.build", lambda *a, **k: built.append(a[1]) or real_build(*a, **k))
    evaluator = RetrievalEvaluator("toy", read_retrieval(beir_folder(tmp_path / "toy")), split="dev")
    evaluator.cache = True
    encoder = load_encoder(str(tiny_model), pooling="mean", device="cpu")
    first = evaluator.evaluate(encoder)
    assert evaluator.evaluate(encoder) == first and len(built) == 1  # the second run reads the kept index
    assert built[0] == evaluator.cached_index(encoder) and (built[0] / "current").exists()
    evaluator.cache = False  # --no-cache: indexed anew, in a temporary folder
    assert evaluator.evaluate(encoder) == first and len(built) == 2 and built[1] != built[0]
    evaluator.cache = True
    (evaluator.data.corpus_file).write_text(evaluator.data.corpus_file.read_text())  # touched: another modification time
    assert evaluator.cached_index(encoder) != built[0]


def test_a_corpus_that_repeats_an_id_is_refused_with_the_count_and_the_ids(tmp_path):
    folder = beir_folder(tmp_path / "toy")
    with open(folder / "corpus.jsonl", "a") as f:
        f.write(json.dumps({"_id": "river-a", "title": "", "text": "again"}) + "\n")
    with pytest.raises(EncodrError, match=r"1 documents repeat an _id \(1 ids, first river-a\)"):
        read_retrieval(folder)


def test_evaluation_breaks_ties_as_search_shows_them(tmp_path):
    """Two documents with one score: search shows the unjudged one first, so the judged one is
    at rank 2 in the number too (sentence-transformers alone would put the smaller id first)."""
    from encodr.evaluation.retrieval import RetrievalEvaluator

    data = read_retrieval(beir_folder(tmp_path / "toy"))
    evaluator = RetrievalEvaluator("toy", data, split="dev", limit=1)
    q = evaluator.query_ids()[0]
    judged = sorted(evaluator.judged[q])
    row = [("zzz-unjudged", 0.5), *[(d, 0.5) for d in judged]]
    expected = 100 * (1 / np.log2(3) + 1 / np.log2(4)) / (1 + 1 / np.log2(3))
    ndcg = {s.metric: s.value for s in evaluator.scores([row])}["ndcg@10"]
    assert ndcg == pytest.approx(expected, abs=0.01) and evaluator.per_query([row])[0] == pytest.approx(expected, abs=0.01)
