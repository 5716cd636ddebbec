"""Recipes: declarative training settings read from YAML (``recipes/*.yaml``).

A recipe names a method (``method:``, default ``mirror``) and its settings; the method's
recipe class (``encodr.methods.<method>.config``) declares the fields, their defaults and
their rules. Users pass ``--recipe NAME`` or ``--recipe path/to/mine.yaml`` and may
override any field from the command line. Unknown keys and bad values raise
:class:`~encodr.errors.EncodrError` naming the key.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from ..errors import EncodrError
from ..paths import recipes_dir

BOOLEANS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def check(key: str, value: Any, cls: type) -> Any:
    """Coerce and validate one field of a method's recipe class.

    The field's annotation gives the type (``int``, ``float``, ``bool`` — YAML's booleans, or
    ``true``/``false``/``yes``/``no``/``1``/``0`` from ``--set`` —, ``str``); ``cls.rules()`` maps
    a key to ``(accepts(value), what is allowed)``, from each field's declaration.

    Raises:
        EncodrError: unknown key, wrong type or a value the rule refuses (naming the key).
    """
    types = {f.name: f.type for f in fields(cls)}
    if key not in types:
        known = ", ".join(sorted(types))
        raise EncodrError(f"unknown recipe key '{key}' for method '{cls.method}'; known keys: {known}")
    kind = types[key]
    try:
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            value = int(value)
        elif kind == "float":
            if isinstance(value, bool):
                raise ValueError
            value = float(value)
        elif kind == "bool":
            value = value if isinstance(value, bool) else BOOLEANS[str(value).strip().lower()]
        else:
            value = str(value)
    except (TypeError, ValueError, KeyError):
        what = "true or false" if kind == "bool" else f"a{'n' if kind == 'int' else ''} {kind}"
        raise EncodrError(f"recipe key '{key}' must be {what}, got {value!r}") from None
    if key == "method" and value != cls.method:
        raise EncodrError(
            f"recipe key 'method' is '{cls.method}' in this recipe and cannot be changed; pick a recipe of method "
            f"'{value}' instead"
        )
    rule = cls.rules().get(key)
    if rule is not None and not rule[0](value):
        raise EncodrError(f"recipe key '{key}' must be {rule[1]}, got {value!r}")
    return value


def available() -> dict[str, Path]:
    """Bundled recipes by name → YAML path."""
    return {p.stem: p for p in sorted(recipes_dir().glob("*.yaml"))}


def load(spec: str, overrides: dict[str, Any] | None, classes: dict[str, type]):
    """Load a recipe by bundled name or YAML path and apply overrides.

    Args:
        spec: a bundled recipe name (``word``, ``phrase``, ``sentence``…) or a path
            to a YAML mapping of recipe keys.
        overrides: field → value; ``None`` values are ignored (unset CLI options).

        classes: method name → recipe class (:func:`encodr.methods.recipe_classes`; passed in, so this
            module does not import the package that imports it).

    Returns:
        The validated recipe: an instance of the class of the file's ``method:`` (default
        ``mirror``).

    Raises:
        EncodrError: unknown recipe, unreadable or malformed YAML, unknown key, bad value.
    """
    bundled = available()
    path = Path(spec)
    if spec in bundled:
        path = bundled[spec]
    elif not (spec.endswith((".yaml", ".yml")) or path.exists()):
        raise EncodrError(f"unknown recipe '{spec}'; choose one of {', '.join(bundled)} or pass a path to a .yaml file")
    if path.is_dir():
        raise EncodrError(f"recipe '{spec}' is a directory; pass a .yaml file or a bundled name")
    if not path.is_file():
        raise EncodrError(f"recipe file '{spec}' does not exist; pass an existing .yaml file or a bundled name")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise EncodrError(f"recipe file '{path}' is not valid YAML{where}; fix the syntax") from None
    except UnicodeDecodeError:
        raise EncodrError(f"recipe file '{path}' is not UTF-8 text; save it as UTF-8") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise EncodrError(f"recipe file '{path}' must be a YAML mapping of key: value, got {type(data).__name__}")
    method = str(data.get("method", "mirror"))
    if method not in classes:
        raise EncodrError(f"recipe key 'method' must be one of {' | '.join(sorted(classes))}, got {method!r}")
    cls = classes[method]
    values = {"name": path.stem}
    for key, value in data.items():
        values[str(key)] = check(str(key), value, cls)
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = check(key, value, cls)
    return cls(**values)
