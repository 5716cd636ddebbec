"""Render bench/results/*.json as the Markdown tables in the README.

    python bench/report.py
"""

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


def main() -> None:
    for name in ("quality.json", "quality-sentence.json"):
        if (RESULTS / name).exists():
            data = json.loads((RESULTS / name).read_text())
            print(f"\n{name}\n")
            print(table(data["rows"], ["job", "model", "pooling", "seed", "dev_task", "dev", "test_task", "test", "selected"]))
    if (RESULTS / "train_speed.json").exists():
        data = json.loads((RESULTS / "train_speed.json").read_text())
        print("\ntrain_speed.json\n")
        print(table(data["rows"], ["recipe", "impl", "batch_size", "max_length", "timed_steps", "examples_per_s", "ratio_vs_st"]))
    if (RESULTS / "search.json").exists():
        data = json.loads((RESULTS / "search.json").read_text())
        print("\nsearch.json\n")
        print(table(data["vector_search"] + [data["end_to_end"]], ["method", "vectors", "build_s", "p50_ms", "p99_ms", "recall@10"]))
    if (RESULTS / "tatoeba_pcr.json").exists():
        data = json.loads((RESULTS / "tatoeba_pcr.json").read_text())
        print("\ntatoeba_pcr.json\n")
        print(table(data["rows"], ["pair", "pairs", "acc@1", "acc@1 (pcr)", "Δ"]))
    if (RESULTS / "trans_encoder.json").exists():
        data = json.loads((RESULTS / "trans_encoder.json").read_text())
        for job, result in data["jobs"].items():
            print(f"\ntrans_encoder.json — {job}: {json.dumps(result['settings'])}\n")
            print(table(result["rows"], ["chain", "cycle", "model", "dev", "test"]))


if __name__ == "__main__":
    main()
