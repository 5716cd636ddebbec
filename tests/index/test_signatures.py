"""No function in ``encodr/index`` takes more than 8 parameters: settings travel as one options
object (:class:`encodr.index.SearchOptions`, :class:`encodr.index.BuildOptions`,
:class:`encodr.index.dataflow.ActorModel`), so two swapped flags cannot go unnoticed."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import encodr.index

LIMIT = 8


def parameters(function) -> int:
    """The parameters a caller passes: ``self`` and ``cls`` not counted."""
    return len([p for p in inspect.signature(function).parameters.values() if p.name not in ("self", "cls")])


def functions_of(package) -> dict[str, object]:
    """Every function and method defined in ``package``'s modules, by qualified name."""
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = value
            elif inspect.isclass(value) and value.__module__ == module.__name__:
                for attr, member in vars(value).items():
                    if attr == "__init__" and dataclasses.is_dataclass(value):
                        continue  # an options record's fields are named, each with its default: it is the grouping, not a long call
                    function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
                    if inspect.isfunction(function) and not (attr.startswith("__") and attr != "__init__"):
                        found[f"{module.__name__}.{name}.{attr}"] = function
    return found


def too_long(package) -> dict[str, int]:
    return {name: n for name, f in functions_of(package).items() if (n := parameters(f)) > LIMIT}


def test_no_function_in_the_index_package_takes_more_than_8_parameters():
    assert too_long(encodr.index) == {}


def test_the_main_entry_points_take_an_options_object():
    from encodr.index import Searcher, build
    from encodr.index.dataflow import ray_windows

    assert list(inspect.signature(build).parameters) == ["files", "out", "options", "progress", "warn"]
    assert list(inspect.signature(Searcher.query).parameters) == ["self", "queries", "options", "reranker"]
    assert parameters(ray_windows) == 5


def test_the_check_fails_on_a_long_signature(monkeypatch):
    import encodr.index.options as options

    def probe(a, b, c, d, e, f, g, h, i):  # nine
        pass

    probe.__module__ = options.__name__
    monkeypatch.setattr(options, "probe", probe, raising=False)
    assert too_long(encodr.index) == {"encodr.index.options.probe": 9}
