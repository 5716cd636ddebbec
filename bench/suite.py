"""The benchmark suite: every benchmark in ``bench/``, listed and run by one runner.

A benchmark is a module of this folder with a ``main()`` (its own flags, read from ``sys.argv``)
that prints its tables and writes its JSON to ``bench/results/``; helpers (``common``,
``report``, ``st_baseline``, this module) are not benchmarks. A benchmark may declare
``QUICK``: the arguments of a small run that checks it still runs (``--quick``).

    python -m bench list                         # the benchmarks, their results and whether they have a quick run
    python -m bench run retrieval -- --limit 50  # one benchmark, with its own flags after --
    python -m bench run all --quick              # every benchmark with a quick run (the others are listed as skipped)

Every JSON a benchmark writes goes through :func:`common.write_json`, which records the one result
schema's fields beside the rows: ``command``, ``machine``, ``date`` and ``commit``.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HELPERS = ("common", "report", "st_baseline", "suite", "__init__", "__main__")


def benchmarks() -> dict[str, dict]:
    """Benchmark name → ``{"summary", "quick", "results"}``: its docstring's first sentence, its
    ``QUICK`` arguments (``None``: no quick run) and the result files named after it."""
    found = {}
    results = sorted(p.name for p in (HERE / "results").glob("*.json"))
    names = sorted(p.stem for p in HERE.glob("*.py") if p.stem not in HELPERS)
    for name in names:
        tree = ast.parse((HERE / f"{name}.py").read_text(encoding="utf-8"))
        if not any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            continue
        quick = next(
            (
                ast.literal_eval(n.value)
                for n in tree.body
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "QUICK" for t in n.targets)
            ),
            None,
        )
        doc = (ast.get_docstring(tree) or "").split("\n\n")[0].replace("\n", " ").strip()
        longer = [n for n in names if n != name and n.startswith(name + "_")]  # retrieval vs retrieval_recipe
        own = [
            r
            for r in results
            if (r == f"{name}.json" or r.startswith((name + "_", name + "-")))
            and not any(r == f"{n}.json" or r.startswith((n + "_", n + "-")) for n in longer)
        ]
        found[name] = {"summary": doc, "quick": quick, "results": own}
    return found


def orphans() -> list[str]:
    """Result files no listed benchmark writes."""
    owned = {r for b in benchmarks().values() for r in b["results"]}
    return sorted(p.name for p in (HERE / "results").glob("*.json") if p.name not in owned)


def run(name: str, args: list[str], quick: bool) -> int:
    """Run benchmark ``name`` in its own process (``python bench/NAME.py ARGS``); its exit status."""
    found = benchmarks()
    if name not in found:
        print(f"bench: no benchmark '{name}'; python -m bench list shows them", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(
        prefix=f"encodr-bench-{name}-"
    ) as tmp:  # a quick run's JSON goes here, never to bench/results
        extra = [a.replace("{tmp}", tmp) for a in found[name]["quick"] or []] if quick else []
        command = [sys.executable, str(HERE / f"{name}.py"), *extra, *args]
        print(f"bench: {' '.join(['python', f'bench/{name}.py', *extra, *args])}", flush=True)
        return subprocess.run(command, cwd=HERE.parent).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("list", help="the benchmarks, their results, and whether each has a quick run")
    runner = sub.add_parser("run", help="run one benchmark, or all")
    runner.add_argument("name", help="a benchmark's name (python -m bench list), or all")
    runner.add_argument(
        "--quick", action="store_true", help="the benchmark's small run (QUICK); with all, only those that have one"
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    own = argv[argv.index("--") + 1 :] if "--" in argv else []  # after --: the benchmark's own flags
    given = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if given.verb == "list":
        for name, info in benchmarks().items():
            quick = "quick" if info["quick"] is not None else "     "
            print(f"{name:24} {quick}  {info['summary'][:90]}")
            for result in info["results"]:
                print(f"{'':32}results/{result}")
        for result in orphans():
            print(f"no benchmark writes results/{result}")
        return 0
    args = own
    if given.name != "all":
        return run(given.name, args, given.quick)
    failed, skipped = [], []
    for name, info in benchmarks().items():
        if given.quick and info["quick"] is None:
            skipped.append(name)
            continue
        if run(name, args, given.quick) != 0:
            failed.append(name)
    if skipped:
        print(f"bench: no quick run, skipped: {', '.join(skipped)}")
    if failed:
        print(f"bench: failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
