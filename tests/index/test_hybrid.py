import math
import os

import numpy as np
import pytest

from encodr.errors import EncodrError
from encodr.index import BuildOptions, Searcher, build
from encodr.index.fusion import RRF_K, fuse, fuse_arrays
from encodr.index.options import SearchOptions
from tests.conftest import run_cli

TEXTS = [
    "the pump stopped with error code XJ4471 during the night shift",
    "a quiet morning at the harbour with boats and gulls",
    "the café on the corner serves strong coffee",
    "winter storms closed the mountain pass for a week",
    "the library opened a new reading room for children",
    "the pump was serviced and runs normally again",
]


@pytest.fixture
def index(tmp_path, tiny_model):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "idx"
    meta = build([str(corpus)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    assert meta["keywords"]["engine"] == "sqlite-fts5 bm25" and meta["keyword_seconds"] >= 0
    return out


def test_keyword_mode_finds_an_exact_code_and_ignores_diacritics(index):
    searcher = Searcher(index)
    assert searcher.search(["XJ4471"], SearchOptions(k=3, mode="keyword"))[0][0].text == TEXTS[0]
    assert searcher.search(["cafe"], SearchOptions(k=3, mode="keyword"))[0][0].text == TEXTS[2]  # café, diacritics removed
    assert searcher.search(["zebra"], SearchOptions(k=3, mode="keyword")) == [[]]  # no word in common: no hit, not an error


def test_queries_with_fts5_syntax_are_plain_words(index):
    searcher = Searcher(index)
    hits = searcher.search(['pump" AND (NEAR* OR -', "*", ""], SearchOptions(k=3, mode="keyword"))
    found = {h.text for h in hits[0]}  # the words pump, and, near, or: AND and OR are words here, not operators
    assert {TEXTS[0], TEXTS[5]} <= found and all(" and " in t or "pump" in t for t in found)
    assert hits[1] == [] and hits[2] == []


def test_hybrid_is_the_fusion_of_the_dense_and_keyword_rankings(index):
    searcher = Searcher(index)
    query = ["pump error XJ4471"]
    dense = [(h.id, h.score) for h in searcher.search(query, SearchOptions(k=6, mode="dense"))[0]]
    keyword = [(h.id, h.score) for h in searcher.search(query, SearchOptions(k=6, mode="keyword"))[0]]
    for fusion in ("rrf", "convex", "zscore"):
        hits = searcher.search(query, SearchOptions(k=6, mode="hybrid", fusion=fusion))[0]
        expected = fuse(dense, keyword, fusion, "eng", {i: "eng" for i, _ in dense + keyword})
        assert [(h.id, pytest.approx(h.score)) for h in hits] == [(i, pytest.approx(s)) for i, s in expected]
        assert [h.rank for h in hits] == list(range(1, 7))


def test_a_hybrid_search_runs_its_keyword_half_beside_its_dense_half(index, monkeypatch):
    """The BM25 half runs on another thread while this one encodes the query and searches FAISS;
    its hits are fused as before, and its error reaches the caller as it was raised."""
    import threading

    from encodr.index.reader import IndexReader

    searcher, keyword_search, threads = Searcher(index), IndexReader.keyword_search, []

    def recorded(self, *args, **kwargs):
        threads.append(threading.get_ident())
        return keyword_search(self, *args, **kwargs)

    monkeypatch.setattr(IndexReader, "keyword_search", recorded)
    hits = searcher.search(["pump error XJ4471"], SearchOptions(k=3, mode="hybrid"))[0]
    assert threads and threads[0] != threading.get_ident() and hits[0].text == TEXTS[0]

    def failing(self, *args, **kwargs):
        raise EncodrError("the keyword index is unreadable")

    monkeypatch.setattr(IndexReader, "keyword_search", failing)
    with pytest.raises(EncodrError, match="the keyword index is unreadable"):
        searcher.search(["pump"], SearchOptions(k=3, mode="hybrid"))


def _hybrid_search_exits(index) -> None:
    hits = Searcher(index).search(["pump error XJ4471"], SearchOptions(k=3, mode="hybrid"))[0]
    os._exit(0 if hits and hits[0].text == TEXTS[0] else 1)


def test_a_process_forked_after_a_hybrid_search_searches_too(index):
    """A forked child has none of its parent's threads: it gets a keyword pool of its own
    instead of waiting for one that no longer runs."""
    import multiprocessing

    Searcher(index).search(["pump"], SearchOptions(k=3, mode="hybrid"))  # the parent's pool is running
    child = multiprocessing.get_context("fork").Process(target=_hybrid_search_exits, args=(index,))
    child.start()
    child.join(120)
    if child.exitcode is None:
        child.kill()
    assert child.exitcode == 0


def test_add_updates_the_keyword_index_with_the_vectors(index, tmp_path):
    more = tmp_path / "more.txt"
    more.write_text("a zebra crossed the savanna at dawn\n")
    build([str(more)], index, BuildOptions(write="add"))
    assert (
        Searcher(index).search(["zebra"], SearchOptions(k=1, mode="keyword"))[0][0].text == "a zebra crossed the savanna at dawn"
    )


def test_rrf_arithmetic():
    fused = dict(fuse([(1, 0.9), (2, 0.8)], [(2, 12.0), (3, 5.0)], "rrf"))
    assert fused[2] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert fused[1] == pytest.approx(1 / (RRF_K + 1)) and fused[3] == pytest.approx(1 / (RRF_K + 2))


def test_zscore_arithmetic_over_arrays_and_lists():
    dense, keyword = [(1, 0.9), (2, 0.5)], [(2, 4.0), (3, 2.0)]
    # union 1, 2, 3; dense 0.9, 0.5 and 3's floor 0.5; BM25 0 (absent), 4, 2
    d = np.array([0.9, 0.5, 0.5])
    k = np.array([0.0, 4.0, 2.0])
    z = 0.5 * (d - d.mean()) / d.std() + 0.5 * (k - k.mean()) / k.std()
    expected = sorted(zip([1, 2, 3], (1 / (1 + math.exp(-x)) for x in z)), key=lambda p: -p[1])
    fused = fuse(dense, keyword, "zscore")
    assert [i for i, _ in fused] == [i for i, _ in expected] == [2, 1, 3]
    assert [s for _, s in fused] == pytest.approx([s for _, s in expected])
    ids, scores = fuse_arrays((np.array([1, 2]), np.array([0.9, 0.5])), (np.array([2, 3]), np.array([4.0, 2.0])), "zscore")
    assert ids.tolist() == [2, 1, 3] and scores.tolist() == pytest.approx([s for _, s in expected])
    tied = fuse([(5, 0.7), (6, 0.7)], [(7, 1.0), (8, 1.0)], "rrf")  # equal scores keep the union's order
    assert [i for i, _ in tied] == [5, 7, 6, 8]


@pytest.mark.parametrize("fusion", ["zscore", "convex", "rrf"])
def test_a_candidates_fused_score_does_not_move_when_the_lists_are_fetched_deeper(fusion):
    """A larger -k fetches deeper lists: normalised over all their candidates, every score moved
    (and with it which passage a document showed). With ``pool``, the candidates of a first
    round of ``pool`` a list keep the scores that round gave them."""
    rng = np.random.default_rng(0)
    dense_ids, keyword_ids = rng.permutation(400), rng.permutation(400)
    dense = (dense_ids, np.sort(rng.random(400))[::-1])
    keyword = (keyword_ids, np.sort(rng.random(400) * 12)[::-1])
    shallow = fuse_arrays((dense[0][:100], dense[1][:100]), (keyword[0][:100], keyword[1][:100]), fusion, pool=100)
    deep = fuse_arrays(dense, keyword, fusion, pool=100)
    before = dict(zip(shallow[0].tolist(), shallow[1].tolist()))
    after = dict(zip(deep[0].tolist(), deep[1].tolist()))
    assert all(math.isclose(after[i], score, abs_tol=1e-12) for i, score in before.items())
    unpooled = dict(zip(*(a.tolist() for a in fuse_arrays(dense, keyword, fusion))))
    if fusion != "rrf":  # ranks alone: rrf moves only where a list's deeper rank is new
        assert any(not math.isclose(unpooled[i], score) for i, score in before.items())


def test_fusion_does_not_demote_a_cross_lingual_hit_that_dense_ranks_first():
    dense = [(10, 0.9), (11, 0.85), (12, 0.8)]  # 10 is Spanish, the query English
    keyword = [(11, 9.0), (12, 8.0)]  # a keyword list cannot match the Spanish text
    langs = {10: "spa", 11: "eng", 12: "eng"}
    for fusion in ("rrf", "convex", "zscore"):
        blind = fuse(dense, keyword, fusion)
        aware = fuse(dense, keyword, fusion, query_lang="eng", lang_of=langs)
        assert blind[0][0] != 10  # fused without languages, the cross-lingual hit drops
        assert aware[0][0] == 10, fusion


def test_a_cross_lingual_hit_that_shares_a_name_with_the_query_keeps_its_dense_place():
    # 10 is Spanish and reached the keyword list last, through a name both languages write alike;
    # its keyword place is the better of that and its dense place (first), not the last one
    dense = [(10, 0.9), (11, 0.85), (12, 0.8)]
    keyword = [(11, 9.0), (12, 8.0), (10, 1.0)]
    langs = {10: "spa", 11: "eng", 12: "eng"}
    for fusion in ("rrf", "convex", "zscore"):
        assert fuse(dense, keyword, fusion)[0][0] != 10  # fused without languages it drops
        assert fuse(dense, keyword, fusion, query_lang="eng", lang_of=langs)[0][0] == 10, fusion
    # a same-language text that the keyword list ranks poorly keeps that poor place
    same = fuse(dense, keyword, "rrf", query_lang="spa", lang_of={10: "spa", 11: "spa", 12: "spa"})
    assert dict(same)[10] == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + 3))
    # and a cross-lingual text the keyword list ranks above its dense place keeps the keyword place
    assert dict(fuse(dense, [(12, 9.0)], "rrf", query_lang="eng", lang_of={12: "spa"}))[12] == pytest.approx(
        1 / (RRF_K + 3) + 1 / (RRF_K + 1)
    )


def test_zscore_fusion_puts_the_one_text_holding_a_rare_code_first_where_min_max_ties_the_tops():
    dense = [(i, 0.62 - 0.01 * i) for i in range(20)]  # 20 candidates by cosine, none far ahead
    keyword = [(25, 7.5)]  # the one text that holds the query's code, not among the dense candidates
    convex = fuse(dense, keyword, "convex")
    assert convex[0][1] == convex[1][1] == pytest.approx(0.5)  # min-max: each list's top is 1, so the two tops tie
    zscore = fuse(dense, keyword, "zscore")
    assert (
        zscore[0][0] == 25 and zscore[0][1] > zscore[1][1]
    )  # it stands out of the keyword list, far more than 0 leads by cosine
    assert [i for i, _ in zscore[1:]] == list(range(20))  # the rest keep the dense order
    assert fuse([], [], "zscore") == [] and fuse(dense, [], "zscore")[0][0] == 0  # an empty list: the other alone


def test_zscore_fusion_weighs_a_passage_of_source_code_toward_its_cosine():
    dense = [(1, 0.7), (2, 0.5), (3, 0.45), (4, 0.4)]
    keyword = [(2, 9.0), (1, 1.0)]  # BM25 favours 2, the cosine 1
    assert fuse(dense, keyword, "zscore")[0][0] == 2  # prose: α 0.5, BM25's clear lead wins
    assert fuse(dense, keyword, "zscore", code={1, 2, 3, 4})[0][0] == 1  # code: α 0.85, the cosine leads
    assert fuse(dense, keyword, "zscore", alpha=0.5, code={1, 2, 3, 4})[0][0] == 2  # a weight given holds for every text


def test_unknown_mode_is_one_line(index, capsys, monkeypatch):
    code, _, err = run_cli(["search", "pump", "--index", str(index), "--mode", "fuzzy"], capsys, monkeypatch)
    assert code == 2 and err.strip() == "encodr: error: --mode fuzzy: not one of dense, keyword, hybrid"
    code, out, err = run_cli(["search", "XJ4471", "--index", str(index), "--mode", "hybrid", "--json"], capsys, monkeypatch)
    assert code == 0 and "XJ4471" in out


def test_an_index_without_a_keyword_index_says_how_to_get_one(index):
    import sqlite3

    from encodr.index import Index

    with Index.open(index) as opened:
        store = opened.folder / "texts.db"
    conn = sqlite3.connect(store)
    conn.execute("drop table texts_fts")
    conn.commit()
    conn.close()
    with pytest.raises(EncodrError, match="has no keyword index .* or use mode dense"):
        Searcher(index).search(["pump"], SearchOptions(mode="keyword"))


class LengthReranker:
    """A stand-in cross-encoder: the shorter the text, the higher its score."""

    def query_scores(self, query, texts):
        import numpy as np

        return -np.array([len(t) for t in texts], dtype=np.float32)


def test_rerank_rescores_the_first_stage_hits_only(index):
    searcher = Searcher(index)
    first = searcher.search(["pump"], SearchOptions(k=2, mode="keyword"))[0]  # only the two pump texts match
    _, hits = searcher.query(["pump"], SearchOptions(k=2, mode="keyword", rerank_depth=50), reranker=LengthReranker())
    assert [h.text for h in hits[0]] == sorted((h.text for h in first), key=len)
    assert [h.score for h in hits[0]] == [-len(h.text) for h in hits[0]] and [h.rank for h in hits[0]] == [1, 2]
    _, deep = searcher.query(["harbour"], SearchOptions(k=1, mode="dense", rerank_depth=6), reranker=LengthReranker())
    assert deep[0][0].text == min(TEXTS, key=len)  # depth 6 = every text: the shortest wins


def test_rerank_weight_interpolates_the_cross_encoders_scores_with_the_first_stages(index):
    from encodr.index.fusion import interpolate

    assert interpolate([3.0, 1.0, 2.0], [0.1, 0.9, 0.5], 1.0) == [3.0, 1.0, 2.0]  # w = 1: the cross-encoder alone, unchanged
    assert interpolate([3.0, 1.0, 2.0], [0.1, 0.9, 0.5], 0.25) == pytest.approx(
        [0.25 * 1 + 0.75 * 0, 0.25 * 0 + 0.75 * 1, 0.25 * 0.5 + 0.75 * 0.5]
    )
    searcher = Searcher(index)
    first = searcher.search(["harbour"], SearchOptions(k=6, mode="dense"))[0]
    _, kept = searcher.query(
        ["harbour"], SearchOptions(k=6, mode="dense", rerank_depth=6, rerank_weight=0.0), reranker=LengthReranker()
    )
    assert [h.text for h in kept[0]] == [h.text for h in first]  # w = 0: the first stage's order
    _, mixed = searcher.query(
        ["harbour"], SearchOptions(k=6, mode="dense", rerank_depth=6, rerank_weight=0.5), reranker=LengthReranker()
    )
    expected = interpolate([-len(h.text) for h in first], [h.score for h in first], 0.5)
    assert [h.score for h in mixed[0]] == pytest.approx(sorted(expected, reverse=True))
    assert [h.text for h in mixed[0]] == [first[i].text for i in sorted(range(6), key=lambda i: (-expected[i], i))]


def test_warming_a_searcher_runs_one_query_through_the_model_the_vectors_and_the_keywords(index, monkeypatch):
    searcher = Searcher(index)
    encoded, matched = [], []
    real_encode, real_keywords = searcher.encoder.encode, searcher.index.keyword_search
    monkeypatch.setattr(searcher.encoder, "encode", lambda texts, **kw: encoded.append(list(texts)) or real_encode(texts, **kw))
    monkeypatch.setattr(
        searcher.index,
        "keyword_search",
        lambda queries, *a, **kw: matched.append(list(queries)) or real_keywords(queries, *a, **kw),
    )
    searcher.warm()
    assert encoded == [["warm up"]] and matched == [["warm up"]]  # the default search's phases: a forward pass and BM25
    assert searcher.search(["XJ4471"], SearchOptions(k=1, mode="keyword"))[0][0].text == TEXTS[0]  # and it searches as before


def test_timings_give_each_phase_of_a_search_on_request(index, capsys, monkeypatch):
    """``--timings`` (``"timings": true`` over HTTP and MCP): the milliseconds of each phase the
    search went through, and their total; none without it."""
    import json

    code, out, _ = run_cli(
        ["search", "pump", "--index", str(index), "--mode", "hybrid", "--timings", "--json"], capsys, monkeypatch
    )
    timings = json.loads(out)["timings"]
    assert (
        code == 0
        and {"encode", "dense", "keyword", "fusion", "hits", "highlights", "total"} <= set(timings)
        and "rerank" not in timings
    )
    assert all(ms >= 0 for ms in timings.values()) and timings["total"] >= max(v for k, v in timings.items() if k != "total")
    code, out, _ = run_cli(
        ["search", "pump", "--index", str(index), "--mode", "dense", "--timings", "--json"], capsys, monkeypatch
    )
    assert {"keyword", "fusion"}.isdisjoint(json.loads(out)["timings"]) and "dense" in json.loads(out)["timings"]
    code, out, _ = run_cli(["search", "pump", "--index", str(index), "--json"], capsys, monkeypatch)
    assert "timings" not in json.loads(out)
    code, out, _ = run_cli(["search", "pump", "--index", str(index), "--timings"], capsys, monkeypatch)
    assert code == 0 and "timings (ms)" in out and "total" in out
