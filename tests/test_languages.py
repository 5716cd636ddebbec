"""A query in each language of the shared data (Tatoeba's test sets: cmn, jpn, kor, tha, spa,
fra, deu; the Bible's public-domain translations: ara, rus, vie, ita; CC BY 2.0 FR and public
domain, see encodr/data/ATTRIBUTION.md) through every front end, CLI, HTTP, MCP and the TUI: an
answer, never a traceback (a Chinese query ended in ``No module named 'jieba'``)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli, settle

SENTENCES = {
    "cmn": "Muiriel现在20岁了。",
    "jpn": "言い換えると、世の中にはいろいろな人間が必要だということだ。",
    "kor": "너는 아침 내내 이 문제에 대해 생각했어, 좀 쉬고, 점심 먹으러 가.",
    "tha": "เขาอยู่ที่ป่าคนเดียว",
    "spa": "El único gol de la final lo marcó Andrés Iniesta.",
    "fra": "Je voudrais aller chercher mes affaires.",
    "deu": "Maria meinte, ich trüge eine Perücke.",
    "ara": "وكانت الارض خربة وخالية وعلى وجه الغمر ظلمة وروح الله يرف على وجه المياه.",
    "rus": "Земля же была безвидна и пуста, и тьма над бездною, и Дух Божий носился над водою.",
    "vie": "Vả, đất là vô hình và trống không, sự mờ tối ở trên mặt vực; Thần Đức Chúa Trời vận hành trên mặt nước.",
    "ita": "E la terra era una cosa deserta e vacua; e tenebre erano sopra la faccia dell’abisso.",
    "eng": "The earth was formless and empty. Darkness was on the surface of the deep.",
}


@pytest.fixture(scope="module")
def notes(tmp_path_factory, tiny_model):
    from encodr.core import commands
    from encodr.core.requests import IndexRequest

    root = tmp_path_factory.mktemp("languages")
    folder = root / "notes"
    folder.mkdir()
    for lang, sentence in SENTENCES.items():
        (folder / f"{lang}.md").write_text(f"# {lang}\n\n{sentence}\n", encoding="utf-8")
    commands.index(IndexRequest(corpus=[str(folder)], model=str(tiny_model), out=str(root / "idx")))
    return root / "idx"


@pytest.mark.parametrize("lang", sorted(SENTENCES))
def test_a_query_in_each_language_is_answered_by_the_cli(lang, notes, capsys, monkeypatch):
    code, out, err = run_cli(["search", SENTENCES[lang], "--index", str(notes)], capsys, monkeypatch)
    assert code == 0 and "Traceback" not in err, err
    assert f"{lang}.md" in out  # its own note, among the hits (hybrid: its snippet weighed its words)
    code, out, _ = run_cli(["search", SENTENCES[lang], "--index", str(notes), "--mode", "keyword", "--json"], capsys, monkeypatch)
    assert json.loads(out)["results"][0]["hits"][0]["path"] == f"{lang}.md"  # its words find it first


def test_every_language_is_answered_over_http_and_mcp(notes):
    from fastapi.testclient import TestClient

    from encodr.mcp import Agents
    from encodr.serve import Limits, create_app, load

    served = load([], [str(notes)], Limits())
    try:
        client, agents = TestClient(create_app(served)), Agents(served)
        for lang, sentence in SENTENCES.items():
            answer = client.post("/v1/search", json={"query": sentence, "index": "idx", "mode": "keyword", "k": 3})
            assert answer.status_code == 200, answer.text
            assert answer.json()["results"][0]["hits"][0]["path"] == f"{lang}.md"
            found = agents.call("search", {"query": sentence, "k": 3})
            assert found["results"][0]["hits"], lang
    finally:
        served.close()


async def test_every_language_is_answered_in_the_tui(notes):
    from encodr.index import Searcher
    from encodr.tui import EncodrApp

    app = EncodrApp(searcher=Searcher(notes), debounce=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        for sentence in SENTENCES.values():
            app.query_one("#query").value = sentence
            await pilot.click("#query")
            await pilot.press("enter")
            await settle(app, pilot)
            assert app.query_one("#results").row_count > 0, sentence
