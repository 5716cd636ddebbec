"""A server's searchers follow their index by the rule the CLI's and the TUI's follow
(:meth:`encodr.core.session.Session.keep`): a new generation is opened at the next search, and an index
rebuilt with another model is opened again rather than refused until the server restarts."""

from __future__ import annotations

from encodr.core.served import Served
from encodr.index import BuildOptions, build


def test_a_served_index_rebuilt_with_another_model_is_opened_again(tmp_path, tiny_model, tiny_roberta):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the pump holds pressure\nthe valve needs grease\n")
    build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    served = Served()
    served.open_indexes([str(tmp_path / "idx")])
    first = served.searcher("idx")
    corpus.write_text("the pump holds pressure\nthe valve needs grease\nthe river rose\n")
    build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_roberta), lang="eng", write="overwrite"))
    again = served.searcher("idx")
    assert again is not first and again.index.meta.fingerprint == again.fingerprint != first.fingerprint
    assert len(again.index) == 3 and served.index_rows()[0]["count"] == 3


def test_every_front_end_searches_through_one_session_kind(tmp_path, tiny_model):
    """The CLI's and the TUI's searches go through the process's session, a server's through its
    own: each keeps its searchers under one rule, and a search's timings come back in its result."""
    from encodr.core import dispatch
    from encodr.core.requests import SearchRequest
    from encodr.core.session import SESSION, Session

    corpus = tmp_path / "c.txt"
    corpus.write_text("the pump holds pressure\nthe valve needs grease\n")
    build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    values = {"query": ["pump"], "index": str(tmp_path / "idx"), "timings": True, "k": 1}
    result = dispatch.call(SearchRequest, values, "cli")
    kept = [s for key, s in SESSION.searchers.items() if key[0] == str((tmp_path / "idx").resolve())]
    assert len(kept) == 1 and result.timings["total"] > 0 and len(result.results[0].hits) == 1
    assert dispatch.open_searcher(dispatch.prepare(SearchRequest, values, "tui"), "tui") is kept[0]  # the same one, again
    served = Served()
    served.open_indexes([str(tmp_path / "idx")])
    assert isinstance(served.session, Session) and served.searcher("idx") is served.session.searchers["idx"]
    assert served.searchers["idx"] is not kept[0]  # a server's session is its own
