"""Faults a real machine throws: a reader racing writers, kills at random moments, SIGTERM,
a dead torchrun launcher, a read-only or broken registry, a full disk, a locked texts.db.

Each test feeds the fault itself (a signal, a real tmpfs that fills up, a lock held by another
connection) or, where the test says so, raises the OS error at the write that would hit it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from encodr.errors import EncodrError
from encodr.index import BuildOptions, Index, build
from encodr.index.options import SearchOptions
from tests.conftest import run_cli

# A writer process for the race tests: builds or appends to an index over and over, printing a
# line at every progress event and after every write, so a test can kill it at a random event.
WRITER = r"""
import sys
from pathlib import Path
from encodr.index import BuildOptions, build
out, model, folder, adds, overwrite_every = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
base = folder / "base.txt"
print("ready", flush=True)
tag = sys.argv[6]
for i in range(adds):
    f = folder / f"add-{tag}-{i}.txt"
    f.write_text("".join(f"text {tag} {i} {j}\n" for j in range(3)))
    if overwrite_every and i % overwrite_every == overwrite_every - 1:
        options = BuildOptions(model=model, write="overwrite", lang="eng", batch_size=1)
        build([str(base)], out, options, progress=lambda e: print("event", flush=True))
    else:
        build([str(f)], out, BuildOptions(write="add", lang="eng", batch_size=1), progress=lambda e: print("event", flush=True))
    print("written", flush=True)
"""

# A reader process: opens the index in a loop, printing each count.
READER = r"""
import sys
from encodr.index.reader import IndexReader as Index
while True:
    with Index.open(sys.argv[1], mmap=True) as index:
        print(len(index), flush=True)
"""


def _python(code: str, *args) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


@pytest.fixture
def base_index(tmp_path, tiny_model) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "base.txt").write_text("".join(f"base text {i}\n" for i in range(10)))
    out = tmp_path / "idx"
    build([str(folder / "base.txt")], out, BuildOptions(model=str(tiny_model), lang="eng"))
    return out


def test_a_reader_never_sees_a_missing_or_mixed_index_during_30_adds(base_index, tiny_model, tmp_path):
    writer = _python(WRITER, base_index, tiny_model, tmp_path / "corpus", 30, 0, "a")
    assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
    counts, failures = [], []
    while writer.poll() is None:
        try:
            with Index.open(base_index, mmap=True) as index:  # the open `encodr search` does
                counts.append(len(index))
        except (EncodrError, OSError) as exc:
            failures.append(repr(exc))
    out, err = writer.communicate()
    assert writer.returncode == 0, err[-2000:]
    assert out.count("written") == 30
    assert failures == []
    assert len(counts) > 30 and counts == sorted(counts)  # consistent (open checks it) and only growing
    assert counts[0] >= 10 and len(Index.open(base_index)) == 10 + 3 * 30
    # a write sweeps every generation nobody holds: the reader above may have held the one before
    # the last write while it swept, so one more write, with no reader, leaves only its own
    (tmp_path / "corpus" / "last.txt").write_text("one more text\n")
    build([str(tmp_path / "corpus" / "last.txt")], base_index, BuildOptions(write="add"))
    assert sorted(p.name for p in base_index.iterdir()) == ["current", os.readlink(base_index / "current")]


def test_random_kills_of_writers_and_readers_leave_a_consistent_index(base_index, tiny_model, tmp_path):
    rng = random.Random(21)
    kills = 0
    for round_ in range(11):  # a writer and a reader killed each round: 22 kills
        writer = _python(WRITER, base_index, tiny_model, tmp_path / "corpus", 1000, 3, round_)
        reader = _python(READER, base_index)
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        for _ in range(rng.randint(1, 40)):  # a random moment: build (overwrite) or --add, mid-encode or at the swap
            if not writer.stdout.readline():
                pytest.fail(writer.stderr.read()[-2000:])
        for _ in range(rng.randint(1, 20)):
            if not reader.stdout.readline():
                pytest.fail(reader.stderr.read()[-2000:])
        for proc in (writer, reader):
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            kills += 1
        with Index.open(base_index) as index:  # opens, and its three files agree
            assert len(index) >= 10
            assert index.rows([0])[0]["text"] == "base text 0"
    assert kills == 22
    meta = build(
        [str(tmp_path / "corpus" / "base.txt")], base_index, BuildOptions(write="add")
    )  # the next write sweeps the dead ones
    assert meta["added"] == 0
    assert sorted(p.name for p in base_index.iterdir()) == ["current", os.readlink(base_index / "current")]


def _tune(launcher: list[str], words: Path, model: Path, out: Path) -> subprocess.Popen:
    cmd = [
        *launcher,
        "-m",
        "encodr",
        "tune",
        str(words),
        "--recipe",
        "word",
        "--model",
        str(model),
        "--out",
        str(out),
        "--batch-size",
        "8",
        "--epochs",
        "50",
        "--max-length",
        "8",
    ]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )


def _wait_for_training(proc: subprocess.Popen, out: Path) -> None:
    """Until the run's temporary output exists (the trainer is up, the model loading)."""
    while not list(out.parent.glob(f".{out.name}.tmp-*")):
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        os.sched_yield()


@pytest.fixture
def many_words(tmp_path) -> Path:
    words = tmp_path / "words.txt"
    words.write_text("\n".join(f"word{i}" for i in range(2000)) + "\n")
    return words


@pytest.mark.parametrize("launcher", ["python", "torchrun"])
def test_sigterm_during_tune_leaves_nothing_and_records_cancelled(launcher, many_words, tiny_model, tmp_path):
    from encodr import registry

    cmd = [sys.executable] if launcher == "python" else [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    out = tmp_path / "out"
    proc = _tune(cmd, many_words, tiny_model, out)
    _wait_for_training(proc, out)
    proc.send_signal(signal.SIGTERM)  # torchrun passes it on to both workers
    _, err = proc.communicate()
    assert not out.exists() and not list(tmp_path.glob(".out.*")), err[-3000:]
    rows = registry.runs()
    assert [r["status"] for r in rows] == ["cancelled"], err[-3000:]
    if launcher == "python":
        assert proc.returncode == 2 and "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith("encodr: error: stopped: terminated by SIGTERM; nothing was written to")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_the_torchrun_launcher_stops_its_workers_before_they_write(many_words, tiny_model, tmp_path):
    from encodr import registry

    out = tmp_path / "out"
    proc = _tune([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"], many_words, tiny_model, out)
    _wait_for_training(proc, out)
    workers = _children(proc.pid)
    assert len(workers) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()  # not communicate(): an orphaned worker would hold the pipes open
    deadline = time.monotonic() + 5
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        os.sched_yield()
    survivors = [pid for pid in workers if _alive(pid)]
    for pid in survivors:  # leave no orphan behind when the check fails
        os.kill(pid, signal.SIGKILL)
    assert survivors == []  # no worker alive 5 s after the launcher died
    assert not out.exists()
    assert all(r.get("status") == "cancelled" for r in registry.runs())  # never a success row


def test_a_read_only_registry_warns_once_and_the_model_is_still_trained_and_saved(
    words_file, tiny_model, tmp_path, capsys, monkeypatch
):
    # SQLite opened read-only (mode=ro), as it opens a file it may not write: the same
    # "attempt to write a readonly database" a read-only workspace gives (root ignores chmod).
    from encodr import registry

    registry.record({"kind": "probe"})
    real = sqlite3.connect
    monkeypatch.setattr(registry.sqlite3, "connect", lambda path, **kw: real(f"file:{path}?mode=ro", uri=True, **kw))
    out = tmp_path / "out"
    args = ["tune", str(words_file), "--recipe", "word", "--model", str(tiny_model), "--out", str(out), "--epochs", "1", "--json"]
    code, stdout, err = run_cli(args, capsys, monkeypatch)
    assert code == 0 and "Traceback" not in err, err
    warned = [line for line in err.splitlines() if "this run will not be recorded" in line]
    assert len(warned) == 1 and "run registry" in warned[0] and "readonly" in warned[0]
    assert (out / "modules.json").is_file() and json.loads(stdout)["run_ids"] == []


def test_a_registry_that_fails_after_training_says_the_model_was_saved(words_file, tiny_model, tmp_path, capsys, monkeypatch):
    from encodr import registry

    def full(row, path=None):
        raise EncodrError("run registry X cannot be written: database or disk is full")

    monkeypatch.setattr(registry, "record", full)
    out = tmp_path / "out"
    code, _, err = run_cli(
        ["tune", str(words_file), "--recipe", "word", "--model", str(tiny_model), "--out", str(out), "--epochs", "1"],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "Traceback" not in err
    assert f"the model was saved to {out.resolve()}, but the run was not recorded" in err
    assert (out / "model.safetensors").exists() or (out / "config.json").exists()


def test_unreadable_registry_rows_are_shown_not_a_traceback(capsys, monkeypatch):
    from encodr import registry

    first = registry.record({"kind": "tune", "model": "m", "metrics": {"final_loss": 1.0}})
    db = registry.database()
    db.execute("update runs set metrics = '{broken' where id = ?", [first])
    db.conn.commit()
    code, out, err = run_cli(["runs"], capsys, monkeypatch)
    assert code == 0 and "metricsnotvalidJSON" in "".join(out.replace("│", "").split()) and "Traceback" not in err
    code, out, err = run_cli(["runs", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)[0]["unreadable"] == "metrics not valid JSON"
    code, out, err = run_cli(["runs", "show", str(first)], capsys, monkeypatch)
    assert code == 0 and "metrics not valid JSON" in out and "Traceback" not in err
    # a runs table of another shape (columns encodr never wrote)
    db.conn.execute("drop table runs")
    db.conn.execute("create table runs (name text, value text)")
    db.conn.execute("insert into runs values ('x', 'y')")
    db.conn.commit()
    code, out, err = run_cli(["runs"], capsys, monkeypatch)
    assert code == 0 and "Traceback" not in err
    code, out, err = run_cli(["runs", "show", "1"], capsys, monkeypatch)
    assert code == 2 and "no run 1 in the registry" in err and "Traceback" not in err


@pytest.fixture
def tmpfs(tmp_path):
    """A real 2 MiB tmpfs (root only; skipped where mounting is not allowed)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root); test_disk_full_* with a patched write still run")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _one_error_line(err: str) -> bool:
    """The error is one line, the last (a progress bar may stand above it)."""
    return err.count("encodr: error:") == 1 and err.strip().splitlines()[-1].startswith("encodr: error:")


def _fill(folder: Path, leave: int) -> None:
    """Fill the file system of ``folder`` until ``leave`` bytes are free."""
    stat = os.statvfs(folder)
    free = stat.f_bavail * stat.f_frsize
    with open(folder / "ballast", "wb") as f:
        f.write(b"\0" * max(0, free - leave))


def test_a_full_disk_during_a_build_and_an_add_is_one_line_and_keeps_the_index(tmpfs, tiny_model, tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"a line of text number {i}\n" for i in range(200)))
    out = tmpfs / "idx"
    build([str(corpus)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    before = sorted(p.name for p in (out / "current").iterdir())
    more = tmp_path / "more.txt"
    more.write_text("".join(f"another longer line of text, number {i}, to fill the disk\n" for i in range(3000)))
    _fill(tmpfs, 16 * 1024)
    code, _, err = run_cli(["index", str(more), "--out", str(out), "--add"], capsys, monkeypatch)
    assert code == 2 and "Traceback" not in err and _one_error_line(err)
    assert "disk is full" in err and "the previous index is unchanged" in err
    assert sorted(p.name for p in out.iterdir()) == ["current", "g000001"]  # the new generation is gone
    assert sorted(p.name for p in (out / "current").iterdir()) == before and len(Index.open(out)) == 200
    code, _, err = run_cli(
        ["index", str(more), "--model", str(tiny_model), "--out", str(tmpfs / "new"), "--lang", "eng"], capsys, monkeypatch
    )
    assert code == 2 and "Traceback" not in err and "disk is full" in err and "no index was written" in err
    assert not (tmpfs / "new").exists() and not list(tmpfs.glob(".new*tmp*"))


def test_a_full_disk_when_tune_saves_is_one_line_and_leaves_nothing(tmpfs, words_file, tiny_model, capsys, monkeypatch):
    _fill(tmpfs, 64 * 1024)
    out = tmpfs / "model"
    code, _, err = run_cli(
        ["tune", str(words_file), "--recipe", "word", "--model", str(tiny_model), "--out", str(out), "--epochs", "1"],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "Traceback" not in err and _one_error_line(err)
    assert f"cannot write {out}: the disk is full" in err and "nothing was written there" in err
    assert not out.exists() and not list(tmpfs.glob(".model*"))


def test_disk_full_in_faiss_and_safetensors_writes_is_one_line(
    built_small, words_file, tiny_model, tmp_path, capsys, monkeypatch
):
    # patched writes raising what FAISS and safetensors raise on ENOSPC (runs without root)
    import faiss
    import safetensors

    def faiss_full(index, path):
        raise RuntimeError(
            f"Error in faiss::FileIOWriter: 'ret == (n)' failed: write error in {path}: 0 != 1 (No space left on device)"
        )

    more = tmp_path / "more.txt"
    more.write_text("one more line\n")
    with monkeypatch.context() as patch:
        patch.setattr(faiss, "write_index", faiss_full)
        code, _, err = run_cli(["index", str(more), "--out", str(built_small), "--add"], capsys, monkeypatch)
    assert (
        code == 2 and "Traceback" not in err and "vectors.faiss: the disk is full" in err and "previous index is unchanged" in err
    )
    assert len(Index.open(built_small)) == 3

    def safetensors_full(*args, **kwargs):
        raise safetensors.SafetensorError(
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'
        )

    import transformers.modeling_utils

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", safetensors_full)
    out = tmp_path / "model"
    code, _, err = run_cli(
        ["tune", str(words_file), "--recipe", "word", "--model", str(tiny_model), "--out", str(out), "--epochs", "1"],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "Traceback" not in err and f"cannot write {out}: the disk is full" in err
    assert not out.exists() and not list(tmp_path.glob(".model*"))


@pytest.fixture
def built_small(tmp_path, tiny_model) -> Path:
    corpus = tmp_path / "small.txt"
    corpus.write_text("first text\nsecond text\nthird text\n")
    out = tmp_path / "small-idx"
    build([str(corpus)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    return out


def test_a_locked_texts_db_is_reported_as_locked_not_corrupted(built_small, tmp_path, capsys, monkeypatch):
    from encodr.index import reader

    monkeypatch.setattr(reader, "LOCK_TIMEOUT", 0.2)
    holder = sqlite3.connect(built_small / "current" / "texts.db", isolation_level=None)
    holder.execute("begin exclusive")  # another process's writer, holding the lock
    try:
        code, _, err = run_cli(["search", "first", "--index", str(built_small)], capsys, monkeypatch)
        assert code == 2 and "Traceback" not in err and "is locked by another process" in err and "corrupted" not in err
        more = tmp_path / "more.txt"
        more.write_text("one more line\n")
        code, _, err = run_cli(["index", str(more), "--out", str(built_small), "--add"], capsys, monkeypatch)
        assert code == 2 and "is locked by another process" in err and "corrupted" not in err
    finally:
        holder.execute("rollback")
        holder.close()
    assert len(Index.open(built_small)) == 3  # kept as it was, and readable once the lock is gone


def test_a_long_running_searcher_sees_each_add_whole(built_small, tmp_path):
    from encodr.index import Searcher

    searcher = Searcher(built_small)
    first = searcher.index.folder
    more = tmp_path / "more.txt"
    more.write_text("a fourth text\n")
    build([str(more)], built_small, BuildOptions(write="add"))
    assert first.exists()  # held by the searcher: not removed under it
    hits = searcher.search(["a fourth text"], SearchOptions(k=1, mode="dense"))[0]
    assert hits[0].text == "a fourth text" and len(searcher.index) == 4 and searcher.index.folder != first
    build([str(more)], built_small, BuildOptions(write="add"))  # the next write removes the generation nobody holds now
    assert not first.exists()


def test_a_ragged_tsv_row_is_refused_with_its_line(tmp_path, tiny_model, capsys, monkeypatch):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("text\tlang\nhello there\teng\nhola\n")
    out = tmp_path / "idx"
    code, _, err = run_cli(["index", str(corpus), "--model", str(tiny_model), "--out", str(out)], capsys, monkeypatch)
    assert code == 2 and "Traceback" not in err and _one_error_line(err)
    assert f"{corpus}, line 3: 1 column where the header has 2 (text, lang)" in err
    assert not out.exists()


def test_a_language_that_is_not_a_code_is_refused(tmp_path, tiny_model, built_small, capsys, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello there\n")
    code, _, err = run_cli(
        ["index", str(corpus), "--model", str(tiny_model), "--out", str(tmp_path / "x"), "--lang", "not a code!"],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "--lang not a code!: not an ISO 639-3 language code" in err and not (tmp_path / "x").exists()
    code, _, err = run_cli(["search", "first", "--index", str(built_small), "--hit-lang", "English"], capsys, monkeypatch)
    assert code == 2 and "--hit-lang English: not an ISO 639-3 language code" in err
    tsv = tmp_path / "c.tsv"
    tsv.write_text("text\tlang\nhello\tEnglish!\n")
    code, _, err = run_cli(["index", str(tsv), "--model", str(tiny_model), "--out", str(tmp_path / "y")], capsys, monkeypatch)
    assert code == 2 and "line 2: lang 'English!' is not an ISO 639-3 language code" in err


def test_a_read_only_file_system_is_one_line_and_keeps_the_index(tmpfs, tiny_model, tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text("first text\nsecond text\n")
    out = tmpfs / "idx"
    build([str(corpus)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    if subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], capture_output=True).returncode != 0:
        pytest.skip("cannot remount read-only here")
    more = tmp_path / "more.txt"
    more.write_text("third text\n")
    code, _, err = run_cli(["index", str(more), "--out", str(out), "--add"], capsys, monkeypatch)
    assert code == 2 and "Traceback" not in err and _one_error_line(err) and "read-only" in err.lower()
    assert len(Index.open(out)) == 2


def test_a_link_to_a_missing_generation_is_named(built_small):
    import shutil

    shutil.rmtree(built_small / os.readlink(built_small / "current"))
    with pytest.raises(EncodrError, match="names generation g000001, which is missing; rebuild it"):
        Index.open(built_small)


def test_a_short_write_is_read_as_a_full_disk():
    """NumPy's and FAISS's short writes carry no errno, only "N requested and M written"."""
    from encodr.outputs import os_fault

    message = str(os_fault(OSError("230400 requested and 26624 written"), "idx", kept="no index was written"))
    assert message == "cannot write idx: the disk is full; free some space; no index was written"
