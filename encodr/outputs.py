"""Atomic output directories: build in a hidden temporary sibling, then rename into place.

An interrupted job (error, Ctrl-C, SIGKILL) never leaves a half-written output: the
temporary directory is removed on error, and a stale one is ignored and swept next time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Iterator

from .errors import EncodrError


def check_target(out: Path, overwrite: bool) -> None:
    """Refuse an existing output unless ``overwrite``.

    Raises:
        EncodrError: ``out`` exists and ``overwrite`` is false, ``out`` is a file, or it
            cannot be created (an ancestor is a file, or the nearest existing one is read-only).
    """
    if out.exists() and not overwrite:
        raise EncodrError(f"output directory {out} already exists; pass --overwrite to replace it, or choose another --out")
    if out.exists() and not out.is_dir():
        raise EncodrError(f"output {out} is a file, not a directory; choose another --out")
    parent = next(p for p in Path(os.path.abspath(out)).parents if p.exists())  # "/" always exists
    if not parent.is_dir():
        raise EncodrError(f"cannot create output {out}: {parent} is a file, not a directory; choose another --out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise EncodrError(f"cannot create output {out}: {parent} is not writable; choose another --out")


@contextlib.contextmanager
def atomic_dir(out: Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary directory that becomes ``out`` when the block succeeds.

    The old ``out`` (with ``overwrite``) is replaced by two renames, so a reader sees
    either the old or the new directory, never a mix.

    Raises:
        EncodrError: see :func:`check_target`.
    """
    out = Path(out)
    check_target(out, overwrite)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EncodrError(f"cannot create output {out}: {exc.strerror}; choose another --out") from None
    for stale in out.parent.glob(f".{out.name}.tmp-*"):
        pid = stale.name.rsplit("-", 2)[-2]
        if not (pid.isdigit() and _alive(int(pid))):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        yield tmp
        if out.exists():
            trash = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(out, trash)
            os.rename(tmp, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_file(path: Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary file name beside ``path`` that is renamed onto ``path`` when the
    block succeeds and removed when it fails, so ``path`` is either the old file or the
    whole new one. ``suffix`` ends the temporary name (a writer that picks its format from
    the extension needs it)."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
