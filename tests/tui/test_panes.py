"""The Train, Index, Eval and Runs panes of the TUI, driven by Textual's pilot. Each calls the
core the CLI calls (encodr.methods.tune, encodr.index.build, encodr.evaluation.run, the registry)."""

import json

import pytest

from encodr import registry
from encodr.tui import EncodrApp
from tests.conftest import settle


@pytest.fixture
def words(tmp_path):
    f = tmp_path / "words.txt"
    f.write_text("\n".join(f"word{i} thing{i % 7}" for i in range(96)) + "\n")
    return f


async def _fill_train(app, pilot, tiny_model, data, out, batch="16"):
    await pilot.press("f5")
    pane = app.query_one("TrainPane")
    app.query_one("#train-recipe").value = "word"
    await pilot.pause()  # the recipe's fields are drawn anew
    app.query_one("#train-model-path").value = str(tiny_model)
    app.query_one("#train-file").value = str(data)
    app.query_one("#train-out").value = str(out)
    for _ in range(100):  # under load the recipe's fields may be drawn anew after the first pause: set the batch until it holds
        field = next(i for i in pane.query(".field-input") if i.name == "batch_size")
        if field.value == batch:
            break
        field.value = batch
        await pilot.pause()
    assert next(i for i in pane.query(".field-input") if i.name == "batch_size").value == batch
    return pane


async def test_train_pane_trains_end_to_end_and_records_the_run(tiny_model, words, tmp_path):
    from sentence_transformers import SentenceTransformer

    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        pane = await _fill_train(app, pilot, tiny_model, words, tmp_path / "out")
        await pilot.click("#train-start")
        await settle(app, pilot)
        assert pane.error is None and pane.result is not None
        from encodr.methods import load_recipe

        steps = 96 // 16 * load_recipe("word").epochs
        assert len(pane.losses) == steps and all(loss > 0 for loss in pane.losses)  # one point of the live curve per step
        assert str(app.query_one("#train-stats").render()) == "done"
        assert "saved" in str(app.query_one("#train-result").render())
        await pilot.press("f8")  # the Runs pane lists the run just made, and shows it
        await pilot.pause()
        assert app.query_one("#runs-table").row_count == 1
        assert str(app.query_one("#run-detail").render()).startswith("run 1 · done")
    assert SentenceTransformer(str(tmp_path / "out"), device="cpu").encode(["word1 thing1"]).shape == (1, 32)
    rows = registry.runs()
    assert len(rows) == 1 and rows[0]["out"] == str((tmp_path / "out").resolve()) and rows[0].get("status") is None
    assert rows[0]["metrics"]["steps"] == steps


async def test_train_pane_cancel_leaves_nothing_and_registry_says_cancelled(tiny_model, words, tmp_path):
    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        pane = await _fill_train(app, pilot, tiny_model, words, tmp_path / "out", batch="8")
        step = pane.step

        def cancel_at_3(n, loss):  # as if Cancel were pressed during step 3
            if n == 3:
                pane.cancel.set()
            step(n, loss)

        pane.step = cancel_at_3
        pane.start()
        await settle(app, pilot)
        assert pane.result is None and "cancelled" in pane.error
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.tmp-*"))
    assert registry.runs()[0]["status"] == "cancelled"


async def test_train_pane_checks_fields_inline_as_the_cli_does(tiny_model):
    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        await pilot.press("f5")
        pane = app.query_one("TrainPane")
        field = next(i for i in pane.query(".field-input") if i.name == "epochs")
        field.value = "two"
        await pilot.pause()
        assert "recipe key 'epochs' must be an int" in str(app.query_one("#check-epochs").render())
        field.value = "3"
        await pilot.pause()
        assert str(app.query_one("#check-epochs").render()) == "✓"
        _, job = pane.request()  # no output folder chosen: the CLI's default (the pane required one before)
        assert job.out.parent.name == "encodr-runs" and job.out.name.startswith(
            "sentence-"
        )  # the declared default recipe, as encodr tune
        temperature = next(
            i for i in pane.query(".field-input") if i.name == "temperature"
        )  # the field's one declaration, as its tooltip
        assert "InfoNCE temperature" in str(temperature.tooltip) and "Allowed: a number in (0, 10]" in str(temperature.tooltip)


async def test_an_error_naming_a_path_in_brackets_shows_the_path(tmp_path):
    missing = tmp_path / "[draft].txt"  # read as Rich markup, "[draft]" would vanish from the message
    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        await pilot.press("f6")
        app.query_one("#index-corpus").value = str(missing)
        app.query_one("#index-out").value = str(tmp_path / "idx")
        await pilot.click("#index-build")
        await settle(app, pilot)
        result = str(app.query_one("#index-result").render())
        assert "error" in result and "[draft].txt" in result


async def test_index_pane_builds_then_opens_search(tiny_model, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat\nstock markets fell\nit rained in london\n")
    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        await pilot.press("f6")
        app.query_one("#index-corpus").value = str(corpus)
        app.query_one("#index-model").value = str(tiny_model)
        app.query_one("#index-out").value = str(tmp_path / "idx")
        app.query_one("#index-backend").value = "onnx-int8"
        await pilot.click("#index-build")
        await settle(app, pilot)
        result = str(app.query_one("#index-result").render())
        assert "count: 3" in result and "backend: onnx-int8" in result
        await pilot.click("#index-open")
        await settle(app, pilot)
        assert app.searcher is not None and len(app.searcher.index) == 3
        assert app.searcher.encoder.backend == "onnx-int8"  # Search encodes queries with the index's backend
        assert app.query_one("TabbedContent").active == "search"


async def test_eval_pane_table_and_chart(tiny_model, tmp_path):
    sts = tmp_path / "sts.tsv"
    sts.write_text("\n".join(f"{s}\tthe {w} sat here\tthe {w} sat there" for s, w in zip([0, 1, 2, 3, 4, 5], "abcdef")) + "\n")
    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        await pilot.press("f7")
        app.query_one("#eval-suite").value = "sts"  # required, as on the command line: the form has no default of its own
        app.query_one("#eval-model").value = str(tiny_model)
        app.query_one("#eval-compare").value = str(tiny_model)
        app.query_one("#eval-data").value = str(sts)
        await pilot.click("#eval-run")
        await settle(app, pilot)
        row = app.query_one("#eval-table").get_row_at(0)
        assert row[0] == "sts.tsv" and row[1] == "spearman" and row[-1] == "+0.00"


async def test_runs_pane_shows_a_run_and_hands_its_model_on(tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / "train_log.jsonl").write_text("\n".join(json.dumps({"step": s, "loss": 1.0 / s}) for s in range(1, 6)) + "\n")
    run_id = registry.record(
        {
            "kind": "tune",
            "model": "minilm",
            "recipe_name": "word",
            "data": "w.txt",
            "out": str(out),
            "recipe": {"lr": 2e-5},
            "metrics": {"final_loss": 0.2, "dev_curve": [{"step": 0, "dev": 50.0}, {"step": 5, "dev": 51.0}]},
        }
    )
    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        await pilot.press("f8")
        await pilot.pause()
        assert f"run {run_id} · done" in str(app.query_one("#run-detail").render())
        await pilot.click("#run-eval")
        await pilot.pause()
        assert app.query_one("#eval-model").value == str(out) and app.query_one("TabbedContent").active == "eval"


async def test_train_pane_runs_the_retrieval_recipe_on_a_label_free_dev_set(tiny_model, tmp_path):
    from tests.methods.retrieval.test_method import corpus

    docs = corpus(tmp_path / "docs.jsonl")
    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        await pilot.press("f5")
        pane = app.query_one("TrainPane")
        app.query_one("#train-recipe").value = "retrieval"
        await pilot.pause()
        app.query_one("#train-dev").value = "auto"
        app.query_one("#train-model-path").value = str(tiny_model)
        app.query_one("#train-file").value = str(docs)
        app.query_one("#train-out").value = str(tmp_path / "out")
        for name, value in (("batch_size", "8"), ("max_length", "48"), ("dev_queries", "6"), ("eval_steps", "2")):
            next(i for i in pane.query(".field-input") if i.name == name).value = value
        await pilot.pause()
        await pilot.click("#train-start")
        await settle(app, pilot)
        assert pane.error is None and pane.result is not None
        curve = str(app.query_one("#train-dev-curve").render())
        assert curve.startswith("dev ndcg@10: ") and "(step 0)" in curve  # the label-free dev set's nDCG@10, the start first


async def test_eval_pane_scores_an_index_on_its_own_judgments(tiny_model, tmp_path):
    from encodr.core import commands
    from encodr.core.requests import IndexRequest, JudgeRequest

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": f"pump number {i} pressure"}) + "\n" for i in range(4)))
    commands.index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(tmp_path / "idx"), lang="eng"))
    for i in range(4):
        commands.judge(JudgeRequest(query=f"pump number {i}", doc=f"d{i}", index=str(tmp_path / "idx")), "tui")
    app = EncodrApp()
    async with app.run_test(size=(180, 60)) as pilot:
        await pilot.press("f7")
        app.query_one("#eval-suite").value = "retrieval"
        app.query_one("#eval-index").value = str(tmp_path / "idx")
        app.query_one("#eval-split").value = "all"
        await pilot.click("#eval-run")
        await settle(app, pilot)
        table = app.query_one("#eval-table")
        rows = [table.get_row_at(r) for r in range(table.row_count)]
        assert {str(r[0]).split(" · ")[-1] for r in rows if r[0] != "mean"} == {"dense", "keyword", "hybrid·zscore"}
        assert all(str(r[2]) == "4" for r in rows if r[0] != "mean")  # the four judged queries


async def test_the_index_pane_fits_100_columns_and_starts_from_the_open_index(tiny_model, words, tmp_path):
    from encodr.index import BuildOptions, Searcher, build

    build([str(words)], tmp_path / "idx", BuildOptions(model=str(tiny_model), index_type="hnsw"))
    app = EncodrApp(searcher=Searcher(tmp_path / "idx"), index_dir=tmp_path / "idx")
    async with app.run_test(size=(100, 80)) as pilot:
        await pilot.press("f6")
        await pilot.pause()
        pane = app.query_one("IndexPane")
        for widget in pane.query("Input, Select, Checkbox, Button"):
            assert widget.region.right <= 100, widget.id  # on screen, none cut at the right edge
        assert app.query_one("#index-corpus").value == str(words)
        assert app.query_one("#index-model").value == str(tiny_model) and app.query_one("#index-out").value == str(
            tmp_path / "idx"
        )
        assert app.query_one("#index-index-type").value == "hnsw"
