"""Where encodr keeps its files: bundled data, recipes, and the user's workspace."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import EncodrError

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"


def short_path(value: str) -> str:
    """``value`` relative to the working directory when it is a path below it, else unchanged."""
    try:
        return str(Path(value).relative_to(Path.cwd())) if Path(value).is_absolute() else value
    except ValueError:
        return value


def recipes_dir() -> Path:
    """Directory of the bundled recipe YAML files.

    In a wheel they are installed as ``encodr/recipes``; in a source checkout (editable
    install) they live in the top-level ``recipes/`` folder.
    """
    installed = PACKAGE_DIR / "recipes"
    if installed.is_dir():
        return installed
    return PACKAGE_DIR.parent / "recipes"


def home() -> Path:
    """The workspace: ``$ENCODR_HOME``, default ``~/.encodr`` (run registry, model cache).

    Raises:
        EncodrError: the directory cannot be created (e.g. ``ENCODR_HOME`` names a file).
    """
    path = Path(os.environ.get("ENCODR_HOME", Path.home() / ".encodr")).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EncodrError(
            f"cannot use {path} as encodr's workspace ({exc.strerror}); set ENCODR_HOME to a writable directory"
        ) from None
    return path


def bundled(relpath: str) -> Path:
    """Path of a data file shipped in the package, e.g. ``bundled("stsb/sts-test.csv")``."""
    return DATA_DIR / relpath
