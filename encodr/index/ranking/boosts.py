"""The code-ranking stage's gains: a passage that defines what the query names, a path that
names the query's words, a file with several strong candidates."""

from __future__ import annotations

import numpy as np

from .paths import path_words, word_matches
from .query import QueryIntent

MAX_STEM_WORDS = 2  # query words a file's stem gains for, at most


def definition_hit(intent: QueryIntent, section: str | None, weights) -> float:
    """The gain of a passage whose syntax-tree section is ``section`` (``Console.print``;
    None: no definition): ``weights.definition`` (``embedded`` for a name inside a longer query)
    when it defines a symbol the query names (the same qualified name, or ending in it), half of
    that when only the last part of a dotted symbol matches, ``weights.member`` when it is a member
    of a queried class."""
    if not section or not intent.symbols:
        return 0.0
    full = weights.definition if intent.identifier else weights.embedded
    name = section.replace("::", ".").lower()
    last = name.rsplit(".", 1)[-1]
    best = 0.0
    for symbol in intent.symbols:
        if name == symbol or name.endswith("." + symbol):
            return full
        if "." in symbol and last == symbol.rsplit(".", 1)[-1]:
            best = max(best, full / 2)
        elif name.startswith(symbol + "."):
            best = max(best, weights.member)
    return best


def path_hit(intent: QueryIntent, path: str, weights) -> float:
    """The gain of a passage at ``path`` for the query's words its file's stem names
    (``weights.stem`` each, at most :data:`MAX_STEM_WORDS`) and a folder names (``weights.folder``)."""
    if not intent.words or not (weights.stem or weights.folder):
        return 0.0
    stem, folders = path_words(path)
    in_stem = sum(word_matches(w, stem) for w in intent.words)
    in_folder = any(word_matches(w, folders) for w in intent.words)
    return weights.stem * min(in_stem, MAX_STEM_WORDS) + weights.folder * in_folder


def coherence(files: list[str], base: np.ndarray, code: np.ndarray, strong: float) -> np.ndarray:
    """float (n,) in [0, 1]: for each passage of source code, how many other strong candidates
    (normalised score ≥ ``strong``) its file holds, two or more counting as 1."""
    counts: dict[str, int] = {}
    for f, b, c in zip(files, base.tolist(), code.tolist()):
        if c and b >= strong:
            counts[f] = counts.get(f, 0) + 1
    out = np.zeros(len(files))
    for n, (f, b, c) in enumerate(zip(files, base.tolist(), code.tolist())):
        if c:
            others = counts.get(f, 0) - (b >= strong)
            out[n] = min(others, 2) / 2
    return out
