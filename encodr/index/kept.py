"""Values kept in memory by key, each counted by its size, the least recently used out past a budget."""

from __future__ import annotations

from collections import OrderedDict


class Kept:
    """Values by key, each counted by its size, the least recently used out while the sizes pass
    ``budget``: a searcher's keyword postings (:mod:`.postings`) and its snippets' sentence
    vectors (:class:`.snippets.SentenceVectors`). ``functools.lru_cache`` counts entries, not
    their sizes, and computes what it lacks itself; here the owner computes, outside its lock.
    Not thread-safe: the owner holds its lock around each call."""

    def __init__(self, budget: int):
        self.budget, self.size = budget, 0  # the sizes kept at most, and now
        self._items: OrderedDict = OrderedDict()  # key → (value, size), least recently used first

    def get(self, key):
        """The value kept for ``key`` (now the most recently used), or None."""
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key, value, size: int) -> None:
        """Keep ``value`` for ``key`` (a key kept already keeps its value), then let the least
        recently used go until the sizes fit the budget."""
        if key in self._items:
            return
        self._items[key] = (value, size)
        self.size += size
        while self.size > self.budget:
            _, (_, gone) = self._items.popitem(last=False)
            self.size -= gone

    def clear(self) -> None:
        """Keep nothing."""
        self._items.clear()
        self.size = 0
