import pytest

from encodr.data.text import read_corpus, top_words
from encodr.errors import EncodrError


def test_dedup_strip_and_counts(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("\ufeffa b\n\n  a b  \nc\n", encoding="utf-8")  # a UTF-8 BOM is dropped
    c = read_corpus(f)
    assert c.strings == ["a b", "c"]
    assert (c.lines, c.blank, c.duplicates) == (4, 1, 1)
    assert len(c.sha256) == 64


def test_non_utf8_reports_line_number(tmp_path):
    f = tmp_path / "latin1.txt"
    f.write_bytes("ok\nfine\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(EncodrError, match=r"line 3 is not valid UTF-8 \(byte 0xe9\)"):
        read_corpus(f)


@pytest.mark.parametrize("content, words", [(b"", "is empty"), (b"\n  \n\n", "only blank lines")])
def test_empty_and_blank(tmp_path, content, words):
    f = tmp_path / "e.txt"
    f.write_bytes(content)
    with pytest.raises(EncodrError, match=words):
        read_corpus(f)


def test_missing_and_directory(tmp_path):
    with pytest.raises(EncodrError, match="no such file"):
        read_corpus(tmp_path / "nope.txt")
    with pytest.raises(EncodrError, match="is a directory"):
        read_corpus(tmp_path)


def test_huge_line_is_capped(tmp_path):
    f = tmp_path / "big.txt"
    f.write_text("short\n" + "word " * 200_000 + "\n", encoding="utf-8")
    c = read_corpus(f, max_length=25)
    assert c.long_lines == [2]
    assert max(len(s) for s in c.strings) <= 25 * 40


def test_top_words_are_alphabetic_and_distinct():
    words = top_words(500)
    assert len(words) == 500 == len(set(words))
    assert all(w.isalpha() for w in words)
    assert words[0] == "the"


def test_a_binary_file_named_as_text_is_called_binary_not_latin1(tmp_path, capsys, monkeypatch):
    from tests.conftest import run_cli

    f = tmp_path / "photo.png"
    f.write_bytes(b"fine\n\x89PNG\r\n\x1a\n\x00\x00binary")
    with pytest.raises(
        EncodrError, match=r"photo.png: line 4 holds a NUL byte: a binary file \(or UTF-16 text\), not UTF-8 text"
    ):
        read_corpus(f)
    named = tmp_path / "photo.txt"  # a binary file named as text
    named.write_bytes(f.read_bytes())
    code, _, err = run_cli(["index", str(named), "--out", str(tmp_path / "idx")], capsys, monkeypatch)
    assert code == 2 and "holds a NUL byte" in err and "latin1" not in err and "Traceback" not in err
    code, _, err = run_cli(["index", str(f), "--out", str(tmp_path / "idx")], capsys, monkeypatch)
    assert code == 2 and "photo.png: not a kind encodr reads" in err  # named as what it is: refused by its kind
    assert not (tmp_path / "idx").exists()
