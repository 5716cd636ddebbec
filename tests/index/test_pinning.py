"""Judgments that act at once: a judged query's documents move in its hits, in every front end,
and never in evaluation."""

import json

import numpy as np

from encodr.index.judgments import Judgment
from encodr.index.pinning import NEAR_DUPLICATE, judged_for, pinned
from encodr.index.search import Hit
from tests.conftest import run_cli


def hit(doc: str, rank: int) -> Hit:
    return Hit(rank, 1.0 / rank, f"text of {doc}", "c.jsonl", rank, rank, ext_id=doc)


def test_grade_two_and_one_come_first_grade_zero_last_and_a_missing_one_is_fetched():
    hits = [hit(d, r) for r, d in enumerate(["a", "b", "c", "d"], 1)]
    moved = pinned(hits, {"c": 1, "a": 0, "z": 2, "gone": 2}, 4, lambda doc: hit(doc, 9) if doc == "z" else None)
    assert [h.document for h in moved] == ["z", "c", "b", "d"]  # a (grade 0) falls below the k kept; gone is no longer held
    assert [h.rank for h in moved] == [1, 2, 3, 4] and [h.judged for h in moved] == [2, 1, None, None]
    assert pinned(hits, {}, 4, lambda doc: None) == hits


def test_a_query_takes_its_own_judgments_else_a_near_duplicates():
    judgments = [Judgment("Pump pressure", "a", 2), Judgment("boiler water", "b", 1)]
    table = {"pump pressure": np.array([1.0, 0.0]), "boiler water": np.array([0.0, 1.0])}

    def vectors(keys):
        return np.stack([table[k] for k in keys])

    def grades(query, vector):
        return {j.doc: j.grade for j in judged_for(query, vector, judgments, vectors)}

    assert grades("  pump   PRESSURE ", np.array([0.0, 1.0])) == {"a": 2}  # its own, whatever its vector
    close = min(0.99, NEAR_DUPLICATE + 0.05)
    near = np.array([np.sqrt(1 - close**2), close])  # a unit vector at cosine `close` to "boiler water"
    assert grades("hot water in the boiler", near) == {"b": 1}
    assert grades("a new question", np.array([0.7071, 0.7071])) == {}  # 0.71: no judged query is that close


def test_a_judgment_moves_its_document_at_once_in_search_but_not_in_evaluation(tmp_path, tiny_model, capsys, monkeypatch):
    corpus = tmp_path / "kb.jsonl"
    texts = [
        "the pump pressure drops",
        "pump pressure and valves",
        "the boiler water",
        "pump maintenance notes",
        "a garden in spring",
    ]
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    out = str(tmp_path / "idx")
    assert run_cli(["index", str(corpus), "--model", str(tiny_model), "--out", out, "--lang", "eng"], capsys, monkeypatch)[0] == 0

    def ranked(*extra):
        code, stdout, err = run_cli(
            ["search", "pump pressure", "--index", out, "--mode", "keyword", "-k", "3", "--json", *extra], capsys, monkeypatch
        )
        assert code == 0, err
        return [(h["ext_id"], h["judged"]) for h in json.loads(stdout)["results"][0]["hits"]]

    before = ranked()
    assert "d4" not in [d for d, _ in before]
    assert run_cli(["judge", "pump pressure", "d4", "--grade", "2", "--index", out], capsys, monkeypatch)[0] == 0
    assert run_cli(["judge", "pump pressure", before[0][0], "--grade", "0", "--index", out], capsys, monkeypatch)[0] == 0
    after = ranked()
    assert after[0] == ("d4", 2) and before[0][0] not in [
        d for d, _ in after
    ]  # pinned first; the wrong one moved below the 3 shown
    assert ranked("--no-judgments") == before
    code, stdout, _ = run_cli(["search", "pump pressure", "--index", out, "--mode", "keyword", "-k", "3"], capsys, monkeypatch)
    assert "judged highly relevant" in " ".join(stdout.replace("│", " ").split())
    from encodr.index import Searcher
    from encodr.index.options import SearchOptions

    plain = Searcher(out).search(["pump pressure"], SearchOptions(k=3, mode="keyword"))[
        0
    ]  # what evaluation ranks: no judgment applied
    assert [(h.ext_id, h.judged) for h in plain] == before
