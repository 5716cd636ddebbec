"""Shared helpers for the benchmarks: result tables and JSON output."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    """What the numbers were measured on."""
    import torch

    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "date": time.strftime("%Y-%m-%d"),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def print_table(title: str, rows: list[dict], columns: list[str]) -> None:
    """Print rows as a rich table (floats with 2 decimals)."""
    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="left" if col in columns[:2] else "right")
    for row in rows:
        table.add_row(*[f"{row[c]:.2f}" if isinstance(row.get(c), float) else str(row.get(c, "")) for c in columns])
    Console(width=200).print(table)


def commit() -> str:
    """The checkout's commit (what was measured), or ``unknown`` outside a git checkout."""
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def schema(payload: dict) -> dict:
    """``payload`` with the fields every result records (the suite's one schema), where it has
    not set them itself: ``command`` (as run), ``machine``, ``date`` and ``commit``."""
    import sys

    command = " ".join(["python", f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    return {"command": command, "machine": machine(), "date": time.strftime("%Y-%m-%d"), "commit": commit(), **payload}


def write_json(path: Path, payload: dict) -> None:
    """Write JSON atomically (temp file, then rename), with the suite's schema fields (:func:`schema`)."""
    if isinstance(payload, dict):
        payload = schema(payload)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2))
    tmp.replace(path)


def write_labelled(path: Path, label: str, rows: list[dict], payload: dict) -> None:
    """Write ``payload`` with ``rows`` (each with its ``label``) to ``path`` (:func:`write_json`),
    after the rows of other labels the file already holds: a run of the code before a change
    sits beside the run after it."""
    kept = []
    if path.exists():
        kept = [r for r in json.loads(path.read_text()).get("rows", []) if r.get("label") != label]
    write_json(path, {**payload, "rows": kept + rows})


def parse_overrides(items: list[str]) -> dict:
    """Recipe overrides from ``KEY=VALUE`` strings (``--set``); values are read as YAML
    scalars (``0.2`` → float, ``2`` → int). Keys and values are checked by ``encodr.methods.load_recipe``."""
    import yaml

    return {key: yaml.safe_load(value) for key, _, value in (item.partition("=") for item in items)}


def run_tune(data, recipe, models, out, progress: bool = False, **options):
    """``encodr.methods.tune`` as the bench scripts call it: ``data`` a path, a
    :class:`~encodr.data.text.Corpus` or ``None``; ``models`` one spec or a list."""
    from encodr.methods import TuneJob, tune

    models = [models] if isinstance(models, str) else list(models)
    return tune(recipe, TuneJob(out=Path(out), data=data, models=models, **options))


run_trans_encoder = run_tune


def beir_subset(folder: Path, split: str, documents: int, queries: int, out: Path) -> Path:
    """A smaller BEIR folder at ``out`` (a quick run's data): the first ``queries`` judged queries
    of ``split`` (0: all), every document they judge, and a seeded sample of the others up to
    ``documents`` in all (0: all). Returns ``out``."""
    import random

    rows = [
        line.rstrip("\n").split("\t") for line in (folder / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
    ]
    header, rows = (rows[0], rows[1:]) if rows and not rows[0][-1].lstrip("-").isdigit() else (None, rows)
    kept_queries = list(dict.fromkeys(r[0] for r in rows))[: queries or None]
    rows = [r for r in rows if r[0] in set(kept_queries)]
    judged = {r[1] for r in rows}
    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    ids = [str(json.loads(line)["_id"]) for line in lines]
    others = [i for i, d in enumerate(ids) if d not in judged]
    keep = (
        set(range(len(lines)))
        if not documents
        else {i for i, d in enumerate(ids) if d in judged}
        | set(random.Random(0).sample(others, max(0, min(len(others), documents - len(judged)))))
    )
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(lines[i] + "\n" for i in sorted(keep)), encoding="utf-8")
    wanted = set(kept_queries)
    (out / "queries.jsonl").write_text(
        "".join(
            line + "\n"
            for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
            if str(json.loads(line)["_id"]) in wanted
        ),
        encoding="utf-8",
    )
    (out / "qrels" / f"{split}.tsv").write_text(
        "".join("\t".join(r) + "\n" for r in ([header] if header else []) + rows), encoding="utf-8"
    )
    return out


def compile_checkout(root: Path) -> str:
    """Compile the ``encodr`` package of the checkout at ``root`` to bytecode (its ``__pycache__``
    folders, ignored by git), as ``pip install`` does; the package's path."""
    import compileall

    package = root / "encodr"
    if not compileall.compile_dir(str(package), quiet=1):
        raise SystemExit(f"could not compile {package}")
    return str(package)
