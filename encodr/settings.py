"""The one way a setting is declared, and the one way a message names one.

A setting is a dataclass field declared with :func:`setting`: its default, its meaning, and what
it accepts (a range, a list of choices, or a rule). The library's options (a search's, a build's,
a server's limits, a recipe's fields, the optimiser's arguments) are declared so; the core's
requests take the same field by name (:func:`encodr.core.fields.declared`), and each front end
renders it: a flag and its help on the CLI, a JSON schema over HTTP and MCP, a widget in the TUI.
The models are sentence-transformers' ``training_args.py`` (the field is the declaration) and
datasette's ``SETTINGS``; unlike theirs, a setting here also holds its range and choices, so
:func:`check` validates an instance from the declarations alone.

A help text or an error message names a setting with :data:`encodr.errors.S` (``S.fusion_weight``):
the CLI writes it as its flag (``--fusion-weight``), HTTP and MCP as the field (``fusion_weight``),
the TUI as its label (:func:`encodr.errors.render`), so no layer below the front ends names a flag.
"""

from __future__ import annotations

import functools
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable

from .errors import OptionError

# (accepts the coerced value?, what is allowed, as an error message says it)
Rule = tuple[Callable[[Any], bool], str]
# key → its rule
Rules = dict[str, Rule]


@dataclass(frozen=True)
class Declared:
    """What one setting's declaration says (:func:`declared`).

    Attributes:
        name: the field's name.
        default: its default (:data:`dataclasses.MISSING` for a required field).
        help: its meaning, one or more sentences naming other settings with :data:`~encodr.errors.S`.
        choices: the values it takes (empty: any of its type), or {value: meaning}.
        ge, le: the smallest and the largest value allowed (numbers; ``None``: unbounded).
        rule: ``(accepts, words)`` for what a range cannot say.
    """

    name: str
    default: Any
    help: str = ""
    choices: tuple | dict = ()
    ge: float | None = None
    le: float | None = None
    rule: Rule | None = None


def setting(
    default: Any = MISSING,
    help: str = "",
    rule: Rule | None = None,
    *,
    choices: tuple | dict = (),
    ge: float | None = None,
    le: float | None = None,
) -> Any:
    """The one declaration of a setting: a dataclass field with its ``default``, its meaning
    (``help``: one or more sentences, naming other settings with :data:`~encodr.errors.S`; the front ends add
    the default and the choices) and what it accepts: ``choices``, a range [``ge``, ``le``]
    (``None`` always passes: "unset"), or a ``rule`` ``(accepts, words)``. ``help`` and ``rule``
    may be left out to keep those of the class the field's class extends (:func:`described`)."""
    choices = choices if isinstance(choices, dict) else tuple(choices)  # a dict: {value: meaning}
    meta = {"help": help, "rule": rule, "choices": choices, "ge": ge, "le": le}
    return field(default=default, metadata=meta)


@functools.lru_cache(maxsize=None)  # classes are declared once: a search builds its options per query
def declared(cls: type, name: str) -> Declared:
    """Field ``name`` of dataclass ``cls`` as declared: its default, and its meaning, choices,
    range and rule each from the nearest class of ``cls``'s MRO that gives one.

    Raises:
        KeyError: ``cls`` has no field ``name``.
    """
    own = cls.__dataclass_fields__[name]
    found: dict[str, Any] = {}
    for klass in cls.__mro__:
        meta = getattr(klass, "__dataclass_fields__", {}).get(name)
        for key, value in (meta.metadata if meta is not None else {}).items():
            if value not in (None, "", (), {}) and key not in found:
                found[key] = value
    if "rule" not in found and found.get("choices"):  # choices are a rule too (``--set``, a recipe file)
        allowed = found["choices"]
        found["rule"] = (lambda v: v in allowed, " | ".join(map(str, allowed)))
    if "rule" not in found and ("ge" in found or "le" in found):  # and so is a range: one declaration, one check
        found["rule"] = range_rule(found.get("ge"), found.get("le"))
    return Declared(name, own.default, **found)


def range_rule(ge: float | None, le: float | None) -> Rule:
    """The rule of a range [``ge``, ``le``] (either may be None: unbounded), worded as
    :func:`check` words it: ``3 or more``, ``between 0 and 1``, ``1 or less``. NaN is refused."""
    if ge is not None and le is not None:
        return (lambda v: ge <= v <= le, f"between {ge:g} and {le:g}")
    if ge is not None:
        return (lambda v: v >= ge, f"{ge:g} or more")
    return (lambda v: v <= le, f"{le:g} or less")


def described(cls: type, name: str) -> tuple[str, Rule | None]:
    """Field ``name``'s meaning and rule (:func:`declared`); ``("", None)`` for a field declared
    without them."""
    d = declared(cls, name)
    return d.help, d.rule


def field_rules(cls: type) -> Rules:
    """Every field of dataclass ``cls`` that has a rule (:func:`described`) → that rule."""
    found = {f.name: described(cls, f.name)[1] for f in fields(cls)}
    return {name: rule for name, rule in found.items() if rule is not None}


def like(cls: type, name: str, default: Any = None) -> Any:
    """A field declared as ``cls``'s field ``name`` is (meaning, range, choices and rule), with its
    default or ``default``: a recipe's ``lr`` is :class:`~encodr.training.args.OptimArgs`'s ``lr``."""
    d = declared(cls, name)
    return setting(d.default if default is None else default, d.help, d.rule, choices=d.choices, ge=d.ge, le=d.le)


def check(obj) -> None:
    """Refuse a value of dataclass instance ``obj`` that its declaration does not accept: a
    choice not among ``choices``, a number outside [``ge``, ``le``], a value its ``rule``
    refuses. ``None`` passes (an unset setting), and so does a field declared without them.

    Raises:
        OptionError: naming the field, the value and what it accepts.
    """
    for f in fields(obj):
        value = getattr(obj, f.name)
        if value is None or not f.metadata:
            continue
        d = declared(type(obj), f.name)
        if d.choices and value not in d.choices:
            raise OptionError(f.name, value, f"is not one of {', '.join(map(str, d.choices))}")
        if d.ge is not None and d.le is not None and not d.ge <= value <= d.le:
            raise OptionError(f.name, value, f"must be between {d.ge:g} and {d.le:g}")
        if d.ge is not None and value < d.ge:
            raise OptionError(f.name, value, f"must be {d.ge:g} or more")
        if d.le is not None and value > d.le:
            raise OptionError(f.name, value, f"must be {d.le:g} or less")
        if d.rule is not None and not d.rule[0](value):
            raise OptionError(f.name, value, f"must be {d.rule[1]}")
