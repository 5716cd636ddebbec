"""Atomic outputs: build in a hidden temporary sibling, then rename into place.

An interrupted job (error, Ctrl-C, SIGTERM, SIGKILL) never leaves a half-written output: the
temporary directory is removed on error, and a stale one is ignored and swept next time.

Outputs that are *replaced while readers use them* (indexes: ``--add``, ``--overwrite``) are
kept in generations (:func:`generation`): each write makes a new folder, and one ``rename`` of
a symlink makes it current, so a reader that resolves the link once and reads every file
through that one generation sees the old output or the new one, never a mix and never none.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Iterator

from .errors import EncodrError, first_line

MODEL_RECORD = "encodr.json"  # a tuned model's run record: what marks a folder as a model encodr wrote
INDEX_RECORD = "index.json"  # an index's settings: in its current generation (or, before generations, in the folder)
SHARDED_RECORD = "sharded.json"  # a sharded index's manifest (encodr.index.sharded): its shards are indexes in its folder


def written_by_encodr(folder: Path) -> str | None:
    """What encodr wrote at ``folder``: ``"index"`` (a ``current`` link naming a generation that
    holds ``index.json``, an index from before generations with ``index.json`` and
    ``vectors.faiss``, or a sharded index's ``sharded.json``), ``"model"`` (a tuned model: ``encodr.json``, the run
    record, naming its
    method), or ``None`` for any other folder. Only these may be replaced by ``--overwrite``."""
    folder = Path(folder)
    gen = current_generation(folder)
    if (
        (gen is not None and (gen / INDEX_RECORD).is_file())
        or ((folder / INDEX_RECORD).is_file() and (folder / "vectors.faiss").is_file())
        or (folder / SHARDED_RECORD).is_file()
    ):
        return "index"
    try:
        import json

        record = json.loads((folder / MODEL_RECORD).read_text())
    except (OSError, ValueError):
        return None
    return "model" if isinstance(record, dict) and "method" in record and "encodr_version" in record else None


def holds(folder: Path, path: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it (both resolved)."""
    folder, path = Path(os.path.realpath(folder)), Path(os.path.realpath(path))
    return path == folder or folder in path.parents


def check_inputs_outside(out: Path, inputs: tuple | list, kind: str | None = None) -> None:
    """Refuse an output folder ``out`` that is, or holds, one of ``inputs`` (the files and
    folders being read): encodr never writes among the files it reads, whatever the flags.

    Raises:
        EncodrError: naming the input and a sibling folder to use instead.
    """
    out = Path(out)
    held = [str(p) for p in inputs if holds(out, Path(p))] if out.exists() else []
    if held:
        sibling = f"{Path(os.path.abspath(out)).name}-{kind or 'out'}"
        raise EncodrError(
            f"--out {out} holds the input {held[0]}: encodr never writes among the files it reads; choose another --out, e.g. "
            f"{sibling} beside it" + (" (then --add or --sync keep that index up to date)" if kind == "index" else "")
        )


def check_target(out: Path, overwrite: bool, inputs: tuple | list = (), kind: str | None = None) -> None:
    """Refuse an output that would destroy what encodr did not write.

    ``out`` may be a new path, or (with ``overwrite``) a folder encodr wrote
    (:func:`written_by_encodr`), of the same ``kind`` when one is named (``"index"`` or
    ``"model"``). Never a folder that holds one of ``inputs`` (the files being read), nor any
    other folder: ``--overwrite`` replaces only encodr's own outputs, so a user's documents are
    never removed.

    Raises:
        EncodrError: one line naming ``out``, why it is refused and the alternatives: ``out``
            exists without ``overwrite``, holds an input, is not an encodr output, is a file, or
            cannot be created (an ancestor is a file, or the nearest existing one is read-only).
    """
    out = Path(out)
    check_inputs_outside(out, inputs, kind)
    if out.exists() and not out.is_dir():
        raise EncodrError(f"output {out} is a file, not a directory; choose another --out")
    if out.exists():
        owner = written_by_encodr(out)
        empty = not any(out.iterdir())
        if owner is None and not empty:
            raise EncodrError(
                f"--out {out} already exists and is not an encodr output (it holds files encodr did not write); "
                "encodr replaces only an index or a tuned model it wrote: choose another --out"
            )
        if not overwrite and not empty:
            if owner == "index":
                raise EncodrError(
                    f"index {out} already exists; pass --add to add documents, --sync to bring it in step with them, "
                    "--overwrite to rebuild it, or choose another --out"
                )
            raise EncodrError(
                f"output directory {out} already exists (a tuned model); pass --overwrite to replace it, or choose another --out"
            )
        if kind is not None and owner is not None and owner != kind:
            raise EncodrError(f"--out {out} is an encodr {owner}, not an {kind}; choose another --out")
    parent = next(p for p in Path(os.path.abspath(out)).parents if p.exists())  # "/" always exists
    if not parent.is_dir():
        raise EncodrError(f"cannot create output {out}: {parent} is a file, not a directory; choose another --out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise EncodrError(f"cannot create output {out}: {parent} is not writable; choose another --out")


@contextlib.contextmanager
def atomic_dir(out: Path, overwrite: bool = False, cache: bool = False) -> Iterator[Path]:
    """Yield a temporary directory that becomes ``out`` when the block succeeds.

    The old ``out`` (with ``overwrite``) is replaced by two renames: a reader sees the old
    directory, the new one, or for a moment none (outputs that readers hold open while they
    are replaced use :func:`generation` instead). Only a folder encodr wrote is replaced
    (:func:`check_target`), or with ``cache`` a folder of encodr's own cache (``$ENCODR_HOME``),
    which has no marker of its own.

    Raises:
        EncodrError: see :func:`check_target`.
    """
    out = Path(out)
    if not (cache and out.is_dir()):
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
    try:  # made inside the try: a signal right after mkdir (SIGTERM as soon as the folder shows) still removes it
        tmp.mkdir()
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


# --- generations -----------------------------------------------------------------------------

CURRENT = "current"  # the symlink naming the current generation folder (``g000007``)
_GENERATION = re.compile(r"^g(\d{6,})$")


def current_generation(root: Path) -> Path | None:
    """The current generation folder of ``root`` (``root/current`` resolved once, by
    ``readlink``), or ``None`` when ``root`` has no generations (a legacy flat output, or
    none at all). Read every file through the returned path: resolving again may give a newer
    generation."""
    try:
        name = os.readlink(Path(root) / CURRENT)
    except OSError:  # no link (or not a directory at all)
        return None
    return Path(root) / name


def hold_generation(folder: Path) -> int | None:
    """Take a shared ``flock`` on a generation ``folder`` for as long as a reader uses it (a
    writer removes only the generations nobody holds; the OS drops the lock when the process
    ends, however it ends). Returns the descriptor to pass to :func:`release_generation`, or
    ``None`` when the folder was removed before the lock was taken (resolve again)."""
    try:
        fd = _open_dir(folder)
    except FileNotFoundError:
        return None
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while a writer is removing this very folder
    except ImportError:  # Windows: no flock; old generations are then kept until the next write
        pass
    if not os.path.isdir(folder):  # removed while the lock was awaited
        os.close(fd)
        return None
    return fd


def release_generation(fd: int | None) -> None:
    """Drop a reader's hold (:func:`hold_generation`)."""
    if fd is not None:
        os.close(fd)


@contextlib.contextmanager
def generation(root: Path, legacy: tuple[str, ...] = ()) -> Iterator[Path]:
    """Yield a new, empty generation folder of ``root``; when the block succeeds it becomes
    current in one atomic step (a symlink ``root/current`` replaced by ``rename``), and the old
    generations that no reader holds (:func:`hold_generation`) are removed. A generation still
    held stays until a later write finds it free. The caller serialises writers of one
    ``root`` (an index lock).

    Guarantee: a reader that resolves :func:`current_generation` once sees the whole old
    generation or the whole new one. SIGKILL at any moment leaves ``root`` usable: the link
    names a complete generation until the rename, and the next write sweeps the dead write's
    folder.

    ``root`` that does not exist yet appears whole (:func:`atomic_dir`). ``root`` that holds
    a flat output of files named in ``legacy`` is converted in place: the first generation
    becomes current, then the flat files are removed. Any other existing directory is replaced
    whole (:func:`atomic_dir` with ``overwrite``; the caller has checked that this is allowed).

    Raises:
        OSError: the file system refuses a write (full, read-only…); nothing of the new
            generation is left.
    """
    root = Path(root)
    if not root.exists() or (current_generation(root) is None and not any((root / name).exists() for name in legacy)):
        with atomic_dir(root, overwrite=True) as tmp:
            folder = tmp / "g000001"
            folder.mkdir()
            yield folder
            _point(tmp, folder.name)
        return
    numbers = [int(m.group(1)) for p in root.iterdir() if (m := _GENERATION.match(p.name))]
    folder = (
        root / f"g{max(numbers, default=0) + 1:06d}"
    )  # one past the highest: no folder of that name exists to be removed below
    try:  # made inside the try, as in atomic_dir
        folder.mkdir()
        yield folder
        _point(root, folder.name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    for name in legacy:
        with contextlib.suppress(FileNotFoundError):
            (root / name).unlink()
    sweep_generations(root)


def _open_dir(path: Path) -> int:
    return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))


def _point(root: Path, name: str) -> None:
    """Make ``root/current`` name the generation ``name``: a new symlink renamed over the old."""
    link = root / f".{CURRENT}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.symlink(name, link)
    try:
        os.replace(link, root / CURRENT)
    except BaseException:
        link.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # make the new link durable where the OS allows it
        fd = _open_dir(root)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def sweep_generations(root: Path) -> list[str]:
    """Remove the generations of ``root`` other than the current one that no reader holds
    (a non-blocking exclusive ``flock`` succeeds), and stale ``current`` temporaries. Returns
    the names removed. Call it with the writers' lock held."""
    try:
        import fcntl
    except ImportError:
        return []
    current = current_generation(root)
    removed = []
    for path in Path(root).iterdir():
        if path.name.startswith(f".{CURRENT}.tmp-"):
            path.unlink(missing_ok=True)
            continue
        if not _GENERATION.match(path.name) or (current is not None and path.name == current.name):
            continue
        fd = _open_dir(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a reader holds it
            os.close(fd)
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
        finally:
            os.close(fd)
    return removed


# --- OS faults -------------------------------------------------------------------------------

_CAUSES = {
    errno.ENOSPC: "the disk is full; free some space",
    errno.EDQUOT: "the disk quota is exhausted; free some space",
    errno.EROFS: "the file system is read-only; write somewhere else",
    errno.EACCES: "permission denied; fix the permissions or write somewhere else",
    errno.EPERM: "the operation is not permitted (an immutable file?); fix the permissions or write somewhere else",
    errno.EIO: "an I/O error on the device",
}


_PHRASES = {errno.ENOSPC: ("disk is full",), errno.EROFS: ("readonly database",)}  # SQLite's words for them
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")  # FAISS's words for a write the file system cut short: a full disk


def errno_in(text: str) -> int | None:
    """The ``errno`` that a library's error message names (its ``strerror``, "No space left on
    device", or SQLite's own words, "database or disk is full"), or ``None``. FAISS's short
    write ("230400 requested and 26624 written") is read as a full disk, its usual cause."""
    lower = text.lower()
    for number in _CAUSES:
        if os.strerror(number).lower() in lower or any(w in lower for w in _PHRASES.get(number, ())):
            return number
    if _SHORT_WRITE.search(lower):
        return errno.ENOSPC
    return None


def os_fault(exc: BaseException, path: Path | str | None = None, kept: str = "") -> EncodrError:
    """One-line :class:`EncodrError` for an OS-level write failure: the file, the cause and the
    fix, then ``kept`` (what was kept as it was, e.g. "the previous index is unchanged").

    Understands ``OSError`` (its ``errno``), SQLite's "database or disk is full" /
    "readonly database" / "database is locked", and the messages FAISS and safetensors raise
    with an ``errno`` text in them (``No space left on device``…).
    """
    text = str(exc)
    code = getattr(exc, "errno", None) or errno_in(text)
    where = path or getattr(exc, "filename", None)
    if "database is locked" in text:
        cause = "it is locked by another process; wait for that process to finish (or stop it) and run again"
    else:
        cause = _CAUSES.get(code) or (os.strerror(code) if code else first_line(exc))
    message = f"cannot write {where}: {cause}" if where else f"write failed: {cause}"
    return EncodrError(message + (f"; {kept}" if kept else ""))
