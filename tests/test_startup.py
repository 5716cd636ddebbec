"""The CLI starts at once: ``encodr --help``, ``--version`` and every command's ``--help``
import neither torch, transformers, sentence-transformers, FAISS nor scipy (the heavy imports
happen inside the command that needs them). Checked on ``sys.modules`` in a fresh interpreter,
not on a timing."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "transformers", "sentence_transformers", "faiss", "scipy")

PROBE = r"""
import json, sys
import typer.main
from typer.testing import CliRunner
from encodr.cli import app

HEAVY = %r
found = {}
def loaded():
    return [m for m in HEAVY if m in sys.modules]
found["import encodr.cli"] = loaded()
runner = CliRunner()
def walk(group, prefix):
    for name, sub in sorted(group.commands.items()):
        yield prefix + [name]
        if hasattr(sub, "commands"):
            yield from walk(sub, prefix + [name])
calls = [["--version"], ["--help"]] + [path + ["--help"] for path in walk(typer.main.get_command(app), [])]
codes = {}
for args in calls:
    result = runner.invoke(app, args)
    codes[" ".join(args)] = result.exit_code
    found[" ".join(args)] = loaded()
print(json.dumps({"found": found, "codes": codes}))
"""


def test_help_and_version_import_no_model_library():
    out = subprocess.run([sys.executable, "-c", PROBE % (HEAVY,)], capture_output=True, text=True, check=True).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert report["codes"]["--version"] == 0 and report["codes"]["--help"] == 0
    assert any(name.startswith("search") for name in report["codes"])  # the commands were walked
    assert all(code == 0 for code in report["codes"].values()), report["codes"]
    heavy = {call: modules for call, modules in report["found"].items() if modules}
    assert not heavy, f"loaded at start-up: {heavy}"
