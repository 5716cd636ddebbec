"""The benchmark suite (bench/suite.py): one runner lists every benchmark, every result file comes
from a listed benchmark, and the docs' benchmark pages come from one renderer (tools/docs.py,
checked by tests/test_docs.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import suite  # noqa: E402


def test_every_benchmark_is_listed_and_every_result_has_its_benchmark():
    found = suite.benchmarks()
    scripts = {p.stem for p in (ROOT / "bench").glob("*.py")} - set(suite.HELPERS)
    assert set(found) == scripts  # every module of bench/ but the helpers is a benchmark (has main())
    assert suite.orphans() == []
    assert "retrieval_recipe_xquad-en_me5.json" in found["retrieval_recipe"]["results"]
    assert "retrieval_recipe_xquad-en_me5.json" not in found["retrieval"]["results"]  # the longer name owns it


def test_every_result_records_its_command_machine_date_and_commit():
    import json

    files = sorted((ROOT / "bench" / "results").rglob("*.json"))
    assert files
    lacking = {f.name: k for f in files for k in ("command", "machine", "date", "commit") if k not in json.loads(f.read_text())}
    assert lacking == {}


def test_quick_runs_write_to_a_temporary_folder():
    quick = {name: info["quick"] for name, info in suite.benchmarks().items() if info["quick"] is not None}
    assert quick  # some benchmarks have a quick run
    for name, args in quick.items():
        if "--out" in args:
            assert args[args.index("--out") + 1].startswith("{tmp}/"), name  # never over bench/results


def test_an_unknown_benchmark_is_one_line_and_status_2(capsys):
    assert suite.main(["run", "nosuch"]) == 2
    assert "no benchmark 'nosuch'" in capsys.readouterr().err


def test_list_prints_each_benchmark_and_its_results(capsys):
    assert suite.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "judged" in out and "results/judged_gpu.json" in out


@pytest.mark.parametrize("name", ["sync"])
def test_a_page_that_had_its_own_renderer_comes_from_tools_docs(name):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import docs
    finally:
        sys.path.remove(str(ROOT / "tools"))
    assert f"docs/benchmarks/{name}.md" in docs.benchmark_pages()
