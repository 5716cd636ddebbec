"""Indexes: :class:`Index` (one class that builds, opens, adds to, syncs and deletes from an
index: :mod:`.handle` over :mod:`.store` and :mod:`.build`), its settings (:class:`BuildOptions`,
:class:`SearchOptions`) and search (:class:`Searcher`), shared by every front end."""

from .build import BuildOptions, build
from .options import SearchOptions
from .search import Hit, Searcher
from .handle import Index
from .store import list_indexes, locate

__all__ = ["BuildOptions", "Hit", "Index", "SearchOptions", "Searcher", "build", "list_indexes", "locate"]
