"""Readers in encodr.data that training methods use: documents and bitext."""

import pytest

from encodr.data.adjacent import read_documents
from encodr.data.bitext import read_bitext
from encodr.errors import EncodrError


def test_plain_documents_split_on_blank_lines_and_give_adjacent_pairs(tmp_path):
    f = tmp_path / "docs.txt"
    f.write_text("a1\na2\na3\n\n\nb1\nb2\n\nc1\n")
    docs = read_documents(f)
    assert docs.docs == [["a1", "a2", "a3"], ["b1", "b2"], ["c1"]]
    assert docs.adjacent_pairs() == [("a1", "a2"), ("a2", "a3"), ("b1", "b2")]  # never across documents


def test_tsv_documents_group_consecutive_rows_by_id(tmp_path):
    f = tmp_path / "docs.tsv"
    f.write_text("doc_id\ttext\n7\tx1\n7\tx2\n9\ty1\n9\t\n9\ty2\n7\tz1\n")
    assert read_documents(f).docs == [["x1", "x2"], ["y1", "y2"], ["z1"]]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("d.tsv", "text\nx\n", "needs a header with 'text' and a document-id column"),
        ("d.txt", "one\n\ntwo\n", "no document with two sentences"),
    ],
)
def test_bad_document_files_are_named(tmp_path, name, content, message):
    f = tmp_path / name
    f.write_text(content)
    with pytest.raises(EncodrError, match=message):
        read_documents(f)


def test_bitext_with_header_languages_and_repeats(tmp_path):
    f = tmp_path / "bi.tsv"
    f.write_text(
        "source\ttarget\n\nthe cat\tel gato\teng\tspa\nthe dog\tle chien\neng-x\n".replace(
            "eng-x\n", "the cat\tel gato\teng\tspa\n"
        )
    )
    pairs = read_bitext(f)
    assert [(p.source, p.target, p.source_lang, p.target_lang) for p in pairs] == [
        ("the cat", "el gato", "eng", "spa"),
        ("the dog", "le chien", None, None),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a\tb\nc\n", "line 2 is not source<TAB>target \\(found 1 column\\)"),
        ("a\tb\nc\t\n", "line 2 is not source<TAB>target \\(found 2 columns, one empty\\)"),
        ("a\tb\na\tb\n", "1 distinct translation pair;"),
    ],
)
def test_bad_bitext_is_named(tmp_path, content, message):
    f = tmp_path / "bi.tsv"
    f.write_text(content)
    with pytest.raises(EncodrError, match=message):
        read_bitext(f)


def test_hold_out_keeps_every_pair_of_a_dev_source_out_of_training():
    from encodr.data.bitext import Translation, hold_out

    pairs = [Translation(f"en {i}", f"{lang} {i}", "eng", lang) for i in range(30) for lang in ("spa", "fra")]
    train, dev = hold_out(pairs, 500, seed=1)
    assert len(dev) == 6  # at most a tenth of the 60 pairs, both pairs of each drawn source
    assert not {p.source for p in train} & {p.source for p in dev}
    assert sorted(train + dev, key=pairs.index) == pairs and train == [p for p in pairs if p in train]  # nothing lost, order kept
    assert hold_out(pairs, 500, seed=1) == (train, dev) and hold_out(pairs, 500, seed=2)[1] != dev  # seeded
    assert hold_out(pairs, 2, seed=1)[1] and len(hold_out(pairs, 2, seed=1)[1]) == 2
    assert hold_out(pairs[:15], 500) == (pairs[:15], [])  # a tenth of 15 is one pair: too few for a dev set
