"""Encoded windows of a build, kept on disk until the build succeeds, so that a rerun after a
crash (a killed process, a lost Ray cluster, a full disk) encodes none of them again.

Guarantee: a shard is used only for exactly the texts it was encoded from, by the same model.
Each shard is one file, ``NNNNNN-DIGEST.npy`` — the window's number and a digest of its texts'
hashes — written to a temporary name and renamed, so a shard that exists is whole; the folder's
``key.json`` names the model's fingerprint, the backend, the truncation and the document prompt
(and, for a Ray build, what reading and splitting depend on), and a folder made under another key
is emptied first. Anything else is encoded afresh. A Ray build's shard is a work item's
(:mod:`.dataflow`: its digest covers the file's lines, size and modification time) and keeps
the item's records beside its vectors, ``NNNNNN-DIGEST.json``, written before them.

The folder is ``.NAME.shards`` beside the index ``NAME`` (as its lock, ``.NAME.lock``); only the
building process writes it, under the index lock, and the build removes it once the new
generation is current. It holds the vectors of every finished window, float32: 4·d bytes a text
while a build runs (1.5 kB for MiniLM), on top of the generation being written.

Unlike autofaiss and clip-retrieval, whose shards are the stage between an embedding job and an
indexing job, these shards are only a resume point: the index is still built from the vectors
in order, so a resumed build gives the index an uninterrupted one gives.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

SUFFIX = ".shards"
KEY_FILE = "key.json"


def _written(tmp: Path, path: Path, write: Callable) -> None:
    """``write(file)`` to ``tmp``, then rename it to ``path``; on a failure (a full disk) the
    partial ``tmp`` is deleted before the error goes on."""
    try:
        with open(tmp, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def shards_folder(out: Path) -> Path:
    """Where the shards of index ``out`` live: ``.NAME.shards`` beside it."""
    out = Path(out)
    return out.parent / f".{out.name}{SUFFIX}"


def digest(hashes: list[str]) -> str:
    """The first 16 hex digits of SHA-256 over a window's text hashes, in order."""
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16]


class Shards:
    """The finished windows of one index's build (see the module docstring).

    Args:
        folder: the shard folder (:func:`shards_folder`); created on the first :meth:`put`.
        key: what the vectors depend on besides the texts (JSON-ready); a folder made under
            another key is emptied.

    Raises:
        OSError: the folder cannot be read or written (full disk, read-only…).
    """

    def __init__(self, folder: Path, key: dict):
        self.folder = Path(folder)
        self.key = json.loads(json.dumps(key))  # as it reads back from key.json (tuples become lists)
        self.reused = 0  # texts whose vectors came from a shard
        if self.folder.exists():
            try:
                same = json.loads((self.folder / KEY_FILE).read_text()) == self.key
            except (OSError, ValueError):
                same = False
            if not same:
                shutil.rmtree(self.folder)

    def _path(self, n: int, window_digest: str) -> Path:
        return self.folder / f"{n:06d}-{window_digest}.npy"

    def _vectors(self, n: int, window_digest: str) -> np.ndarray | None:
        path = self._path(n, window_digest)
        if not path.exists():
            return None
        try:
            return np.load(path)
        except (OSError, ValueError):
            return None

    def get(self, n: int, window_digest: str) -> np.ndarray | None:
        """The vectors of window ``n`` when a shard of exactly these texts exists: float32 (N, d);
        else None (a damaged shard counts as missing). Counted in ``reused`` when found."""
        vectors = self._vectors(n, window_digest)
        if vectors is not None:
            self.reused += len(vectors)
        return vectors

    def get_with_records(
        self, n: int, window_digest: str, parse: Callable[[list[dict]], list] = list
    ) -> tuple[np.ndarray, list] | None:
        """The vectors of window ``n`` and ``parse`` of the records :meth:`put` kept beside them:
        (float32 (N, d), N items), when both exist, can be read and parsed (``parse`` may raise
        ``ValueError`` or ``TypeError``) and are as many; else None, and nothing is counted in
        ``reused`` (the window is encoded again)."""
        vectors = self._vectors(n, window_digest)
        if vectors is None:
            return None
        try:
            records = parse(json.loads(self._path(n, window_digest).with_suffix(".json").read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None
        if len(records) != len(vectors):
            return None
        self.reused += len(vectors)
        return vectors, records

    def put(self, n: int, window_digest: str, vectors: np.ndarray, records: list[dict] | None = None) -> None:
        """Keep the float32 (N, d) vectors of window ``n`` (and its N ``records``, JSON-ready,
        written first): each a temporary file, then a rename."""
        if not self.folder.exists():
            self.folder.mkdir(parents=True)
            (self.folder / KEY_FILE).write_text(json.dumps(self.key))
        path = self._path(n, window_digest)
        if records is not None:
            _written(
                path.with_suffix(".json.tmp"), path.with_suffix(".json"), lambda f: f.write(json.dumps(records).encode("utf-8"))
            )
        _written(path.with_suffix(".tmp"), path, lambda f: np.save(f, np.asarray(vectors, dtype=np.float32)))

    @staticmethod
    def finished(folder: Path) -> tuple[int, int]:
        """How many whole shards ``folder`` holds and their bytes ((0, 0) when it cannot be read).
        A partial one (``*.tmp``, a write that failed or was killed) is deleted here: only whole
        shards are kept for a resume, and a full disk does not stay full of a half-written one."""
        count = size = 0
        try:
            for f in Path(folder).iterdir():
                if f.name.endswith(".tmp"):
                    f.unlink(missing_ok=True)
                elif f.suffix in (".npy", ".json") and f.name != KEY_FILE:
                    count += f.suffix == ".npy"
                    size += f.stat().st_size
        except OSError:
            return 0, 0
        return count, size

    def remove(self) -> None:
        """Delete the folder (the build it served is complete)."""
        shutil.rmtree(self.folder, ignore_errors=True)
