"""Training throughput: encodr's Mirror-BERT loop versus the sentence-transformers
equivalent (SentenceTransformerTrainer + MultipleNegativesRankingLoss on (x, x) pairs),
same base model (bundled MiniLM), data, batch size, max length and τ (scale = 1/τ).

Each measurement runs in its own process; the first ``--warmup`` steps are not timed.
examples/s counts training strings (pairs), not views. On CUDA both use mixed precision
(bf16 where supported) and peak GPU memory is reported.

    python bench/train_speed.py                       # word and sentence recipes, CPU
    python bench/train_speed.py --recipes sentence    # one recipe

Prints a table and writes bench/results/train_speed[-cuda].json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

DATA = {"word": "words", "sentence": "wiki"}


def worker(kind: str, recipe_name: str, steps: int, warmup: int, device: str, model: str = "minilm") -> dict:
    import torch

    from encodr.data.bundled import default_corpus
    from encodr.methods import load_recipe

    recipe = load_recipe(recipe_name, {"pooling": "mean", "epochs": 100})
    strings = default_corpus(DATA[recipe_name]).strings[:10_000]
    times: list[float] = []
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    if kind == "encodr":
        from encodr.methods.mirror.method import mirror_stream
        from encodr.methods.mirror.views import tokenize
        from encodr.models import load_encoder
        from encodr.training import FitOptions, Trainer

        with Trainer(device, recipe.amp) as trainer:  # the trainer `encodr tune` uses, and its data stream
            enc = load_encoder(model, recipe.pooling, recipe.raw_pooling, recipe.max_length, trainer.device)
            ids, _ = tokenize(enc.tokenizer, strings, recipe.max_length)
            trainer.fit(
                enc.st,
                [mirror_stream(enc.tokenizer, ids, recipe)],
                recipe.optim(),
                FitOptions(on_step=lambda _step, _loss: times.append(time.perf_counter()), max_steps=steps),
            )
    else:
        from st_baseline import train_st_equivalent

        with tempfile.TemporaryDirectory() as tmp:
            train_st_equivalent(strings, recipe, tmp, max_steps=steps, step_times=times, device=device, model=model)
    timed = times[warmup:]
    seconds = timed[-1] - times[warmup - 1]
    result = {
        "impl": kind,
        "recipe": recipe_name,
        "batch_size": recipe.batch_size,
        "max_length": recipe.max_length,
        "timed_steps": len(timed),
        "seconds": seconds,
        "examples_per_s": len(timed) * recipe.batch_size / seconds,
    }
    if device == "cuda":
        result["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return result


# python -m bench run train_speed --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--recipes", "word", "--steps", "3", "--warmup", "1", "--out", "{tmp}/train_speed.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipes", nargs="+", default=["word", "sentence"], choices=list(DATA))
    parser.add_argument("--steps", type=int, default=12, help="steps per measurement, warm-up included")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument(
        "--model", default="minilm", help="base model spec for both implementations (bench/gpu.py passes a local copy)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="default: bench/results/train_speed.json (train_speed-cuda.json on a GPU)"
    )
    parser.add_argument("--worker", nargs=2, metavar=("IMPL", "RECIPE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.steps, args.warmup, device, args.model)))
        return
    rows = []
    for recipe in args.recipes:
        measured = {}
        for impl in ("encodr", "sentence-transformers"):
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                impl,
                recipe,
                "--steps",
                str(args.steps),
                "--warmup",
                str(args.warmup),
                "--device",
                device,
                "--model",
                args.model,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"worker {impl}/{recipe} failed:\n{proc.stderr[-3000:]}")
            measured[impl] = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(measured[impl])
            print(measured[impl], flush=True)
        ratio = measured["encodr"]["examples_per_s"] / measured["sentence-transformers"]["examples_per_s"]
        measured["encodr"]["ratio_vs_st"] = ratio
    columns = ["recipe", "impl", "batch_size", "max_length", "timed_steps", "examples_per_s", "ratio_vs_st"]
    if device == "cuda":
        columns.append("peak_mem_gib")
    print_table(f"encodr bench/train_speed.py ({device})", rows, columns)
    out = args.out or RESULTS / ("train_speed-cuda.json" if device == "cuda" else "train_speed.json")
    write_json(out, {"machine": machine(), "device": device, "rows": rows})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
