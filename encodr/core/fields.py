"""One declaration per option, rendered by every front end.

A request field is declared once, with :func:`option`, or with :func:`declared` where it is a
library setting (:func:`encodr.settings.setting`), whose default, help, range and choices it
takes as declared: its name, type, default, help and constraints (pydantic), plus how the front
ends show it — the CLI's flags, whether it is a
positional argument, and which front ends offer it at all. The CLI derives its Typer options
from it (``encodr.cli``), the HTTP server its JSON schema (FastAPI reads the pydantic model),
the TUI its form fields; ``tests/core/test_fronts.py`` fails when a front end that renders a
command lacks one of the command's fields. The model of this is harlequin's
``AbstractOption.to_click()`` / ``to_widgets()``; unlike harlequin, the option is a pydantic
field, so the server needs no rendering code of its own.

Each front end names a setting in its own words (:func:`namer`): the CLI by its flag, HTTP and
MCP by the field, the TUI by its label; a message or a help text written with
:data:`encodr.errors.S` is worded so (:func:`words`, :func:`help_words`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from .. import settings
from ..errors import MISSING, EncodrError, OptionError, render

FRONTS = ("cli", "tui", "http", "mcp")  # the front ends; a field names those that offer it
EXTRA = "x-encodr"  # the key of a field's rendering hints in its JSON schema (an OpenAPI extension)


@dataclass(frozen=True)
class Rendering:
    """How the front ends show one field.

    Attributes:
        flags: the CLI's option names (default: ``--field-name``).
        argument: a positional CLI argument rather than an option.
        fronts: the front ends that offer the field (:data:`FRONTS`).
        choices: the values it takes, for the TUI's select and the help text.
        choice_flags: a choice field the CLI offers as one flag per value but the default
            (``--add``, ``--sync``), each with its meaning as help: {value: meaning}.
    """

    flags: tuple[str, ...] = ()
    argument: bool = False
    fronts: tuple[str, ...] = FRONTS
    choices: tuple[str, ...] = ()
    choice_flags: dict[str, str] | None = None


class Hints:
    """A field's :class:`Rendering`, kept on its pydantic ``Field`` as ``json_schema_extra``: called
    by pydantic, it writes the hints under :data:`EXTRA` and the choices as the schema's ``enum``.
    ``choices`` may be a function, called once when first read (so a request module need not
    import the module that owns a list of choices)."""

    def __init__(self, flags: tuple[str, ...], argument: bool, fronts: tuple[str, ...], choices, template: str = ""):
        self.flags, self.argument, self.fronts, self._choices = tuple(flags), argument, tuple(fronts), choices
        self.template = template  # the help as declared, naming settings with errors.S (render)

    def _resolved(self):
        if callable(self._choices):
            self._choices = self._choices()
        return self._choices

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self._resolved() or ())

    @property
    def choice_flags(self) -> dict[str, str] | None:
        """{value: meaning} where the choices were declared with their meanings, else None."""
        given = self._resolved()
        return dict(given) if isinstance(given, dict) else None

    def __call__(self, schema: dict) -> None:
        schema[EXTRA] = {
            "flags": list(self.flags),
            "argument": self.argument,
            "fronts": list(self.fronts),
            "choices": list(self.choices),
        }
        if self.choices:
            for branch in [schema, *schema.get("anyOf", [])]:
                target = branch.get("items", branch) if branch.get("type") == "array" else branch
                if target.get("type") == "string":
                    target["enum"] = list(self.choices)


def option(
    default: Any = None,
    help: str = "",
    *,
    flags: tuple[str, ...] = (),
    argument: bool = False,
    fronts: tuple[str, ...] = FRONTS,
    choices=(),
    ge: float | None = None,
    le: float | None = None,
) -> Any:
    """Declare a request field (a pydantic ``Field``) with its rendering hints.

    Args:
        default: the default; ``...`` for a required field. The front ends show it; none of
            them states it again.
        help: one sentence for ``--help``, the TUI's label and the API docs; it does not state
            the default or the choices, which the front ends add from the declaration.
        flags, argument, fronts: see :class:`Rendering`.
        choices: the values allowed (a tuple, or a function returning one): each front end
            shows them, and :func:`build` refuses any other (for a list field, any other item).
            A {value: meaning} mapping declares each value's meaning too: the CLI then offers
            each value but the default as a flag of its own (``--add``; :class:`Rendering`).
        ge, le: the smallest and the largest value allowed (numbers).
    """
    hints = Hints(flags, argument, fronts, choices, help)
    return Field(default, description=render(help), ge=ge, le=le, json_schema_extra=hints)


KEEP = object()  # declared(): keep the setting's own default


def declared(
    cls: type, name: str, default: Any = KEEP, *, flags: tuple[str, ...] = (), fronts: tuple[str, ...] = FRONTS, about: str = "{}"
) -> Any:
    """A request field that takes setting ``name`` of dataclass ``cls`` (:func:`encodr.settings.setting`)
    as declared there: its default (or ``default``: ``None`` where the request leaves the setting
    unset, a list where it takes several), meaning, choices and range; the request adds only how
    the front ends show it (``flags``, ``fronts``: :class:`Rendering`) and, in ``about``, where
    its meaning goes in the request's help (``"retrieval: {}"``)."""
    d = settings.declared(cls, name)
    value = d.default if default is KEEP else default
    help_text = about.replace("{}", d.help)
    return option(value, help_text, flags=flags, fronts=fronts, choices=d.choices, ge=d.ge, le=d.le)


def hints(model: type[BaseModel], name: str) -> Hints:
    """The :class:`Hints` of field ``name`` of request class ``model``."""
    extra = model.model_fields[name].json_schema_extra
    return extra if isinstance(extra, Hints) else Hints((), False, FRONTS, ())


def rendering(model: type[BaseModel], name: str) -> Rendering:
    """The :class:`Rendering` of field ``name`` of request class ``model``."""
    h = hints(model, name)
    return Rendering(h.flags, h.argument, h.fronts, h.choices, h.choice_flags)


def help_words(model: type[BaseModel], name: str, front: str) -> str:
    """Field ``name``'s help in front end ``front``'s words: the CLI names the settings it
    mentions by their flags (:func:`flag`), the others by their field names."""
    template = hints(model, name).template or model.model_fields[name].description or ""
    return render(template, namer(front, model))


def namer(front: str, model: type[BaseModel] | None = None):
    """How front end ``front`` names a setting in a message (:func:`encodr.errors.render`): the
    CLI by ``model``'s flag for it (``--fusion-weight``; a setting ``model`` lacks:
    ``--name-with-dashes``), and a setting's value by its own flag where the CLI has one
    (``write=add``: ``--add``), else as ``--name value``; the TUI by its label; HTTP and MCP by
    the field's name (``write=add``)."""
    if front == "cli":
        return lambda token: cli_words(token, model)
    if front == "tui":
        return lambda token: token.replace("_", " ").replace("=", " ")
    return str


def cli_words(token: str, model: type[BaseModel] | None = None) -> str:
    """A setting (``name``) or a setting's value (``name=value``) as the CLI says it (:func:`namer`)."""
    name, _, value = token.partition("=")
    owner = model if model is not None and name in model.model_fields else _declaring(name)
    said = flag(owner, name) if owner is not None else cli_flag(name)
    if not value:
        return said
    return f"--{value}" if owner is not None and rendering(owner, name).choice_flags else f"{said} {value}"


def _declaring(name: str) -> type[BaseModel] | None:
    """A request class that offers field ``name`` on the CLI (the first found), or None."""
    seen, stack = set(), [BaseModel]
    while stack:
        for cls in stack.pop().__subclasses__():
            if cls in seen:
                continue
            seen.add(cls)
            stack.append(cls)
            extra = cls.model_fields.get(name) and cls.model_fields[name].json_schema_extra
            if isinstance(extra, Hints) and "cli" in rendering(cls, name).fronts:
                return cls
    return None


def cli_flag(name: str) -> str:
    """A setting's CLI flag when no request declares it: ``--name-with-dashes``."""
    return "--" + name.replace("_", "-")


def default(model: type[BaseModel], name: str):
    """The default of field ``name`` of ``model`` as the front ends show it (``None``: none, or required)."""
    field = model.model_fields[name]
    return None if field.is_required() else field.get_default(call_default_factory=True)


def schema(model: type[BaseModel], front: str) -> dict:
    """The JSON schema of the fields of request class ``model`` that front end ``front`` takes
    (the HTTP API's request body in OpenAPI, an MCP tool's input schema): one generator, so the
    two agree on every field they share."""
    full = model.model_json_schema()
    names = fields_for(model, front)
    out = {
        "type": "object",
        "title": model.__name__,
        "properties": {n: full["properties"][n] for n in names},
        "required": [n for n in full.get("required", []) if n in names],
    }
    if full.get("$defs"):
        out["$defs"] = full["$defs"]
    return out


def fields_for(model: type[BaseModel], front: str) -> list[str]:
    """The names of ``model``'s fields that front end ``front`` offers, in declaration order."""
    return [name for name in model.model_fields if front in rendering(model, name).fronts]


def flag(model: type[BaseModel], name: str) -> str:
    """How the CLI names a field in messages: its first flag, ``--field-name``, or ``NAME``."""
    r = rendering(model, name)
    if r.argument:
        return name.upper()
    if r.choice_flags:  # one flag a value: --add / --sync / --overwrite
        return " / ".join(f"--{value}" for value in r.choice_flags if value != default(model, name))
    return r.flags[0] if r.flags else "--" + name.replace("_", "-")


def check_choices(model: type[BaseModel], values: dict) -> None:
    """Raise :class:`~encodr.errors.OptionError` for a value (or a list item) of ``values`` that
    its field's choices do not allow."""
    for name, value in values.items():
        if name not in model.model_fields or value is None:
            continue
        allowed = rendering(model, name).choices
        if not allowed:
            continue
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            for part in str(item).split(",") if isinstance(value, (list, tuple)) else [item]:
                if part.strip() and part.strip() not in allowed:
                    raise OptionError(name, part.strip(), f"is not one of {', '.join(allowed)}")


def build(model: type[BaseModel], values: dict) -> Any:
    """A request of class ``model`` from a front end's ``values``.

    Raises:
        OptionError: a value not among its field's choices, of the wrong type, out of range, or
            missing, naming the field (each front end words it: :func:`words`).
    """
    check_choices(model, values)
    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        if err["type"] == "missing":
            raise OptionError(name, MISSING, "is required") from None
        if err["type"] == "extra_forbidden":
            raise OptionError(
                name, err.get("input"), f"is not a field of this request; it takes {', '.join(model.model_fields)}"
            ) from None
        problem = {
            "greater_than_equal": lambda: f"must be {err['ctx']['ge']} or more",
            "less_than_equal": lambda: f"must be {err['ctx']['le']} or less",
        }
        what = problem.get(err["type"], lambda: "is not valid: " + err["msg"][0].lower() + err["msg"][1:])()
        raise OptionError(name or "body", err.get("input"), what) from None


def words(exc: EncodrError, front: str, model: type[BaseModel] | None = None) -> str:
    """``exc``'s message in front end ``front``'s words (:func:`namer`): the CLI names an option
    by its flag (``--mode hybird: not one of …``; a setting the message names, ``S.rerank_depth``,
    as ``--rerank-depth``), the HTTP API and MCP by its field (``mode: 'hybird' is not one of …``).

    Args:
        exc: the error (an :class:`~encodr.errors.OptionError` is worded from its parts).
        front: one of :data:`FRONTS`, or ``mcp``.
        model: the request class whose flags the CLI uses (default: any request's, else ``--field-name``).
    """
    if isinstance(exc, OptionError) and front == "cli":
        return exc.flagged(cli_words(exc.field or "", model))
    if isinstance(exc, OptionError):
        return str(exc)
    return exc.words(namer(front, model))
