"""encodr.index.texts: the one owner of ``texts.db`` — writes, hash lookup, language settling, reads."""

from __future__ import annotations

import sqlite3

import pytest

from encodr.index.keywords import keyword_expression
from encodr.index.texts import TextStore


def row(i: int, text: str, lang: str, detected: bool = False, ext_id: str | None = None, start: int | None = None) -> dict:
    return {
        "id": i,
        "ext_id": ext_id,
        "text": text,
        "source": "f.txt",
        "line": i + 1,
        "lang": lang,
        "hash": f"h{i}",
        "lang_detected": int(detected),
        "lang_confidence": 0.5 if detected else None,
        "title": None,
        "start": start,
    }


def test_a_store_written_then_read(tmp_path):
    path = tmp_path / "texts.db"
    store = TextStore.create(path)
    assert store.next_id() == 0
    store.insert(
        [
            row(0, "the cat", "eng"),
            row(1, "el gato", "spa", detected=True, ext_id="d1", start=40),
            row(2, "le chat", "eng", detected=True, ext_id="d1", start=0),
        ]
    )
    assert store.next_id() == 3 and store.known(["h0", "h2", "h9"]) == {"h0", "h2"}
    assert store.detected_labels() == [("spa", 0.5, 7), ("eng", 0.5, 7)]  # label, confidence, characters
    store.relabel_detected(
        lambda texts: ["fra" if t.startswith("le ") else "spa" for t in texts], chunk=1
    )  # one text a chunk: the chunks are walked
    store.build_keywords()
    store.close()

    reader = TextStore.open(path, timeout=1)
    assert reader.count() == 3 and reader.langs() == ["eng", "spa", "fra"] and reader.languages() == ["eng", "fra", "spa"]
    assert reader.ids_in(["fra", "spa"]).tolist() == [1, 2]
    assert reader.rows([2])[2]["text"] == "le chat" and reader.rows([2])[2]["start"] == 0
    assert reader.rows([1, 2], ("lang", "source")) == {
        1: {"id": 1, "lang": "spa", "source": "f.txt"},
        2: {"id": 2, "lang": "fra", "source": "f.txt"},
    }
    with pytest.raises(ValueError, match="unknown row fields"):
        reader.rows([1], ("colour",))
    assert reader.passages_of("d1") == [(0, "le chat"), (40, "el gato")] and reader.document_ids() == {"d1"}
    assert reader.has_keywords and [i for i, _ in reader.keyword_hits(keyword_expression("gato", "spa"), 5)] == [1]
    assert [i for i, _ in reader.keyword_hits(keyword_expression("gato chat", "fra"), 5, langs=["fra"])] == [2]
    with pytest.raises(sqlite3.OperationalError):  # read-only: a reader cannot write
        reader.insert([row(3, "a dog", "eng")])
    reader.close()


def test_a_store_from_before_a_column_was_added_gets_it_and_keeps_its_rows(tmp_path):
    path = tmp_path / "texts.db"
    with sqlite3.connect(path) as conn:  # as sqlite-utils wrote a store before section, end_line, page and path
        conn.execute(
            'create table "texts" ("id" INTEGER PRIMARY KEY, "ext_id" TEXT, "text" TEXT, "source" TEXT, "line" INTEGER, '
            '"lang" TEXT, "hash" TEXT, "lang_detected" INTEGER, "lang_confidence" REAL, "title" TEXT, "start" INTEGER)'
        )
        conn.execute('create unique index "idx_texts_hash" on "texts" ("hash")')
        conn.execute("insert into texts (id, text, source, line, lang, hash) values (0, 'the cat', 'f.txt', 1, 'eng', 'h0')")
    store = TextStore.create(path)
    store.insert([{**row(1, "the dog", "eng"), "section": "Pets", "page": 2, "path": "f.txt"}])
    columns = {r[1]: r[2] for r in store.conn.execute('pragma table_info("texts")')}
    assert columns["section"] == "TEXT" and columns["page"] == "INTEGER" and columns["end_line"] == "INTEGER"
    got = store.conn.execute("select id, text, section, page from texts order by id").fetchall()
    assert got == [(0, "the cat", None, None), (1, "the dog", "Pets", 2)]
    with pytest.raises(sqlite3.IntegrityError):  # a text hash is stored once
        store.insert([row(2, "the dog again", "eng") | {"hash": "h1"}])


def test_a_labels_detected_texts_are_every_kth_by_id_up_to_the_limit(tmp_path):
    """Of a label's n detected texts, every (n // limit)-th from the first, at most ``limit``: a
    given label's texts only, none the detector did not label."""
    store = TextStore.create(tmp_path / "texts.db")
    langs = ["lat", "eng", "lat", "fra"] * 25  # 50 Latin, 25 English, 25 French
    store.insert([row(i, f"t{i}", lang, detected=i != 2) for i, lang in enumerate(langs)])  # text 2 given, not detected
    latin = [f"t{i}" for i, lang in enumerate(langs) if lang == "lat" and i != 2]  # 49
    found = store.detected_texts(["lat", "fra", "deu"], 10)
    assert found["lat"] == latin[::4][:10] and found["fra"] == [f"t{i}" for i in range(3, 100, 4)][::2][:10]
    assert found["deu"] == [] and store.detected_texts(["lat"], 100)["lat"] == latin
    assert store.detected_texts(["lat"], 0) == {"lat": []}


def test_the_same_text_in_two_files_leaves_each_its_document_path_and_lines(tmp_path, tiny_model):
    from encodr.core.commands import document_lines
    from encodr.index import BuildOptions, build
    from encodr.index.reader import IndexReader

    folder = tmp_path / "repo"
    for copy in ("src", "build-copy"):
        (folder / copy).mkdir(parents=True)
        (folder / copy / "pump.md").write_text("# Pump\n\nThe pump pressure must stay below four bar.\n")
    build([str(folder)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng", no_ignore=True))
    index = IndexReader.open(tmp_path / "idx")
    try:
        for copy in ("src", "build-copy"):
            shown = document_lines(index, f"{copy}/pump.md", None)
            assert shown["path"] == f"{copy}/pump.md" and shown["lines"][2]["text"].startswith("The pump pressure")
    finally:
        index.close()
