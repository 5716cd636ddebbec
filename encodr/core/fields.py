"""One declaration per option, rendered by every front end.

A request field is declared once, with :func:`option`: its name, type, default, help and
constraints (pydantic), plus how the front ends show it — the CLI's flags, whether it is a
positional argument, and which front ends offer it at all. The CLI derives its Typer options
from it (``encodr.cli``), the HTTP server its JSON schema (FastAPI reads the pydantic model),
the TUI its form fields; ``tests/core/test_fronts.py`` fails when a front end that renders a
command lacks one of the command's fields. The model of this is harlequin's
``AbstractOption.to_click()`` / ``to_widgets()``; unlike harlequin, the option is a pydantic
field, so the server needs no rendering code of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ..errors import EncodrError

FRONTS = ("cli", "tui", "http")  # the front ends; a field names those that offer it
EXTRA = "x-encodr"  # the key of a field's rendering hints in its JSON schema (an OpenAPI extension)


@dataclass(frozen=True)
class Rendering:
    """How the front ends show one field.

    Attributes:
        flags: the CLI's option names (default: ``--field-name``).
        argument: a positional CLI argument rather than an option.
        fronts: the front ends that offer the field (:data:`FRONTS`).
        choices: the values it takes, for the TUI's select and the help text.
    """

    flags: tuple[str, ...] = ()
    argument: bool = False
    fronts: tuple[str, ...] = FRONTS
    choices: tuple[str, ...] = ()


def option(default: Any = None, help: str = "", *, flags: tuple[str, ...] = (), argument: bool = False, fronts: tuple[str, ...] = FRONTS,
           choices: tuple[str, ...] = (), ge: float | None = None, le: float | None = None) -> Any:  # fmt: skip
    """Declare a request field (a pydantic ``Field``) with its rendering hints.

    Args:
        default: the default; ``...`` for a required field.
        help: one sentence for ``--help``, the TUI's label and the API docs.
        flags, argument, fronts, choices: see :class:`Rendering`.
        ge, le: the smallest and the largest value allowed (numbers).
    """
    hints = {"flags": list(flags), "argument": argument, "fronts": list(fronts), "choices": list(choices)}
    return Field(default, description=help, ge=ge, le=le, json_schema_extra={EXTRA: hints})


def rendering(model: type[BaseModel], name: str) -> Rendering:
    """The :class:`Rendering` of field ``name`` of request class ``model``."""
    extra = model.model_fields[name].json_schema_extra or {}
    hints = extra.get(EXTRA, {}) if isinstance(extra, dict) else {}
    return Rendering(tuple(hints.get("flags", ())), bool(hints.get("argument", False)), tuple(hints.get("fronts", FRONTS)),
                     tuple(hints.get("choices", ())))  # fmt: skip


def fields_for(model: type[BaseModel], front: str) -> list[str]:
    """The names of ``model``'s fields that front end ``front`` offers, in declaration order."""
    return [name for name in model.model_fields if front in rendering(model, name).fronts]


def flag(model: type[BaseModel], name: str) -> str:
    """How the CLI names a field in messages: its first flag, ``--field-name``, or ``NAME``."""
    r = rendering(model, name)
    if r.argument:
        return name.upper()
    return r.flags[0] if r.flags else "--" + name.replace("_", "-")


def build(model: type[BaseModel], values: dict) -> Any:
    """A request of class ``model`` from a front end's ``values``.

    Raises:
        EncodrError: a value of the wrong type or out of range, naming the field (``field``)
            as the CLI names it.
    """
    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        where = flag(model, name) if name in model.model_fields else (name or "the request")
        if err["type"] == "greater_than_equal":
            raise EncodrError(f"{where} {err['input']}: give {err['ctx']['ge']} or more", field=name) from None
        raise EncodrError(f"{where}: {err['msg'].lower()}", field=name or None) from None
