"""The Textual app, driven by its pilot: type a query, read the results table."""

import numpy as np
import pytest

from encodr.index import BuildOptions, Searcher, build
from encodr.index.options import SearchOptions
from encodr.tui import EncodrApp, score_bar
from encodr.tui.app import FIXED_WIDTH, GRADE_COLUMN, HELP, HIT_COLUMN
from tests.conftest import hit_fields, search_with, settle

TEXTS = ["the cat sat on the mat", "stock markets fell sharply", "it rained all day in london", "a dog chased the cat"]


@pytest.fixture
def searcher(tmp_path, tiny_model):
    f = tmp_path / "c.txt"
    f.write_text("\n".join(TEXTS))
    build([str(f)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    return Searcher(tmp_path / "idx")


def hit_text(row) -> str:
    """A results row's snippet: its hit cell's lines but the last (where the hit is), joined."""
    return " ".join(line.plain for line in row[HIT_COLUMN][:-1])


def hit_where(row) -> str:
    """A results row's location line: its title and ``path:line › section``."""
    return row[HIT_COLUMN][-1].plain


async def keyword_search(app, pilot, query: str) -> None:
    """``query`` typed into the Search tab's box in keyword mode, Enter, and its hits shown."""
    app.query_one("#search-mode").value = "keyword"
    await pilot.click("#query")
    await pilot.press(*query, "enter")
    await settle(app, pilot)


def test_score_bar():
    assert score_bar(0.5) == "█████·····" and score_bar(-0.2) == "··········" and score_bar(1.0, 4) == "████"


async def test_typing_a_query_fills_the_results_table(searcher):
    app = EncodrApp(searcher=searcher, debounce=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.click("#query")
        await pilot.press(*"stock markets fell sharply")
        await pilot.pause()
        await settle(app, pilot)
        table = app.query_one("#results")
        assert table.row_count == 4
        first = table.get_row_at(0)
        assert hit_fields(first)[0] == "1" and hit_text(first) == "stock markets fell sharply" and hit_where(first) == "c.txt:2"
        assert [line.plain[s.start : s.end] for line in first[HIT_COLUMN] for s in line.spans if s.style == "bold yellow"] == [
            "stock",
            "markets",
            "fell",
            "sharply",
        ]  # the query's words highlighted
        assert "4 texts" in str(app.query_one("#status").render())


async def test_a_source_in_brackets_shows_as_it_is(tmp_path, tiny_model):
    f = tmp_path / "[draft] notes.txt"  # "[draft]" reads as a Rich markup tag in a plain DataTable cell, and vanishes
    f.write_text("\n".join(TEXTS))
    build([str(f)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    app = EncodrApp(searcher=Searcher(tmp_path / "idx"), debounce=0.0)
    async with app.run_test(size=(160, 40)) as pilot:
        app.query_one("#query").value = "the cat"
        await settle(app, pilot)
        table = app.query_one("#results")
        assert table.row_count == 4
        shown = [
            table.render_line(y).text for y in range(1, 3 * table.row_count + 1)
        ]  # a hit: its snippet's lines, then where it is
        assert sum("[draft] notes.txt:" in line for line in shown) == 4


async def test_typing_in_the_query_box_lays_out_nothing_and_a_long_query_scrolls():
    app = EncodrApp()  # no index open: the box alone
    async with app.run_test(size=(120, 40)) as pilot:
        layouts = []
        app.screen.screen_layout_refresh_signal.subscribe(app, layouts.append)
        await pilot.click("#query")
        await settle(app, pilot)
        layouts.clear()
        await pilot.press(*"stock markets fell sharply " * 4)
        await settle(app, pilot)
        box = app.query_one("#query")
        assert layouts == []  # a plain Input lays the screen out at every keystroke
        assert (
            box.cursor_position == len(box.value) and box.scroll_x > 0
        )  # the cursor, at the end of a text wider than the box, is in view


async def test_a_new_query_with_as_many_hits_redraws_the_results_without_a_layout(tmp_path, tiny_model):
    long = "the harbour committee met again on tuesday to weigh the ferry timetable against the fishing fleet's needs"
    f = tmp_path / "c.txt"
    f.write_text("\n".join([*TEXTS, long]))
    build([str(f)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    app = EncodrApp(searcher=Searcher(tmp_path / "idx"), k=1, debounce=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        layouts = []
        app.screen.screen_layout_refresh_signal.subscribe(app, layouts.append)
        app.query_one("#query").value = "stock markets"
        await settle(app, pilot)
        table = app.query_one("#results")
        first = table.virtual_size
        assert hit_text(table.get_row_at(0)).strip() == TEXTS[1]
        layouts.clear()
        app.query_one("#query").value = "harbour committee ferry timetable"  # one hit again, a longer one
        await settle(app, pilot)
        assert hit_text(table.get_row_at(0)).startswith("the harbour")  # drawn again, on two lines
        assert table.virtual_size == first and layouts == []  # each hit 3 lines, the columns fixed: no layout pass
        await pilot.resize_terminal(100, 40)
        await settle(app, pilot)
        assert table.widths[HIT_COLUMN] == 100 - FIXED_WIDTH  # the hit column follows the terminal


async def test_searches_run_off_the_event_loop_on_one_thread(searcher):
    import threading

    threads = []
    original = searcher.query  # what every search runs (commands.search → Searcher.query), the warm-up too

    def recorded(*args, **kwargs):
        threads.append(threading.current_thread())
        return original(*args, **kwargs)

    searcher.query = recorded
    app = EncodrApp(searcher=searcher, debounce=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        for query in ("stock markets", "the cat", "rain in london"):
            app.query_one("#query").value = query
            await settle(app, pilot)
            assert hit_text(app.query_one("#results").get_row_at(0)) in TEXTS
    assert (
        len(threads) >= 3 and len(set(threads)) == 1 and threads[0] is not threading.main_thread()
    )  # the search thread, where the index was warmed


async def test_the_rerank_box_rescores_the_hits_with_a_cross_encoder(searcher, tiny_cross, tmp_path):
    from sentence_transformers import CrossEncoder

    expected = CrossEncoder(str(tiny_cross), device="cpu").predict([("a cat", t) for t in TEXTS])
    app = EncodrApp(searcher=searcher, debounce=0.0, rerank=str(tiny_cross))  # encodr tui --rerank CROSS
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.click("#query")
        await pilot.press(*"a cat", "enter")
        await settle(app, pilot)
        table = app.query_one("#results")
        assert [hit_text(table.get_row_at(r)) for r in range(table.row_count)] == [
            TEXTS[i] for i in np.argsort(-expected, kind="stable")
        ]
        assert [float(hit_fields(table.get_row_at(r))[1]) for r in range(table.row_count)] == pytest.approx(
            sorted(expected, reverse=True), abs=1e-4
        )
        assert f"re-ranked by {tiny_cross}" in str(app.query_one("#status").render())
        box = app.query_one("#search-rerank")
        box.value = str(tmp_path / "no-such-model")
        await pilot.click("#search-rerank")
        await pilot.press("enter")
        await settle(app, pilot)
        assert "error:" in str(app.query_one("#status").render()) and app.reranker is not None  # the loaded one stays
        box.value = ""
        await pilot.click("#search-rerank")
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.reranker is None and "re-ranked" not in str(app.query_one("#status").render())
        first_stage = searcher.search(["a cat"], SearchOptions(k=10, mode="hybrid"))[0]
        assert [hit_fields(table.get_row_at(r))[1] for r in range(table.row_count)] == [
            f"{h.score:.4f}" for h in first_stage
        ]  # not re-ranked again


async def test_enter_searches_and_compare_view(searcher):
    app = EncodrApp(searcher=searcher, debounce=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.click("#query")
        await pilot.press(*"it rained all day in london", "enter")  # a tiny random model: exact text ranks first
        await settle(app, pilot)
        assert app.searches >= 1
        assert hit_text(app.query_one("#results").get_row_at(0)) == "it rained all day in london"
        app.query_one("#results").focus()
        await pilot.press("enter")  # the hit's whole document
        await pilot.pause()
        from encodr.tui.app import DocumentScreen

        assert isinstance(app.screen, DocumentScreen) and app.screen.text == "it rained all day in london"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DocumentScreen)
        await pilot.press("f3")
        app.query_one("#compare-a").value = "the cat sat on the mat"
        app.query_one("#compare-b").value = "the cat sat on the mat"
        await pilot.click("#compare-b")
        await pilot.press("enter")
        await settle(app, pilot)
        assert "cosine: 1.000" in str(app.query_one("#cosine").render())
        assert app.query_one("#near-a").get_row_at(0)[2] == "the cat sat on the mat"


async def test_help_screen_and_workspace(searcher, tmp_path):
    app = EncodrApp(searcher=searcher)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        assert "Ctrl+Q" in [key for key, _ in HELP]
        await pilot.press("escape")
        await pilot.press("f4")
        await pilot.pause()
        assert app.query_one("#models").get_row_at(0)[0] == "minilm"


async def test_workspace_columns_fit_their_cells_on_a_wide_terminal(searcher):
    """F4 on a 160-column terminal: every Workspace column is as wide as its widest cell (a defect
    cut every column to 4–5 characters), so a model's path is shown whole."""
    app = EncodrApp(searcher=searcher)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("f4")
        await pilot.pause()
        for table_id in ("#indexes", "#models", "#runs"):
            table = app.query_one(table_id)
            for column in table.columns.values():
                cells = [len(str(table.get_cell(row, column.key))) for row in table.rows]
                assert column.get_render_width(table) >= max([len(str(column.label)), *cells]), (table_id, column.label)
        models = app.query_one("#models")
        assert any(
            len(str(models.get_row_at(i)[2])) > 20 for i in range(models.row_count)
        )  # a long cell to fit, not only short ones


async def test_the_filter_box_restricts_hits_and_ctrl_d_deletes_a_hits_document(tmp_path, tiny_model):
    import json

    corpus = tmp_path / "kb.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"d{i}", "text": t, "team": "ops" if i % 2 else "dev"}) + "\n" for i, t in enumerate(TEXTS))
    )
    build([str(corpus)], tmp_path / "kb", BuildOptions(model=str(tiny_model)))
    app = EncodrApp(searcher=Searcher(tmp_path / "kb"), debounce=0.0)
    async with app.run_test(size=(160, 40)) as pilot:
        table = await search_with(app, pilot, "#search-filter", "team=ops", "the cat")
        assert sorted(hit_text(table.get_row_at(r)) for r in range(table.row_count)) == sorted([TEXTS[1], TEXTS[3]])
        app.query_one("#search-filter").value = "team"
        await pilot.click("#search-filter")
        await pilot.press("enter")
        await settle(app, pilot)
        assert "write FIELD=VALUE" in str(app.query_one("#status").render())
        app.query_one("#search-filter").value = ""
        await pilot.click("#query")
        await pilot.press("enter")
        await settle(app, pilot)
        first = app.hits[0]
        table.focus()
        await pilot.press("ctrl+d")
        await settle(app, pilot)
        assert type(app.screen).__name__ == "ConfirmScreen"  # it asks first
        await pilot.press("n")
        await settle(app, pilot)
        assert table.row_count == 4 and not any("deleted" in str(n.message) for n in app._notifications)
        table.focus()
        await pilot.press("ctrl+d")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        assert any(f"deleted {first.document}" in str(n.message) for n in app._notifications)
        assert first.text not in {hit_text(table.get_row_at(r)) for r in range(table.row_count)} and table.row_count == 3


async def test_keys_judge_the_selected_hit_and_the_judgments_tab_deletes_one(searcher):
    from encodr.core import commands
    from encodr.core.requests import JudgmentsRequest

    app = EncodrApp(searcher=searcher, debounce=0.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.click("#query")
        await pilot.press(*"stock 1", "enter")  # a digit typed in the query box is text, not a judgment
        await settle(app, pilot)
        assert app.query_one("#query").value == "stock 1"
        table = app.query_one("#results")
        table.focus()
        await pilot.press("2")
        await settle(app, pilot)
        rows = commands.judgments(JudgmentsRequest(index=str(searcher.index.path))).payload()
        assert [(r["query"], r["doc"], r["grade"], r["front"]) for r in rows] == [("stock 1", app.hits[0].document, 2, "tui")]
        assert table.get_row_at(0)[GRADE_COLUMN] == "✓✓ 2"
        await pilot.press("f9")
        await settle(app, pilot)
        listed = app.query_one("#judgments-table")
        assert listed.row_count == 1 and "1 current" in str(app.query_one("#judgments-counts").render())
        listed.focus()
        await pilot.press("delete")
        await settle(app, pilot)
        assert commands.judgments(JudgmentsRequest(index=str(searcher.index.path))).payload() == [] and listed.row_count == 0


async def test_a_markdown_hit_opens_its_document_rendered_as_markdown_at_the_passage(tmp_path, tiny_model):
    from textual.widgets import Markdown

    from encodr.tui.app import DocumentScreen

    filler = " ".join(f"word{i}" for i in range(300))
    doc = tmp_path / "guide.md"
    doc.write_text(
        f"# Guide\n\n## Install\n\n{filler}\n\n| part | bar |\n| --- | --- |\n| pump | 4 |\n\n## Service\n\nBleed the "
        f"radiators every autumn. {filler}\n"
    )
    build([str(doc)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    app = EncodrApp(searcher=Searcher(tmp_path / "idx"), debounce=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await keyword_search(app, pilot, "radiators")
        assert "guide.md:13 › Service" in hit_where(
            app.query_one("#results").get_row_at(0)
        )  # the snippet's line and the hit's section
        status = str(app.query_one("#status").render())
        assert "documents ranked by their best passage" in status  # the caption encodr search prints: one search path
        assert "query language eng" in status
        app.query_one("#results").focus()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DocumentScreen) and screen.markdown
        assert isinstance(screen.query_one("#document-before"), Markdown)  # the headings and the table before the hit, rendered
        assert "Bleed the radiators" in str(screen.query_one("#document-text").render())  # the passage, its words highlighted


async def test_the_help_reads_at_80_columns(searcher):
    """F1 on an 80-column terminal: every key sits whole on one line (a Markdown table wrapped
    each key over 3–4 lines), beside the start of what it does."""
    app = EncodrApp(searcher=searcher)
    async with app.run_test(size=(80, 60)) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        shown = app.screen.query_one("#help")
        lines = [shown.render_line(y).text for y in range(shown.size.height)]
        for key, action in HELP:
            if key:
                assert any(line.lstrip().startswith(key) and action.split()[0] in line for line in lines), key
        assert max(len(line.rstrip()) for line in lines) <= 80


async def test_down_enters_the_hits_and_enter_opens_one_and_the_path_shows_at_100_columns(searcher):
    from encodr.tui.app import DocumentScreen

    app = EncodrApp(searcher=searcher, debounce=0.0)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.click("#query")
        await pilot.press(*"rained in london", "enter")
        await settle(app, pilot)
        table = app.query_one("#results")
        shown = [table.render_line(y).text for y in range(table.size.height)]
        assert any("c.txt:3" in line for line in shown)  # where the top hit is, on screen at 100 columns
        await pilot.press("down")
        assert app.focused is table and table.cursor_row == 0
        await pilot.press("up")
        assert app.focused is app.query_one("#query")
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DocumentScreen) and app.screen.text == "it rained all day in london"


async def test_a_sharded_index_is_searched_as_one_index(tmp_path, tiny_model):
    f = tmp_path / "c.txt"
    f.write_text("\n".join(TEXTS))
    build([str(f)], tmp_path / "sharded", BuildOptions(model=str(tiny_model), shards=2))
    app = EncodrApp(index_dir=str(tmp_path / "sharded"), debounce=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        table = await search_with(app, pilot, "#search-hit-lang", "", "stock markets fell sharply")
        assert table.row_count == 4
        assert hit_text(table.get_row_at(0)) == "stock markets fell sharply" and hit_where(table.get_row_at(0)) == "c.txt:2"
        assert "4 texts" in str(app.query_one("#status").render())


async def test_a_deleted_files_hit_is_left_out_and_the_status_line_starts_with_why(tmp_path, tiny_model):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("boiler", "garden"):
        (docs / f"{name}.md").write_text(f"# {name}\n\nThe {name} radiators need bleeding every autumn.\n")
    build([str(docs)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    (docs / "boiler.md").unlink()
    app = EncodrApp(searcher=Searcher(tmp_path / "idx"), debounce=0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await keyword_search(app, pilot, "radiators")
        assert [h.path for h in app.hits] == ["garden.md"]
        status = str(app.query_one("#status").render())
        assert status.startswith("left out 1 document(s) changed since the index read them (boiler.md deleted)")


def test_a_code_hit_shows_its_lines_in_the_results():
    from rich.console import Console

    from encodr.index.search import Hit
    from encodr.tui.app import hit_cell

    text = 'def bleed(self):\n        """Open the relief valve."""\n        return os.sep'
    hit = Hit(1, 0.9, text, "src/pump.py", 7, 1, snippet=text[text.index('"""') :], snippet_line=8, path="src/pump.py")
    lines = [line.plain for line in hit_cell(hit, "relief valve", 40, Console(width=40))]
    assert lines[:2] == ['"""Open the relief valve."""', "return os.sep"] and "src/pump.py:8" in lines[2]


def test_a_hits_rows_in_the_results_are_filled_and_end_in_an_ellipsis_where_text_goes_on():
    """A prose hit's two rows hold its chosen sentences and what follows them, wrapped to fill
    the width, and the second ends in ``…`` where the passage goes on: a character budget left
    the rows short, or cut a third row off without saying so."""
    from rich.console import Console

    from encodr.index.search import Hit
    from encodr.tui.app import hit_cell

    text = "Intro. The relief valve opens at four bar. " + "The pump then slows down and the pressure falls again. " * 4
    hit = Hit(1, 0.9, text, "pump.md", 3, 1, snippet="The relief valve opens at four bar.", snippet_line=3, path="pump.md")
    lines = [line.plain.rstrip() for line in hit_cell(hit, "relief valve", 40, Console(width=40))]
    assert lines[0].startswith("The relief valve opens at four bar. The")  # from the snippet on, past its end
    assert len(lines[0]) > 36 and lines[1].endswith("…") and "pump.md:3" in lines[2], lines
