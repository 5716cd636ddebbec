"""Optional imports go through one helper (encodr.extras.need): hidden one at a time, each is one
line naming what needs it and what to install, never a traceback."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from encodr.errors import EncodrError
from encodr.extras import OPTIONAL, need
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module", sorted(OPTIONAL))
def test_each_optional_module_hidden_is_one_line_naming_its_install(module, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    with pytest.raises(EncodrError) as caught:
        need(module)
    purpose, install = OPTIONAL[module]
    assert str(caught.value) == f"{purpose} needs {module.split('.')[0]}, which is not installed here: pip install {install}"


def test_a_package_the_optional_module_imports_is_named_with_the_extra_that_brings_it(monkeypatch):
    """``ray[serve]`` without grpc ended in a ModuleNotFoundError traceback."""
    for name in [m for m in sys.modules if m == "ray.serve" or m.startswith("ray.serve.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "grpc", None)
    with pytest.raises(EncodrError, match=r"encodr serve --engine ray needs grpc, .* pip install 'encodr\[cluster\]'"):
        need("ray.serve")


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)
    from encodr.data.files import read_document

    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4\n")
    with pytest.raises(EncodrError, match=r"^reading PDF files needs pypdf, which is not installed here: pip install pypdf$"):
        read_document(tmp_path / "a.pdf")
    monkeypatch.setitem(sys.modules, "fastapi", None)
    code, _, err = run_cli(["serve", "--port", "18999"], capsys, monkeypatch)
    assert (
        code == 2
        and err.strip() == "encodr: error: encodr serve needs fastapi, which is not installed here: pip install 'encodr[serve]'"
    )


def test_no_optional_module_is_imported_around_the_helper():
    """The modules of OPTIONAL are imported only through need(): no ``except ImportError`` of
    one of them elsewhere in the package."""
    found = []
    for path in (ROOT / "encodr").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(
            r"try:\n(\s+)(?:import|from) ([\w.]+)[^\n]*\n(?:\1[^\n]*\n)*?\s*except (?:ImportError|ModuleNotFoundError)", text
        ):
            if any(m.group(2) == name or m.group(2).startswith(name.split(".")[0]) for name in OPTIONAL):
                found.append(f"{path.relative_to(ROOT)}: {m.group(2)}")
    assert found == []
