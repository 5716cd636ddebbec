"""Indexes: :class:`Index` (one class that builds, opens, adds to, syncs and deletes from an
index: :mod:`.index` over :mod:`.reader` and :mod:`.build`), its settings (:class:`BuildOptions`,
:class:`SearchOptions`: :mod:`.options`) and search (:class:`Searcher`), shared by every front end.

One module per job: :mod:`.options` (the settings and their rules), :mod:`.reader` (an opened
generation: vectors, texts, search), :mod:`.build` (a build, ``--add`` or sync), :mod:`.ingest`
(reading and encoding a corpus into a generation), :mod:`.delete` (deletes, tombstones,
compaction), :mod:`.lock` (one write at a time), :mod:`.faiss_types` (the FAISS indexes),
:mod:`.search` (queries, fusion, re-ranking)."""

from .build import build
from .index import Index
from .options import BuildOptions, SearchOptions
from .reader import list_indexes, locate
from .search import Hit, Searcher

__all__ = ["BuildOptions", "Hit", "Index", "SearchOptions", "Searcher", "build", "list_indexes", "locate"]
