"""encodr.registry: the indexes built anywhere, recorded without sqlite-utils into the table it made before."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

from encodr import registry


def test_an_index_is_recorded_once_in_a_registry_sqlite_utils_made_and_listed_newest_first(tmp_path):
    path = tmp_path / "registry.db"
    with sqlite3.connect(path) as conn:  # the table sqlite-utils' upsert made
        conn.execute('create table "indexes" ("path" TEXT PRIMARY KEY, "written" TEXT)')
        conn.execute("insert into indexes values (?, '2026-01-01 00:00:00')", (str(tmp_path / "old"),))
    (tmp_path / "new").mkdir()
    registry.remember_index(tmp_path / "new", path)
    registry.remember_index(tmp_path / "new", path)  # again: one row, its time updated
    assert registry.seen_indexes(path) == [tmp_path / "new", tmp_path / "old"]


def test_recording_an_index_imports_neither_sqlite_utils_nor_pandas(tmp_path):
    probe = (
        "import sys; from pathlib import Path; from encodr import registry; "
        f"registry.remember_index(Path({str(tmp_path)!r}), Path({str(tmp_path / 'r.db')!r})); "
        "print(sorted(m for m in ('sqlite_utils', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
