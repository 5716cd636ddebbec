"""Throughput on one GPU: encoding (what one encoding actor or one `encodr index` process
achieves) and training (encodr's trainer against sentence-transformers' on the same batch),
for the two offline base models' architectures. Run it on a machine with CUDA.

Two steps, because a GPU machine here has no internet and only 64 MiB travel with a call:

    python bench/gpu.py prepare .device/gpu        # here: configs, tokenizers, SciFact corpus, wheels list
    python bench/gpu.py run .device/gpu --out DIR  # there: builds the models, measures, writes DIR/gpu.json

**The weights are random** (``AutoModel.from_config`` with seed 0): the offline weights are
larger than what can travel. A forward or backward pass does the same arithmetic on the same
shapes whatever the weights, so texts/s and examples/s carry over to the real MiniLM and
multilingual-e5-small; losses, vectors and scores from these runs mean nothing and are not
reported. The tokenizers, configurations, data, batch sizes and code paths are the real ones.

Rows:

- ``encode``: texts/s and non-padding tokens/s of sentence-transformers' ``encode`` (sorted by
  length, batch B) in fp32, fp16 and bf16 weights, and of encodr's ``Encoder.encode`` (sorted
  by tokens, the path ``encodr index`` and ``encodr serve`` use), on the 17,534 bundled
  Wikipedia sentences and the 5,183 SciFact abstracts (title + text, truncated at the model's
  window). The first 2·B texts are encoded once before timing; ``torch.cuda.synchronize``
  brackets each timing. ``max|Δcos|`` compares each half-precision row's vectors with fp32's.
- ``train``: ``bench/train_speed.py`` (encodr's Mirror-BERT loop against
  SentenceTransformerTrainer + MNRL on (x, x) pairs) on CUDA with bf16 autocast, and MNRL on
  inverse-cloze pairs from SciFact (one sentence → the rest of its abstract, 256 tokens): the
  sentence-transformers anchor for a retrieval recipe.
- ``tune``: ``encodr tune --recipe sentence`` end to end on CUDA, in one process and under
  ``torchrun --nproc_per_node 1`` (nccl); the saved model must load with ``SentenceTransformer``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, print_table, write_json  # noqa: E402

ARCHES = ("minilm", "me5")
WEIGHTS = re.compile(r".*\.(safetensors|bin|pt|onnx)$")


def prepare(dest: Path) -> None:
    """Copy every file of each offline model except its weights, and the SciFact corpus."""
    from encodr.models import resolve

    for alias in ARCHES:
        src = resolve(alias).path
        shutil.rmtree(dest / alias, ignore_errors=True)
        shutil.copytree(src, dest / alias, ignore=lambda d, names: [n for n in names if WEIGHTS.match(n) or n == "onnx"])
    scifact = Path(__file__).resolve().parents[2] / "shared/data/retrieval/scifact/corpus.jsonl"
    shutil.copy(scifact, dest / "scifact.jsonl")
    print(f"prepared {dest}: {sorted(p.name for p in dest.iterdir())}")


def build(arch: Path, out: Path) -> Path:
    """A sentence-transformers folder with the architecture of ``arch`` and random weights."""
    import torch
    from transformers import AutoConfig, AutoModel

    shutil.copytree(arch, out, dirs_exist_ok=True)
    torch.manual_seed(0)
    AutoModel.from_config(AutoConfig.from_pretrained(arch)).save_pretrained(out)
    return out


def scifact_texts(path: Path) -> list[str]:
    docs = [json.loads(line) for line in path.open()]
    return [f"{d.get('title', '')} {d['text']}".strip() for d in docs]


def timed(fn) -> float:
    import torch

    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def encode_rows(models: dict[str, Path], sets: dict[str, list[str]], batches: list[int]) -> list[dict]:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from encodr.models import load_encoder

    rows = []
    for name, path in models.items():
        encoder = load_encoder(str(path), device="cuda")
        for set_name, texts in sets.items():
            tokens = int(encoder.token_lengths(texts).sum())
            reference = None
            for dtype_name, dtype in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
                st = SentenceTransformer(str(path), device="cuda", model_kwargs={"dtype": dtype})
                for b in batches:
                    st.encode(texts[: 2 * b], batch_size=b)
                    out = {}
                    seconds = timed(lambda: out.setdefault("v", st.encode(texts, batch_size=b, normalize_embeddings=True, convert_to_numpy=True)))
                    vectors = np.asarray(out["v"], dtype=np.float32)
                    if dtype_name == "fp32" and reference is None:
                        reference = vectors
                    delta = float(np.max(np.abs(np.sum(vectors * reference, axis=1) - 1))) if dtype_name != "fp32" else 0.0
                    rows.append({"model": name, "texts": set_name, "impl": "sentence-transformers", "dtype": dtype_name, "batch": b,
                                 "n": len(texts), "seconds": seconds, "texts_per_s": len(texts) / seconds, "tokens_per_s": tokens / seconds,
                                 "max_dcos": delta})  # fmt: skip
                    print(rows[-1], flush=True)
                st = None  # free its memory before the next dtype
            for dtype_name, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
                encoder.st.to(dtype)
                for b in batches:
                    encoder.encode(texts[: 2 * b], batch_size=b)
                    seconds = timed(lambda: encoder.encode(texts, batch_size=b))
                    rows.append({"model": name, "texts": set_name, "impl": "encodr Encoder", "dtype": dtype_name, "batch": b, "n": len(texts),
                                 "seconds": seconds, "texts_per_s": len(texts) / seconds, "tokens_per_s": tokens / seconds})  # fmt: skip
                    print(rows[-1], flush=True)
                encoder.st.to(torch.float32)
            torch.cuda.empty_cache()
    return rows


def profile_rows(models: dict[str, Path], sets: dict[str, list[str]], batch: int) -> list[dict]:
    """Where an encode's time goes: the tokenizer alone (the fast Rust tokenizer, batches of
    ``batch``, padded, as ``encode`` calls it) against the forward pass alone on tensors already
    on the GPU (sorted by length, so batches pad little), in each dtype."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    rows = []
    for name, path in models.items():
        st = SentenceTransformer(str(path), device="cuda")
        tokenizer, window = st.tokenizer, st.max_seq_length
        for set_name, texts in sets.items():
            lengths = np.array([len(t) for t in texts])
            ordered = [texts[i] for i in np.argsort(-lengths)]
            chunks = [ordered[i : i + batch] for i in range(0, len(ordered), batch)]
            start = time.perf_counter()
            features = [tokenizer(c, padding=True, truncation=True, max_length=window, return_tensors="pt") for c in chunks]
            tok_s = time.perf_counter() - start
            rows.append({"model": name, "texts": set_name, "stage": "tokenize (CPU, 1 process)", "fast_tokenizer": bool(tokenizer.is_fast),
                         "texts_per_s": len(texts) / tok_s})  # fmt: skip
            print(rows[-1], flush=True)
            on_gpu = [{k: v.to("cuda") for k, v in f.items()} for f in features]
            for dtype_name, dtype in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
                st.to(dtype)
                with torch.inference_mode():
                    st(dict(on_gpu[0]))
                    seconds = timed(lambda: [st(dict(f)) for f in on_gpu])
                rows.append({"model": name, "texts": set_name, "stage": f"forward (GPU, {dtype_name})", "texts_per_s": len(texts) / seconds})
                print(rows[-1], flush=True)
            st.to(torch.float32)
        st = None
        torch.cuda.empty_cache()
    return rows


def ict_pairs(texts: list[str], n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Inverse-cloze pairs: a random sentence of an abstract → the abstract without it."""
    import random

    rng = random.Random(seed)
    anchors, positives = [], []
    for text in texts:
        sentences = re.split(r"(?<=[.!?])\s+", text)
        if len(sentences) < 3:
            continue
        i = rng.randrange(len(sentences))
        anchors.append(sentences[i])
        positives.append(" ".join(sentences[:i] + sentences[i + 1 :]))
        if len(anchors) == n:
            break
    return anchors, positives


def ict_rows(model: Path, texts: list[str], batches: list[int], steps: int, warmup: int) -> list[dict]:
    """sentence-transformers' MNRL on inverse-cloze pairs, bf16, max length 256."""
    import tempfile

    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from transformers import TrainerCallback

    anchors, positives = ict_pairs(texts, 5_000)
    rows = []
    for b in batches:
        times: list[float] = []

        class Timer(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                times.append(time.perf_counter())

        st = SentenceTransformer(str(model), device="cuda")
        st.max_seq_length = 256
        torch.cuda.reset_peak_memory_stats()
        with tempfile.TemporaryDirectory() as tmp:
            args = SentenceTransformerTrainingArguments(output_dir=tmp, per_device_train_batch_size=b, max_steps=steps, learning_rate=2e-5,
                                                        lr_scheduler_type="constant", save_strategy="no", logging_strategy="no", report_to="none",
                                                        bf16=True, disable_tqdm=True)  # fmt: skip
            data = Dataset.from_dict({"anchor": anchors, "positive": positives})
            SentenceTransformerTrainer(model=st, args=args, train_dataset=data, loss=MultipleNegativesRankingLoss(st, scale=20.0),
                                       callbacks=[Timer()]).train()  # fmt: skip
        seconds = times[-1] - times[warmup - 1]
        rows.append({"recipe": "ICT pairs, 256 tokens", "impl": "sentence-transformers MNRL", "batch_size": b, "max_length": 256,
                     "timed_steps": len(times) - warmup, "examples_per_s": (len(times) - warmup) * b / seconds,
                     "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30})  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def tune_rows(model: Path, work: Path) -> list[dict]:
    """`encodr tune` end to end on CUDA, plain and under torchrun (1 process, nccl)."""
    from sentence_transformers import SentenceTransformer

    from encodr.data.bundled import default_corpus

    data = work / "wiki2k.txt"
    data.write_text("\n".join(default_corpus("wiki").strings[:2_000]) + "\n")
    rows = []
    launchers = {"python -m encodr": [sys.executable, "-m", "encodr"],
                 "torchrun --nproc_per_node 1": [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "1", "-m", "encodr"]}  # fmt: skip
    for label, launcher in launchers.items():
        out = work / re.sub(r"\W+", "-", label)
        cmd = [*launcher, "tune", str(data), "--recipe", "sentence", "--model", str(model), "--out", str(out), "--json"]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        row = {"launcher": label, "rc": proc.returncode, "seconds": seconds}
        if proc.returncode == 0:
            meta = json.loads((out / "encodr.json").read_text()) if (out / "encodr.json").is_file() else {}
            row.update({k: meta.get(k) for k in ("device", "precision", "processes", "steps", "examples_per_s") if k in meta})
            row["loads_with_SentenceTransformer"] = SentenceTransformer(str(out), device="cpu").get_sentence_embedding_dimension()
        else:
            row["stderr"] = proc.stderr[-1500:]
        rows.append(row)
        print(row, flush=True)
    return rows


def run(src: Path, out: Path, batches: list[int], steps: int, parts: list[str], recipes: list[str]) -> None:
    import torch

    work = Path("/tmp/encodr-gpu")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    models = {name: build(src / name, work / name) for name in ARCHES}
    from encodr.data.bundled import default_corpus

    sets = {"wiki sentences": list(default_corpus("wiki").strings), "SciFact abstracts": scifact_texts(src / "scifact.jsonl")}
    result = {"machine": machine(), "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "weights": "random (same arithmetic)"}
    result["encode"] = encode_rows(models, sets, batches) if "encode" in parts else []
    write_json(out / "gpu.json", result)
    result["profile"] = profile_rows(models, sets, 256) if "profile" in parts else []
    write_json(out / "gpu.json", result)
    result["tune"] = tune_rows(models["minilm"], work) if "tune" in parts else []
    write_json(out / "gpu.json", result)
    result["train"] = []
    if "train" in parts:
        train = subprocess.run([sys.executable, str(Path(__file__).parent / "train_speed.py"), "--device", "cuda", "--model", str(models["minilm"]),
                                "--steps", str(steps), "--recipes", *recipes], capture_output=True, text=True)  # fmt: skip
        print(train.stdout[-3000:], train.stderr[-3000:] if train.returncode else "", flush=True)
        cuda_json = Path(__file__).parent / "results" / "train_speed-cuda.json"
        result["train"] = json.loads(cuda_json.read_text())["rows"] if cuda_json.is_file() else []
        result["train"] += ict_rows(models["minilm"], sets["SciFact abstracts"], [64, 256], steps, 2)
        write_json(out / "gpu.json", result)
    write_json(out / "gpu.json", result)
    print_table(f"encoding on {result['gpu']} (random weights)", result["encode"],
                ["model", "texts", "impl", "dtype", "batch", "texts_per_s", "tokens_per_s", "max_dcos"])  # fmt: skip
    print_table(f"training on {result['gpu']} (random weights)", result["train"],
                ["recipe", "impl", "batch_size", "max_length", "examples_per_s", "ratio_vs_st", "peak_mem_gib"])  # fmt: skip
    print(json.dumps(result["tune"], indent=1))

QUICK = ["prepare", "{tmp}/gpu"]  # the step a machine without CUDA can run; `run` needs a GPU


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["prepare", "run"])
    parser.add_argument("folder", type=Path, help="what travels: configs, tokenizers, the SciFact corpus")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--parts", nargs="+", default=["encode", "profile", "train", "tune"], choices=["encode", "profile", "train", "tune"])
    parser.add_argument("--recipes", nargs="+", default=["word", "sentence"], help="bench/train_speed.py's recipes")
    parser.add_argument("--steps", type=int, default=22, help="training steps per row, 2 of them warm-up")
    args = parser.parse_args()
    if args.step == "prepare":
        args.folder.mkdir(parents=True, exist_ok=True)
        prepare(args.folder)
    else:
        os.environ.setdefault("TQDM_DISABLE", "1")
        run(args.folder, args.out, args.batches, args.steps, args.parts, args.recipes)


if __name__ == "__main__":
    main()
