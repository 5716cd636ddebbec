"""``index.json`` is read and written through one typed record, :class:`IndexMeta`."""

from __future__ import annotations

import json

import pytest

from encodr.index import BuildOptions, build
from encodr.index.format import FORMAT
from encodr.index.meta import IndexMeta
from encodr.index.reader import IndexReader


def test_every_key_a_build_writes_is_a_field_and_reads_back_equal(tmp_path, tiny_model):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the pump holds pressure\nthe valve needs grease\n")
    build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    with IndexReader.open(tmp_path / "idx") as reader:
        meta = reader.meta
        raw = json.loads((reader.folder / "index.json").read_text())
    assert meta.extra == {} and set(raw) <= set(meta.to_dict())  # no key of a build is unknown to the record
    assert meta.format == FORMAT and meta.count == 2 and meta.live == 2 and meta.languages == ["eng"]
    assert meta.has_keywords and meta.query_prompt == "" and IndexMeta.from_dict(raw) == meta


def test_a_key_it_does_not_know_is_kept_and_a_missing_one_takes_its_default(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"model": "minilm", "count": 3, "pcr": None, "from_the_future": [1, 2]}))
    meta = IndexMeta.read(tmp_path)
    assert (meta.format, meta.model, meta.count, meta.pcr, meta.prompts) == (1, "minilm", 3, False, {"query": "", "document": ""})
    meta.count = 4
    meta.write(tmp_path)
    written = json.loads((tmp_path / "index.json").read_text())
    assert written["from_the_future"] == [1, 2] and written["count"] == 4 and "shards" not in written


def test_a_copy_shares_no_list_with_its_original():
    meta = IndexMeta(languages=["eng"])
    copy = meta.copy(count=5)
    copy.languages.append("deu")
    assert meta.languages == ["eng"] and copy.count == 5


def test_a_record_that_is_not_an_object_is_refused(tmp_path):
    (tmp_path / "index.json").write_text("[1, 2]")
    with pytest.raises(TypeError):
        IndexMeta.read(tmp_path)
