"""encodr.index.postings: a reader's BM25 from postings held in memory, FTS5's bm25() to the bit."""

from __future__ import annotations

import pytest

from encodr.index.keywords import keyword_expression
from encodr.index.postings import Postings, alternatives
from encodr.index.texts import TextStore

WORDS = "valve pressure relief pump seal bearing motor shaft gasket flange".split()


def store(tmp_path, texts: list[str]) -> TextStore:
    """A read-only store of ``texts`` (ids 0…) with its keyword index."""
    path = tmp_path / "texts.db"
    writer = TextStore.create(path)
    writer.insert(
        [
            {"id": i, "text": t, "source": "f.txt", "line": i + 1, "lang": "eng", "hash": f"h{i}", "lang_detected": 0}
            for i, t in enumerate(texts)
        ]
    )
    writer.build_keywords()
    writer.hold_postings()  # a store being written never holds them
    assert not writer.holds_postings
    writer.close()
    reader = TextStore.open(path, timeout=1)
    reader.hold_postings()
    return reader


def texts() -> list[str]:
    """Texts of varied lengths and repeated words, with exact duplicates (tied scores)."""
    out = []
    for i in range(60):
        words = [WORDS[(i * j + j) % len(WORDS)] for j in range(3 + i % 7)]
        out.append(" ".join(words + ["the"] * (i % 3)))
    return out + out[:5]  # rows 60–64 repeat rows 0–4: the same scores


def fts5(reader: TextStore, expression: str, k: int) -> list[tuple[int, float]]:
    """FTS5's own top k, ties by id."""
    sql = "select rowid, -bm25(texts_fts) from texts_fts where texts_fts match ? order by bm25(texts_fts), rowid limit ?"
    return reader._all(sql, (expression, k))


QUERIES = ["valve pressure", "the pump seal", "gasket", "motor the shaft bearing flange", "absent words only"]


@pytest.mark.parametrize("k", [1, 5, 70])
def test_a_reader_scores_from_postings_exactly_as_fts5_and_holds_them(tmp_path, k):
    reader = store(tmp_path, texts())
    for query in QUERIES + QUERIES:  # the second time from what it holds
        expression = keyword_expression(query, "eng")
        assert reader.keyword_hits(expression, k) == fts5(reader, expression, k)  # ids, order and scores, bit for bit
    assert reader.postings().size > 0  # the phrases were held
    ids, counts = reader.term_counts('"the"')  # counted in FTS5's index, unscored: a plain term
    assert len(ids) == len(fts5(reader, '"the"', 100)) and set(counts) == {1.0, 2.0}
    assert reader.term_counts('"café"') is None and reader.term_counts('"pump seal"') is None  # folded, or two tokens
    reader.close()


def test_a_writer_and_a_filtered_or_phrase_query_are_scored_by_fts5(tmp_path):
    assert alternatives('"valv" OR "pressur"') == ['"valv"', '"pressur"']
    assert alternatives('"relief valv" AND ("pressur")') is None and alternatives("") is None
    reader = store(tmp_path, texts())
    reader.keyword_hits(keyword_expression('"pump seal" motor', "eng"), 5)
    reader.keyword_hits(keyword_expression("pump", "eng"), 5, langs=["eng"])
    assert reader.postings().size == 0  # neither went through the postings
    reader.close()


def test_postings_keep_to_their_budget_and_leave_a_phrase_too_big_to_fts5(tmp_path):
    names = [f"part{i}" for i in range(10)]
    reader = store(tmp_path, [f"{names[i % 10]} {names[(i + 3) % 10]} common" for i in range(20)])  # each part in 4 rows
    rows, tokens = reader.keyword_totals()
    postings = Postings(rows, tokens, reader.phrase_hits, reader.row_lengths, lambda phrase: None, budget=16)
    for name in names:
        assert postings.top([f'"{name}"'], 3) == fts5(reader, f'"{name}"', 3)
        assert postings.size <= 16  # the least recently used went out
    assert postings.top(['"common"'], 3) is None  # in 20 rows: over a quarter of the budget, left to FTS5
    assert postings.top(['"part1"', '"common"'], 3) is None  # refused at once from then on, whatever it is asked with

    def unasked(phrase):
        raise AssertionError(f"{phrase} fetched")

    known = Postings(rows, tokens, unasked, reader.row_lengths, lambda phrase: 20, budget=16)
    assert known.top(['"common"'], 3) is None  # known to be too big: not even fetched
    reader.close()
