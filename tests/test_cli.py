"""Bad input: one line naming the problem and the fix, exit status 2, no traceback."""

import io
import json
import re

import pytest

from tests.conftest import run_cli


def assert_one_line_error(code, err, words):
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert lines[-1].startswith("encodr: error:") and words in lines[-1], err
    assert "Traceback" not in err


def test_missing_file(capsys, monkeypatch, tmp_path):
    code, _, err = run_cli(["tune", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert_one_line_error(code, err, "no such file")


def test_directory_instead_of_file(capsys, monkeypatch, tmp_path):
    code, _, err = run_cli(["tune", str(tmp_path), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert_one_line_error(code, err, "is a directory")


def test_empty_file(capsys, monkeypatch, tmp_path):
    f = tmp_path / "e.txt"
    f.write_text("")
    code, _, err = run_cli(["tune", str(f), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert_one_line_error(code, err, "is empty")


def test_only_blank_and_duplicate_lines(capsys, monkeypatch, tmp_path):
    f = tmp_path / "d.txt"
    f.write_text("same\n\nsame\n   \nsame\n")
    code, _, err = run_cli(["tune", str(f), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert_one_line_error(code, err, "has 1 distinct string after dropping 2 blank and 2 duplicate lines")
    assert "needs at least 2" in err
    assert not (tmp_path / "o").exists()


def test_non_utf8(capsys, monkeypatch, tmp_path):
    f = tmp_path / "l.txt"
    f.write_bytes(b"fine\n\xff\xfe bad\n")
    code, _, err = run_cli(["tune", str(f), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert_one_line_error(code, err, "line 2 is not valid UTF-8")


def test_unknown_recipe(capsys, monkeypatch, words_file, tmp_path):
    code, _, err = run_cli(["tune", str(words_file), "--recipe", "nope"], capsys, monkeypatch)
    assert_one_line_error(code, err, "unknown recipe 'nope'")
    code, _, err = run_cli(["tune", str(words_file), "--recipe", str(tmp_path)], capsys, monkeypatch)
    assert_one_line_error(code, err, f"recipe '{tmp_path}' is a directory")


def test_malformed_yaml(capsys, monkeypatch, words_file, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("temperature: 0.1\n  span_mask: : 3\n")
    code, _, err = run_cli(["tune", str(words_file), "--recipe", str(bad)], capsys, monkeypatch)
    assert_one_line_error(code, err, "is not valid YAML")


def test_bad_override_names_the_key(capsys, monkeypatch, words_file):
    code, _, err = run_cli(["tune", str(words_file), "--set", "temperature=0"], capsys, monkeypatch)
    assert_one_line_error(code, err, "recipe key 'temperature' must be a number in (0, 10]")


def test_a_field_the_recipe_lacks_is_refused_before_any_work_naming_its_fields(capsys, monkeypatch, words_file, tmp_path):
    """A flag or a --set key the chosen recipe has no field for: one line naming the recipe's fields, nothing written."""
    code, _, err = run_cli(
        ["tune", "--recipe", "cross-encoder", "--lr", "1e-5", "--out", str(tmp_path / "m")], capsys, monkeypatch
    )
    assert_one_line_error(
        code, err, "recipe 'cross-encoder' (method trans_encoder) has no field 'lr' (--lr); its fields: amp, bi_batch_size"
    )
    assert "cross_lr" in err and not (tmp_path / "m").exists()
    code, _, err = run_cli(
        ["tune", "--recipe", "multilingual", "--set", "temperature=0.1", "--out", str(tmp_path / "m")], capsys, monkeypatch
    )
    assert_one_line_error(code, err, "recipe 'multilingual' (method cmlm) has no field 'temperature' (--set temperature=…)")
    code, _, err = run_cli(["tune", "--temperature", "0.1"], capsys, monkeypatch)  # a field that is --set only: no such flag
    assert code == 2 and "--temperature" in err


def test_overwrite_replaces_only_a_model_encodr_wrote(capsys, monkeypatch, words_file, tiny_model, tmp_path):
    """--overwrite onto a folder holding a user's file is refused (exit 2, every file kept); onto
    a tuned model encodr wrote, it replaces it."""
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    for extra in ([], ["--overwrite"]):
        code, _, err = run_cli(
            ["tune", str(words_file), "--out", str(out), "--model", str(tiny_model), *extra], capsys, monkeypatch
        )
        assert_one_line_error(code, err, f"--out {out} already exists and is not an encodr output")
        assert "choose another --out" in err and sorted(p.name for p in out.iterdir()) == ["keep.txt"]
        assert (out / "keep.txt").read_text() == "precious"
    model = tmp_path / "m"
    args = ["tune", str(words_file), "--out", str(model), "--model", str(tiny_model), "--batch-size", "16", "--json"]
    assert run_cli(args, capsys, monkeypatch)[0] == 0
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert_one_line_error(code, err, "already exists (a tuned model); pass --overwrite")
    code, stdout, _ = run_cli([*args, "--overwrite"], capsys, monkeypatch)
    assert code == 0 and (model / "modules.json").is_file() and json.loads(stdout)["strings"] == 40


def test_tune_refuses_an_output_folder_that_holds_its_data(capsys, monkeypatch, words_file, tiny_model):
    code, _, err = run_cli(
        ["tune", str(words_file), "--out", str(words_file.parent), "--model", str(tiny_model), "--overwrite"], capsys, monkeypatch
    )
    assert_one_line_error(code, err, f"holds the input {words_file}")
    assert words_file.is_file()


def test_output_under_a_file_is_refused_before_training(capsys, monkeypatch, words_file, tiny_model):
    code, _, err = run_cli(
        ["tune", str(words_file), "--out", str(words_file / "run"), "--model", str(tiny_model)], capsys, monkeypatch
    )
    assert_one_line_error(code, err, f"{words_file} is a file, not a directory")


@pytest.mark.parametrize(
    ("device", "words"), [("cuda:99", "device 'cuda:99' is not available on this machine"), ("tpu", "unknown device 'tpu'")]
)
def test_unusable_device_is_named(capsys, monkeypatch, words_file, tiny_model, tmp_path, device, words):
    for args in (["tune", str(words_file), "--out", str(tmp_path / "o")], ["eval", "sts"]):
        code, _, err = run_cli([*args, "--model", str(tiny_model), "--device", device], capsys, monkeypatch)
        assert_one_line_error(code, err, words)
    assert not (tmp_path / "o").exists()


def test_an_unusable_workspace_is_named_and_does_not_stop_training(capsys, monkeypatch, words_file, tiny_model, tmp_path):
    monkeypatch.setenv("ENCODR_HOME", str(words_file))  # a file, not a directory
    code, _, err = run_cli(["runs"], capsys, monkeypatch)
    assert_one_line_error(code, err, f"cannot use {words_file} as encodr's workspace")
    code, _, err = run_cli(
        ["tune", str(words_file), "--out", str(tmp_path / "o"), "--model", str(tiny_model), "--batch-size", "16"],
        capsys,
        monkeypatch,
    )
    warned = [line for line in err.splitlines() if "this run will not be recorded" in line]
    assert code == 0 and len(warned) == 1 and f"cannot use {words_file} as encodr's workspace" in warned[0], err
    assert (tmp_path / "o" / "modules.json").is_file()


def test_megabyte_line_is_truncated_with_one_warning(capsys, monkeypatch, tiny_model, tmp_path):
    f = tmp_path / "big.txt"
    f.write_text("one line\nanother line\n" + "x" * 1_000_000 + "\n" + "y " * 600_000 + "\n")
    args = ["tune", str(f), "--out", str(tmp_path / "o"), "--model", str(tiny_model), "--recipe", "word", "--json"]
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if "warning" in line and "truncated" in line]
    assert len(warnings) == 1 and "first: line 3" in warnings[0]
    assert json.loads(out)["strings"] == 4


def test_unreachable_hub_id_fails_fast(capsys, monkeypatch, words_file, tmp_path):
    code, _, err = run_cli(
        ["tune", str(words_file), "--model", "nobody/not-a-model", "--out", str(tmp_path / "o")], capsys, monkeypatch
    )
    assert_one_line_error(code, err, "model 'nobody/not-a-model' is no directory here, and not in the local Hugging Face cache")


def test_a_mistyped_local_folder_is_named_as_a_missing_directory(capsys, monkeypatch, words_file, tmp_path):
    """Before: "is not cached and could not be downloaded from the Hugging Face Hub" for encodr-runs-x."""
    for spec in ("encodr-runs-x", "./encodr-runs-x", "runs/word/x"):
        code, _, err = run_cli(["score", "a", "b", "--model", spec], capsys, monkeypatch)
        assert code == 2 and ("no directory here" in err or "does not exist" in err), err
        assert "download" not in err


def test_missing_model_directory(capsys, monkeypatch, words_file, tmp_path):
    code, _, err = run_cli(["eval", "sts", "--model", str(tmp_path / "nothing")], capsys, monkeypatch)
    assert_one_line_error(code, err, "does not exist")


def test_eval_unknown_suite_and_missing_data(capsys, monkeypatch, tmp_path):
    code, _, err = run_cli(["eval", "music"], capsys, monkeypatch)
    assert_one_line_error(code, err, "SUITE music: not one of sts, words, linking, pairs, bitext, retrieval")
    code, _, err = run_cli(["eval", "sts", "--data", str(tmp_path / "x.tsv")], capsys, monkeypatch)
    assert_one_line_error(code, err, "no such file or bundled dataset")
    code, _, err = run_cli(["eval", "linking", "--data", "stsb-dev"], capsys, monkeypatch)
    assert_one_line_error(
        code,
        err,
        "bundled dataset 'stsb-dev' is scored by spearman, but 'linking' reports acc@1; pick one of: mesh-test, mesh-dev",
    )
    code, _, err = run_cli(["eval", "pairs", "--data", "simlex999"], capsys, monkeypatch)
    assert_one_line_error(code, err, "pick one of: none bundled, pass a file")
    code, _, err = run_cli(["eval", "sts", "--compare-cross"], capsys, monkeypatch)
    assert_one_line_error(code, err, "--compare-cross says the --compare model is a cross-encoder; pass --compare MODEL too")


def test_eval_loads_the_compare_model_before_scoring(capsys, monkeypatch, tmp_path, tiny_model):
    f = tmp_path / "data.tsv"
    f.write_text("1\ta cat\ta dog\n4\ta man\ta person\n")
    code, out, err = run_cli(
        ["eval", "sts", "--data", str(f), "--model", str(tiny_model), "--compare", str(tmp_path / "gone")], capsys, monkeypatch
    )
    assert_one_line_error(code, err, "does not exist")
    assert out == "" and "Batches" not in err  # nothing was scored before the error


@pytest.mark.parametrize(
    ("suite", "content", "words"),
    [
        ("words", "cat\tdog\n", "line 1 is not word1<TAB>word2<TAB>score"),
        ("words", "# only a comment\n", "has no word pairs"),
        ("linking", "a\tb\n1\t2\n", "needs a tab-separated header with mesh_id, name and canonical"),
        ("linking", "mesh_id\tname\tcanonical\nD1\tfoo\n", "line 2 needs a mesh_id"),
        ("linking", "mesh_id\tname\tcanonical\nD1\tFoos\tfoo\n", "no query names"),
        ("sts", "3\ta cat\ta dog\n", "it has 1 pair all scored 3"),
        ("sts", "3\ta cat\ta dog\n3\ta man\ta woman\n", "at least two different gold scores"),
    ],
)
def test_eval_bad_data_files(capsys, monkeypatch, tmp_path, tiny_model, suite, content, words):
    f = tmp_path / "data.tsv"
    f.write_text(content)
    code, _, err = run_cli(["eval", suite, "--data", str(f), "--model", str(tiny_model)], capsys, monkeypatch)
    assert_one_line_error(code, err, words)


def test_recipes_and_runs_json(capsys, monkeypatch):
    code, out, _ = run_cli(["recipes", "--json"], capsys, monkeypatch)
    assert code == 0 and {r["name"] for r in json.loads(out)} == {
        "word",
        "phrase",
        "sentence",
        "cross-encoder",
        "multilingual",
        "retrieval",
        "reranker",
        "judged",
        "static",
        "code",
    }
    assert {r["method"] for r in json.loads(out)} == {
        "mirror",
        "trans_encoder",
        "cmlm",
        "retrieval",
        "reranker",
        "judged",
        "static",
        "code",
    }  # every method package is found by name
    code, out, _ = run_cli(["runs", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out) == []


def test_set_overrides_any_field_and_rejects_unknown_keys(capsys, monkeypatch, words_file):
    code, _, err = run_cli(["tune", str(words_file), "--set", "colour=blue"], capsys, monkeypatch)
    assert_one_line_error(code, err, "recipe 'sentence' (method mirror) has no field 'colour' (--set colour=…); its fields: amp,")
    code, _, err = run_cli(["tune", str(words_file), "--set", "span_mask"], capsys, monkeypatch)
    assert_one_line_error(code, err, "--set takes KEY=VALUE")
    code, _, err = run_cli(["tune", str(words_file), "--set", "epochs=two"], capsys, monkeypatch)
    assert_one_line_error(code, err, "recipe key 'epochs' must be an int")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["score", " ", "a cat"], "TEXT_A is blank"),
        (["score", "a cat", ""], "TEXT_B is blank"),
        (["search", "  ", "--index", "nowhere"], "QUERY is blank"),
    ],
)
def test_blank_text_is_refused(capsys, monkeypatch, args, words):
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert_one_line_error(code, err, words)
    assert out == ""


def test_runs_table_shows_the_result_of_each_kind(capsys, monkeypatch, tmp_path):
    from encodr import cli, registry

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli.out_console, "width", 200)
    registry.record(
        {
            "kind": "tune",
            "model": "minilm",
            "recipe_name": "word",
            "data": "words",
            "out": str(tmp_path / "runs" / "w"),
            "metrics": {"final_loss": 1.234567, "examples_per_s": 99.5},
        }
    )
    registry.record(
        {
            "kind": "tenc-bi",
            "model": "minilm",
            "recipe_name": "cross-encoder",
            "data": "stsb-train",
            "out": "/elsewhere/bi",
            "metrics": {"best": {"dev": 81.2, "cycle": 2}},
        }
    )
    registry.record(
        {
            "kind": "tune",
            "model": "minilm",
            "recipe_name": "phrase",
            "data": "mesh",
            "out": str(tmp_path / "runs" / "p"),
            "metrics": {"final_loss": 0.21, "dev_metric": "acc@1", "best": {"step": 0, "epoch": 0, "dev": 49.8769}},
        }
    )
    monkeypatch.setattr(cli.out_console, "width", 260)
    code, out, _ = run_cli(["runs"], capsys, monkeypatch)
    lines = out.splitlines()
    row = lambda run_id: next(line for line in lines if line.startswith(f"│ {run_id:>2} "))  # noqa: E731
    assert code == 0 and "loss 1.2346" in row(1) and "runs/w " in row(1) and str(tmp_path) not in row(1)
    assert "dev ρ 81.20" in row(2) and "/elsewhere/bi" in row(2)
    assert "loss 0.2100 (mean of last 10 steps) · dev acc@1 49.88 (start kept)" in row(3)


def test_indexes_says_where_it_looked_and_takes_path(capsys, monkeypatch, tmp_path, workspace):
    code, out, _ = run_cli(["indexes"], capsys, monkeypatch)
    assert code == 0 and str(workspace / "indexes") in "".join(out.split()) and "--path DIR" in out  # a long path wraps
    code, _, err = run_cli(["indexes", "--path", str(tmp_path / "elsewhere")], capsys, monkeypatch)
    assert_one_line_error(code, err, "--path")
    (tmp_path / "mine").mkdir()
    code, out, _ = run_cli(["indexes", "--path", str(tmp_path / "mine"), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out) == []


def test_eval_limit_scores_the_first_items(capsys, monkeypatch, tmp_path, tiny_model):
    f = tmp_path / "data.tsv"
    f.write_text("1\ta cat\ta dog\n4\ta man\ta person\n2\tthe sun\tthe moon\n5\ta car\tan automobile\n")
    code, out, _ = run_cli(["eval", "sts", str(f), "--model", str(tiny_model), "--limit", "3", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["scores"][0]["n"] == 3
    code, _, err = run_cli(["eval", "sts", str(f), "--model", str(tiny_model), "--limit", "0"], capsys, monkeypatch)
    assert_one_line_error(code, err, "--limit 0: must be 1 or more")


def test_server_flag_without_a_server_is_one_line(capsys, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for args in (["search", "cats", "--index", "x"], ["score", "a", "b"]):
        code, _, err = run_cli([*args, "--server", f"http://127.0.0.1:{port}"], capsys, monkeypatch)
        assert_one_line_error(code, err, f"--server http://127.0.0.1:{port}: no encodr server answers there")


def test_tables_read_at_80_columns_without_a_broken_word(capsys, monkeypatch, tmp_path, tiny_model):
    """``recipes``, ``runs``, ``indexes`` and ``search`` at 80 columns: no line wider, no word cut
    in two (a table too wide prints one block a row), and a hit prints as a card: a heading line
    with its rank, ``path:line`` and score, then its snippet over the rest of the width (76
    characters a line; the bordered table gave it 61)."""
    from encodr import cli, registry
    from encodr.index import BuildOptions, build

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli.out_console, "width", 80)
    registry.record(
        {
            "kind": "tune",
            "model": "minilm",
            "recipe_name": "multilingual",
            "data": "bible-sample",
            "out": str(tmp_path / "runs" / "ml"),
            "metrics": {"final_loss": 1.234567, "examples_per_s": 99.5},
        }
    )
    corpus = tmp_path / "manual.txt"
    long_line = (
        "the circulation pump of the heating system keeps four bar of pressure when the boiler runs at full load in winter"
    )
    corpus.write_text(f"{long_line}\nthe valve closes\n")
    build([str(corpus)], tmp_path / "indexes" / "manual", BuildOptions(model=str(tiny_model), lang="eng"))
    outputs = {}
    for args in (
        ["recipes"],
        ["runs"],
        ["indexes", "--path", str(tmp_path / "indexes")],
        ["search", "pump pressure", "--index", str(tmp_path / "indexes" / "manual")],
    ):
        code, out, _ = run_cli(args, capsys, monkeypatch)
        assert code == 0 and max(map(len, out.splitlines())) <= 80, out
        outputs[args[0]] = out
    words = {w for line in outputs["recipes"].splitlines() for w in line.replace("│", " ").split()}
    assert {
        "cross-encoder",
        "multilingual",
        "trans_encoder",
        "bible-sample",
        "temperature",
        "default_data",
    } <= words  # whole, not "cross-e / ncoder"
    assert "multilingual" in outputs["runs"] and "bible-sample" in outputs["runs"]
    assert "manual" in outputs["indexes"]
    lines = outputs["search"].splitlines()
    heading = next(n for n, line in enumerate(lines) if line.lstrip().startswith("1  "))
    assert lines[heading].split()[:2] == ["1", "manual.txt:1"] and re.search(r"\d\.\d{4}$", lines[heading].rstrip())
    snippet = lines[heading + 1].rstrip()
    assert snippet.startswith("    the circulation pump") and len(snippet) > 70, outputs["search"]
    assert "│" not in outputs["search"]
    code, out, _ = run_cli(
        ["search", "pump", "--index", str(tmp_path / "indexes" / "manual"), "--filter", "source=none*"], capsys, monkeypatch
    )
    assert code == 0 and "no hits" in out  # a search that matches nothing says so


def test_the_first_hit_shows_six_lines_the_others_three_each_filled_to_the_width(capsys, monkeypatch, tmp_path, tiny_model):
    """At 80 columns a hit's snippet fills whole wrapped lines of 76 cells, at most 3, the first
    hit's at most 6 (the one read first: its answer often sits past the sentence that matched), and
    never spills onto one more: a character budget left wrapped lines short and a fifth line."""
    from encodr import cli
    from encodr.index import BuildOptions, build

    monkeypatch.setattr(cli.out_console, "width", 80)
    sentence = "The circulation pump of the heating system keeps four bar of pressure when the boiler runs hot. "
    for name in ("a", "b"):  # two documents (the same text twice would be one)
        (tmp_path / f"{name}.txt").write_text(f"Manual {name}. " + sentence * 12)
    build([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    code, out, _ = run_cli(["search", "pump pressure", "--index", str(tmp_path / "idx"), "-k", "2"], capsys, monkeypatch)
    lines = out.splitlines()
    headings = [n for n, line in enumerate(lines) if re.match(r" *[12]  [ab]\.txt:", line)]
    assert code == 0 and len(headings) == 2, out
    bodies = [lines[n + 1 : lines.index("", n)] for n in headings]
    assert [len(body) for body in bodies] == [6, 3], out
    for body in bodies:
        assert all(line.startswith("    ") and len(line.rstrip()) > 66 for line in body), body  # filled, not cut short
        assert body[-1].rstrip().endswith("…")


def test_two_queries_hits_are_one_blank_line_apart(capsys, monkeypatch, tmp_path, tiny_model):
    """Cards of two queries, ranked as passages (no caption under them): one blank line between
    the first query's last card and the second query's title, as between two cards, not two."""
    from encodr import cli
    from encodr.index import BuildOptions, build

    monkeypatch.setattr(cli.out_console, "width", 80)
    (tmp_path / "a.txt").write_text("the pump holds pressure\nthe valve needs grease\n")
    build([str(tmp_path / "a.txt")], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    monkeypatch.setattr("sys.stdin", io.StringIO("pump\nvalve\n"))
    code, out, _ = run_cli(["search", "--index", str(tmp_path / "idx"), "-k", "2", "--passages"], capsys, monkeypatch)
    lines = out.rstrip("\n").splitlines()
    second = next(n for n, line in enumerate(lines) if line.startswith("valve"))
    assert code == 0 and lines[second - 1] == "" and lines[second - 2].strip() != "", out


def test_the_write_flags_are_one_setting(capsys, monkeypatch, tmp_path):
    """--add, --sync and --overwrite are the values of one setting, IndexRequest.write: one flag
    sets it, two together are refused in one line, and --watch refuses all but a sync."""
    from encodr.cli import _join_choice_flags
    from encodr.core.requests import IndexRequest

    corpus = tmp_path / "c.txt"
    corpus.write_text("a cat\n")
    code, _, err = run_cli(["index", str(corpus), "--out", str(tmp_path / "i"), "--add", "--sync"], capsys, monkeypatch)
    assert_one_line_error(code, err, "--add and --sync")
    code, _, err = run_cli(["index", str(corpus), "--out", str(tmp_path / "i"), "--overwrite", "--watch"], capsys, monkeypatch)
    assert_one_line_error(code, err, "--watch keeps the index in step")
    given = {"corpus": ["c.txt"], "write__is_add": False, "write__is_sync": True, "write__is_overwrite": False}
    _join_choice_flags(given)
    assert given == {"corpus": ["c.txt"], "write": "sync"}
    assert IndexRequest(corpus=["c.txt"], watch=True).write_mode() == "sync"
    assert IndexRequest(corpus=["c.txt"]).write_mode() == "new"


def test_compare_gives_the_cosine_and_each_texts_nearest_passages(capsys, monkeypatch, tmp_path, tiny_model):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the pump holds pressure\nthe valve needs grease\nthe river rose overnight\n")
    code, _, err = run_cli(
        ["index", str(corpus), "--out", str(tmp_path / "idx"), "--model", str(tiny_model), "--lang", "eng"], capsys, monkeypatch
    )
    assert code == 0, err
    code, out, err = run_cli(
        ["compare", "the pump holds pressure", "the pump holds pressure", "--index", str(tmp_path / "idx"), "-k", "2", "--json"],
        capsys,
        monkeypatch,
    )
    answer = json.loads(out)
    assert code == 0 and abs(answer["cosine"] - 1.0) < 1e-5, err
    assert [len(r["hits"]) for r in answer["results"]] == [2, 2]
    assert answer["results"][0]["hits"][0]["text"] == "the pump holds pressure"  # a tiny random model: exact text ranks first
    code, _, err = run_cli(["compare", "the pump", " ", "--index", str(tmp_path / "idx")], capsys, monkeypatch)
    assert_one_line_error(code, err, "compare needs two texts")
    from encodr import cli

    monkeypatch.setattr(cli.out_console, "width", 80)
    long = "the circulation pump of the heating system keeps four bar of pressure when the boiler runs at full load"
    corpus.write_text(long + "\n")
    run_cli(
        ["index", str(corpus), "--out", str(tmp_path / "idx2"), "--model", str(tiny_model), "--lang", "eng"], capsys, monkeypatch
    )
    code, out, _ = run_cli(["compare", "pump", "boiler", "--index", str(tmp_path / "idx2")], capsys, monkeypatch)
    assert code == 0 and "runs at full load" in out  # a nearest passage's text past 60 characters, on a card's second line
    corpus.write_text((long + ". ") * 3 + "\n")
    run_cli(
        ["index", str(corpus), "--out", str(tmp_path / "idx3"), "--model", str(tiny_model), "--lang", "eng"], capsys, monkeypatch
    )
    code, out, _ = run_cli(["compare", "pump", "boiler", "--index", str(tmp_path / "idx3"), "-k", "1"], capsys, monkeypatch)
    lines = out.splitlines()
    heading = next(n for n, line in enumerate(lines) if line.lstrip().startswith("1  "))
    card = [line.rstrip() for line in lines[heading + 1 : heading + 3]]
    assert all(len(line) > 66 for line in card) and card[1].endswith("…"), out  # filled to the width
    assert card[1][:-1].split()[-1] in long.split()  # cut after a whole word, not inside one
    assert not lines[heading + 3].startswith("    ")  # two lines, then the card ends


def test_an_unknown_keyword_statistics_choice_is_one_line(capsys, monkeypatch, tmp_path):
    code, _, err = run_cli(["search", "pump", "--index", str(tmp_path / "idx"), "--keyword-stats", "both"], capsys, monkeypatch)
    assert_one_line_error(code, err, "--keyword-stats both: not one of shard, global")


def test_a_usage_error_is_one_line_naming_the_problem_and_the_help(capsys, monkeypatch):
    code, _, err = run_cli(["tune", "data.txt", "--set", "a=1", "b=2"], capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "(b=2)" in err and "its own --set (--set a=1 --set b=2)" in err and "see 'encodr tune --help'" in err
    code, _, err = run_cli(["search", "q", "--bogus"], capsys, monkeypatch)
    assert code == 2 and err.strip().splitlines() == [
        "encodr: error: encodr search: no such option: --bogus; see 'encodr search --help'"
    ]
    code, out, err = run_cli([], capsys, monkeypatch)  # encodr alone: its help, as Click prints it
    assert "Commands:" in out + err and "error" not in out + err


def test_a_cards_heading_clips_the_title_before_the_path_and_counts_wide_characters_as_two():
    from encodr.cli import _fitted

    assert _fitted(["docs/guide.md:9", "Intergovernmental Panel on Climate Change", "eng"], 40) == [
        "docs/guide.md:9",
        "Intergovernment…",
        "eng",
    ]
    assert _fitted(["notes.md:3", "東京都の歴史と文化", "jpn"], 30)[1] == "東京都の歴…"  # 11 cells: a character takes two
    assert _fitted(["a/very/long/path/longer/than/the/room.md:41", "Title", "eng"], 20) == [
        "a/very/l…/room.md:41",
        "",
        "",
    ]  # a path too long is shortened in its middle: its line is never folded onto the next line
    assert _fitted(["a/b/a-file-name-longer-than-the-room.md:41", "T", "eng"], 20)[0] == "…than-the-room.md:41"
    assert _fitted(["文档/东京都の歴史と文化について/东京都の歴史.md:3"], 30) == ["文档/东京都…/东京都の歴史.md:3"]  # 30 cells
    long_section = "notes/tune.md:143 › Code search on your own repository: `--recipe code`"
    assert _fitted([long_section, "Tune", "eng"], 50) == [
        "notes/tune.md:143 › Code search on your own repos…",
        "",
        "",
    ]  # 50 cells
    assert _fitted([long_section, "", ""], 22) == ["notes/tune.md:143", "", ""]  # under 8 cells of it: left out


def test_index_lets_idle_openmp_threads_sleep_unless_the_environment_says_otherwise(tiny_model, tmp_path, capsys, monkeypatch):
    import os

    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat\nthe dog ran\n")
    args = ["index", str(corpus), "--model", str(tiny_model), "--out", str(tmp_path / "idx"), "--lang", "eng", "--overwrite"]
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0 and os.environ.get("OMP_WAIT_POLICY") == "PASSIVE", err  # a build beside a busy program
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0 and os.environ["OMP_WAIT_POLICY"] == "ACTIVE", err  # a person's own setting is kept


def test_a_tables_title_breaks_at_spaces_and_a_path_too_long_is_shortened_in_its_middle():
    from rich.console import Console

    from encodr.cli import _layout
    from encodr.core.results import Table as CoreTable

    path = "/tmp/a-rather-long-folder-name-for-testing/with-more-depth-in-it/docs-index"
    t = CoreTable(title=f"encodr index → {path}", columns=["field", "value"], rows=[["documents", "50"]])
    console = Console(width=60, record=True, color_system=None)
    console.print(_layout(t, 60))
    lines = console.export_text().splitlines()
    assert lines[0].strip() == "encodr index →"  # the words of the title whole, never "docs-i" / "ndex"
    assert lines[1].endswith("/docs-index") and "…" in lines[1] and len(lines[1]) <= 60


def test_progress_bars_are_not_drawn_to_a_file_where_they_would_hold_back_every_warning(monkeypatch):
    """rich's live display holds what is printed under it until it stops: an index sent to a
    file showed its warnings only at the end, minutes late."""
    from rich.console import Console

    import encodr.cli as cli

    monkeypatch.setattr(cli, "err_console", Console(stderr=True, force_terminal=False))
    assert cli._Bars().bars.disable
    monkeypatch.setattr(cli, "err_console", Console(stderr=True, force_terminal=True))
    assert not cli._Bars().bars.disable


def test_the_readmes_eval_table_fits_80_columns_as_a_table():
    """The README's first command ends in ``encodr eval words --model encodr-runs/word --compare
    minilm``: its table was 82 columns wide, and printed as three stacked key/value blocks."""
    from rich.console import Console

    from encodr.cli import _layout
    from encodr.core.results import EvalResult

    scores = [
        {"dataset": d, "metric": "spearman", "value": v, "n": n}
        for d, v, n in (("simlex999", 53.75, 999), ("wordsim353", 77.87, 353))
    ]
    reports = [
        {"model": m, "backend": "torch", "suite": "words", "scores": scores, "mean": 65.8} for m in ("encodr-runs/word", "minilm")
    ]
    console = Console(width=80, record=True, color_system=None)
    for t in EvalResult(suite="words", primary="spearman", reports=reports).tables():
        console.print(_layout(t, 80))
    lines = console.export_text().splitlines()
    assert max(map(len, lines)) <= 80 and any(line.startswith("┃ dataset") for line in lines)
    assert any("Δ: encodr-runs/word − minilm" in line for line in lines)
