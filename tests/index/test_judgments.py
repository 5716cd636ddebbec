"""Judgments kept with an index: made from the CLI, HTTP and MCP (the TUI's key in tests/tui), listed,
carried across --sync (an edit flags them, a delete orphans them) and a rebuild with another model,
imported and exported in BEIR's layout, measured on by eval retrieval --index; and their refusals."""

from __future__ import annotations

import json
import os
import stat

import pytest

from encodr.core import commands
from encodr.core.requests import IndexRequest, JudgeRequest, JudgmentsRequest
from encodr.errors import EncodrError
from encodr.index.judgments import CURRENT, EDITED, FOLDS, ORPHANED, Judgments, fold
from tests.conftest import run_cli

DOCS = {
    "pump.md": "# Pump\n\nThe pump pressure must stay below 4 bar.\n",
    "valve.md": "# Valve\n\nGrease each valve stem monthly.\n",
    "boiler.md": "# Boiler\n\nThe boiler heats water to sixty degrees.\n",
}


@pytest.fixture
def kb(tmp_path, tiny_model):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    out = tmp_path / "kb"
    commands.index(IndexRequest(corpus=[str(docs)], model=str(tiny_model), out=str(out), lang="eng"))
    return out


def doc_id(kb, name: str) -> str:
    from encodr.index import Index

    with Index.open(kb) as index:
        return next(d for d in index.document_ids() if d.endswith(name))


def listed(kb) -> list[dict]:
    return commands.judgments(JudgmentsRequest(index=str(kb))).payload()


def assert_one_line_error(code, err, words):
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("encodr: error:") and words in lines[0], err


def test_folds_are_a_stable_hash_of_the_query_that_ignores_case_and_spaces():
    queries = [f"query number {i}" for i in range(400)]
    folds = [fold(q) for q in queries]
    assert fold("Pump  Pressure") == fold("pump pressure")
    shares = {f: folds.count(f) / len(folds) for f in FOLDS}
    assert 0.5 < shares["train"] < 0.7 and 0.1 < shares["dev"] < 0.3 and 0.1 < shares["test"] < 0.3


def test_the_cli_judges_lists_and_replaces_a_grade(kb, capsys, monkeypatch):
    pump = doc_id(kb, "pump.md")
    code, out, err = run_cli(["judge", "pump pressure", pump, "--index", str(kb), "--grade", "2", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["grade"] == 2 and json.loads(out)["front"] == "cli"
    run_cli(
        ["judge", "Pump   pressure", pump, "--index", str(kb), "--grade", "0"], capsys, monkeypatch
    )  # the same pair: replaced
    code, out, _ = run_cli(["judgments", "--index", str(kb), "--json"], capsys, monkeypatch)
    rows = json.loads(out)
    assert len(rows) == 1 and rows[0]["grade"] == 0 and rows[0]["status"] == CURRENT and rows[0]["fold"] == fold("pump pressure")
    code, _, err = run_cli(["judge", "PUMP pressure", pump, "--index", str(kb), "--delete"], capsys, monkeypatch)
    assert code == 0 and listed(kb) == [], err
    code, _, err = run_cli(["judge", "pump pressure", pump, "--index", str(kb), "--delete"], capsys, monkeypatch)
    assert_one_line_error(code, err, "has no judgment of document")


def test_a_judgment_names_its_document_by_the_path_a_hit_shows(kb, capsys, monkeypatch):
    code, _, err = run_cli(["judge", "pump pressure", "pump.md", "--index", str(kb), "--grade", "2"], capsys, monkeypatch)
    assert code == 0, err
    rows = listed(kb)
    assert len(rows) == 1 and rows[0]["doc"] == doc_id(kb, "pump.md") != "pump.md" and rows[0]["grade"] == 2


@pytest.mark.parametrize(
    "args, words",
    [
        (["no such doc", "nope.md"], "has no document 'nope.md'"),
        (["   ", "DOC"], "QUERY is blank"),
        (["pump", "DOC", "--grade", "3"], "--grade 3: must be 2 or less"),
    ],
)
def test_bad_judgments_are_one_line_and_write_nothing(kb, capsys, monkeypatch, args, words):
    args = [a.replace("DOC", doc_id(kb, "pump.md")) for a in args]
    code, _, err = run_cli(["judge", *args, "--index", str(kb)], capsys, monkeypatch)
    assert_one_line_error(code, err, words)
    assert listed(kb) == [] and not (kb / "judgments.db").exists()


def test_a_read_only_index_refuses_a_judgment_in_one_line(kb, capsys, monkeypatch):
    if os.geteuid() == 0:
        pytest.skip("root writes through read-only permissions")
    os.chmod(kb, stat.S_IRUSR | stat.S_IXUSR)
    try:
        code, _, err = run_cli(["judge", "pump", doc_id(kb, "pump.md"), "--index", str(kb)], capsys, monkeypatch)
    finally:
        os.chmod(kb, stat.S_IRWXU)
    assert_one_line_error(code, err, "cannot be written")


def test_a_read_only_judgments_file_refuses_a_judgment_in_one_line(kb, monkeypatch):
    Judgments(kb).put([])  # the file exists
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(EncodrError, match="cannot be written"):
        commands.judge(JudgeRequest(query="pump", doc=doc_id(kb, "pump.md"), index=str(kb)), "cli")


def test_judgments_survive_a_sync_an_edit_a_delete_and_a_rebuild_with_another_model(kb, tmp_path, tiny_model, tiny_roberta):
    for name in DOCS:
        commands.judge(JudgeRequest(query=f"about {name}", doc=doc_id(kb, name), index=str(kb)), "cli")
    docs = tmp_path / "docs"
    (docs / "pump.md").write_text("# Pump\n\nThe pump pressure must now stay below 5 bar.\n")
    (docs / "valve.md").unlink()
    commands.index(IndexRequest(corpus=[str(docs)], model=str(tiny_model), out=str(kb), write="sync"))
    status = {r["doc"].rsplit("/", 1)[-1]: r["status"] for r in listed(kb)}
    assert status == {"pump.md": EDITED, "valve.md": ORPHANED, "boiler.md": CURRENT}
    result = commands.judgments(JudgmentsRequest(index=str(kb)))
    assert "1 current" in result.where and "1 edited" in result.where and "1 orphaned" in result.where
    commands.index(IndexRequest(corpus=[str(docs)], model=str(tiny_roberta), out=str(kb), write="overwrite", lang="eng"))
    assert {r["doc"].rsplit("/", 1)[-1]: r["status"] for r in listed(kb)} == status  # kept, and still made on the earlier text


def test_eval_retrieval_on_the_index_measures_its_own_judgments_by_fold(kb, capsys, monkeypatch):
    boiler, pump = doc_id(kb, "boiler.md"), doc_id(kb, "pump.md")
    queries = {f"boiler water heat {i}": boiler for i in range(12)} | {f"pump bar pressure {i}": pump for i in range(12)}
    for q, d in queries.items():
        commands.judge(JudgeRequest(query=q, doc=d, index=str(kb)), "http")
    code, out, err = run_cli(["eval", "retrieval", "--index", str(kb), "--split", "all", "--json"], capsys, monkeypatch)
    assert code == 0, err
    scores = json.loads(out)["scores"]
    modes = {s["dataset"].split(" · ")[1] for s in scores}
    assert modes == {"dense", "keyword", "hybrid·zscore"}
    assert {s["n"] for s in scores} == {len(queries)}  # every judged query, each fold
    keyword = next(s["value"] for s in scores if s["dataset"].endswith("keyword") and s["metric"] == "ndcg@10")
    assert keyword > 90  # the judged documents hold the queries' words
    code, out, _ = run_cli(
        ["eval", "retrieval", "--index", str(kb), "--json"], capsys, monkeypatch
    )  # default: the test fold alone
    tested = sum(fold(q) == "test" for q in queries)
    assert code == 0 and {s["n"] for s in json.loads(out)["scores"]} == {tested}


def test_eval_retrieval_on_an_index_without_judgments_says_how_to_make_some(kb, capsys, monkeypatch):
    code, _, err = run_cli(["eval", "retrieval", "--index", str(kb)], capsys, monkeypatch)
    assert_one_line_error(code, err, "encodr judge")


def beir(tmp_path, rows: list[tuple[str, str, int]], queries: dict[str, str]):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("")
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows))
    return folder


def test_import_reads_every_row_or_none_and_export_writes_a_beir_folder(kb, tmp_path, capsys, monkeypatch):
    pump, valve = doc_id(kb, "pump.md"), doc_id(kb, "valve.md")
    bad = beir(tmp_path, [("q1", pump, 1), ("q2", "gone-1", 1), ("q2", "gone-2", 0)], {"q1": "pump pressure", "q2": "valves"})
    code, _, err = run_cli(["judgments", "--index", str(kb), "--import", str(bad)], capsys, monkeypatch)
    assert_one_line_error(code, err, "2 row(s) name documents the index lacks (first: 'gone-1', 'gone-2'); nothing was imported")
    assert listed(kb) == []
    (bad / "qrels" / "train.tsv").write_text(f"q1\t{pump}\t2\nq2\t{valve}\t1\nq2\t{pump}\t0\n")
    code, out, err = run_cli(["judgments", "--index", str(kb), "--import", str(bad), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["imported"] == 3, err
    assert {(r["query"], r["grade"], r["front"]) for r in listed(kb)} == {
        ("pump pressure", 2, "import"),
        ("valves", 1, "import"),
        ("valves", 0, "import"),
    }
    out_dir = tmp_path / "exported"
    code, out, err = run_cli(["judgments", "--index", str(kb), "--export", str(out_dir), "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert len((out_dir / "corpus.jsonl").read_text().splitlines()) == 3
    rows = [line.split("\t") for f in FOLDS for line in (out_dir / "qrels" / f"{f}.tsv").read_text().splitlines()[1:]]
    assert sorted(int(g) for _, _, g in rows) == [0, 1, 2]
    code, _, err = run_cli(
        ["judgments", "--index", str(kb), "--export", str(out_dir)], capsys, monkeypatch
    )  # never over a folder encodr did not write
    assert_one_line_error(code, err, "choose another --out")
