"""Where ``encodr index``'s time goes: the phases of one build on a small corpus, per backend.

The corpus is the first ``--texts`` of the bundled Wikipedia sentences (as
``bench/index_process.py`` reads them). Two measurements a backend, each in a fresh process:

- ``process``: ``encodr index FILE --out DIR --backend B`` timed from the process's start to its
  exit, and ``imports``: ``python -c "import encodr.cli"`` the same way (the start-up a person waits
  for before anything is read);
- the phases, from one ``encodr.index.build`` in a fresh process, each timed by wrapping the
  function that does it (wall time, summed over calls, in whichever thread runs it): ``model load``
  (``build._encoder_for``: the weights, or the ONNX session, and ``OnnxForward._stream_sessions``:
  the sessions of a bulk encode's streams, made at its start); ``read & split``
  (``build.read_windows``: files, records, passages, deduplication hashes); ``tokenize``
  (``models.encoder.tokenize``); ``forward`` (the backend's forward pass, padding included);
  ``languages`` (``LanguageWorker.call``: a new index's candidate languages from a sample of
  its texts, each text's language among them, the word lists and the settle step's checks; in a
  worker process where the build starts one, so this is the time the build's threads wait for
  it, not the CPU time it spends); ``store`` (``Ingest._label`` and ``Ingest._vectors``:
  SQLite rows and the vectors, the languages above included; they run in a writer thread, a
  window's rows while it encodes and its vectors while the next one does, so they overlap the main
  thread); ``forward`` sums the passes of a bulk encode's streams, which run at once; ``settle``
  (``build._settle``: the FAISS index, the keyword index, ``index.json``); ``build`` the whole call.

The ONNX export is made once before the timings (a first use's cost, not every build's). The
anchor, from the same run: ``SentenceTransformer.encode`` (fp32, its default batch of 32) on the
same texts, the model already loaded: its ``forward`` is tokenizing and the forward pass together.
The machine's CPU flags and load average are recorded with the rows.

    python bench/index_phases.py [--texts 5000] [--backends torch,onnx-int8]

Prints a table and writes bench/results/index_phases.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, compile_checkout, print_table, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402

QUICK = ["--texts", "200", "--backends", "torch", "--out", "{tmp}/index_phases.json"]
PHASES = ("model load", "read & split", "tokenize", "forward", "languages", "store", "settle", "build")

CHILD = r"""
import json, sys, threading, time
from pathlib import Path

spent, lock = {}, threading.Lock()

def add(name, seconds):
    with lock:
        spent[name] = spent.get(name, 0.0) + seconds

def timed(owner, attr, name):
    inner = getattr(owner, attr)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            add(name, time.perf_counter() - t)
    setattr(owner, attr, wrapper)

def timed_generator(owner, attr, name):
    inner = getattr(owner, attr)
    def wrapper(*args, **kwargs):
        it = inner(*args, **kwargs)
        while True:
            t = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                add(name, time.perf_counter() - t)
                return
            add(name, time.perf_counter() - t)
            yield item
    setattr(owner, attr, wrapper)

from encodr.index import BuildOptions, build as build_index
import encodr.index.ingest, encodr.models.encoder, encodr.models.onnx
b, ing = sys.modules["encodr.index.build"], sys.modules["encodr.index.ingest"]  # the package's name build is the function
enc, onnx = sys.modules["encodr.models.encoder"], sys.modules["encodr.models.onnx"]
timed(b, "_encoder_for", "model load")
timed_generator(b, "read_windows", "read & split")
timed(enc, "tokenize", "tokenize")
timed(enc.TorchForward, "__call__", "forward")
timed(onnx.OnnxForward, "__call__", "forward")
timed(ing.LanguageWorker, "call", "languages")
timed(ing.Ingest, "_label", "store")
timed(ing.Ingest, "_vectors", "store")
timed(onnx.OnnxForward, "_stream_sessions", "model load")
timed(b, "_settle", "settle")
corpus, out, backend = sys.argv[1], sys.argv[2], sys.argv[3]
t = time.perf_counter()
build_index([corpus], Path(out), BuildOptions(backend=backend))
add("build", time.perf_counter() - t)
print(json.dumps(spent))
"""


def wall(args: list[str]) -> float:
    """Seconds from a process's start to its exit."""
    started = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=5000)
    parser.add_argument("--backends", default="torch,onnx,onnx-int8")
    parser.add_argument("--out", type=Path, default=RESULTS / "index_phases.json")
    args = parser.parse_args()

    from encodr.models import load_encoder
    from encodr.paths import bundled

    texts = [t for t in bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines() if t.strip()][: args.texts]
    rows = []
    with tempfile.TemporaryDirectory(prefix="encodr-phases-") as tmp:
        corpus = Path(tmp) / "wiki.txt"
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
        compile_checkout(Path(__file__).resolve().parents[1])  # as pip install does (see bench/index_process.py)
        imports = wall([sys.executable, "-c", "import encodr.cli"])
        for backend in args.backends.split(","):
            load_encoder("minilm", backend=backend)  # an ONNX export is made here, once, before the timings
            process = wall(
                [sys.executable, "-m", "encodr", "index", str(corpus), "--out", f"{tmp}/p-{backend}", "--backend", backend]
            )
            found = subprocess.run(
                [sys.executable, "-c", CHILD, str(corpus), f"{tmp}/b-{backend}", backend],
                check=True,
                capture_output=True,
                text=True,
            )
            spent = json.loads(found.stdout.strip().splitlines()[-1])
            row = {"backend": backend, "texts": len(texts), "process": round(process, 2), "imports": round(imports, 2)}
            row.update({name: round(spent.get(name, 0.0), 2) for name in PHASES})
            rows.append(row)
            print(row, flush=True)
    st = load_encoder("minilm", backend="torch").st  # the anchor: sentence-transformers' encode on the same texts (fp32)
    st.encode(texts[:64])
    started = time.perf_counter()
    st.encode(texts, normalize_embeddings=True)
    rows.append(
        {
            "backend": "sentence-transformers encode (anchor)",
            "texts": len(texts),
            "forward": round(time.perf_counter() - started, 2),
        }
    )
    columns = ["backend", "process", "imports", *PHASES]
    print_table(f"encodr index, {len(texts):,} sentences: seconds per phase", rows, columns)
    write_json(args.out, {"cpu_flags": cpu_flags(), "load_average": list(os.getloadavg()), "rows": rows, "columns": columns})


if __name__ == "__main__":
    main()
