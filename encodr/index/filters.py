"""Metadata filters: ``--filter FIELD=VALUE`` (repeatable, ANDed) and ``/v1/search``'s ``"filter"``.

A filter keeps the texts of the documents whose field compares as asked. Fields:

- ``source``: a glob (``*``, ``?``, ``[…]``; SQLite ``GLOB``, case-sensitive, ``*`` crosses
  ``/``) on the document's source as given, on its absolute path, or on the end of that path
  after a ``/`` (``sub/a.md`` and ``sub/*`` match ``/home/me/notes/sub/a.md``, as a hit shows
  it from the folder indexed; a ``.gitignore`` pattern with a slash matches likewise);
- ``lang``: the text's language (ISO 639-3);
- ``id``, ``title``: the document's id and title;
- ``modified``, ``size``: the file's modification time (ISO 8601, UTC) and size in bytes;
- any other name: a metadata field (a JSONL object's other fields, ``--meta-columns``,
  Markdown front matter). ``=`` matches a scalar or any element of a list (``tags=pump``).

Operators ``=``, ``!=``, ``>=``, ``<=``. A value that reads as a number compares as a number;
any other compares as text, so ISO 8601 dates (``2024-05-01``, ``2024-05-01T12:00``) compare
in time order. Filters are applied inside the search, never after the top-k (which would return
fewer than k hits): as a FAISS ``IDSelector`` (flat, IVF, HNSW, binary) and as a condition of
the FTS5 query (:meth:`~.texts.TextStore.keyword_hits`), the way a vector database's
pre-filtering does.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from ..errors import EncodrError, S

OPERATORS = ("!=", ">=", "<=", "=")  # longest first: "a>=1" is >=, not =
COLUMNS = {"id": "d.id", "title": "d.title", "modified": "d.modified", "size": "d.size"}  # fields that are document columns
_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?([T ].*)?$")


@dataclass(frozen=True)
class Filter:
    """One condition: ``field op value`` (see the module's docstring)."""

    field: str
    op: str
    value: str | float | int

    def __str__(self) -> str:
        return f"{self.field}{self.op}{self.value}"


def parse(text: str) -> Filter:
    """``"FIELD=VALUE"`` (or ``!=``, ``>=``, ``<=``) → :class:`Filter`.

    Raises:
        EncodrError: no operator, a blank or odd field name, a blank value, an operator the
            field does not take (``source`` and ``lang``: ``=`` and ``!=``), or a date that is
            not ISO 8601; naming the filter and the fix (``field="filter"``).
    """
    at = min(((text.find(op), op) for op in OPERATORS if op in text), default=None, key=lambda found: (found[0], -len(found[1])))
    if at is None:
        raise EncodrError(
            f"{S.filter} {text!r}: write FIELD=VALUE (or !=, >=, <=), e.g. source=notes/*.md or year>=2020", field="filter"
        )
    where, op = at
    name, raw = text[:where].strip(), text[where + len(op) :].strip()
    return make(name, op, raw, text)


def make(name: str, op: str, raw, shown: str | None = None) -> Filter:
    """A checked :class:`Filter` from its parts (``raw``: the value as given; see :func:`parse`)."""
    shown = shown or f"{name}{op}{raw}"
    if not _NAME.match(name or ""):
        raise EncodrError(f"{S.filter} {shown!r}: '{name}' is not a field name (letters, digits, _ . -)", field="filter")
    if op not in OPERATORS:
        raise EncodrError(f"{S.filter} {shown!r}: unknown operator '{op}'; use one of {', '.join(OPERATORS)}", field="filter")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise EncodrError(f"{S.filter} {shown!r}: no value after '{op}'", field="filter")
    if name in ("source", "lang") and op not in ("=", "!="):
        raise EncodrError(f"{S.filter} {shown!r}: {name} takes = or != (source: a glob such as notes/*.md)", field="filter")
    value = raw if not isinstance(raw, str) else _typed(raw.strip())
    if isinstance(value, str) and _DATE.match(value) and op in (">=", "<="):
        try:
            datetime.datetime.fromisoformat(value if len(value) > 7 else value + "-01")
        except ValueError:
            raise EncodrError(
                f"{S.filter} {shown!r}: '{value}' is not an ISO 8601 date (e.g. 2024-05-01 or 2024-05-01T12:00)", field="filter"
            ) from None
    return Filter(name, op, value)


def from_mapping(mapping: dict) -> list[Filter]:
    """HTTP's ``{"field": value}``: a string value may begin with an operator (``">=2020"``),
    else it is equality; a list means any of its values (``{"lang": ["eng", "deu"]}``: one
    condition that keeps either, for ``=`` only)."""
    found = []
    for name, value in mapping.items():
        if isinstance(value, list):
            found.append(Filter(str(name), "in", tuple(make(str(name), "=", v).value for v in value)))  # type: ignore[arg-type]
            continue
        if isinstance(value, str):
            op = next((op for op in OPERATORS if value.startswith(op)), "=")
            found.append(make(str(name), op, value[len(op) :] if value.startswith(op) else value))
        else:
            found.append(make(str(name), "=", value))
    return found


def parse_all(given) -> list[Filter]:
    """Filters however a front end gives them: HTTP's mapping (:func:`from_mapping`), or a list
    of ``"FIELD=VALUE"`` texts (:func:`parse`) and :class:`Filter` s; ``None`` or empty: none.

    Raises:
        EncodrError: see :func:`parse`.
    """
    if not given:
        return []
    if isinstance(given, dict):
        return from_mapping(given)
    return [item if isinstance(item, Filter) else parse(item) for item in given]


def _typed(value: str):
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def sql(filters: list[Filter]) -> tuple[str | None, list, str | None, list]:
    """The SQL of ``filters``: a ``where`` clause over ``documents d`` and one over ``texts t``
    (``lang``), each with its parameters, or None for no condition of that kind."""
    docs, dparams, texts, tparams = [], [], [], []
    for f in filters:
        values = list(f.value) if f.op == "in" else [f.value]
        if f.field == "lang":
            marks = ",".join("?" * len(values))
            texts.append(f"t.lang {'not in' if f.op == '!=' else 'in'} ({marks})")
            tparams += values
        elif f.field == "source":
            either = " or ".join("(d.source glob ? or d.path glob ? or d.path glob '*/' || ?)" for _ in values)
            docs.append(f"not ({either})" if f.op == "!=" else f"({either})")
            dparams += [x for v in values for x in (str(v), str(v), str(v))]
        elif f.field in COLUMNS or f.op in (">=", "<="):
            column = COLUMNS.get(f.field) or f"json_extract(d.meta, '$.\"{f.field}\"')"
            if f.op == "in":
                docs.append(f"{column} in ({','.join('?' * len(values))})")
            elif f.op == "!=":
                docs.append(f"({column} is null or {column} != ?)")
            else:
                docs.append(f"{column} {f.op} ?")
            dparams += values
        else:  # a metadata field: a scalar, or any element of a list
            any_of = (
                f"exists (select 1 from json_each(d.meta, '$.\"{f.field}\"') where json_each.value in "
                f"({','.join('?' * len(values))}))"
            )
            docs.append(f"not {any_of}" if f.op == "!=" else any_of)
            dparams += values
    return (" and ".join(docs) or None, dparams, " and ".join(texts) or None, tparams)


@dataclass(frozen=True)
class Where:
    """Which texts a search may return: those in one of ``langs`` (all when empty) that pass
    every one of ``filters``."""

    langs: tuple[str, ...] = ()
    filters: tuple[Filter, ...] = ()

    @classmethod
    def of(cls, where) -> "Where":
        """A :class:`Where` from one, from a list of language codes, or from None (everything)."""
        if isinstance(where, Where):
            return where
        return cls(tuple(where or ()))

    def __bool__(self) -> bool:
        return bool(self.langs or self.filters)
