import pytest

from encodr.data.records import Record
from encodr.errors import EncodrError
from encodr.evaluation.pseudo import pseudo_dev, sentence_spans


def docs(n=12):
    return [
        Record(
            f"Document {i} opens here with words. The keeper of lighthouse {i} wrote a long entry. "
            f"Storm number {i} came over the hill at night. Short one.",
            "d.jsonl",
            i + 1,
            f"d{i}",
        )
        for i in range(n)
    ]


def test_sentences_split_after_end_marks_in_any_script():
    text = "First one here. Second? Third!  東京です。大阪です"
    assert [text[s:e] for s, e in sentence_spans(text)] == ["First one here.", "Second?", "Third!", "東京です。", "大阪です"]


def test_pseudo_queries_are_cut_out_of_their_documents_and_never_left_in_the_corpus(tmp_path):
    held = pseudo_dev(docs(), 5, seed=3)
    assert len(held.queries) == 5 and len(held.documents) == 12
    by_id = {d.ext_id: d.text for d in held.documents}
    for qid, sentence in held.queries.items():
        assert len(sentence.split()) >= 5 and sentence != "Short one."
        assert all(sentence not in text for text in by_id.values())  # nothing to train on holds it
        assert held.qrels[qid] in by_id
    assert pseudo_dev(docs(), 5, seed=3).queries == held.queries  # seeded
    folder = held.write(tmp_path / "dev")
    from encodr.data.beir import read_retrieval

    data = read_retrieval(folder)
    assert data.judged("dev") == {q: {d: 1} for q, d in held.qrels.items()}


def test_documents_too_short_for_a_pseudo_query_are_one_error():
    with pytest.raises(EncodrError, match=r"dev auto cuts a sentence of 5\+ words out of documents of 3\+ sentences"):
        pseudo_dev([Record("one line only", "x", 1, "a"), Record("another", "x", 2, "b")], 3)


def test_a_cap_on_searched_documents_keeps_every_pseudo_querys_own(tmp_path):
    from encodr.data.beir import read_retrieval

    held = pseudo_dev(docs(12), 3, seed=1, searched=5)
    assert len(held.searched) == 5 and len(held.documents) == 12  # training keeps them all
    data = read_retrieval(held.write(tmp_path / "dev"))
    assert len(data.doc_ids) == 5 and set(held.qrels.values()) <= data.doc_ids


def test_holding_out_documents_trains_on_none_of_the_pseudo_queries_documents(tmp_path):
    from encodr.data.beir import read_retrieval

    held = pseudo_dev(docs(12), 4, seed=2)
    assert held.training_documents() == held.documents  # sentences: every document, the sentences cut out
    trained = held.training_documents("documents")
    assert len(trained) == 8 and not {d.document_id for d in trained} & set(held.qrels.values())
    assert set(held.qrels.values()) <= read_retrieval(held.write(tmp_path / "dev")).doc_ids  # still searched by the dev set
    with pytest.raises(ValueError, match="sentences or documents"):
        held.training_documents("passages")
