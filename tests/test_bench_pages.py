"""Benchmark pages are generated from bench/results, never written by hand: a page that differs
from what its JSON renders to fails here."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def bench_module(name: str):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "bench"))


@pytest.mark.parametrize("name", ["sync"])
def test_a_benchmark_page_is_what_its_json_renders(name):
    page, results = ROOT / "docs" / "benchmarks" / f"{name}.md", ROOT / "bench" / "results" / f"{name}.json"
    if not results.exists():
        pytest.skip(f"bench/results/{name}.json not measured yet")
    assert page.read_text() == bench_module(name).render(json.loads(results.read_text())), f"regenerate it: python bench/{name}.py --render"
