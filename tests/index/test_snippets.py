"""Snippets' word weights, shown paths and changed files: what a hit prints, whatever languages and folders an index
holds and whatever became of its files."""

import logging

import wordfreq

from encodr.index import snippets
from encodr.index.ingest import shown_path, shown_roots


def test_a_language_wordfreq_lacks_weighs_words_as_english_without_a_warning(caplog):
    snippets._two_letter.cache_clear()
    snippets.word_weight.cache_clear()
    wordfreq.get_frequency_list.cache_clear()
    text = "The alpha project uses a red widget. Nothing else."
    spans = snippets.sentence_spans(text)
    with caplog.at_level(logging.WARNING):
        somali = snippets.keyword_scores("red widget", text, spans, "som")  # Somali: the detector knows it, wordfreq not
    assert not [r for r in caplog.records if r.name.startswith("wordfreq")]
    assert somali == snippets.keyword_scores("red widget", text, spans, "eng") and somali[0] > somali[1]


def test_chinese_japanese_and_korean_query_words_are_weighed_without_a_segmenter(monkeypatch):
    import sys

    for extra in ("jieba", "MeCab"):  # wordfreq's segmenters, not installed with encodr: importing one fails
        monkeypatch.setitem(sys.modules, extra, None)
    snippets.word_weight.cache_clear()
    text = "神秘博士是一部英国电视剧。它讲述了一位时间领主的故事。"
    spans = [(0, 12), (12, len(text))]
    assert snippets.keyword_scores("神秘博士", text, spans, "cmn")[0] > 0
    assert snippets.word_weight("的", "cmn") < snippets.word_weight("神秘博士", "cmn") == 8.0
    assert snippets.word_weight("関数", "jpn") < 8.0 and snippets.word_weight("함수", "kor") < 8.0
    assert snippets.word_weight("関数", "eng") <= 8.0  # a CJK word in an English index's query


def test_paths_show_from_the_folder_indexed_and_with_its_name_when_there_are_several(tmp_path):
    for folder in ("a", "b", "a/sub", "x/docs", "y/docs"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    a, b, sub = str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "a/sub")
    one = shown_roots([a, sub])  # a folder inside another adds nothing: its files show from the outer one
    assert shown_path(f"{sub}/README.md", one) == "sub/README.md" and shown_path(f"{a}/README.md", one) == "README.md"
    two = shown_roots([a, b, str(tmp_path / "a.md")])  # a file given by itself is no folder
    assert [shown_path(f"{f}/README.md", two) for f in (a, b)] == ["a/README.md", "b/README.md"]
    assert shown_path(str(tmp_path / "a.md"), two) == "a.md"
    same = shown_roots([str(tmp_path / "x/docs"), str(tmp_path / "y/docs")])  # two folders of one name
    assert [shown_path(str(tmp_path / f"{f}/docs/n.md"), same) for f in "xy"] == ["x/docs/n.md", "y/docs/n.md"]


def test_a_file_counts_as_changed_by_its_size_and_time_and_as_deleted_only_where_its_folder_is_seen(tmp_path):
    from encodr.index.documents import DELETED, EDITED, changed_documents, file_state

    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("same", "edited", "gone"):
        (folder / f"{name}.md").write_text(f"{name}\n")
    states = {name: (str(folder / f"{name}.md"), *file_state(str(folder / f"{name}.md"))) for name in ("same", "edited", "gone")}
    states["record"] = (None, None, None)  # a document not read from a file
    (folder / "edited.md").write_text("edited, and longer now\n")
    (folder / "gone.md").unlink()
    assert changed_documents(states, [str(folder)]) == {"edited": EDITED, "gone": DELETED}
    elsewhere = {"gone": ("/nowhere/notes/gone.md", "2026-01-01T00:00:00+00:00", 5)}  # an index read where its files are not
    assert changed_documents(elsewhere, ["/nowhere/notes"]) == {}


def test_the_changed_check_holds_its_reader_while_a_refresh_drops_it(tmp_path, tiny_model, monkeypatch):
    """A served index written while it is searched: a refresh swaps the searcher's reader, and
    the old one, dropped, closes its store; the check must still read that store."""
    import gc

    from encodr.index import BuildOptions, Searcher, build
    from encodr.index.options import SearchOptions
    from encodr.index.reader import IndexReader
    from encodr.index.texts import TextStore

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "pump.md").write_text("# Pump\n\nThe pump pressure must stay below 4 bar.\n")
    build([str(tmp_path / "docs")], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    searcher = Searcher(tmp_path / "idx")
    _, results = searcher.query(["pump"], SearchOptions(mode="keyword"))
    read = TextStore.document_states

    def refreshed_meanwhile(store, ids):
        searcher.index = IndexReader.open(tmp_path / "idx")  # as a concurrent refresh does
        gc.collect()
        return read(store, ids)

    monkeypatch.setattr(TextStore, "document_states", refreshed_meanwhile)
    assert searcher.changed(results) == {}
