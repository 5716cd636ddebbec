"""What a query path keeps and prepares so that a query answers at once (issue 54): the
language detectors a search will run start loading while the model loads, and only those."""

from __future__ import annotations

import pytest

from encodr.core import session
from encodr.index.meta import IndexMeta


@pytest.mark.parametrize(
    ("meta", "lang", "mode", "loaded"),
    [
        (
            {"languages": ["deu", "eng", "spa", "und"], "model": "me5"},
            None,
            "hybrid",
            [("deu", "eng", "spa")],
        ),  # detected among the index's languages
        ({"languages": ["deu", "eng", "spa"], "model": "me5"}, None, "dense", []),  # a dense search without PCR uses no language
        (
            {"languages": ["deu", "eng", "spa"], "model": "me5", "pcr": True},
            None,
            "dense",
            [("deu", "eng", "spa")],
        ),  # …with PCR it does
        ({"languages": ["deu", "eng", "spa"], "model": "me5"}, "spa", "hybrid", []),  # --lang given: none detected
        (
            {"languages": ["deu", "eng"], "default_lang": "eng", "model": "me5"},
            None,
            "hybrid",
            [],
        ),  # built with --lang: its language
        (
            {"languages": ["eng"], "model": "minilm"},
            None,
            "hybrid",
            [None],
        ),  # one language, an English-only model: the hint's detector, among all
        ({"languages": ["eng"], "model": "me5"}, None, "hybrid", []),  # one language, a multilingual model: nothing to detect
        (None, None, "hybrid", []),  # no index.json to read: the open says why
    ],
)
def test_the_detectors_a_search_will_run_are_preloaded_and_no_others(monkeypatch, meta, lang, mode, loaded):
    import encodr.data.language as language

    calls = []
    monkeypatch.setattr(
        language, "preload", lambda candidates=None: calls.append(None if candidates is None else tuple(candidates))
    )
    session.preload_languages(None if meta is None else IndexMeta.from_dict(meta), lang, mode)
    assert calls == loaded


def test_peek_meta_reads_the_current_generation_without_opening_the_index(tmp_path, tiny_model):
    from encodr.index import BuildOptions, build
    from encodr.index.reader import peek_meta

    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat\nstock markets fell\n")
    build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    assert peek_meta(tmp_path / "idx").count == 2 and peek_meta(tmp_path / "idx").languages == ["eng"]
    assert peek_meta(tmp_path / "nowhere") is None
