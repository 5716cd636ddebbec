"""What an encoder holds in place of a SentenceTransformer it encodes without (an ONNX export,
a static model's token table): any attribute it lacks loads the full model, once."""

from __future__ import annotations


class StandIn:
    """A SentenceTransformer's stand-in: attributes a subclass sets are its own; any other
    (``save``, ``encode``, indexing its modules…) loads the full SentenceTransformer once (the
    ``full`` callable given) and is that model's."""

    device = "cpu"

    def __init__(self, full):
        self._load_full, self._full = full, None

    @property
    def full(self):
        """The SentenceTransformer itself, loaded on first use (torch)."""
        if self._full is None:
            self._full = self._load_full()
        return self._full

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full, name)

    def __getitem__(self, i):
        return self.full[i]

    def __iter__(self):
        return iter(self.full)

    def __len__(self) -> int:
        return len(self.full)
