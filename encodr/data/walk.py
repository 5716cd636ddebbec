"""The files of a folder as a person keeps them: ``.gitignore``, ``.ignore`` and ``.encodrignore``
honoured at every level (git's own pattern rules, through pathspec's ``GitIgnoreSpec``), folders
no one means to search left out (dependencies, build outputs, caches, virtual environments),
hidden files and folders left out, and binary or oversized files set aside with their reason.

The rules are ripgrep's (its ``ignore`` crate): an ignore file applies to the folder it sits in
and every folder below; a deeper file's rule, and a later line, win over an earlier one; a
``!pattern`` re-includes. ripgrep reads no default folder list; encodr leaves out the folders of
:data:`DEFAULT_IGNORED` as semble and ck do, since a repository's ``node_modules`` or ``target``
would bury its own code. ``no_ignore`` reads everything but hidden files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

IGNORE_FILES = (".gitignore", ".ignore", ".encodrignore")  # read in this order: a later file's rule wins
# folders left out wherever they are (not the folder given itself): dependencies, build outputs, caches
DEFAULT_IGNORED = frozenset(
    {
        "node_modules",
        "bower_components",
        "vendor",
        "dist",
        "build",
        "target",
        "__pycache__",
        "site-packages",
        "_build",
    }
)
VENV_MARKER = "pyvenv.cfg"  # a folder holding it is a Python virtual environment, whatever its name (venv, env, .venv…)
MINIFIED_SUFFIXES = (".min.js", ".min.mjs", ".min.css")  # generated, one line of code: nothing a person reads
BINARY_PROBE = 8192  # bytes read to tell a binary file (a NUL byte among them), as ripgrep and git do


@dataclass
class Walked:
    """What a walk of one folder found.

    Attributes:
        files: paths to read, sorted.
        ignored: how many files the ignore rules and default folders left out (not listed).
        large: (path, size in bytes) of files over the size limit.
        binary: paths of files that hold a NUL byte in their first :data:`BINARY_PROBE` bytes.
        empty: paths of files of 0 bytes.
    """

    files: list[str] = field(default_factory=list)
    ignored: int = 0
    large: list[tuple[str, int]] = field(default_factory=list)
    binary: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)


def _spec(folder: Path):
    """The ignore rules of ``folder``'s own ignore files (:data:`IGNORE_FILES`), or None without any."""
    lines: list[str] = []
    for name in IGNORE_FILES:
        try:
            lines += (folder / name).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(rules: list[tuple[Path, object]], path: Path, is_dir: bool) -> bool:
    """Whether the ignore files in force (``rules``: (their folder, their spec), outermost first)
    leave ``path`` out: the deepest rule that matches decides."""
    verdict = False
    for base, spec in rules:
        rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        result = spec.check_file(rel)
        if result.include is not None:
            verdict = result.include
    return verdict


def is_default_ignored(folder: Path) -> bool:
    """Whether ``folder`` (below the one given) is one encodr leaves out by default
    (:data:`DEFAULT_IGNORED`, or a virtual environment: it holds :data:`VENV_MARKER`)."""
    return folder.name in DEFAULT_IGNORED or (folder / VENV_MARKER).exists()


def walk(root: str | Path, no_ignore: bool = False, max_bytes: int | None = None, sized=lambda p: True) -> Walked:
    """The files under ``root`` (recursively, sorted), with the ignore rules applied (none with
    ``no_ignore``, but hidden files still left out).

    Args:
        root: the folder given.
        no_ignore: read ignored files and default-ignored folders too.
        max_bytes: files of more bytes, among those ``sized`` accepts, go to ``large``; None: no limit.
        sized: ``Path → bool``: whether a file is text the limit and the binary probe apply to
            (source code, Markdown, plain text; not a PDF or an Office file, binary by design).

    Returns:
        :class:`Walked`.
    """
    root = Path(root)
    out = Walked()
    stack: list[tuple[Path, list]] = [(root, [])]
    while stack:
        folder, rules = stack.pop()
        spec = None if no_ignore else _spec(folder)
        rules = rules + [(folder, spec)] if spec is not None else rules
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)  # a linked folder is not followed (ripgrep's default): no cycles
            if not no_ignore and (_ignored(rules, path, is_dir) or (is_dir and is_default_ignored(path))):
                out.ignored += 1
                continue
            if is_dir:
                stack.append((path, rules))
            elif entry.is_file():
                _admit(path, entry, out, max_bytes, sized)
    out.files.sort(key=lambda f: Path(f).parts)
    return out


def _admit(path: Path, entry: os.DirEntry, out: Walked, max_bytes: int | None, sized) -> None:
    """Put a wanted file in its place of ``out``: empty, large, binary, minified (ignored) or read."""
    size = entry.stat().st_size
    if size == 0:
        out.empty.append(str(path))
        return
    if not sized(path):
        out.files.append(str(path))
        return
    if path.name.lower().endswith(MINIFIED_SUFFIXES):
        out.ignored += 1
        return
    if max_bytes is not None and size > max_bytes:
        out.large.append((str(path), size))
        return
    try:
        with open(path, "rb") as f:
            head = f.read(BINARY_PROBE)
    except OSError:
        out.files.append(str(path))  # the reader says why it cannot be read
        return
    if b"\0" in head:
        out.binary.append(str(path))
        return
    out.files.append(str(path))
