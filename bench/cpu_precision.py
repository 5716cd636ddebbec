"""CPU encoding precision: texts/s and quality of fp32, bf16 and int8 on this CPU, side by side
in one run, with the CPU's flags printed (bf16 is fast only where the CPU has AVX512-BF16 or
AMX; elsewhere oneDNN emulates it).

Rows, all on the same model and texts:

- ``torch fp32``: encodr's forward pass as shipped (``--backend torch``);
- ``torch bf16 autocast``: ``--backend torch-bf16``, the same pass under
  ``torch.autocast("cpu", dtype=torch.bfloat16)`` (weights fp32, matrix products in bf16);
- ``torch bf16 weights``: the model cast to bf16 (``st.to(torch.bfloat16)``), pooled vectors
  back in fp32;
- ``onnx fp32`` and ``onnx-int8``: onnxruntime (``--backend onnx`` / ``onnx-int8``; its CPU
  provider has no bf16 kernels for these graphs, so there is no onnxruntime bf16 row);
- ``openvino``: the float32 export in OpenVINO (``--backend openvino``), in the precision it
  chooses on this CPU (bf16 with AMX or AVX512-BF16, else fp32), where OpenVINO is installed.

For each: texts/s encoding ``--texts`` Wikipedia sentences (the best of ``--repeats`` passes,
the configurations interleaved within each round so drifting machine load hits all of them), the
mean cosine to the fp32 vectors, and Spearman ρ×100 on STS-B dev (the split a decision may use)
and test (reported, never chosen on).

    python bench/cpu_precision.py                 # 5,000 sentences, 2 rounds
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, machine, print_table, write_json  # noqa: E402

CONFIGS = ("torch fp32", "torch bf16 autocast", "torch bf16 weights", "onnx fp32", "onnx-int8", "openvino")


def cpu_flags() -> list[str]:
    """The CPU flags that matter for bf16 and int8, of those :func:`encodr.models.encoder.cpu_flags` reads (empty elsewhere
    than Linux)."""
    from encodr.models.encoder import cpu_flags as flags

    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8")
    return [f for f in flags() if f in wanted]


def encoders(model: str) -> dict:
    """Each configuration: (encoder, context manager factory the encoding runs in)."""
    import torch

    from encodr.models import load_encoder
    from encodr.models.encoder import openvino_available

    fp32 = load_encoder(model, device="cpu")
    weights = load_encoder(model, device="cpu")
    weights.st.to(torch.bfloat16)
    configs = {
        "torch fp32": (fp32, contextlib.nullcontext),
        # encodr's own torch-bf16 backend (its autocast is the encoder's: an outer one would be switched off inside it)
        "torch bf16 autocast": (load_encoder(model, device="cpu", backend="torch-bf16"), contextlib.nullcontext),
        "torch bf16 weights": (weights, contextlib.nullcontext),
        "onnx fp32": (load_encoder(model, backend="onnx"), contextlib.nullcontext),
        "onnx-int8": (load_encoder(model, backend="onnx-int8"), contextlib.nullcontext),
    }
    if openvino_available():
        configs["openvino"] = (load_encoder(model, backend="openvino"), contextlib.nullcontext)
    return configs


# python -m bench run cpu_precision --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--texts", "64", "--repeats", "1", "--out", "{tmp}/cpu_precision.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--texts", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "cpu_precision.json")
    args = parser.parse_args()

    from encodr.evaluation import dev_set
    from encodr.paths import bundled

    texts = [t for t in bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines() if t.strip()][: args.texts]
    configs = encoders(args.model)
    for encoder, context in configs.values():  # warm-up: first-call costs (kernels, sessions) out of the timings
        with context():
            encoder.encode(texts[:256])
    speed = {name: 0.0 for name in configs}
    vectors = {}
    for _ in range(args.repeats):
        for name, (encoder, context) in configs.items():
            with context():
                started = time.perf_counter()
                vectors[name] = encoder.encode(texts)
                speed[name] = max(speed[name], len(texts) / (time.perf_counter() - started))
            print(f"{name}: {speed[name]:.1f} texts/s", flush=True)
    rows = []
    sets = {split: dev_set(f"stsb-{split}") for split in ("dev", "test")}
    for name, (encoder, context) in configs.items():
        with context():
            rho = {split: s.score(encoder) for split, s in sets.items()}
        cosine = float(np.mean(np.sum(vectors[name] * vectors["torch fp32"], axis=1)))
        rows.append(
            {
                "config": name,
                "texts_per_s": speed[name],
                "vs_fp32": speed[name] / speed["torch fp32"],
                "cosine_to_fp32": cosine,
                "stsb_dev": rho["dev"],
                "stsb_test": rho["test"],
            }
        )
    flags = cpu_flags()
    shown = [{**row, "cosine_to_fp32": f"{row['cosine_to_fp32']:.5f}"} for row in rows]
    print_table(
        f"CPU encoding precision ({args.model}, {len(texts):,} Wikipedia sentences; CPU flags: {' '.join(flags) or 'unknown'})",
        shown,
        ["config", "texts_per_s", "vs_fp32", "cosine_to_fp32", "stsb_dev", "stsb_test"],
    )
    write_json(
        args.out,
        {
            "machine": {**machine(), "cpu_flags": flags},
            "model": args.model,
            "texts": len(texts),
            "repeats": args.repeats,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
