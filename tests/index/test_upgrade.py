"""The index format (encodr/index/format.py): an index written by an older encodr is refused with
one line naming ``encodr index --upgrade``, which converts it once (its vectors kept, nothing
encoded); then it is searched, synced and judged like a new one."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from encodr.errors import EncodrError
from encodr.index import BuildOptions, Index, build
from encodr.index.format import FORMAT
from tests.conftest import run_cli


@pytest.fixture
def old_index(tmp_path, tiny_model):
    """An index as encodr wrote it before the format number: flat (no generations), a texts.db
    without document tables nor title and start columns, no prompts and no keyword analysis recorded."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in [("pump.md", "# Pump\nthe pump moves water"), ("valve.md", "# Valve\nthe valve stops water")]:
        (docs / name).write_text(text + "\n")
    out = tmp_path / "idx"
    build([str(docs)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    folder = out / os.readlink(out / "current")
    (out / "current").unlink()
    for f in folder.iterdir():
        shutil.move(str(f), out / f.name)
    folder.rmdir()
    meta = json.loads((out / "index.json").read_text())
    for key in ("format", "prompts", "keywords"):
        meta.pop(key)
    (out / "index.json").write_text(json.dumps(meta))
    with sqlite3.connect(out / "texts.db") as conn:
        conn.executescript(
            "drop table documents; drop table members; drop table staged; drop table tombstones; "
            "alter table texts drop column title; alter table texts drop column start;"
        )  # as the first indexes were
    (out / "judgments.db").write_bytes(b"kept as it is")  # beside the generations: not the upgrade's to touch
    vectors = (out / "vectors.faiss").read_bytes()
    return out, docs, vectors


def test_an_old_index_is_refused_with_the_fix_then_upgraded_once(old_index, capsys, monkeypatch):
    out, docs, vectors = old_index
    with pytest.raises(
        EncodrError,
        match=rf"written by an older encodr \(index format 1; this one reads {FORMAT}\); bring it up to date once with: "
        r"encodr index --upgrade",
    ):
        Index.open(out)
    code, _, err = run_cli(["search", "water", "--index", str(out)], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "encodr index --upgrade" in err
    code, text, _ = run_cli(["index", "--upgrade", str(out), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(text) == {"path": str(out.resolve()), "from": 1, "to": FORMAT, "upgraded": True}
    assert sorted(p.name for p in out.iterdir()) == [
        "current",
        "g000001",
        "judgments.db",
    ]  # the flat files gone, the judgments kept
    assert (out / "judgments.db").read_bytes() == b"kept as it is"
    with Index.open(out) as index:
        assert index.meta.format == FORMAT and index.meta.prompts == {"query": "", "document": ""} and len(index) == 2
        assert (index.folder / "vectors.faiss").read_bytes() == vectors  # nothing re-encoded
    code, text, _ = run_cli(["index", "--upgrade", str(out), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(text)["upgraded"] is False


def test_an_upgraded_index_is_searched_and_synced_as_a_new_one(old_index, capsys, monkeypatch):
    out, docs, _ = old_index
    assert run_cli(["index", "--upgrade", str(out)], capsys, monkeypatch)[0] == 0
    code, text, _ = run_cli(["search", "pump", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch)
    assert code == 0 and "the pump moves water" in json.loads(text)["results"][0]["hits"][0]["text"]
    (docs / "valve.md").unlink()
    lines = []
    meta = build([str(docs)], out, BuildOptions(write="sync"), warn=lines.append)
    assert meta["removed"] == 1 and meta["encoded"] == 0 and lines == []


def test_upgrade_is_refused_with_a_corpus_and_a_newer_index_is_refused(old_index, tmp_path, capsys, monkeypatch):
    out, docs, _ = old_index
    code, _, err = run_cli(["index", str(docs), "--upgrade", str(out)], capsys, monkeypatch)
    assert code == 2 and "--upgrade converts an existing index and reads no documents: pass it alone, without CORPUS" in err
    code, _, err = run_cli(["index", "--upgrade", str(out), "--model", "minilm"], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "without --model" in err
    run_cli(["index", "--upgrade", str(out)], capsys, monkeypatch)
    meta_file = out / "current" / "index.json"
    meta_file.write_text(json.dumps({**json.loads(meta_file.read_text()), "format": FORMAT + 1}))
    with pytest.raises(EncodrError, match="written by a newer encodr"):
        Index.open(out)


def test_a_folder_encodr_did_not_write_is_left_as_it_is(tmp_path, capsys, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    files = {"index.json": '{"name": "my-web-app", "count": 3}', "vectors.faiss": "not ours", "app.js": "console.log(1)"}
    for name, text in files.items():
        (site / name).write_text(text)
    code, _, err = run_cli(["index", "--upgrade", str(site)], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "is not an index encodr wrote" in err
    assert {p.name: p.read_text() for p in site.iterdir()} == files  # nothing removed, nothing written


def test_upgrade_of_a_missing_or_corrupted_index_is_one_line(old_index, tmp_path, capsys, monkeypatch):
    out, _, _ = old_index
    code, _, err = run_cli(["index", "--upgrade", str(tmp_path / "nowhere")], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "is not an encodr index (no index.json in it)" in err
    (out / "index.json").write_text("{")
    code, _, err = run_cli(["index", "--upgrade", str(out)], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "index.json is corrupted" in err
    assert (out / "vectors.faiss").is_file() and not (out / "current").exists()  # nothing converted


def test_an_old_index_with_generations_is_upgraded_by_a_relative_path(tmp_path, tiny_model, capsys, monkeypatch):
    """Format 1 with generations (documents without identity): named relative to the current folder."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.md").write_text("# Pump\nthe pump moves water\n")
    build([str(docs)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    meta_file = tmp_path / "idx" / "current" / "index.json"
    meta_file.write_text(json.dumps({k: v for k, v in json.loads(meta_file.read_text()).items() if k != "format"}))
    monkeypatch.chdir(tmp_path)
    code, text, err = run_cli(["index", "--upgrade", "idx", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(text)["upgraded"] is True, err
    with Index.open(tmp_path / "idx") as index:
        assert index.meta.format == FORMAT and len(index) == 1


def test_keywords_an_older_analysis_made_get_a_hint_and_are_built_again_by_upgrade(tmp_path, tiny_model, capsys, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "scoring.py").write_text('def keyword_scores(query):\n    """Each line\'s share."""\n    return 1\n')
    out = tmp_path / "idx"
    build([str(docs)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    record = out / "current" / "index.json"
    meta = json.loads(record.read_text())
    meta["keywords"]["analyzer"] = "snowball-stems+cjk-bigrams+thai-newmm"  # as encodr analysed before identifiers' parts
    record.write_text(json.dumps(meta))

    def hints(*extra):
        code, text, _ = run_cli(["search", "scores", "--index", str(out), "--json", *extra], capsys, monkeypatch)
        assert code == 0
        return json.loads(text)["hints"]

    assert [h for h in hints() if "encodr index --upgrade" in h and "older encodr" in h]
    assert hints("--mode", "dense") == []  # a dense search reads no keyword
    code, text, _ = run_cli(["index", "--upgrade", str(out), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(text)["upgraded"] is True
    assert hints() == []
    code, text, _ = run_cli(["index", "--upgrade", str(out), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(text)["upgraded"] is False
