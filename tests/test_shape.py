"""The shape of the code, over the whole ``encodr`` package (read with :mod:`ast`, nothing imported):
no function or method takes more than 8 parameters (settings travel as one options object:
:class:`encodr.index.SearchOptions`, :class:`encodr.index.BuildOptions`,
:class:`encodr.training.FitOptions`…), and none is longer than 80 lines of code (its docstring
not counted). Nested functions count on their own and inside the function that holds them."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import encodr

PACKAGE = Path(encodr.__file__).parent
MAX_PARAMETERS = 8
MAX_LINES = 80


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The parameters a caller passes: ``self`` and ``cls`` not counted, ``*args`` and ``**kwargs`` one each."""
    a = node.args
    names = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    return len([n for n in names if n not in ("self", "cls")]) + (a.vararg is not None) + (a.kwarg is not None)


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The function's lines, its docstring's left out."""
    total = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        total -= first.end_lineno - first.lineno + 1
    return total


def functions(source: str, module: str) -> dict[str, ast.FunctionDef]:
    """Every function and method of ``source``, nested ones too, by a dotted name."""
    found = {}

    def visit(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[f"{prefix}.{child.name}"] = child
                visit(child, f"{prefix}.{child.name}")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}.{child.name}")
            else:
                visit(child, prefix)

    visit(ast.parse(source), module)
    return found


def shape(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """``{"parameters": {name: n > 8}, "lines": {name: n > 80}}`` over every module under ``root``."""
    over = {"parameters": {}, "lines": {}}
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        for name, node in functions(path.read_text(encoding="utf-8"), module).items():
            if (n := parameters(node)) > MAX_PARAMETERS:
                over["parameters"][name] = n
            if (n := code_lines(node)) > MAX_LINES:
                over["lines"][name] = n
    return over


def test_no_function_takes_more_than_8_parameters_or_runs_over_80_lines():
    assert shape() == {"parameters": {}, "lines": {}}


def test_the_check_fails_on_a_long_signature_and_a_long_body(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "m.py").write_text(
        'def wide(a, b, c, d, e, f, g, h, i):\n    """Nine."""\n\n\nclass K:\n    def long(self):\n        '
        f'"""Doc."""\n{body.replace("    ", "        ")}\n'
    )
    assert shape(tmp_path / "probe") == {"parameters": {"probe.m.wide": 9}, "lines": {"probe.m.K.long": MAX_LINES + 1}}


def test_the_main_entry_points_take_an_options_object():
    from encodr.index import Searcher, build
    from encodr.index.dataflow import ray_windows
    from encodr.training import Trainer

    assert list(inspect.signature(build).parameters) == ["files", "out", "options", "progress", "warn"]
    assert list(inspect.signature(Searcher.query).parameters) == ["self", "queries", "options", "reranker"]
    assert list(inspect.signature(Trainer.fit).parameters) == ["self", "module", "streams", "args", "options"]
    assert len(inspect.signature(ray_windows).parameters) == 5
