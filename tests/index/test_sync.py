"""Documents that change: safe outputs, --sync, delete (removal and tombstones), metadata filters,
a reader racing syncs, kills mid-sync, files that change while read, --watch."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from encodr.errors import EncodrError
from encodr.index import BuildOptions, Index, Searcher, build
from encodr.index.delete import delete
from encodr.index.filters import parse
from encodr.index.options import SearchOptions
from tests.conftest import run_cli


def assert_one_line_error(code, err, words):
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("encodr: error:") and words in lines[0], err


def all_texts(index_dir) -> list[str]:
    with Index.open(index_dir) as index:
        return list(index.texts.column("text"))


def keyword(index_dir, query, k=10, filters=()):
    return Searcher(index_dir).query([query], SearchOptions(k=k, mode="keyword", filter=[parse(f) for f in filters]))[1][0]


@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Pump\nThe pump pressure must stay below 4 bar.\n")
    (folder / "b.md").write_text("# Valves\nValve maintenance: grease each valve stem monthly.\n")
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"# Note {i}\nA note about rivers number {i}.\n")
    return folder


# --- safe outputs ----------------------------------------------------------------------------


def test_the_readme_notes_example_never_deletes_the_notes(tmp_path, tiny_model, capsys, monkeypatch):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("first note\n")
    (notes / "b.txt").write_text("second note\n")
    args = ["index", str(notes), "--glob", "*.txt", "--documents", "--out", str(notes), "--model", str(tiny_model)]
    for extra in ([], ["--overwrite"], ["--add"], ["--sync"]):
        code, _, err = run_cli([*args, *extra], capsys, monkeypatch)
        assert_one_line_error(code, err, f"--out {notes} holds the input")
        assert "choose another --out" in err
        assert sorted(p.name for p in notes.iterdir()) == ["a.txt", "b.txt"]
        assert (notes / "a.txt").read_text() == "first note\n"


def test_overwrite_refuses_a_folder_encodr_did_not_write_and_replaces_its_own_index(
    tmp_path, tiny_model, docs, capsys, monkeypatch
):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    code, _, err = run_cli(
        ["index", str(docs), "--out", str(foreign), "--overwrite", "--model", str(tiny_model)], capsys, monkeypatch
    )
    assert_one_line_error(code, err, f"--out {foreign} already exists and is not an encodr output")
    assert [p.name for p in foreign.iterdir()] == ["thesis.tex"]
    out = tmp_path / "idx"
    assert run_cli(["index", str(docs), "--out", str(out), "--model", str(tiny_model)], capsys, monkeypatch)[0] == 0
    code, _, err = run_cli(["index", str(docs), "--out", str(out), "--model", str(tiny_model)], capsys, monkeypatch)
    assert_one_line_error(code, err, "already exists; pass --add to add documents, --sync")
    assert (
        run_cli(["index", str(docs), "--out", str(out), "--overwrite", "--model", str(tiny_model)], capsys, monkeypatch)[0] == 0
    )


def test_a_file_of_an_unknown_kind_named_directly_is_refused(tmp_path, tiny_model, capsys, monkeypatch):
    report = tmp_path / "report.key"  # a Keynote file: no converter reads it
    report.write_bytes(b"PK\x03\x04junk")
    code, _, err = run_cli(
        ["index", str(report), "--out", str(tmp_path / "idx"), "--model", str(tiny_model)], capsys, monkeypatch
    )
    assert_one_line_error(code, err, "report.key: not a kind encodr reads; it reads .txt")
    assert not (tmp_path / "idx").exists()


# --- sync --------------------------------------------------------------------------------------


def test_sync_removes_stale_text_and_deleted_documents(docs, tiny_model, tmp_path, capsys, monkeypatch):
    out = tmp_path / "idx"
    build([str(docs)], out, BuildOptions(model=str(tiny_model)))
    (docs / "a.md").write_text("# Pump\nThe pump pressure must stay below 9 bar.\n")
    (docs / "b.md").unlink()
    (docs / "c.md").write_text("# Chess\nChess openings.\n")
    code, stdout, err = run_cli(["index", str(docs), "--out", str(out), "--sync", "--json"], capsys, monkeypatch)
    assert code == 0, err
    counts = json.loads(stdout)
    assert {k: counts[k] for k in ("added", "updated", "removed", "unchanged")} == {
        "added": 1,
        "updated": 1,
        "removed": 1,
        "unchanged": 3,
    }
    assert counts["encoded"] == 2 and counts["documents"] == 5
    pump = [h.text for h in keyword(out, "pump pressure")]
    assert len(pump) == 1 and "9 bar" in pump[0]
    assert keyword(out, "valve maintenance") == []
    for mode in ("dense", "hybrid"):  # every hit of the other modes too: no stale text anywhere
        hits = Searcher(out).search(["pump pressure"], SearchOptions(k=20, mode=mode))[0]
        assert not any("4 bar" in h.text or "Valve" in h.text for h in hits) and len(hits) == 5
    again = build([str(docs)], out, BuildOptions(write="sync"))
    assert (again["added"], again["updated"], again["removed"], again["unchanged"], again["encoded"]) == (0, 0, 0, 5, 0)


def test_sync_keeps_documents_of_other_paths_and_add_removes_nothing(docs, tiny_model, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"_id": "x1", "text": "a kept document about glaciers"}) + "\n")
    out = tmp_path / "idx"
    build([str(docs), str(other)], out, BuildOptions(model=str(tiny_model)))
    (docs / "n0.md").unlink()
    added = build([str(docs)], out, BuildOptions(write="add"))
    assert added["removed"] == 0 and added["unchanged"] == 4
    synced = build([str(docs)], out, BuildOptions(write="sync"))
    assert synced["removed"] == 1 and keyword(out, "glaciers")[0].ext_id == "x1"
    assert not any("number 0" in t for t in all_texts(out))


def test_a_changed_document_keeps_its_unchanged_passages_encoded_once(tmp_path, tiny_model):
    corpus = tmp_path / "c.jsonl"
    rows = [{"_id": f"d{i}", "text": f"document {i} text"} for i in range(5)]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "idx"
    build([str(corpus)], out, BuildOptions(model=str(tiny_model)))
    rows[2]["text"] = "document 2 has new words"
    rows[3]["year"] = 2024  # metadata only: the document changed, its text did not
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = build([str(corpus)], out, BuildOptions(write="sync"))
    assert (meta["updated"], meta["encoded"], meta["count"]) == (2, 1, 5)
    assert [h.ext_id for h in keyword(out, "document", filters=["year=2024"])] == ["d3"]


def test_syncing_the_same_edit_three_times_keeps_the_counters_of_what_the_index_holds(tmp_path, tiny_model):
    """``split_documents`` and ``passages`` grew with every sync (131 → 190 → 239 while
    ``documents`` stayed): each build added its new passages to the old count."""
    docs = tmp_path / "docs"
    docs.mkdir()
    long = "\n\n".join(f"Paragraph {i} says the pump of house {i} needs a valve and a gauge." for i in range(40))
    for name in ("a", "b", "c"):
        (docs / f"{name}.md").write_text(f"# {name}\n\n{long}\n")
    first = build([str(docs)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    assert first["split_documents"] == 3 and first["passages"] > 3
    for n in range(3):
        (docs / "a.md").write_text(f"# a\n\n{long}\n\nEdit {n}.\n")
        meta = build([str(docs)], tmp_path / "idx", BuildOptions(write="sync"))
        assert (meta["added"], meta["updated"], meta["removed"]) == (0, 1, 0)
        assert (meta["documents"], meta["split_documents"]) == (3, 3)
        assert first["passages"] <= meta["passages"] <= first["passages"] + 1  # a's last passage may hold its edit apart


def test_a_new_index_looks_up_no_stored_document_and_a_sync_does(tmp_path, tiny_model, monkeypatch):
    from encodr.index.texts import TextStore

    corpus = tmp_path / "c.jsonl"
    rows = [{"_id": f"d{i}", "text": f"document {i} text"} for i in range(4)] + [{"_id": "d1", "text": "more of d1"}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    looked_up, info = [], TextStore.documents_info
    monkeypatch.setattr(TextStore, "documents_info", lambda self, ids: looked_up.extend(ids) or info(self, ids))
    meta = build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    assert looked_up == [] and (meta["added"], meta["count"]) == (4, 5)  # d1 read twice: one document, both its texts
    rows[2]["text"] = "document 2 has new words"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = build([str(corpus)], tmp_path / "idx", BuildOptions(write="sync"))
    assert sorted(looked_up) == ["d0", "d1", "d2", "d3"]
    assert (meta["unchanged"], meta["updated"], meta["encoded"]) == (3, 1, 1)


def test_a_text_shared_by_two_documents_goes_with_the_last(tmp_path, tiny_model):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        json.dumps({"_id": "a", "text": "shared words"}) + "\n" + json.dumps({"_id": "b", "text": "shared words"}) + "\n"
    )
    out = tmp_path / "idx"
    assert build([str(corpus)], out, BuildOptions(model=str(tiny_model)))["count"] == 1
    delete(out, ids=["a"])
    hit = keyword(out, "shared")[0]
    assert hit.ext_id == "b" and all_texts(out) == ["shared words"]  # shown under the document that still holds it
    delete(out, ids=["b"])
    assert all_texts(out) == [] and keyword(out, "shared") == []


# --- delete ------------------------------------------------------------------------------------


@pytest.fixture
def jsonl(tmp_path) -> Path:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(
                {
                    "_id": f"d{i}",
                    "text": f"pump manual page {i}",
                    "year": 2000 + i % 50,
                    "tags": ["even" if i % 2 == 0 else "odd"],
                    "date": f"2024-{1 + i % 12:02d}-15",
                }
            )
            + "\n"
            for i in range(200)
        )
    )
    return corpus


TYPES = {
    "flat": {},
    "hnsw": {"index_type": "hnsw"},
    "ivf": {"index_type": "ivf"},
    "binary": {"quantize": "binary"},
    "ivf-on-disk": {"index_type": "ivf", "on_disk": True},
}


@pytest.mark.parametrize("kind", list(TYPES))
def test_deleted_documents_never_come_back_whatever_the_index_type(jsonl, tiny_model, tmp_path, kind):
    out = tmp_path / kind
    build([str(jsonl)], out, BuildOptions(model=str(tiny_model), **TYPES[kind]))
    gone = {f"d{i}" for i in range(0, 200, 10)}  # 10 %: below the compaction threshold
    result = delete(out, ids=sorted(gone) + ["nope"])
    assert result["removed"] == 20 and result["not_found"] == ["nope"] and result["documents"] == 180
    assert result["tombstones"] == (
        0 if kind in ("flat", "ivf") else 20
    )  # flat and in-memory IVF remove the vectors; the others keep tombstones
    s = Searcher(out)
    for mode in ("dense", "keyword", "hybrid"):
        hits = s.search(["pump manual page"], SearchOptions(k=50, mode=mode))[0]
        assert len(hits) == 50 and not gone & {h.ext_id for h in hits}, mode
    assert len(s.index) == 180
    more = delete(out, sources=["*/c.jsonl"], filters=[parse("year<=2019")])  # a source glob AND a filter
    assert more["removed"] == 72 and more["documents"] == 108  # years 2000–2019 of the 180 left: 4 of each year, less the 8 gone
    assert delete(out, sources=["*/other.jsonl"])["removed"] == 0


def test_tombstones_are_compacted_past_the_threshold(jsonl, tiny_model, tmp_path):
    out = tmp_path / "hnsw"
    build([str(jsonl)], out, BuildOptions(model=str(tiny_model), index_type="hnsw"))
    assert delete(out, filters=[parse("year<=2009")])["tombstones"] == 40  # 20 %: not past it
    compacted = delete(out, ids=["d10"])
    assert compacted["compacted"] and compacted["tombstones"] == 0 and compacted["count"] == 159
    hits = Searcher(out).search(["pump manual page 11"], SearchOptions(k=159, mode="keyword"))[0]
    assert {h.ext_id for h in hits} == {f"d{i}" for i in range(200) if (2000 + i % 50) > 2009 and i != 10}


def test_deleting_needs_a_criterion_and_says_which(tmp_path, capsys, monkeypatch, jsonl, tiny_model):
    out = tmp_path / "idx"
    build([str(jsonl)], out, BuildOptions(model=str(tiny_model)))
    code, _, err = run_cli(["delete", "--index", str(out)], capsys, monkeypatch)
    assert_one_line_error(code, err, "name the documents to delete")
    code, stdout, err = run_cli(["delete", "d1", "d2", "--index", str(out), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(stdout)["removed"] == 2


# --- filters -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(TYPES))
def test_filters_run_inside_the_search_so_k_hits_come_back(jsonl, tiny_model, tmp_path, kind):
    out = tmp_path / kind
    build([str(jsonl)], out, BuildOptions(model=str(tiny_model), **TYPES[kind]))
    s = Searcher(out)
    rows = {json.loads(r)["_id"]: json.loads(r) for r in jsonl.read_text().splitlines()}
    cases = {
        ("year>=2045",): 20,
        ("tags=even", "year<=2010"): 24,
        ("date>=2024-11-01",): 32,
        ("tags!=even",): 100,
        ("id=d7",): 1,
        ("year>=2047", "tags=odd"): 8,
    }
    for filters, kept in cases.items():
        assert sum(all(_passes(row, f) for f in filters) for row in rows.values()) == kept
        for mode in ("dense", "keyword", "hybrid"):
            hits = s.query(["pump manual page"], SearchOptions(k=10, mode=mode, filter=[parse(f) for f in filters]))[1][0]
            assert len(hits) == min(10, kept), (filters, mode)
            for h in hits:
                row = rows[h.ext_id]
                assert all(_passes(row, f) for f in filters), (filters, h.ext_id)


def _passes(row, text) -> bool:
    f = parse(text)
    value = f.value
    if f.field == "id":
        return row["_id"] == value
    got = row[f.field]
    if f.op == "=":
        return value in got if isinstance(got, list) else got == value
    if f.op == "!=":
        return value not in got if isinstance(got, list) else got != value
    return got >= value if f.op == ">=" else got <= value


def test_filters_on_front_matter_csv_columns_source_and_dates(tmp_path, tiny_model):
    folder = tmp_path / "kb"
    (folder / "old").mkdir(parents=True)
    (folder / "a.md").write_text("---\ntitle: Pumps\nteam: ops\nreviewed: 2024-05-01\n---\nPump pressure limits.\n")
    (folder / "old" / "b.md").write_text("---\nteam: dev\n---\nPump history.\n")
    (folder / "t.csv").write_text("id,text,owner,year\nr1,Pump tickets,ana,2021\nr2,Pump orders,bo,2019\n")
    out = tmp_path / "idx"
    build(
        [str(folder)],
        out,
        BuildOptions(
            model=str(tiny_model),
            layout=__import__("encodr.data.records", fromlist=["Layout"]).Layout(meta_columns=("owner", "year")),
        ),
    )
    assert [h.title for h in keyword(out, "pump", filters=["team=ops"])] == ["Pumps"]
    assert [h.ext_id for h in keyword(out, "pump", filters=["year>=2020"])] == ["r1"]
    assert [h.ext_id for h in keyword(out, "pump", filters=["owner=bo"])] == ["r2"]
    assert [h.source for h in keyword(out, "pump", filters=["source=*/old/*"])] == [str(folder / "old" / "b.md")]
    for shown in ("old/b.md", "old/*", "b.md"):  # the path as a hit shows it, from the folder indexed
        assert [h.path for h in keyword(out, "pump", filters=[f"source={shown}"])] == ["old/b.md"], shown
    assert len(keyword(out, "pump", filters=["source!=old/*"])) == 3
    assert len(keyword(out, "pump", filters=["reviewed>=2024-01-01"])) == 1
    assert len(keyword(out, "pump", filters=["modified>=2000-01-01", "lang!=zzz"])) == 4
    with pytest.raises(EncodrError, match="not an ISO 8601 date"):
        keyword(out, "pump", filters=["modified>=2024-13-45"])
    with pytest.raises(EncodrError, match="write FIELD=VALUE"):
        parse("year")


# --- races and faults --------------------------------------------------------------------------


def _version(text: str) -> str:
    return re.search(r"version(\d+)", text).group(1)


def _versions(folder: Path, version: int, present: list[int]) -> None:
    for i in range(5):
        path = folder / f"f{i}.md"
        if i in present:
            path.write_text(f"# File {i}\nversion{version} of file {i}\n")
        elif path.exists():
            path.unlink()


@pytest.fixture
def versioned(tmp_path, tiny_model) -> tuple[Path, Path]:
    """A folder of five files at version 0, and an HNSW index of it (tombstones on delete)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    _versions(folder, 0, list(range(5)))
    out = tmp_path / "idx"
    build([str(folder)], out, BuildOptions(model=str(tiny_model), index_type="hnsw"))
    return folder, out


def test_a_reader_never_sees_a_failed_open_or_a_mixed_generation_during_30_syncs_and_deletes(versioned):
    folder, out = versioned
    done, failures, seen = threading.Event(), [], []

    def read():
        while not done.is_set():
            try:
                with Index.open(out, mmap=True) as index:
                    versions = {_version(t) for t in index.texts.column("text")}
                    seen.append(len(versions))
                    if len(versions) > 1:
                        failures.append(f"mixed generation: {versions}")
            except (EncodrError, OSError) as exc:
                failures.append(repr(exc))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for v in range(1, 31):
            if v % 3 == 0:  # a delete: the generation loses a file's document, versions stay one
                delete(out, ids=[str(folder / "f4.md")])
            _versions(folder, v, list(range(5)))
            build([str(folder)], out, BuildOptions(write="sync"))
    finally:
        done.set()
        reader.join()
    assert failures == [] and len(seen) > 30


# A syncing process that prints a line at each progress event and at each step of writing the
# new generation, so the test can SIGKILL it at a random one of them.
SYNCER = r"""
import importlib
import sys
from pathlib import Path
b = importlib.import_module("encodr.index.build")
import encodr.index.texts as t
import encodr.outputs as o
def told(name, f):
    def wrapped(*a, **kw):
        print("at", name, flush=True)
        return f(*a, **kw)
    return wrapped
t.TextStore.settle_members = told("settle", t.TextStore.settle_members)
t.TextStore.build_keywords = told("keywords", t.TextStore.build_keywords)
b.remove_texts = told("remove", b.remove_texts)
b.write_faiss = told("write", b.write_faiss)
o._point = told("swap", o._point)
folder, out = Path(sys.argv[1]), Path(sys.argv[2])
print("ready", flush=True)
for v in range(int(sys.argv[3]), int(sys.argv[3]) + 1000):
    for i in range(5):
        (folder / f"f{i}.md").write_text(f"# File {i}\nversion{v} of file {i}\n")
    b.build([str(folder)], out, b.BuildOptions(write="sync", batch_size=1), progress=lambda e: print("event", flush=True))
    print("written", flush=True)
"""


def test_sigkill_at_random_points_of_a_sync_leaves_the_old_generation_whole(versioned):
    folder, out = versioned
    rng = random.Random(7)
    phases = set()
    for round_ in range(12):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-c", SYNCER, str(folder), str(out), str(100 * (round_ + 1))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        for _ in range(rng.randint(1, 14)):
            line = proc.stdout.readline()
            if not line:
                pytest.fail(proc.stderr.read()[-2000:])
            phases.add(line.split()[-1])
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        with Index.open(out) as index:  # whole: its files agree (checked on open), and one version throughout
            assert len({_version(text) for text in index.texts.column("text")}) == 1 and len(index) == 5
    assert {"swap", "settle", "write"} <= phases
    _versions(folder, 5000, list(range(5)))
    meta = build([str(folder)], out, BuildOptions(write="sync"))  # the next sync completes it
    assert meta["updated"] == 5 and {_version(t) for t in all_texts(out)} == {"5000"}
    assert sorted(p.name for p in out.iterdir()) == ["current", os.readlink(out / "current")]


def test_a_file_that_vanishes_or_changes_while_a_sync_reads_it_is_a_warning_and_a_count(docs, tiny_model, tmp_path, monkeypatch):
    import importlib

    b = importlib.import_module("encodr.index.ingest")  # where a build reads its records
    out = tmp_path / "idx"
    build([str(docs)], out, BuildOptions(model=str(tiny_model)))
    (docs / "n0.md").write_text("# Note 0\nedited rivers\n")
    (docs / "n1.md").write_text("# Note 1\nedited rivers too\n")
    real = b.iter_records

    def racing(path, *args, **kwargs):
        if path.endswith("n0.md"):
            os.remove(path)  # gone between the listing and the read
        if path.endswith("n1.md"):
            for record in real(path, *args, **kwargs):
                Path(path).write_text("# Note 1\nedited again while read\n")
                yield record
            return
        yield from real(path, *args, **kwargs)

    monkeypatch.setattr(b, "iter_records", racing)
    lines = []
    meta = build([str(docs)], out, BuildOptions(write="sync"), warn=lines.append)
    reasons = {Path(s["path"]).name: s["reason"] for s in meta["skipped_files"]}
    assert "cannot read it" in reasons["n0.md"] and "changed while it was read" in reasons["n1.md"]
    assert meta["removed"] == 1 and meta["updated"] == 1  # n0 is gone; n1 was read (edited), and is read again next time
    monkeypatch.setattr(b, "iter_records", real)
    again = build([str(docs)], out, BuildOptions(write="sync"))
    assert again["updated"] == 1 and any("edited again while read" in t for t in all_texts(out))


def test_watch_makes_one_or_a_few_syncs_for_a_burst_of_200_files(tmp_path, tiny_model):
    from encodr.core import commands
    from encodr.core.requests import IndexRequest

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "seed.md").write_text("seed document\n")
    out = tmp_path / "idx"
    request = IndexRequest(corpus=[str(folder)], model=str(tiny_model), out=str(out), write="sync")
    commands.index(request)
    stop, all_in, ready, lines = threading.Event(), threading.Event(), threading.Event(), []

    def synced(line: str) -> None:
        lines.append(line)
        with Index.open(out) as index:
            if index.texts.document_count() == 201:
                all_in.set()

    watcher = threading.Thread(target=commands.watch, args=(request, synced, lines.append, stop, None, ready.set))
    watcher.start()
    try:
        assert ready.wait(60)
        for i in range(200):  # a burst: 200 files written at once (a copy, a checkout)
            (folder / f"burst{i}.txt").write_text(f"burst file {i}\n")
        assert all_in.wait(120), lines
    finally:
        stop.set()
        watcher.join()
    assert 1 <= len(lines) <= 3 and all(line.startswith("synced ") for line in lines), lines


def test_ctrl_c_during_index_is_one_line_saying_the_index_is_unchanged(docs, tiny_model, tmp_path, capsys, monkeypatch):
    from encodr.core import commands

    out = tmp_path / "idx"
    build([str(docs)], out, BuildOptions(model=str(tiny_model)))
    before = os.readlink(out / "current")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "index_with", interrupted)
    code, _, err = run_cli(["index", str(docs), "--out", str(out), "--sync"], capsys, monkeypatch)
    assert_one_line_error(code, err, f"interrupted by Ctrl-C; index {out} is unchanged (the previous generation stays current)")
    assert os.readlink(out / "current") == before


def test_the_index_listing_shows_each_indexs_sources_and_last_update(docs, tiny_model, workspace, capsys, monkeypatch):
    out = workspace / "indexes" / "kb"
    build([str(docs)], out, BuildOptions(model=str(tiny_model)))
    code, stdout, err = run_cli(["indexes", "--json"], capsys, monkeypatch)
    assert code == 0, err
    (row,) = json.loads(stdout)
    assert row["name"] == "kb" and row["sources"] == [str(docs.resolve())] and row["updated"] and row["documents"] == 5
