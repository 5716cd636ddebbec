import numpy as np
import pytest

from encodr.data.readers import LinkingSet, read_sts, surface_key
from encodr.errors import EncodrError
from encodr.evaluation import run, tasks_for
from encodr.evaluation.linking import LinkingEvaluator
from encodr.evaluation.similarity import PairSimilarityEvaluator
from encodr.models import Encoder


class TableEncoder:
    """A fake encoder with fixed vectors, to check the metrics by hand."""

    name = "table"

    def __init__(self, table):
        self.table = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in table.items()}

    def encode(self, texts, batch_size=128, progress=False):
        return np.stack([self.table[t] for t in texts])

    pair_scores = Encoder.pair_scores  # the real cosine-of-pairs code, over these vectors


def test_sts_layouts(tmp_path):
    plain = tmp_path / "plain.tsv"
    plain.write_text("4.5\ta cat\ta kitten\n1.0\ta car\ta tree\n")
    stsb = tmp_path / "stsb.csv"
    stsb.write_text("main-news\tsrc\t2012\t0001\t3.2\tone\ttwo\textra\tcols\n")
    sick = tmp_path / "sick.txt"
    sick.write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n1\tx y\tx z\t4.1\tNEUTRAL\n")
    assert [(p.score, p.text1) for p in read_sts(plain)] == [(4.5, "a cat"), (1.0, "a car")]
    assert [(p.score, p.text1, p.text2) for p in read_sts(stsb)] == [(3.2, "one", "two")]
    assert [(p.score, p.text2) for p in read_sts(sick)] == [(4.1, "x z")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("hello\tworld\n")
    with pytest.raises(EncodrError, match="unknown STS layout"):
        read_sts(bad)
    plain.write_text("score\tsentence1\tsentence2\n4.5\ta cat\ta kitten\n\n1.0\ta car\ta tree\n")  # optional header
    assert [(p.score, p.text1) for p in read_sts(plain)] == [(4.5, "a cat"), (1.0, "a car")]
    plain.write_text("4.5\ta cat\ta kitten\n\n1.0\ta car\n")
    with pytest.raises(EncodrError, match="line 3 is not score<TAB>sentence1<TAB>sentence2"):  # the file's line, blanks counted
        read_sts(plain)


def test_spearman_times_100_per_dataset_then_mean(tmp_path):
    # cosines: (a,b)=1.0, (a,c)=0.0, (b,d)=0.6 → ranks agree with gold 5 > 3 > 1 … or not.
    enc = TableEncoder({"a": [1, 0], "b": [1, 0], "c": [0, 1], "d": [0.6, 0.8]})
    f1 = tmp_path / "agree.tsv"
    f1.write_text("5\ta\tb\n1\ta\tc\n3\tb\td\n")
    f2 = tmp_path / "reverse.tsv"
    f2.write_text("1\ta\tb\n5\ta\tc\n3\tb\td\n")
    report = run("sts", enc, [str(f1), str(f2)])
    assert [round(s.value, 6) for s in report.scores] == [100.0, -100.0]
    assert report.mean == pytest.approx(0.0)
    assert report.to_dict()["scores"][0]["metric"] == "spearman"


def test_linking_accuracy_at_k():
    data = LinkingSet(
        queries=["q1", "q2"],
        query_ids=["A", "B"],
        candidates=["ca", "cb", "cc"],
        candidate_ids=[frozenset({"A"}), frozenset({"B"}), frozenset({"C"})],
    )
    # q1 nearest ca (hit@1); q2 nearest cc, then cb (hit@5 only)
    enc = TableEncoder({"q1": [1, 0, 0], "q2": [0, 0.6, 0.8], "ca": [1, 0, 0], "cb": [0, 1, 0], "cc": [0, 0, 1]})
    evaluator = LinkingEvaluator("t", data, ks=(1, 2))
    assert evaluator.ranks(enc) == [0, 1]
    scores = {s.metric: s.value for s in evaluator.evaluate(enc)}
    assert scores == {"acc@1": 50.0, "acc@2": 100.0}
    # k larger than the candidate list (a user's small file): every candidate is ranked
    scores = {s.metric: s.value for s in LinkingEvaluator("t", data, ks=(1, 5)).evaluate(enc)}
    assert scores == {"acc@1": 50.0, "acc@5": 100.0}


def test_trivial_rewrites_share_a_key():
    assert surface_key("Arthritis, Rheumatoid") == surface_key("rheumatoid arthritis")
    assert surface_key("Neoplasms") == surface_key("neoplasm")
    assert surface_key("heart attack") != surface_key("myocardial infarction")


def test_bundled_tasks_exist_and_mesh_queries_are_split():
    from encodr.data.readers import read_linking

    for suite in ("sts", "words", "linking"):
        for task in tasks_for(suite):
            assert task.file().is_file()
    dev = read_linking(tasks_for("linking", ["mesh-dev"])[0].file(), split="dev")
    test = read_linking(tasks_for("linking")[0].file(), split="test")
    assert set(dev.query_ids).isdisjoint(test.query_ids)
    assert dev.candidates == test.candidates and len(test.queries) > 3 * len(dev.queries)
    assert "Arthritis, Rheumatoid".lower() not in [q.lower() for q in test.queries if "arthritis, rheumatoid" == q.lower()]


def test_pair_evaluator_counts_pairs():
    from encodr.data.readers import ScoredPair

    enc = TableEncoder({"x": [1, 0], "y": [0.8, 0.6], "z": [0, 1]})
    ev = PairSimilarityEvaluator("w", [ScoredPair(9, "x", "y"), ScoredPair(1, "x", "z"), ScoredPair(5, "y", "z")])
    [score] = ev.evaluate(enc)
    assert score.n == 3 and score.value == pytest.approx(100.0)


class _Lookup:
    """An 'encoder' that returns fixed unit vectors per text."""

    name = "lookup"

    def __init__(self, table):
        self.table = table

    def encode(self, texts, progress=False):
        import numpy as np

        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_bitext_accuracy_both_directions_on_a_known_input():
    from encodr.data.bitext import Translation
    from encodr.evaluation.bitext import BitextEvaluator

    # a→x, b→y right both ways; c's nearest target is y (so c→z fails), while z's nearest source is c
    table = {
        "a": [1, 0, 0],
        "b": [0, 1, 0],
        "c": [0, 0.9, 0.43589],
        "x": [1, 0, 0],
        "y": [0, 1, 0],
        "z": [0, 0.43589, 0.9],
    }  # c·y 0.90 > c·z 0.78
    pairs = [Translation("a", "x", "spa", "eng"), Translation("b", "y", "spa", "eng"), Translation("c", "z", "spa", "eng")]
    scores = {s.metric: s.value for s in BitextEvaluator("toy", pairs).evaluate(_Lookup(table))}
    assert scores["acc@1 spa→eng"] == pytest.approx(200 / 3) and scores["acc@1 eng→spa"] == pytest.approx(100.0)
    assert scores["acc@1"] == pytest.approx((200 / 3 + 100) / 2)


def test_bitext_pairs_of_several_languages_are_searched_within_their_own_language_pair():
    from encodr.data.bitext import Translation
    from encodr.evaluation.bitext import BitextEvaluator

    # one English sentence paired with Spanish and with French (a held-out split of a multilingual
    # bitext): pooled, "a" would find both of its translations and count one as a miss
    table = {
        "a": [1, 0],
        "b": [0, 1],
        "a-es": [1, 0],
        "b-es": [0, 1],
        "a-fr": [1, 0],
        "b-fr": [0.8, 0.6],
    }  # b-fr is nearer a than b
    pairs = [
        Translation("a", "a-es", "eng", "spa"),
        Translation("b", "b-es", "eng", "spa"),
        Translation("a", "a-fr", "eng", "fra"),
        Translation("b", "b-fr", "eng", "fra"),
    ]
    scores = {s.metric: s.value for s in BitextEvaluator("held-out", pairs).evaluate(_Lookup(table))}
    assert scores["acc@1 eng→spa"] == scores["acc@1 spa→eng"] == 100.0
    assert (
        scores["acc@1 eng→fra"] == 100.0 and scores["acc@1 fra→eng"] == 50.0
    )  # b is nearer b-fr than a-fr, but b-fr is nearer a than b
    assert scores["acc@1"] == pytest.approx((100 + 75) / 2)  # the mean over the two language pairs


def test_tatoeba_layout_and_its_errors(tmp_path):
    from encodr.data.bitext import read_bitext_any

    (tmp_path / "tatoeba.ita-eng.ita").write_text("il gatto\nil cane\n")
    (tmp_path / "tatoeba.ita-eng.eng").write_text("the cat\nthe dog\n")
    pairs = read_bitext_any(tmp_path / "tatoeba.ita-eng.eng")  # either file of the pair
    assert [(p.source, p.target, p.source_lang, p.target_lang) for p in pairs] == [
        ("il gatto", "the cat", "ita", "eng"),
        ("il cane", "the dog", "ita", "eng"),
    ]
    (tmp_path / "tatoeba.ita-eng.eng").write_text("the cat\n")
    with pytest.raises(EncodrError, match="has 2 lines and tatoeba.ita-eng.eng 1"):
        read_bitext_any(tmp_path / "tatoeba.ita-eng.ita")
    (tmp_path / "tatoeba.ita-eng.eng").write_text("the cat\n\n")
    with pytest.raises(EncodrError, match="line 2 is blank"):
        read_bitext_any(tmp_path / "tatoeba.ita-eng.ita")
    with pytest.raises(EncodrError, match="not a Tatoeba file"):
        read_bitext_any(tmp_path / "pairs.csv")


def test_cli_eval_bitext_on_a_user_file(tiny_model, tmp_path, capsys, monkeypatch):
    import json

    from tests.conftest import run_cli

    f = tmp_path / "pairs.tsv"
    f.write_text("il gatto\tthe cat\tita\teng\nil cane\tthe dog\tita\teng\nla casa\tthe house\tita\teng\n")
    code, out, err = run_cli(["eval", "bitext", str(f), "--model", str(tiny_model), "--json"], capsys, monkeypatch)
    assert code == 0, err
    scores = {s["metric"]: s for s in json.loads(out)["scores"]}
    assert set(scores) == {"acc@1", "acc@1 ita→eng", "acc@1 eng→ita"} and scores["acc@1"]["n"] == 3
    code, _, err = run_cli(["eval", "bitext", "--data", "stsb-dev", "--model", str(tiny_model)], capsys, monkeypatch)
    assert code == 2 and "scored by spearman" in err and "tatoeba-spa" in err
