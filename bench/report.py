"""Tables pooled over several result files of the quality benchmark (its seeds, its dev sweeps in
``bench/results/sweeps/``), for tools/docs.py, which writes every page of docs/benchmarks/."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def fmt(v) -> str:
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def table(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def setting_of(overrides: dict) -> str:
    """A sweep file's recipe overrides as ``key=value …`` (empty: the paper settings). Every
    trial overrode the paper settings: all of them ran before ``recipes/word.yaml`` clipped at 1.0."""
    return " ".join(f"{k}={v}" for k, v in overrides.items())


def sweep_row(job: str, setting: str, r: dict, file: str = "") -> dict:
    """One row of the sweeps table from a quality.py result row ``r``."""
    return {
        "job": job,
        "setting": setting,
        "pooling": r["pooling"],
        "dev_task": r["dev_task"],
        "dev": r["dev"],
        "test_task": r["test_task"],
        "test": r["test"],
        "file": file,
    }


def sweeps() -> list[dict]:
    """One row per dev-set trial in results/sweeps/ (bench/quality.py --set … --out …), plus a
    mean row for each setting run with several seeds, after the base model and the paper settings
    (seed 42, mean pooling; and the word seeds' mean) from quality.json and quality-sentence.json."""
    rows: list[dict] = []
    reference = [
        r
        for name in ("quality.json", "quality-sentence.json")
        if (RESULTS / name).exists()
        for r in json.loads((RESULTS / name).read_text())["rows"]
    ]
    for job in ("word", "phrase", "sentence-stsb", "sentence-wiki"):
        base = next((r for r in reference if r["job"] == job and r["model"] == "base"), None)
        default = next(
            (
                r
                for r in reference
                if r["job"] == job and r["model"].startswith("encodr") and r["seed"] == 42 and r["pooling"] == "mean"
            ),
            None,
        )
        for label, r in (("base model", base), ("paper settings (main run)", default)):
            if r:
                rows.append(sweep_row(job, label, r))
        seeds_mean = next(
            (r for r in reference if r["job"] == job and r["model"].startswith("encodr") and r["model"].endswith("(mean)")), None
        )
        if seeds_mean:
            rows.append(sweep_row(job, f"paper settings (main run, mean of {seeds_mean['seed']})", seeds_mean))
        trials, groups = [], {}
        for path in sorted((RESULTS / "sweeps").glob(f"{job}-*.json")):
            data = json.loads(path.read_text())
            tuned = next(r for r in data["rows"] if r["model"].startswith("encodr"))
            setting = setting_of(data["overrides"]) or "paper settings"
            setting += " (traced)" if "dev_trace" in tuned else ""
            trials.append(sweep_row(job, setting, tuned, path.name))
            unseeded = setting_of({k: v for k, v in data["overrides"].items() if k != "seed"})
            groups.setdefault((tuned["pooling"], unseeded), []).append(trials[-1])
        for (_, setting), group in groups.items():  # one more row per setting run with several seeds
            if len(group) > 1:
                mean = {k: sum(r[k] for r in group) / len(group) for k in ("dev", "test")}
                trials.append(sweep_row(job, f"{setting} (mean of {len(group)} seeds)", {**group[0], **mean}))
        rows += sorted(trials, key=lambda r: -r["dev"])
    return rows


def word_seeds() -> list[dict]:
    """Encodr vs the sentence-transformers equivalent over every seed run with the shipped word
    recipe: quality-word.json (seeds 42-44) and quality-word-seeds45-46.json (42 again, 45, 46).
    A seed run twice counts once (both runs gave the same numbers)."""
    import statistics

    runs: dict[str, dict[int, dict]] = {}
    for name in ("quality-word.json", "quality-word-seeds45-46.json"):
        if (RESULTS / name).exists():
            for r in json.loads((RESULTS / name).read_text())["rows"]:
                if r["job"] == "word" and r["pooling"] == "mean" and isinstance(r["seed"], int) and r["model"] != "base":
                    runs.setdefault(r["model"], {})[r["seed"]] = r
    rows = []
    for model, by_seed in runs.items():
        tests = [r["test"] for r in by_seed.values()]
        rows.append(
            {
                "model": model,
                "seeds": " ".join(map(str, sorted(by_seed))),
                "dev (wordsim353)": statistics.mean(r["dev"] for r in by_seed.values()),
                "test (simlex999)": statistics.mean(tests),
                "test sd": statistics.stdev(tests),
                "test min": min(tests),
                "test max": max(tests),
            }
        )
    return rows


def traces() -> tuple[list[dict], list[str]]:
    """Dev score every N steps (bench/quality.py --trace-every N), one column per traced file,
    named by job, pooling, dev task and overrides (so two traces of one job never share a column)."""
    columns, by_step = [], {}
    for path in sorted((RESULTS / "sweeps").glob("*.json")):
        data = json.loads(path.read_text())
        for r in data["rows"]:
            if "dev_trace" in r:
                name = " ".join(filter(None, (r["job"], r["pooling"], r["dev_task"], setting_of(data["overrides"]))))
                columns.append(name)
                for point in r["dev_trace"]:
                    by_step.setdefault(point["step"], {"step": point["step"]})[name] = point["dev"]
    return [by_step[k] for k in sorted(by_step)], ["step", *columns]
