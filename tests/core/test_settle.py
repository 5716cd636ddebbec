"""A front end's settled heap: what it holds is left out of full collections, and let go on the next settle."""

import gc
import weakref

from encodr.core.session import settle


class Cycle:
    """An object that refers to itself: only the cyclic collector frees it."""

    def __init__(self):
        self.me = self


def test_settle_freezes_what_is_held_and_frees_it_on_the_next_settle():
    try:
        kept = Cycle()
        gone = weakref.ref(kept)
        settle()
        assert gc.get_freeze_count() > 0
        del kept
        gc.collect()  # a full collection leaves the frozen heap alone: the cycle stays
        assert gone() is not None
        settle()  # another index opened: what was held before and no longer is goes
        assert gone() is None
    finally:
        gc.unfreeze()
