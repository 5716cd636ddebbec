"""A query in another language than an English-only index and model gets one hint naming the multilingual model."""

from encodr.index.hints import language_hints, model_language_hints
from encodr.index.meta import IndexMeta


def test_a_spanish_query_on_an_english_only_model_names_the_multilingual_one():
    meta = IndexMeta(model="minilm", languages=["eng"])
    (hint,) = language_hints(["¿cómo mantener la presión de la bomba de agua?"], meta)
    assert "spa" in hint and "--model me5" in hint
    assert language_hints(["how to keep the pump pressure steady"], meta) == []
    assert language_hints(["¿cómo mantener la presión de la bomba de agua?"], IndexMeta(model="me5", languages=["eng"])) == []
    assert (
        language_hints(["¿cómo mantener la presión de la bomba de agua?"], IndexMeta(model="minilm", languages=["eng", "spa"]))
        == []
    )


def test_a_short_english_query_the_detector_reads_as_another_language_gets_no_hint():
    meta = IndexMeta(model="minilm", languages=["eng"])
    assert language_hints(["white matter in newborns"], meta) == []  # lingua's low-accuracy mode: Swedish 0.89, English 0.045
    assert language_hints(["wo leben pinguine in der antarktis"], meta) != []


def test_english_words_the_detector_reads_as_maori_or_latin_get_no_hint_and_a_japanese_question_gets_one():
    meta = IndexMeta(model="minilm", languages=["eng"])
    for english in ("okapi zebra events", "serve static files StaticFiles", "how do I add CORS"):
        assert language_hints([english], meta) == [], english  # read as mri, lat, nob: their words are English
    for other, code in (("関数の引数", "jpn"), ("如何添加跨域支持", "zho"), ("wie funktioniert die Weiterleitung", "deu")):
        (hint,) = language_hints([other], meta)
        assert code in hint and "--model me5" in hint
    assert language_hints(["関数"], meta) == []  # one word: too little to tell


def test_an_index_of_other_languages_on_an_english_only_model_names_the_multilingual_one():
    (hint,) = model_language_hints("minilm", ["deu", "eng", "spa", "und"])
    assert "deu, spa" in hint and "--model me5" in hint and "eng" not in hint
    assert model_language_hints("minilm", ["eng", "und"]) == []
    assert model_language_hints("me5", ["deu"]) == []


def test_building_an_index_of_german_text_on_minilm_warns_once(tmp_path, tiny_model, monkeypatch):
    from encodr.core import commands
    from encodr.core.requests import IndexRequest

    monkeypatch.setattr("encodr.models.aliases.ENGLISH_ONLY", (str(tiny_model),))
    corpus = tmp_path / "c.txt"
    corpus.write_text("Die Pumpe hält den Druck im Kessel.\nDer Kessel steht im Keller des Hauses.\n")
    warned: list[str] = []
    commands.index(
        IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(tmp_path / "idx"), lang="deu"), warn=warned.append
    )
    assert [line for line in warned if "--model me5" in line] == [next(line for line in warned if "deu" in line)]


def test_what_the_index_alone_refuses_comes_before_the_model_loads(tmp_path, tiny_model, monkeypatch):
    import pytest

    from encodr.core import commands
    from encodr.core.requests import IndexRequest, SearchRequest
    from encodr.errors import EncodrError

    corpus = tmp_path / "c.txt"
    corpus.write_text("a cat sat on the mat\nthe pump pressure\n")
    commands.index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(tmp_path / "idx"), lang="eng"))
    monkeypatch.setattr(
        "encodr.index.search.load_encoder", lambda *a, **k: pytest.fail("the model was loaded before the refusal")
    )
    for given, words in (
        ({"hit_lang": ["fra"]}, "has no texts in that language"),
        ({"lang": "eng", "mode": "dense"}, "changes nothing"),
    ):
        with pytest.raises(EncodrError, match=words):
            commands.open_searcher(SearchRequest(index=str(tmp_path / "idx"), query=["cat"], **given))
