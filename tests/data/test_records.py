import json

import pytest

from encodr.core.fields import words
from encodr.data.records import Layout, read_records
from encodr.errors import EncodrError


def texts(path, layout=Layout()):
    return [(r.text, r.ext_id, r.title, r.line) for r in read_records(path, None, layout)]


def test_csv_and_tsv_columns_can_be_named(tmp_path):
    csv = tmp_path / "rows.csv"
    csv.write_text('Doc,Name,Body\nd1,First,"one, with a comma"\nd2,,"two\nlines"\n')
    layout = Layout(text_column="body", id_column="doc", title_column="name")
    assert texts(csv, layout) == [("First one, with a comma", "d1", "First", 2), ("two\nlines", "d2", None, 4)]
    tsv = tmp_path / "rows.tsv"
    tsv.write_text('id\ttitle\ttext\n7\tT\t"quoted" stays\n')  # the default columns, title included; a TSV keeps quotes as text
    assert texts(tsv) == [('T "quoted" stays', "7", "T", 2)]


@pytest.mark.parametrize(
    "layout, option",
    [
        (Layout(text_column="body"), "text_column"),
        (Layout(id_column="key"), "id_column"),
        (Layout(title_column="heading"), "title_column"),
    ],
)
def test_a_named_column_that_is_missing_is_one_error_naming_the_option(tmp_path, layout, option):
    for name in ("rows.csv", "rows.tsv"):
        sep = "," if name.endswith("csv") else "\t"
        (tmp_path / name).write_text(f"text{sep}id\nhello{sep}1\n")
        with pytest.raises(
            EncodrError, match=rf"{name}: no column '\w+' in its header \(text, id\); pass {option} with one of them"
        ) as refused:
            list(read_records(tmp_path / name, None, layout))
        flag = "--" + option.replace("_", "-")
        assert f"pass {flag} with one of them" in words(refused.value, "cli")  # the CLI names its flag


def test_jsonl_text_field_can_be_named(tmp_path):
    f = tmp_path / "docs.jsonl"
    f.write_text(json.dumps({"id": 3, "title": "Head", "content": "the body"}) + "\n")
    assert texts(f, Layout(text_field="content")) == [("Head the body", "3", "Head", 1)]
    with pytest.raises(EncodrError, match=r"docs.jsonl, line 1: needs a JSON object with a string 'text' field"):
        list(read_records(f))


def test_documents_are_blank_line_blocks_of_a_text_file(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("first line\nsame document\n\n\nsecond document\n  \nthird\n")
    assert texts(f, Layout(documents=True)) == [
        ("first line\nsame document", None, None, 1),
        ("second document", None, None, 5),
        ("third", None, None, 7),
    ]
    assert [t for t, *_ in texts(f)] == ["first line", "same document", "second document", "third"]  # by default, one text a line


def test_a_long_csv_field_and_a_bad_byte_in_a_tsv(tmp_path):
    long = "word " * 40_000  # 200 kB: above the csv module's default field limit
    (tmp_path / "long.csv").write_text(f"text\n{long}\n")
    assert texts(tmp_path / "long.csv")[0][0] == long.strip()
    (tmp_path / "bad.tsv").write_bytes(b"text\nfine\n\xff bad\n")
    with pytest.raises(EncodrError, match=r"bad.tsv: line 3 is not valid UTF-8"):
        list(read_records(tmp_path / "bad.tsv"))
