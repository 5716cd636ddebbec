"""A query in another language than an English-only index and model gets one hint naming the multilingual model."""

from encodr.core.commands import language_hints


def test_a_spanish_query_on_an_english_only_model_names_the_multilingual_one():
    meta = {"model": "minilm", "languages": ["eng"]}
    (hint,) = language_hints(["¿cómo mantener la presión de la bomba de agua?"], meta)
    assert "spa" in hint and "--model me5" in hint
    assert language_hints(["how to keep the pump pressure steady"], meta) == []
    assert language_hints(["¿cómo mantener la presión de la bomba de agua?"], {"model": "me5", "languages": ["eng"]}) == []
    assert language_hints(["¿cómo mantener la presión de la bomba de agua?"], {"model": "minilm", "languages": ["eng", "spa"]}) == []
