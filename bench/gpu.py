"""Throughput on one GPU: encoding (what one encoding actor or one `encodr index` process
achieves) and training (encodr's trainer against sentence-transformers' on the same batch),
for the two offline base models' architectures. Run it on a machine with CUDA.

Two steps, because a GPU machine here has no internet and only 64 MiB travel with a call:

    python bench/gpu.py prepare .device/gpu        # here: configs, tokenizers, SciFact corpus
    python bench/gpu.py run .device/gpu --out DIR  # there: builds the models, measures, writes DIR/gpu_pipeline.json
    python bench/gpu.py half .device/gpu --limit 400  # here: float16 against float32 with the real weights (gpu_half.json)

**The weights are random** (``AutoModel.from_config`` with seed 0): the offline weights are
larger than what can travel. A forward or backward pass does the same arithmetic on the same
shapes whatever the weights, so texts/s and examples/s carry over to the real MiniLM and
multilingual-e5-small; losses, vectors and scores from these runs mean nothing and are not
reported. The tokenizers, configurations, data, batch sizes and code paths are the real ones.

Rows of ``--parts pipeline`` (the default; ``gpu_pipeline.json``), for MiniLM's and me5's
architectures on the 17,534 bundled Wikipedia sentences and the 5,183 SciFact abstracts, each
timed on its second call (the first warms every shape the data makes, as a long index would):

- sentence-transformers' ``encode`` in fp32 at its default batch of 32 and at 256 (the anchor:
  what a plain script gets), and in fp16 weights at 256 (not with ``--lean``);
- encodr's ``Encoder.encode`` on the GPU: the pipeline of ``encodr.models.pipeline``
  (tokenizer processes ahead of the GPU, batches of a token budget, float16 where the first
  batch's vectors keep cosine ≥ 0.999 of float32's), and the same pipeline timed inside
  (seconds waiting for the tokenizer, launching, landing the vectors; padding share);
  without ``--lean`` also other token budgets, the tokenizer in the calling thread, and the
  path before the pipeline (one tokenizer call, batches of 256 padded on the calling thread, fp32);
- the tokenizer processes alone, and the forward pass alone on the pipeline's own batches
  already on the GPU, in its precision and in fp32: the ceiling;
- a summary: the pipeline against sentence-transformers' best fp32 batch and against the ceiling.

Rows of ``--parts index`` (``gpu_index.json``): ``encodr index FILE`` as a whole process on the
GPU against a sentence-transformers script (load, ``encode`` at batch 32 and 256, ``np.save``),
on the same sets, one text a line; and the build's own seconds. It needs encodr's dependencies
on the GPU machine (bench/notes/gpu.md says what travelled).

Rows of the first run's parts (``--parts encode profile train tune``; ``gpu.json``):

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
DEVICE = "cuda"  # the pipeline rows' device (a CPU only to try the script: --device cpu)
LEAN = False  # --lean: only sentence-transformers fp32 and the pipeline at its defaults, its ceiling and its tokenizer
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


# encodr's dependencies that the lent GPU machines' image lacks (bench/notes/gpu.md), as wheels for
# its Python 3.12; lingua and wordfreq travel as a stand-in and an English-only copy instead
DEVICE_WHEELS = (
    "faiss-cpu", "pydantic", "pydantic_core", "annotated-types", "typing-inspection", "PyStemmer",
    "semantic-text-splitter", "sqlite-utils", "sqlite-fts4", "click-default-group", "datasets", "dill",
    "multiprocess", "langcodes", "ftfy", "wcwidth", "sniffio", "bm25s", "locate",
)  # fmt: skip
DEVICE_MARK = ".encodr-device"  # the device step replaces only a folder holding this file
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def device_folders(dest: Path) -> None:
    """Two folders for two calls of the device tool (each carries at most 64 MiB with the
    repository): ``dest/a``, the real MiniLM with float16 weights and SciFact's corpus (gzip),
    queries and train judgments, which the first call unpacks into ``/root/stash`` (float32
    again); ``dest/b``, the wheels of :data:`DEVICE_WHEELS` at this environment's versions, the
    lingua stand-in and wordfreq's English lists, :func:`prepare`'s model folders and
    ``run.sh``, which the second call runs while the machine is still warm. ``dest`` is replaced
    only where this step wrote it (:data:`DEVICE_MARK`); any other existing folder is refused."""
    import gzip
    import importlib.metadata as metadata

    import wordfreq
    from safetensors.torch import load_file, save_file

    from encodr.models import resolve

    here, data = Path(__file__).resolve().parent, Path(__file__).resolve().parents[2] / "shared/data/retrieval/scifact"
    if dest.exists() and not (dest / DEVICE_MARK).is_file():
        sys.exit(f"{dest} exists and was not written by this step: name a new folder (it is replaced on each run)")
    shutil.rmtree(dest, ignore_errors=True)
    minilm, stubs = dest / "a" / "minilm", dest / "b" / "stubs"
    shutil.copytree(resolve("minilm").path, minilm, ignore=lambda d, names: [n for n in names if WEIGHTS.match(n) or n == "onnx"])
    weights = load_file(str(resolve("minilm").path / "model.safetensors"))
    save_file(
        {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in weights.items()},
        str(minilm / "model.safetensors"),
    )
    (dest / "a" / "scifact" / "qrels").mkdir(parents=True)
    (dest / "a" / "scifact" / "corpus.jsonl.gz").write_bytes(gzip.compress((data / "corpus.jsonl").read_bytes()))
    shutil.copy(data / "queries.jsonl", dest / "a" / "scifact")
    shutil.copy(data / "qrels" / "train.tsv", dest / "a" / "scifact" / "qrels")
    specs = [f"{name}=={metadata.version(name)}" for name in DEVICE_WHEELS]
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
         "--implementation", "cp", *platforms, "-d", str(dest / "b" / "whl"), *specs],
        check=True,
    )  # fmt: skip
    (stubs / "lingua").mkdir(parents=True)
    shutil.copy(here / "device" / "lingua_english.py", stubs / "lingua" / "__init__.py")
    source = Path(wordfreq.__file__).parent
    shutil.copytree(
        source,
        stubs / "wordfreq",
        ignore=lambda d, names: [n for n in names if n == "__pycache__" or (Path(d).name == "data" and "_en." not in n)],
    )
    prepare(dest / "b" / "gpu")
    (dest / "b" / "gpu" / "scifact.jsonl").unlink()  # the first call carries it, compressed
    shutil.copy(here / "device" / "run.sh", dest / "b" / "run.sh")
    (dest / DEVICE_MARK).write_text("written by python bench/gpu.py device; replaced on each run\n")
    sizes = {part: sum(f.stat().st_size for f in (dest / part).rglob("*") if f.is_file()) / 2**20 for part in ("a", "b")}
    print(f"prepared {dest}: a {sizes['a']:.1f} MiB, b {sizes['b']:.1f} MiB (each with the repository: at most 64 MiB a call)")


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


def steady(fn) -> float:
    """Seconds of ``fn``'s second call (:func:`timed`): the first one warms every shape the
    data makes (kernel choices, the caching allocators' blocks), as a long run would be."""
    fn()
    return timed(fn)


def timed(fn) -> float:
    import torch

    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    start = time.perf_counter()
    fn()
    sync()
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
                    seconds = timed(
                        lambda: out.setdefault(
                            "v", st.encode(texts, batch_size=b, normalize_embeddings=True, convert_to_numpy=True)
                        )
                    )
                    vectors = np.asarray(out["v"], dtype=np.float32)
                    if dtype_name == "fp32" and reference is None:
                        reference = vectors
                    delta = float(np.max(np.abs(np.sum(vectors * reference, axis=1) - 1))) if dtype_name != "fp32" else 0.0
                    rows.append(
                        {
                            "model": name,
                            "texts": set_name,
                            "impl": "sentence-transformers",
                            "dtype": dtype_name,
                            "batch": b,
                            "n": len(texts),
                            "seconds": seconds,
                            "texts_per_s": len(texts) / seconds,
                            "tokens_per_s": tokens / seconds,
                            "max_dcos": delta,
                        }
                    )
                    print(rows[-1], flush=True)
                st = None  # free its memory before the next dtype
            for dtype_name, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
                encoder.st.to(dtype)
                for b in batches:
                    encoder.encode(texts[: 2 * b], batch_size=b)
                    seconds = timed(lambda: encoder.encode(texts, batch_size=b))
                    rows.append(
                        {
                            "model": name,
                            "texts": set_name,
                            "impl": "encodr Encoder",
                            "dtype": dtype_name,
                            "batch": b,
                            "n": len(texts),
                            "seconds": seconds,
                            "texts_per_s": len(texts) / seconds,
                            "tokens_per_s": tokens / seconds,
                        }
                    )
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
            rows.append(
                {
                    "model": name,
                    "texts": set_name,
                    "stage": "tokenize (CPU, 1 process)",
                    "fast_tokenizer": bool(tokenizer.is_fast),
                    "texts_per_s": len(texts) / tok_s,
                }
            )
            print(rows[-1], flush=True)
            on_gpu = [{k: v.to("cuda") for k, v in f.items()} for f in features]
            for dtype_name, dtype in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
                st.to(dtype)
                with torch.inference_mode():
                    st(dict(on_gpu[0]))
                    seconds = timed(lambda: [st(dict(f)) for f in on_gpu])
                rows.append(
                    {
                        "model": name,
                        "texts": set_name,
                        "stage": f"forward (GPU, {dtype_name})",
                        "texts_per_s": len(texts) / seconds,
                    }
                )
                print(rows[-1], flush=True)
            st.to(torch.float32)
        st = None
        torch.cuda.empty_cache()
    return rows


def st_anchor(path: Path, texts: list[str], tokens: int, label: dict) -> tuple[list[dict], "np.ndarray"]:  # noqa: F821
    """sentence-transformers' ``encode`` as a plain script calls it (fp32, its default batch of
    32, and 256) and in fp16 weights at 256; the fp32 vectors at 256 are the reference."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    rows, reference = [], None
    for dtype_name, dtype, b in (("fp32", torch.float32, 32), ("fp32", torch.float32, 256), ("fp16", torch.float16, 256))[
        : 2 if LEAN else 3
    ]:
        st = SentenceTransformer(str(path), device=DEVICE, model_kwargs={"dtype": dtype})
        out = {}
        seconds = steady(
            lambda st=st, b=b: out.__setitem__(
                "v", st.encode(texts, batch_size=b, normalize_embeddings=True, convert_to_numpy=True)
            )
        )
        vectors = np.asarray(out["v"], dtype=np.float32)
        reference = vectors if reference is None and b == 256 else reference
        rows.append(
            {
                **label,
                "impl": "sentence-transformers encode",
                "dtype": dtype_name,
                "batch": str(b),
                "texts_per_s": len(texts) / seconds,
                "tokens_per_s": tokens / seconds,
                "max_dcos": max_dcos(vectors, reference),
            }
        )
        print(rows[-1], flush=True)
        del st
    return rows, reference


def max_dcos(vectors, reference) -> float | None:
    """The largest 1 − cos between rows of two float32 (N, d) arrays of unit vectors (None without a reference)."""
    import numpy as np

    return None if reference is None else float(np.max(np.abs(1 - np.sum(vectors * reference, axis=1))))


def encodr_rows(path: Path, texts: list[str], tokens: int, label: dict, reference, budgets: list[int]) -> list[dict]:
    """``Encoder.encode`` on the GPU: the pipeline (``encodr.models.pipeline``) at each token
    budget and with its tokenizer in the calling thread, the path before it (one tokenizer call up front, each
    batch of 256 padded on the calling thread, fp32), the tokenizer alone, and the
    forward pass alone on the pipeline's own batches already on the GPU (the ceiling)."""
    import numpy as np

    from encodr.models import load_encoder
    from encodr.models.pipeline import TOKEN_BUDGET, TokenizerPool, encode_pipelined

    encoder = load_encoder(str(path), device=DEVICE)
    encoder.encode(texts[:4096])  # warm-up; the first batch decides float16 (TorchForward.on_device)
    forward, dtype = encoder.forward, "fp16" if encoder.forward.half else "fp32"
    pool = encoder._gpu_pool() or TokenizerPool(encoder.st.tokenizer, encoder.max_length)  # the second: a trial on a CPU
    rows = [{**label, "impl": "encodr: float16 check", "dtype": dtype, "half_cosine": forward.half_cosine}]

    def row(impl: str, seconds: float, **extra) -> dict:
        rows.append({**label, "impl": impl, "texts_per_s": len(texts) / seconds, "tokens_per_s": tokens / seconds, **extra})
        print(rows[-1], flush=True)
        return rows[-1]

    out, stats = {}, {}
    row(
        "encodr pipeline (Encoder.encode)",
        steady(lambda: out.__setitem__("v", encoder.encode(texts))),
        dtype=dtype,
        batch=f"{TOKEN_BUDGET} tokens",
        workers=pool.workers,
        max_dcos=max_dcos(out["v"], reference),
    )
    buffer = np.empty_like(out["v"])
    seconds = timed(lambda: encode_pipelined(forward, pool, texts, buffer, stats=stats))  # warm: the row above
    row(
        "encodr pipeline, timed inside",
        seconds,
        dtype=dtype,
        batch=f"{TOKEN_BUDGET} tokens",
        workers=pool.workers,
        **{f"{k}_s": v for k, v in stats.items() if k in ("waiting", "launching", "landing")},
        padding_share=1 - stats["tokens"] / stats["padded"],
    )
    for budget in [] if LEAN else budgets:
        buffer = np.empty_like(out["v"])
        row(
            "encodr pipeline",
            steady(lambda: encode_pipelined(forward, pool, texts, buffer, budget=budget)),
            dtype=dtype,
            batch=f"{budget} tokens",
            workers=pool.workers,
        )
    inline = TokenizerPool(encoder.st.tokenizer, encoder.max_length, workers=0, pin=DEVICE == "cuda")
    buffer = np.empty_like(out["v"])
    if not LEAN:
        row(
            "encodr pipeline",
            steady(lambda: encode_pipelined(forward, inline, texts, buffer)),
            dtype=dtype,
            batch=f"{TOKEN_BUDGET} tokens",
            workers=0,
        )
    ceiling_rows(encoder, pool, texts, tokens, row)
    pool.close()
    encoder._gpu_pool = lambda: None  # the path before the pipeline: Encoder.encode's CPU loop, fp32
    if not LEAN:
        row(
            "encodr before (one tokenizer call, fp32)",
            steady(lambda: encoder.encode(texts, batch_size=256)),
            dtype="fp32",
            batch="256",
            workers=0,
        )
    return rows


def ceiling_rows(encoder, pool, texts: list[str], tokens: int, row) -> None:
    """The tokenizer alone (in the calling thread, and in the encoder's worker processes), the padding left in the batches, and
    the forward pass alone on those batches already on the GPU, in the pipeline's precision and
    in fp32 (each a row through ``row``)."""
    from encodr.models.pipeline import TokenizerPool

    inline = TokenizerPool(encoder.st.tokenizer, encoder.max_length, workers=0, pin=DEVICE == "cuda")
    for tokenizer in (pool,) if LEAN else (inline, pool):  # the pool is warm: Encoder.encode started it
        row("tokenizer alone", timed(lambda: sum(1 for _ in tokenizer.batches(texts))), workers=tokenizer.workers)
    batches = list(pool.batches(texts))
    padded = sum(b.stacked[0].numel() for b in batches)
    on_gpu = [b.on(DEVICE) for b in batches]
    forward, half = encoder.forward, encoder.forward.half
    for dtype_name, use_half in ({("fp16" if half else "fp32"): half, "fp32": False}).items():
        forward.half = use_half
        with forward.on_device_mode():
            forward.on_device(on_gpu[0])
            row(
                "forward alone (ceiling)",
                timed(lambda: [forward.on_device(f) for f in on_gpu]),
                dtype=dtype_name,
                padding_share=1 - tokens / padded,
            )
    forward.half = half


def pipeline_rows(models: dict[str, Path], sets: dict[str, list[str]], budgets: list[int], save) -> tuple[list[dict], list[dict]]:
    """Every row of :func:`st_anchor` and :func:`encodr_rows` for each model and text set, and
    a summary per pair: the pipeline against sentence-transformers and the ceiling (``save``
    called with both after each pair)."""
    from encodr.models import load_encoder

    rows, summary = [], []
    for name, path in models.items():
        counter = load_encoder(str(path), device="cpu")
        for set_name, texts in sets.items():
            label = {"model": name, "texts": set_name}
            tokens = int(counter.token_lengths(texts).sum())
            st, reference = st_anchor(path, texts, tokens, label)
            mine = encodr_rows(path, texts, tokens, label, reference, budgets)
            rows += st + mine
            best_st = max(r["texts_per_s"] for r in st if r["dtype"] == "fp32")
            pipeline = next(r for r in mine if r["impl"] == "encodr pipeline (Encoder.encode)")
            ceiling = next(r for r in mine if r["impl"] == "forward alone (ceiling)")
            tokenizer = max(r["texts_per_s"] for r in mine if r["impl"] == "tokenizer alone")
            summary.append(
                {
                    **label,
                    "st fp32 (best batch)": best_st,
                    "encodr": pipeline["texts_per_s"],
                    "x st": pipeline["texts_per_s"] / best_st,
                    "ceiling": ceiling["texts_per_s"],
                    "of ceiling": pipeline["texts_per_s"] / ceiling["texts_per_s"],
                    "tokenizer alone": tokenizer,
                    "max_dcos": pipeline["max_dcos"],
                }
            )
            print(summary[-1], flush=True)
            save(rows, summary)
    return rows, summary


ST_SCRIPT = """
import sys
import numpy as np
from sentence_transformers import SentenceTransformer
texts = [t for t in open(sys.argv[2], encoding="utf-8").read().splitlines() if t.strip()]
model = SentenceTransformer(sys.argv[1], device=sys.argv[5])
vectors = model.encode(texts, batch_size=int(sys.argv[4]), normalize_embeddings=True)
np.save(sys.argv[3], vectors)
"""


def process_seconds(command: list[str]) -> tuple[float, str]:
    """Wall seconds of ``command`` as a fresh process, from its start to its exit, and its stdout
    (raises ``RuntimeError`` with its stderr's end when it fails)."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{command[:4]} failed: {done.stderr[-2000:]}")
    return seconds, done.stdout


def index_rows(models: dict[str, Path], sets: dict[str, list[str]], work: Path, rounds: int, save) -> list[dict]:
    """``encodr index FILE`` as a whole process on the GPU (``auto``: torch, the pipeline of
    :mod:`encodr.models.pipeline`) against a script that loads the model with
    sentence-transformers on the GPU and calls ``encode`` (fp32, batch 32 and 256), its vectors
    saved with ``np.save``: the fixed costs (imports, CUDA start, model load, SQLite, FAISS,
    the keyword index) and the encoding together, in one run, configurations interleaved per
    round; the best of ``rounds`` each. ``encodr build (own seconds)`` is the build's own
    ``seconds`` (from ``--json``: reading to the settled index, without the imports and the
    model load). ``save(rows)`` is called after each model and text set."""
    rows = []
    for name, path in models.items():
        for set_name, texts in sets.items():
            corpus = work / f"{name}-{len(texts)}.txt"
            corpus.write_text("\n".join(" ".join(t.split()) for t in texts) + "\n", encoding="utf-8")
            runs: dict[str, list[float]] = {}
            built: dict = {}
            for r in range(rounds):
                for batch in (32, 256):
                    cmd = [sys.executable, "-c", ST_SCRIPT, str(path), str(corpus), str(work / "st.npy"), str(batch), DEVICE]
                    runs.setdefault(f"st script (batch {batch})", []).append(process_seconds(cmd)[0])
                out = work / f"index-{name}-{r}"
                shutil.rmtree(out, ignore_errors=True)
                seconds, stdout = process_seconds(
                    [sys.executable, "-m", "encodr", "index", str(corpus), "--out", str(out), "--model", str(path), "--json"]
                )
                runs.setdefault("encodr index", []).append(seconds)
                built = json.loads(stdout)
                runs.setdefault("encodr build (own seconds)", []).append(float(built["seconds"]))
            best_st = min(min(v) for k, v in runs.items() if k.startswith("st script"))
            for impl, seconds in runs.items():
                rows.append(
                    {
                        "model": name,
                        "texts": set_name,
                        "n": len(texts),
                        "impl": impl,
                        "seconds": min(seconds),
                        "all_seconds": [round(s, 2) for s in seconds],
                        "texts_per_s": len(texts) / min(seconds),
                        "x st script": best_st / min(seconds),
                        "vectors": built.get("count") if impl.startswith("encodr") else len(texts),
                    }
                )
                print(rows[-1], flush=True)
            save(rows)
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
            args = SentenceTransformerTrainingArguments(
                output_dir=tmp,
                per_device_train_batch_size=b,
                max_steps=steps,
                learning_rate=2e-5,
                lr_scheduler_type="constant",
                save_strategy="no",
                logging_strategy="no",
                report_to="none",
                bf16=True,
                disable_tqdm=True,
            )
            data = Dataset.from_dict({"anchor": anchors, "positive": positives})
            SentenceTransformerTrainer(
                model=st, args=args, train_dataset=data, loss=MultipleNegativesRankingLoss(st, scale=20.0), callbacks=[Timer()]
            ).train()
        seconds = times[-1] - times[warmup - 1]
        rows.append(
            {
                "recipe": "ICT pairs, 256 tokens",
                "impl": "sentence-transformers MNRL",
                "batch_size": b,
                "max_length": 256,
                "timed_steps": len(times) - warmup,
                "examples_per_s": (len(times) - warmup) * b / seconds,
                "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30,
            }
        )
        print(rows[-1], flush=True)
    return rows


def tune_rows(model: Path, work: Path) -> list[dict]:
    """`encodr tune` end to end on CUDA, plain and under torchrun (1 process, nccl)."""
    from sentence_transformers import SentenceTransformer

    from encodr.data.bundled import default_corpus

    data = work / "wiki2k.txt"
    data.write_text("\n".join(default_corpus("wiki").strings[:2_000]) + "\n")
    rows = []
    launchers = {
        "python -m encodr": [sys.executable, "-m", "encodr"],
        "torchrun --nproc_per_node 1": [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "1", "-m", "encodr"],
    }
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


def cpu_flags() -> list[str]:
    """The host CPU's vector flags (AVX, AMX) that matter to the tokenizer processes."""
    from encodr.models.encoder import cpu_flags as flags

    return [f for f in flags() if f.startswith(("avx", "amx"))]


def index_part(models: dict[str, Path], sets: dict[str, list[str]], work: Path, path: Path, rounds: int, gpu: str) -> None:
    """:func:`index_rows`, written to ``path`` after each model and set, then printed."""
    import torch

    def save(rows: list[dict]) -> None:
        payload = {"gpu": gpu, "torch": torch.__version__, "weights": "random (same arithmetic)", "rows": rows}
        write_json(path, {**payload, "cpu_flags": cpu_flags()})

    rows = index_rows(models, sets, work, rounds, save)
    columns = ["model", "texts", "impl", "seconds", "texts_per_s", "x st script", "vectors"]
    print_table(f"encodr index against a sentence-transformers script on {gpu}", rows, columns)


def run(src: Path, out: Path, args: argparse.Namespace) -> None:
    """Every part of ``args.parts`` (with ``args``' batches, steps, recipes, budgets, limit and
    rounds) on the models and sets of ``src`` that ``args.models`` and ``args.sets`` name, each
    part's rows written under ``out``."""
    import torch

    batches, steps, parts, recipes, budgets = args.batches, args.steps, args.parts, args.recipes, args.budgets

    work = Path("/tmp/encodr-gpu")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    models = {name: build(src / name, work / name) for name in args.models}
    from encodr.data.bundled import default_corpus

    sets = {
        name: read()
        for name, read in (
            ("wiki sentences", lambda: list(default_corpus("wiki").strings)),
            ("SciFact abstracts", lambda: scifact_texts(src / "scifact.jsonl")),
        )
        if name.split()[-1] in args.sets
    }
    if args.limit:
        sets = {name: texts[: args.limit] for name, texts in sets.items()}
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (a trial run)"
    result = {"machine": machine(), "gpu": gpu, "torch": torch.__version__, "weights": "random (same arithmetic)"}
    if "index" in parts:  # its own file
        index_part(models, sets, work, out / "gpu_index.json", args.rounds, gpu)
        parts = [p for p in parts if p != "index"]
        if not parts:
            return
    if "pipeline" in parts:  # its own file: gpu.json keeps the first run's rows

        def save(rows: list[dict], summary: list[dict]) -> None:
            write_json(
                out / "gpu_pipeline.json",
                {
                    "gpu": gpu,
                    "torch": torch.__version__,
                    "weights": "random (same arithmetic)",
                    "cpu_flags": cpu_flags(),
                    "summary": summary,
                    "rows": rows,
                },
            )

        rows, summary = pipeline_rows(models, sets, budgets, save)
        print_table(f"encoding pipeline on {gpu} (random weights)", summary, list(summary[0]))
        if parts == ["pipeline"]:
            return
    result["encode"] = encode_rows(models, sets, batches) if "encode" in parts else []
    write_json(out / "gpu.json", result)
    result["profile"] = profile_rows(models, sets, 256) if "profile" in parts else []
    write_json(out / "gpu.json", result)
    result["tune"] = tune_rows(models["minilm"], work) if "tune" in parts else []
    write_json(out / "gpu.json", result)
    result["train"] = []
    if "train" in parts:
        train = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).parent / "train_speed.py"),
                "--device",
                "cuda",
                "--model",
                str(models["minilm"]),
                "--steps",
                str(steps),
                "--recipes",
                *recipes,
            ],
            capture_output=True,
            text=True,
        )
        print(train.stdout[-3000:], train.stderr[-3000:] if train.returncode else "", flush=True)
        cuda_json = Path(__file__).parent / "results" / "train_speed-cuda.json"
        result["train"] = json.loads(cuda_json.read_text())["rows"] if cuda_json.is_file() else []
        result["train"] += ict_rows(models["minilm"], sets["SciFact abstracts"], [64, 256], steps, 2)
        write_json(out / "gpu.json", result)
    write_json(out / "gpu.json", result)
    print_table(
        f"encoding on {result['gpu']} (random weights)",
        result["encode"],
        ["model", "texts", "impl", "dtype", "batch", "texts_per_s", "tokens_per_s", "max_dcos"],
    )
    print_table(
        f"training on {result['gpu']} (random weights)",
        result["train"],
        ["recipe", "impl", "batch_size", "max_length", "examples_per_s", "ratio_vs_st", "peak_mem_gib"],
    )
    print(json.dumps(result["tune"], indent=1))


def half_rows(limit: int) -> list[dict]:
    """The real weights' vectors in float16 products against float32, on this machine's CPU
    (the GPU run's weights are random, so its cosines say nothing of a real model's): the
    worst and the mean cosine over ``limit`` texts of each set, through the same modules and
    autocast the GPU pipeline uses (``TorchForward.on_device``)."""
    import numpy as np
    import torch

    from encodr.data.bundled import default_corpus
    from encodr.models import load_encoder
    from encodr.models.pipeline import TokenizerPool

    scifact = Path(__file__).resolve().parents[2] / "shared/data/retrieval/scifact/corpus.jsonl"
    sets = {"wiki sentences": list(default_corpus("wiki").strings)[:limit], "SciFact abstracts": scifact_texts(scifact)[:limit]}
    rows = []
    for name in ARCHES:
        encoder = load_encoder(name, device="cpu")
        for set_name, texts in sets.items():
            pool = TokenizerPool(encoder.st.tokenizer, encoder.max_length, workers=0)
            cosines = []
            with torch.inference_mode():
                for batch in pool.batches(texts, budget=16_384):
                    features = batch.on("cpu")
                    exact, rounded = encoder.forward._vectors(features, None), encoder.forward._vectors(features, torch.float16)
                    cosines.append((exact * rounded).sum(-1).numpy())
            cosines = np.concatenate(cosines)
            rows.append(
                {
                    "model": name,
                    "texts": set_name,
                    "n": len(texts),
                    "min_cos": float(cosines.min()),
                    "mean_cos": float(cosines.mean()),
                    "kept (min ≥ 0.999)": bool(cosines.min() >= 0.999),
                }
            )
            print(rows[-1], flush=True)
    return rows


QUICK = ["prepare", "{tmp}/gpu"]  # the step a machine without CUDA can run; `run` needs a GPU


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "step",
        choices=["prepare", "device", "run", "half"],
        help="device: the folders of two device calls (bench/notes/gpu.md); half: float16 against float32 with the "
        "real weights, on this CPU",
    )
    parser.add_argument("folder", type=Path, help="what travels: configs, tokenizers, the SciFact corpus")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["pipeline"],
        choices=["pipeline", "index", "encode", "profile", "train", "tune"],
        help="pipeline: gpu_pipeline.json; index: gpu_index.json; the others: gpu.json (the first run's parts)",
    )
    parser.add_argument("--device", default="cuda", help="the pipeline rows' device: cpu only to try the script")
    parser.add_argument(
        "--lean", action="store_true", help="the pipeline part's rows at their defaults only (a short device call)"
    )
    parser.add_argument("--limit", type=int, help="texts per set (a trial run)")
    parser.add_argument("--rounds", type=int, default=2, help="the index part's rounds (the best is kept)")
    parser.add_argument("--models", nargs="+", default=list(ARCHES), choices=ARCHES, help="the architectures measured")
    parser.add_argument(
        "--sets", nargs="+", default=["sentences", "abstracts"], choices=["sentences", "abstracts"], help="the texts measured"
    )
    parser.add_argument(
        "--budgets", type=int, nargs="+", default=[32_768, 131_072], help="the pipeline's token budgets tried beside its default"
    )
    parser.add_argument("--recipes", nargs="+", default=["word", "sentence"], help="bench/train_speed.py's recipes")
    parser.add_argument("--steps", type=int, default=22, help="training steps per row, 2 of them warm-up")
    args = parser.parse_args()
    if args.step == "device":
        device_folders(args.folder)
    elif args.step == "prepare":
        args.folder.mkdir(parents=True, exist_ok=True)
        prepare(args.folder)
    elif args.step == "half":
        write_json(args.out / "gpu_half.json", {"cpu_flags": cpu_flags(), "rows": half_rows(args.limit or 500)})
    else:
        os.environ.setdefault("TQDM_DISABLE", "1")
        global DEVICE, LEAN
        DEVICE, LEAN = args.device, args.lean
        run(args.folder, args.out, args)


if __name__ == "__main__":
    main()
