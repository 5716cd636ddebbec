"""One class for an index's whole life: :class:`Index` builds, opens, adds to, syncs and deletes
from an index, as model2vec's ``StaticModel`` saves and loads as a matched pair.

It is :class:`.reader.IndexReader` (what is opened and searched) with the writes of :mod:`.build` as
methods, so a caller needs one name. A write makes a new generation of the index; an opened
``Index`` keeps reading the generation it opened until it is opened again (:meth:`reopened`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from ..progress import ProgressFn, silent
from .build import build as build_index
from .delete import delete as delete_documents
from .options import BuildOptions
from .reader import IndexReader

WarnFn = Callable[[str], None]


class Index(IndexReader):
    """An index on disk: FAISS vectors, SQLite texts and documents, ``index.json``.

    ``Index.build(files, out, options)`` writes a new one and returns it opened;
    ``Index.open(path)`` opens one (:meth:`.reader.IndexReader.open`); ``add``, ``sync`` and ``delete``
    write the next generation of an opened index and return it opened.
    """

    @classmethod
    def build(
        cls,
        files: list[str],
        out: str | Path,
        options: BuildOptions = BuildOptions(),
        progress: ProgressFn = silent,
        warn: WarnFn = lambda line: None,
    ) -> "Index":
        """Build an index of ``files`` at ``out`` (:func:`.build.build`) and open it.

        Raises:
            EncodrError: see :func:`.build.build`.
        """
        return cls.open(build_index(files, out, options, progress, warn)["path"])

    def add(
        self,
        files: list[str],
        options: BuildOptions = BuildOptions(),
        progress: ProgressFn = silent,
        warn: WarnFn = lambda line: None,
    ) -> "Index":
        """Add the documents of ``files`` (new ones added, changed ones replaced, none removed); the new generation, opened."""
        build_index(files, self.path, replace(options, write="add"), progress, warn)
        return self.reopened()

    def sync(
        self,
        files: list[str],
        options: BuildOptions = BuildOptions(),
        progress: ProgressFn = silent,
        warn: WarnFn = lambda line: None,
    ) -> "Index":
        """Make the index hold exactly the documents now under ``files`` (:mod:`.documents`); the new generation, opened."""
        build_index(files, self.path, replace(options, write="sync"), progress, warn)
        return self.reopened()

    def delete(self, ids: list[str] = (), sources: list[str] = (), filters: list = ()) -> "Index":
        """Delete documents by id, source glob or filter (:func:`.delete.delete`); the new generation, opened."""
        delete_documents(self.path, list(ids), list(sources), list(filters))
        return self.reopened()

    def reopened(self) -> "Index":
        """This index's current generation, opened (this one closed)."""
        self.close()
        return type(self).open(self.path)
