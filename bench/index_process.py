"""``encodr index`` as a whole process against a script that loads the same model with
sentence-transformers and calls its ``encode``: the fixed costs a user pays on a small corpus
(Python and library imports, model loading, language detection, the ONNX session, SQLite,
FAISS), side by side in one run.

Rows, each a fresh process timed from its start to its exit (wall clock), the configurations
interleaved within each round so drifting machine load hits all of them; the median of
``--repeats`` rounds:

- ``sentence-transformers script``: ``SentenceTransformer(path, device="cpu").encode(texts,
  normalize_embeddings=True)`` on the file's lines, the vectors saved with ``np.save`` — the
  anchor;
- ``encodr index --backend B`` for each ``--backends`` B (``auto``: the default, ``torch-bf16`` on a
  CPU with AVX512-BF16 or AMX, else ``onnx``; ``torch``: float32; ``onnx``: float32 in onnxruntime,
  what ``auto`` takes on a CPU without bfloat16), with no ``--lang`` (the default:
  languages detected), into a fresh folder (the ONNX export is made once before the timings,
  by loading the model with that backend: a first use's cost, not every build's; later loads
  open the export without torch, :class:`encodr.models.onnx.ExportedEncoder`).

Every encodr checkout timed has its modules compiled to bytecode first (``compileall``), as
``pip install`` compiles an installed package's and the libraries' the script imports: a checkout
run from source under ``PYTHONDONTWRITEBYTECODE`` (set on this project's machines) would
otherwise compile every module it imports at each start, which no installed encodr does.

``× script`` is the anchor's seconds over the row's, the anchor run in the same conditions: above
1, encodr is faster. ``--load N`` runs every row a second time beside N busy processes (each
keeps one core busy: a second program), rows marked ``| N busy``. ``--before DIR``
adds, in the same rounds, the rows of another checkout of encodr (``DIR`` first on
``PYTHONPATH``; e.g. ``git worktree add /tmp/before COMMIT``) for ``--before-backends``.

    python bench/index_process.py                        # 5,000 Wikipedia sentences, 3 rounds
    python bench/index_process.py --backends torch --repeats 1   # a quick look
    python bench/index_process.py --before /tmp/before          # and an earlier commit's rows beside them
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, compile_checkout, machine, print_table, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402  (the flags that decide which backend auto takes, and its speed)

SCRIPT = """
import sys
import numpy as np
from sentence_transformers import SentenceTransformer
texts = [t for t in open(sys.argv[2], encoding="utf-8").read().splitlines() if t.strip()]
vectors = SentenceTransformer(sys.argv[1], device="cpu").encode(texts, normalize_embeddings=True)
np.save(sys.argv[3], vectors)
"""


@contextlib.contextmanager
def busy(n: int):
    """``n`` processes that each keep one core busy (a second program on the machine) while the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def timed(command: list[str], env: dict, cwd: Path) -> float:
    """Wall seconds of ``command`` run to its end in ``cwd`` (it must exit 0)."""
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


# python -m bench run index_process --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--texts", "200", "--repeats", "1", "--backends", "torch", "--out", "{tmp}/index_process.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--texts", type=int, default=5000)
    parser.add_argument("--backends", nargs="+", default=["auto", "torch", "onnx", "onnx-int8"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tag", default="", help="a label stored with the rows (e.g. before / after a change)")
    parser.add_argument("--before", type=Path, default=None, help="another encodr checkout whose rows run in the same rounds")
    parser.add_argument("--before-backends", nargs="+", default=["torch", "onnx-int8"])
    parser.add_argument(
        "--load", type=int, default=0, help="also run every row beside this many busy processes (a second program, one core each)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "index_process.json")
    args = parser.parse_args()

    from encodr.models import load_encoder, resolve
    from encodr.paths import bundled

    texts = [t for t in bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines() if t.strip()][: args.texts]
    path = str(resolve(args.model).path)
    for backend in args.backends:
        if backend.startswith("onnx"):
            load_encoder(args.model, backend=backend)  # exported and remembered, as a user's first build does
    env = dict(os.environ)
    envs = {}
    seconds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = work / "wiki.txt"
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")

        def index(backend: str, out: str) -> list[str]:
            return [
                sys.executable,
                "-m",
                "encodr",
                "index",
                str(corpus),
                "--model",
                args.model,
                "--backend",
                backend,
                "--out",
                str(work / out),
                "--overwrite",
            ]

        runs = {"sentence-transformers script": [sys.executable, "-c", SCRIPT, path, str(corpus), str(work / "st.npy")]}
        for backend in args.backends:
            runs[f"encodr index --backend {backend}"] = index(backend, f"idx-{backend}")
        if args.before is not None:
            before = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(args.before.resolve()), env.get("PYTHONPATH")]))}
            where = subprocess.run(
                [sys.executable, "-c", "import encodr; print(encodr.__file__)"],
                env=before,
                cwd=work,
                capture_output=True,
                text=True,
            ).stdout
            assert where.startswith(str(args.before.resolve())), (
                f"--before {args.before} is not the encodr these rows would run ({where.strip()})"
            )
            for backend in args.before_backends:
                name = f"encodr index --backend {backend} (before: {args.before})"
                runs[name], envs[name] = index(backend, f"before-{backend}"), before
        compiled = [compile_checkout(Path(__file__).resolve().parents[1])]
        if args.before is not None:
            compiled.append(compile_checkout(args.before.resolve()))
        for round_ in range(args.repeats):
            for load in sorted({0, args.load}):
                with busy(load):
                    for name, command in runs.items():
                        key = name if not load else f"{name} | {load} busy"
                        seconds.setdefault(key, []).append(
                            timed(command, envs.get(name, env), work)
                        )  # not from a checkout: python -m puts the cwd first
                        print(f"round {round_ + 1}: {key}: {seconds[key][-1]:.1f} s", flush=True)

    def anchor(name: str) -> float:  # the script's median in the same conditions (quiet, or beside the same load)
        return statistics.median(seconds["sentence-transformers script" + name.partition(" | ")[1] + name.partition(" | ")[2]])

    rows = [
        {
            "run": name,
            "seconds (median)": statistics.median(s),
            "runs": ", ".join(f"{x:.1f}" for x in s),
            "× script": anchor(name) / statistics.median(s),
        }
        for name, s in seconds.items()
    ]
    print_table(
        f"Whole processes on {len(texts):,} Wikipedia sentences ({args.model}; median of {args.repeats}) {args.tag}".rstrip(),
        rows,
        ["run", "seconds (median)", "runs", "× script"],
    )
    write_json(
        args.out,
        {
            "machine": {**machine(), "cpu_flags": cpu_flags(), "load_before": os.getloadavg()[0]},
            "model": args.model,
            "texts": len(texts),
            "repeats": args.repeats,
            "tag": args.tag,
            "busy_processes": args.load,
            "bytecode": {"compiled": compiled, "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE")},
            "seconds": seconds,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
