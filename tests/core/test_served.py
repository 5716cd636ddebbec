"""A server's searchers follow their index by the rule the CLI's and the TUI's follow
(:func:`encodr.core.commands.kept`): a new generation is opened at the next search, and an index
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
