"""Passages as people read their files: bounded by headings and pages, each with the lines of
the file it spans; notes (.txt in a folder) read as documents; skipped files summed up by kind."""

import json

from encodr.data.files import document_passages, expand, iter_records, section_bounds
from encodr.data.records import Layout, Record
from tests.conftest import run_cli


def test_no_passage_crosses_a_heading_and_each_names_its_own_section():
    """The passage holding a subsection's text is labelled with that subsection, never with
    the heading where a passage run over it began; its lines are those of the file."""
    long_paragraph = " ".join(["Calibrate the bench supply before use."] * 30)
    text = (
        f"# Calibration\n\n## Calibration Overview\n\n{long_paragraph}\n\n### Oscilloscope probes\n\n"
        "Compensate each probe on the square-wave output.\n"
    )
    record = Record(text, "lab.md", 1, "lab.md", title="Calibration")
    passages = list(document_passages(record, split=None))
    assert [p.section for p in passages] == ["Calibration Overview", "Calibration Overview › Oscilloscope probes"]
    probe = passages[1]
    assert probe.text.startswith("### Oscilloscope probes") and "bench supply" not in probe.text
    lines = text.split("\n")
    assert lines[probe.line - 1] == "### Oscilloscope probes" and lines[probe.end_line - 1].startswith("Compensate")


def test_lines_count_from_where_the_text_starts_in_the_file():
    """A document whose text starts on line 5 (after front matter) numbers its passages from there."""
    record = Record("# Pumps\n\nIntro.\n\n## Seals\n\nReplace the seal.", "p.md", 5, "p.md", title="Pumps")
    seals = [p for p in document_passages(record, split=None) if p.section == "Seals"][0]
    assert (seals.line, seals.end_line) == (9, 11)


def test_a_heading_with_no_text_of_its_own_joins_the_next_section():
    text = "# Guide\n## Install\n\nRun the installer.\n"
    assert section_bounds(text, "Guide") == [(0, len(text), "Install")]


def test_pdf_passages_know_their_page():
    text = "First page words.\n\nSecond page words."
    record = Record(text, "m.pdf", 1, "m.pdf", title="m")
    passages = list(document_passages(record, split=None, pages=(0, text.index("Second"))))
    assert [(p.page, p.text) for p in passages] == [(1, "First page words."), (2, "Second page words.")]


def test_markdown_front_matter_moves_the_first_line(tmp_path):
    doc = tmp_path / "n.md"
    doc.write_text("---\ntitle: Notes\n---\n# Notes\n\nOne.\n\n## Two\n\nSecond section text.\n")
    records = list(iter_records(str(doc), split=None))
    two = [r for r in records if r.section == "Two"][0]
    assert doc.read_text().split("\n")[two.line - 1] == "## Two"


def test_a_text_file_in_a_folder_is_one_document_and_alone_is_one_record_a_line(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "boat.txt").write_text("Boat log\n\nThe harbour was calm.\nBoats left early.\n\nWind rose at noon.\n")
    folder = list(iter_records(str(notes / "boat.txt"), in_folder=True))
    assert len({r.document_id for r in folder}) == 1 and folder[0].title == "boat"
    alone = list(iter_records(str(notes / "boat.txt")))
    assert [r.line for r in alone] == [1, 3, 4, 6]  # the mission's corpus.txt: one record a line
    asked = list(iter_records(str(notes / "boat.txt"), in_folder=True, layout=Layout(records=True)))
    assert len(asked) == 4


def test_a_folder_of_notes_indexes_one_document_a_note(tmp_path, tiny_model, capsys, monkeypatch):
    notes = tmp_path / "notes"
    (notes / "trips").mkdir(parents=True)
    for i in range(3):
        (notes / "trips" / f"day{i}.txt").write_text(f"Day {i}\n\nWe walked {i} miles.\nThe path was steep.\n")
    for i in range(4):
        (notes / f"blob{i}.bin").write_bytes(b"\0\1")
    out = tmp_path / "idx"
    code, stdout, err = run_cli(
        ["index", str(notes), "--model", str(tiny_model), "--out", str(out), "--lang", "eng", "--json"], capsys, monkeypatch
    )
    summary = json.loads(stdout)
    assert code == 0 and summary["documents"] == 3
    assert err.count("skipped 4 .bin files: not a kind encodr reads") == 1 and "blob0" not in err  # one line for the kind
    assert len(summary["skipped_files"]) == 4  # the full list in --json
    code, stdout, _ = run_cli(["search", "steep path", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch)
    hit = json.loads(stdout)["results"][0]["hits"][0]
    assert hit["path"].startswith("trips/day") and hit["snippet_line"] == 4  # relative to the folder; the line that matched


def test_expand_names_unread_kinds_in_one_reason(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "b.bin").write_bytes(b"\0")
    files, skipped = expand([str(tmp_path)])
    assert [s.reason for s in skipped] == ["not a kind encodr reads"]
