"""The code-aware ranking stage (encodr.index.ranking) and its place in a search."""

import numpy as np
import pytest

from encodr.index import BuildOptions, Searcher, build
from encodr.index.options import SearchOptions
from encodr.index.ranking import CodeWeights, path_kind, rank_code, read_query


def _is_code(source):
    return source.endswith((".py", ".go", ".js"))


def _rows(*specs):
    return {i: {"source": src, "path": src, "section": sec} for i, (src, sec) in enumerate(specs)}


def test_an_identifier_query_is_told_from_a_question():
    assert read_query("TCPConnector").identifier and read_query("Context.invoke").symbols == ("context.invoke",)
    assert read_query("TypesBuilder::add_defaults").symbols == ("typesbuilder.add_defaults",)
    assert read_query("do_truncate").identifier and read_query("Panel").identifier
    asked = read_query("how does TCPConnector pool connections")
    assert not asked.identifier and asked.symbols == ("tcpconnector",)
    assert not read_query("redirect the client").identifier and read_query("how are tests run").asks == {"tests"}


def test_a_definition_outranks_a_use():
    rows = _rows(("client.py", "ClientSession.request"), ("connector.py", "TCPConnector"), ("other.py", "f"))
    ids, scores = rank_code("TCPConnector", np.array([0, 1, 2]), np.array([9.0, 5.0, 1.0]), rows, _is_code)
    assert ids.tolist() == [1, 0, 2] and scores[0] > scores[1]


def test_a_test_file_ranks_below_the_source_it_tests_unless_tests_are_asked_for():
    rows = _rows(("tests/test_redirects.py", "test_follow"), ("src/sessions.py", "Session.resolve"), ("src/x.py", ""))
    first = (np.array([0, 1, 2]), np.array([1.0, 0.9, 0.0]))
    ids, _ = rank_code("how are redirects followed", *first, rows, _is_code)
    assert ids.tolist()[:2] == [1, 0]
    ids, _ = rank_code("tests of redirects", *first, rows, _is_code)
    assert ids.tolist()[:2] == [0, 1]


def test_a_file_stem_that_names_the_query_and_a_coherent_file_rise():
    rows = _rows(("util.py", ""), ("completions.go", ""), ("x.py", ""))
    weights = CodeWeights(stem=0.25)  # declared, 0 by default (bench/notes/code_ranking.md)
    ids, _ = rank_code("shell completion", np.array([0, 1, 2]), np.array([1.0, 0.9, 0.0]), rows, _is_code, weights)
    assert ids.tolist()[:2] == [1, 0]
    rows = _rows(("a.py", "f"), ("b.py", "g"), ("b.py", "h"), ("b.py", "i"), ("c.py", "j"))
    weights = CodeWeights(coherence=0.2)
    first = (np.array([0, 1, 2, 3, 4]), np.array([1.0, 0.95, 0.9, 0.85, 0.0]))
    ids, _ = rank_code("words", *first, rows, _is_code, weights)
    assert ids[0] == 1


def test_prose_alone_is_ranked_as_it_was():
    rows = _rows(("a.md", ""), ("b.md", ""))
    ids, scores = rank_code("TCPConnector", np.array([0, 1]), np.array([0.2, 0.7]), rows, _is_code)
    assert ids.tolist() == [0, 1] and scores.tolist() == [0.2, 0.7]


@pytest.mark.parametrize(
    "path,kind",
    [
        ("tests/test_a.py", "tests"),
        ("a_test.go", "tests"),
        ("pydantic/v1/main.py", "copy"),
        ("docs/x.md", "docs"),
        ("examples/a/index.js", "examples"),
        ("api_pb2.py", "generated"),
        ("click/testing.py", None),
        ("doc/man.go", None),
    ],
)
def test_path_kinds(path, kind):
    assert path_kind(path) == kind


def test_a_search_of_a_repository_puts_the_definition_first(tmp_path, tiny_model):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    doc = " ".join(["Keeps a pool of open sockets to each host, reused by later requests until they expire."] * 4)
    (repo / "connector.py").write_text(f"class TCPConnector:\n    '''{doc}'''\n\n    limit = 100\n")
    (repo / "client.py").write_text(
        "from connector import TCPConnector\n\n\ndef session():\n    a = TCPConnector()\n    b = TCPConnector()\n"
        "    return TCPConnector(), a, b\n"
    )
    (repo / "tests" / "test_connector.py").write_text(
        "from connector import TCPConnector\n\n\ndef test_tcp_connector():\n    assert TCPConnector().connect() == 1\n"
    )
    out = tmp_path / "idx"
    meta = build([str(repo)], out, BuildOptions(model=str(tiny_model)))
    assert meta["code"] is True and meta["languages"] == ["eng"]  # code is labelled, never detected
    searcher = Searcher(out)
    for mode in ("hybrid", "keyword", "dense"):
        hits = searcher.search(["TCPConnector"], SearchOptions(k=3, mode=mode))[0]
        assert hits[0].path == "connector.py", mode
    off = searcher.search(["TCPConnector"], SearchOptions(k=3, mode="keyword", code_ranking=False))[0]
    assert off[0].path != "connector.py"  # BM25 alone puts the file that uses it three times first
