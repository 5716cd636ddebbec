"""The run registry: one SQLite row per training run (``$ENCODR_HOME/registry.db``),
through sqlite-utils, listed by ``encodr runs``; and the indexes built anywhere, listed by
``encodr indexes``, recorded through ``sqlite3`` alone: every build records one, and
sqlite-utils imports pandas where it is installed."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import EncodrError, first_line
from .paths import home

if TYPE_CHECKING:
    import sqlite_utils

TIMEOUT = 10.0  # seconds a registry write waits for a lock another process holds


def database(path: Path | None = None) -> "sqlite_utils.Database":
    """Open (and create) the registry database.

    Raises:
        EncodrError: the workspace cannot be created, or the file is not a SQLite database.
    """
    import sqlite_utils

    return sqlite_utils.Database(_connect(path))


def _connect(path: Path | None = None) -> sqlite3.Connection:
    """The registry's SQLite connection (:func:`database`'s errors), its header read."""
    path = path or home() / "registry.db"
    try:
        conn = sqlite3.connect(str(path), timeout=TIMEOUT)
        conn.execute("select name from sqlite_master limit 1").fetchall()  # a corrupt or foreign file fails here
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc) or "unable to open" in str(exc):
            raise _unwritable(path, exc) from None
        raise EncodrError(f"run registry {path} cannot be read ({exc}); move it away and encodr starts a new one") from None
    return conn


def check_writable(path: Path | None = None) -> None:
    """Preflight: the registry can be written (a write in a transaction that is rolled
    back: it needs the file and its folder writable, for SQLite's journal, and no lock held
    by another process past :data:`TIMEOUT`).

    Raises:
        EncodrError: naming the registry and the cause (read-only, locked, not a database…).
    """
    path = path or home() / "registry.db"
    db = database(path)
    try:
        db.conn.execute("begin immediate")
        db.conn.execute("create table _encodr_write_probe (x)")
        db.conn.execute("rollback")
    except sqlite3.Error as exc:
        raise _unwritable(path, exc) from None
    finally:
        db.conn.close()


def _unwritable(path: Path, exc: BaseException) -> EncodrError:
    if "locked" in str(exc):
        cause = f"it is locked by another process (waited {TIMEOUT:g} s); wait for that process and run again"
    else:
        cause = f"{first_line(exc)}; make it and its folder writable, or point ENCODR_HOME at a writable folder"
    return EncodrError(f"run registry {path} cannot be {'opened' if 'unable to open' in str(exc) else 'written'}: {cause}")


def record(row: dict, path: Path | None = None) -> int:
    """Insert a run and return its id.

    Args:
        row: ``model``, ``recipe`` (dict), ``data``, ``data_sha256``, ``strings``,
            ``duration_s``, ``out``, ``metrics`` (dict); dicts are stored as JSON.

    Raises:
        EncodrError: the registry cannot be opened or written (read-only, full disk, locked).
    """
    path = path or home() / "registry.db"
    db = database(path)
    values = {"created": time.strftime("%Y-%m-%d %H:%M:%S")}
    values.update({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()})
    table = db["runs"]
    try:
        table.insert(values, pk="id", alter=True)
    except (sqlite3.Error, OSError) as exc:
        raise _unwritable(path, exc) from None
    return int(table.last_pk)


def _decoded(row: dict) -> dict:
    """A row with its JSON columns decoded; a column that is not valid JSON is left out and
    named in ``unreadable`` (shown as such, never a traceback)."""
    bad = []
    for key in ("recipe", "metrics"):
        if isinstance(row.get(key), str):
            try:
                row[key] = json.loads(row[key])
            except ValueError:
                row[key] = None
                bad.append(key)
    if bad:
        row["unreadable"] = f"{', '.join(bad)} not valid JSON"
    return row


def runs(path: Path | None = None, limit: int = 50) -> list[dict]:
    """The most recent runs first, JSON columns decoded."""
    db = database(path)
    if "runs" not in db.table_names():
        return []
    order = "id desc" if "id" in db["runs"].columns_dict else "rowid desc"  # a foreign table: newest rows first still
    return [_decoded(row) for row in db["runs"].rows_where(order_by=order, limit=limit)]


def get_run(run_id: int, path: Path | None = None) -> dict:
    """One run by id, JSON columns decoded.

    Raises:
        EncodrError: no run with that id.
    """
    db = database(path)
    row = None
    if "runs" in db.table_names() and "id" in db["runs"].columns_dict:
        row = next(db["runs"].rows_where("id = ?", [run_id]), None)
    if row is None:
        raise EncodrError(f"no run {run_id} in the registry; list the runs with: encodr runs")
    return _decoded(row)


def run_log(row: dict) -> list[dict]:
    """A run's per-step training log (``train_log.jsonl`` in its output folder: ``step``,
    ``loss``, ``loss/NAME``…); empty when the output is gone or the run wrote none."""
    path = Path(row.get("out") or "") / "train_log.jsonl"
    if not row.get("out") or not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by a full disk or a kill: the others still plot
    return rows


def remember_index(folder: Path, path: Path | None = None) -> None:
    """Record that an index was built or written at ``folder`` (absolute), so ``encodr indexes``
    lists it wherever it lives.

    Raises:
        EncodrError: the registry cannot be opened or written.
    """
    conn = _connect(path)
    try:
        with conn:  # the table as sqlite-utils' upsert made it before
            conn.execute('create table if not exists "indexes" ("path" TEXT PRIMARY KEY, "written" TEXT)')
            conn.execute(
                'insert into "indexes" ("path", "written") values (?, ?) '
                'on conflict ("path") do update set "written" = excluded."written"',
                (str(Path(folder).resolve()), time.strftime("%Y-%m-%d %H:%M:%S")),
            )
    except (sqlite3.Error, OSError) as exc:
        raise _unwritable(path or home() / "registry.db", exc) from None
    finally:
        conn.close()


def seen_indexes(path: Path | None = None) -> list[Path]:
    """The folders :func:`remember_index` recorded, most recently written first (some may be gone)."""
    db = database(path)
    if "indexes" not in db.table_names():
        return []
    return [Path(row["path"]) for row in db["indexes"].rows_where(order_by="written desc")]
