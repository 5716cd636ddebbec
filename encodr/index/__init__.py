"""Indexes: the on-disk store (:mod:`.store`), building and appending (:mod:`.build`) and
search (:mod:`.search`), shared by the CLI and the TUI."""

from .build import BuildOptions, build
from .options import SearchOptions
from .search import Hit, Searcher
from .store import Index, list_indexes, locate

__all__ = ["BuildOptions", "Hit", "Index", "SearchOptions", "Searcher", "build", "list_indexes", "locate"]
