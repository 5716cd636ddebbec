"""What a query asks of a repository: the symbols it names, its words, and whether it asks for
tests, docs or examples (semble's query-type detection; Zoekt's symbol queries).

A query is identifier-shaped when it is one token shaped as code names things: CamelCase with an
inner capital (``ExactArgs``), snake_case (``do_truncate``), a dotted, ``::``, ``#`` or ``->``
path (``Context.invoke``, ``TypesBuilder::add_defaults``), a leading underscore, or one
capitalised word (``Panel``). Such tokens inside a longer question (``how does TCPConnector
pool``) are the query's embedded symbols.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_SEPARATORS = re.compile(r"::|->|#")
_TOKEN = re.compile(r"[A-Za-z_][\w]*(?:(?:\.|::|->|#)[A-Za-z_]\w*)*(?:\(\))?")
_HUMP = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from get how i in into is it its of on or set the this to use used "
    "uses using what when where which while who why with without".split()
)
ASKS = {
    "tests": frozenset({"test", "tests", "testing", "spec", "specs", "unittest", "fixture", "fixtures"}),
    "docs": frozenset({"doc", "docs", "documentation", "readme", "guide", "tutorial", "changelog"}),
    "examples": frozenset({"example", "examples", "demo", "demos", "sample", "samples"}),
}


@dataclass(frozen=True)
class QueryIntent:
    """A query read for code ranking.

    Attributes:
        identifier: the whole query is one identifier-shaped token.
        symbols: the names it asks for, lower-cased, separators as ``.`` (``context.invoke``).
        words: its words for path matching, lower-cased, identifiers split into parts, no stopwords.
        asks: which of ``tests``, ``docs``, ``examples`` it names.
    """

    identifier: bool
    symbols: tuple[str, ...]
    words: tuple[str, ...]
    asks: frozenset[str]


def as_name(intent: QueryIntent) -> QueryIntent:
    """``intent`` read as naming one symbol, whatever its shape (``definition``: a lower-case
    ``render`` names the function ``render``): an identifier query of its symbols, else of its
    one word."""
    if intent.identifier or len(intent.words) != 1:
        return QueryIntent(True, intent.symbols or intent.words, intent.words, intent.asks)
    return QueryIntent(True, intent.words, intent.words, intent.asks)


def is_identifier(token: str, alone: bool) -> bool:
    """Whether ``token`` is shaped as a name in code (``alone``: it is the whole query, where one
    capitalised word counts too)."""
    bare = token.removesuffix("()")
    if any(sep in bare for sep in (".", "::", "->", "#")) or bare.startswith("_"):
        return True
    if "_" in bare.strip("_") or _HUMP.search(bare):
        return True
    return alone and bare[:1].isupper() and bare[1:].islower() and len(bare) > 1


def identifier_parts(token: str) -> list[str]:
    """An identifier's words, lower-cased: ``GlobSetBuilder`` → ``glob set builder``."""
    return [p.lower() for chunk in re.split(r"[\W_]+", token) for p in _PARTS.findall(chunk)]


@functools.lru_cache(maxsize=1024)
def read_query(query: str) -> QueryIntent:
    """The :class:`QueryIntent` of ``query`` (backticks around a name are ignored)."""
    text = query.strip().strip("`").strip()
    tokens = _TOKEN.findall(text)
    alone = len(tokens) == 1 and tokens[0] == text
    symbols = tuple(dict.fromkeys(_SEPARATORS.sub(".", t.removesuffix("()")).lower() for t in tokens if is_identifier(t, alone)))
    words: list[str] = []
    for w in _WORD.findall(text):
        for part in identifier_parts(w) if is_identifier(w, False) else [w.lower()]:
            if len(part) >= 3 and part not in STOPWORDS:
                words.append(part)
    lowered = {w.lower() for w in _WORD.findall(text)}
    asks = frozenset(kind for kind, names in ASKS.items() if lowered & names)
    return QueryIntent(alone and bool(symbols), symbols, tuple(dict.fromkeys(words)), asks)
