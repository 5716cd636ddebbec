"""Which forward pass ``auto`` should take on a CPU: ``Encoder.encode``'s texts/s with each backend
on the same texts and cores, beside sentence-transformers' own ``encode`` (the anchor), in one
run, with the CPU's flags and the backend :func:`encodr.models.encoder.choose_backend` picks there.

Each row encodes the same bundled Wikipedia sentences (sorted by length inside ``encode``, the
encoder's own batch size) on ``--cores`` cores (the process is pinned to the first ones and each
backend runs on that many threads); the figure is the best of ``--repeats`` passes after a
warm-up, and each backend's vectors are compared with the torch ones (mean cosine). The ONNX
export of the first onnx row is timed apart and not counted.

``--random-weights DIR`` takes a model folder's config and tokenizer (no weights needed) and
gives the model random weights: the speed is the same as the trained model's, for a machine the
model cannot be copied to. Its vectors mean nothing, so only speed and agreement are read.

    python bench/backend_choice.py                                   # minilm, 2 cores
    python bench/backend_choice.py --random-weights cfg/ --cores 2   # a machine without the model
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402

BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8")


def random_model(config_dir: Path, out: Path) -> Path:
    """A SentenceTransformer folder at ``out``: ``config_dir``'s transformer config and tokenizer
    with random weights (seed 0), mean pooling, normalised."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(0)
    raw = out.with_name(out.name + "-raw")
    shutil.copytree(config_dir, raw, dirs_exist_ok=True)
    AutoModel.from_config(AutoConfig.from_pretrained(raw)).save_pretrained(raw)
    first = Transformer(str(raw))
    SentenceTransformer(modules=[first, Pooling(first.get_embedding_dimension(), "mean"), Normalize()], device="cpu").save(
        str(out)
    )
    return out


def best_rate(encode, texts: list[str], repeats: int) -> tuple[float, np.ndarray]:
    """(texts/s of the best of ``repeats`` passes after a warm-up of 256 texts, the last pass's vectors)."""
    encode(texts[:256])
    best, vectors = 0.0, None
    for _ in range(repeats):
        started = time.perf_counter()
        vectors = encode(texts)
        best = max(best, len(texts) / (time.perf_counter() - started))
    return best, np.asarray(vectors, dtype=np.float32)


# python -m bench run backend_choice --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--limit", "300", "--repeats", "1", "--backends", "torch", "--out", "{tmp}/backend_choice.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument(
        "--random-weights", type=Path, help="a model folder's config and tokenizer, given random weights (instead of --model)"
    )
    parser.add_argument("--cores", type=int, default=2, help="cores the process is pinned to, and each backend's threads")
    parser.add_argument("--limit", type=int, default=3000, help="the first N bundled Wikipedia sentences")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--out", type=Path, default=RESULTS / "backend_choice.json")
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.cores])
    work = Path(tempfile.mkdtemp(prefix="encodr-backends-"))
    os.environ.setdefault("ENCODR_HOME", str(work / "home"))  # the ONNX exports: not the user's cache
    try:
        from encodr.models import load_encoder
        from encodr.models.encoder import choose_backend
        from encodr.paths import bundled

        model = str(random_model(args.random_weights, work / "model")) if args.random_weights else args.model
        texts = [t for t in bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines() if t.strip()][
            : args.limit
        ]
        rows, reference = [], None
        first = load_encoder(model, device="cpu", backend="torch")
        st = first.st  # the same SentenceTransformer, through its own encode
        st.eval()
        first.use_threads(args.cores)
        rate, reference = best_rate(
            lambda batch: st.encode(batch, batch_size=32, normalize_embeddings=True, show_progress_bar=False), texts, args.repeats
        )
        rows.append(
            {
                "backend": "anchor: sentence-transformers encode (torch)",
                "texts_per_s": round(rate, 1),
                "x_anchor": 1.0,
                "mean_cos_to_torch": 1.0,
                "export_s": None,
            }
        )
        anchor = rate
        for backend in args.backends:
            started = time.perf_counter()
            encoder = first if backend == "torch" else load_encoder(model, device="cpu", backend=backend)
            encoder.encode(texts[:8])  # the export, for an ONNX backend
            export = time.perf_counter() - started
            encoder.use_threads(args.cores)
            rate, vectors = best_rate(encoder.encode, texts, args.repeats)
            cosine = float(np.mean(np.sum(vectors * reference, axis=1)))
            rows.append(
                {
                    "backend": backend,
                    "texts_per_s": round(rate, 1),
                    "x_anchor": round(rate / anchor, 2),
                    "mean_cos_to_torch": round(cosine, 5),
                    "export_s": round(export, 1) if backend.startswith("onnx") else None,
                }
            )
            print(rows[-1], flush=True)
        pick = choose_backend("auto", "cpu")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    flags = cpu_flags()
    print_table(
        f"Encoder.encode, {len(texts)} sentences, {args.cores} cores (flags: {', '.join(flags) or 'none'}); auto picks {pick}",
        rows,
        ["backend", "texts_per_s", "x_anchor", "mean_cos_to_torch", "export_s"],
    )
    write_json(
        args.out,
        {
            "machine": machine(),
            "cpu_flags": flags,
            "cores": args.cores,
            "model": "random weights, " + args.random_weights.name if args.random_weights else args.model,
            "texts": len(texts),
            "auto_picks": pick,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
