"""A static embedding model opened without torch: its token table in numpy.

A static model (sentence-transformers' ``StaticEmbedding``, as encodr's ``static`` recipe and
model2vec's ``distill`` save it) is a table of token vectors averaged over a text's tokens. Indexing
and searching with one needs the table, the Rust tokenizer and a mean: :class:`TableEncoder` gives
the vectors, fingerprint and tokens :class:`~.encoder.Encoder` gives for the same folder, without
importing torch, transformers or sentence-transformers (seconds of a one-shot command). Anything
beyond encoding (training, saving) loads the full model, as :class:`~.onnx.ExportedModel` does.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .encoder import STATIC_WINDOW, Encoder
from .standin import StandIn

STATIC_MODULE = "StaticEmbedding"  # the end of the module type modules.json names for a static model
WEIGHT = "embedding.weight"  # the table's name in the module's model.safetensors (the state dict's "0.embedding.weight")


def static_module(path: Path) -> Path | None:
    """The folder of the ``StaticEmbedding`` module of the sentence-transformers model saved at
    ``path`` when it is that model's only module, else None (a transformer, a raw checkpoint, a
    static model followed by other modules, a folder that is not a model)."""
    try:
        modules = json.loads((Path(path) / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(modules, list) or len(modules) != 1 or not str(modules[0].get("type", "")).endswith(STATIC_MODULE):
        return None
    folder = Path(path) / str(modules[0].get("path") or "")
    return folder if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file() else None


class TableTokenizer:
    """What indexing asks of a tokenizer (``tokenize``, ``backend_tokenizer`` for the passage
    splitter), on the Rust ``tokenizers.Tokenizer`` the model saved."""

    def __init__(self, path: Path):
        from tokenizers import Tokenizer

        self.backend_tokenizer = Tokenizer.from_file(str(path))

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``, without special tokens."""
        return self.backend_tokenizer.encode(text, add_special_tokens=False).tokens


class TableModel(StandIn):
    """What a :class:`TableEncoder` holds in place of a SentenceTransformer: the table (float32
    (V, d)), the tokenizer, no prompts. Any other attribute loads the full SentenceTransformer
    on the CPU once (``full``) and is its."""

    default_prompt_name = None

    def __init__(self, folder: Path, full):
        from safetensors.numpy import load_file

        super().__init__(full)
        self.table = np.ascontiguousarray(load_file(str(folder / "model.safetensors"))[WEIGHT], dtype=np.float32)
        self.tokenizer = TableTokenizer(folder / "tokenizer.json")
        self.prompts: dict = {}

    def get_embedding_dimension(self) -> int:
        return int(self.table.shape[1])


class TableForward:
    """A static model's forward pass in numpy: each text's vector is the mean of its tokens'
    rows, then unit length (a text of no tokens: a zero row), as :class:`~.encoder.StaticForward`
    computes it in torch."""

    backend = "torch"  # the vectors are the torch pass's: an index built with them opens with it
    device = "cpu"

    def __init__(self, table: np.ndarray):
        self.table = table

    def __call__(self, features: dict[str, list[list[int]]]) -> np.ndarray:
        """float32 (B, d) unit vectors of B token lists (``input_ids``)."""
        ids = features["input_ids"]
        out = np.zeros((len(ids), self.table.shape[1]), dtype=np.float32)
        for row, tokens in enumerate(ids):
            if tokens:
                out[row] = self.table[tokens].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def use_threads(self, n: int) -> None:
        """Nothing to set: numpy's mean runs on the calling thread."""


class TableEncoder(Encoder):
    """An :class:`~.encoder.Encoder` of a static model opened from its table alone
    (:func:`open_table`): the same vectors and fingerprint as ``load_encoder`` gives for the
    folder, without torch until something beyond encoding asks for the full model."""

    def __init__(self, st: TableModel, name: str):
        self.st = st
        self.name = name
        self._fingerprint = None
        self.static = True
        self.forward = TableForward(st.table)
        self.truncate_dim = None
        self._window = STATIC_WINDOW
        self.saved_window = None
        self._static_tokenizer = None
        self._pool = None
        self._tokenizer = st.tokenizer

    @property
    def pooling(self) -> str:
        return "static"

    @property
    def tokenizer(self):
        """The Rust tokenizer behind indexing's interface (:class:`TableTokenizer`)."""
        return self._tokenizer

    @property
    def module(self):
        """The full model's trainable module (loads it: :class:`~.encoder.Encoder.module`)."""
        return self._full().module

    @property
    def fingerprint(self) -> str:
        """:attr:`Encoder.fingerprint` of the same folder: SHA-256 of the pooling, the state
        dict's one name and its float32 bytes."""
        if self._fingerprint is None:
            h = hashlib.sha256(self.pooling.encode())
            h.update(("0." + WEIGHT).encode())
            h.update(self.st.table.tobytes())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    def _full(self) -> Encoder:
        encoder = Encoder(self.st.full, self.name)
        encoder.truncate(self.truncate_dim)
        return encoder

    def _tokenize(self, texts: list[str]) -> dict[str, list[list[int]]]:
        encodings = self._tokenizer.backend_tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return {"input_ids": [e.ids[: self._window] for e in encodings]}

    def save(self, path: Path) -> None:
        """Save the full model (:meth:`Encoder.save`; loads it)."""
        self._full().save(path)


def open_table(path: Path, name: str, full) -> TableEncoder | None:
    """The static model saved at ``path`` as a :class:`TableEncoder`, None where it is not one
    (:func:`static_module`).

    Args:
        path: a sentence-transformers model folder.
        name: the spec it was asked for by (:attr:`Encoder.name`).
        full: a callable that loads the full SentenceTransformer (torch, float32, on the CPU),
            called only when something beyond encoding needs it.
    """
    folder = static_module(path)
    return None if folder is None else TableEncoder(TableModel(folder, full), name)
