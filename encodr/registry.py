"""The run registry: one SQLite row per training run (``$ENCODR_HOME/registry.db``),
through sqlite-utils. Listed by ``encodr runs``."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import sqlite_utils

from .errors import EncodrError
from .paths import home


def database(path: Path | None = None) -> sqlite_utils.Database:
    """Open (and create) the registry database.

    Raises:
        EncodrError: the workspace cannot be created, or the file is not a SQLite database.
    """
    path = path or home() / "registry.db"
    try:
        db = sqlite_utils.Database(path)
        db.table_names()  # reads the header: a corrupt or foreign file fails here
    except sqlite3.DatabaseError as exc:
        raise EncodrError(f"run registry {path} cannot be read ({exc}); move it away and encodr starts a new one") from None
    return db


def record(row: dict, path: Path | None = None) -> int:
    """Insert a run and return its id.

    Args:
        row: ``model``, ``recipe`` (dict), ``data``, ``data_sha256``, ``strings``,
            ``duration_s``, ``out``, ``metrics`` (dict); dicts are stored as JSON.
    """
    db = database(path)
    values = {"created": time.strftime("%Y-%m-%d %H:%M:%S")}
    values.update({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()})
    table = db["runs"]
    table.insert(values, pk="id", alter=True)
    return int(table.last_pk)


def runs(path: Path | None = None, limit: int = 50) -> list[dict]:
    """The most recent runs first, JSON columns decoded."""
    db = database(path)
    if "runs" not in db.table_names():
        return []
    rows = []
    for row in db["runs"].rows_where(order_by="id desc", limit=limit):
        for key in ("recipe", "metrics"):
            if isinstance(row.get(key), str):
                row[key] = json.loads(row[key])
        rows.append(row)
    return rows


def get_run(run_id: int, path: Path | None = None) -> dict:
    """One run by id, JSON columns decoded.

    Raises:
        EncodrError: no run with that id.
    """
    db = database(path)
    row = None
    if "runs" in db.table_names():
        row = next(db["runs"].rows_where("id = ?", [run_id]), None)
    if row is None:
        raise EncodrError(f"no run {run_id} in the registry; list the runs with: encodr runs")
    for key in ("recipe", "metrics"):
        if isinstance(row.get(key), str):
            row[key] = json.loads(row[key])
    return row


def run_log(row: dict) -> list[dict]:
    """A run's per-step training log (``train_log.jsonl`` in its output folder: ``step``,
    ``loss``, ``loss/NAME``…); empty when the output is gone or the run wrote none."""
    path = Path(row.get("out") or "") / "train_log.jsonl"
    if not row.get("out") or not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
