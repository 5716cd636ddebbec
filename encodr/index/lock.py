"""The write lock of an index: one build, ``--add``, sync or delete of an index at a time."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..errors import EncodrError, S


@contextlib.contextmanager
def index_lock(out: Path):
    """Hold an exclusive lock on ``.NAME.lock`` beside the index ``out`` (``flock``: released
    by the OS when the process ends, however it ends, so a killed build leaves no stale
    lock). A second build of the same index waits for the first."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        handle = open(out.parent / f".{out.name}.lock", "a")
    except OSError as exc:
        raise EncodrError(f"cannot create index {out}: {exc.strerror}; choose another {S.out}") from None
    try:
        try:
            import fcntl
        except ImportError:  # Windows: no flock; builds of one index must not overlap there
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()
