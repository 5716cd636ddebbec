"""Encoding speed of ``encodr index`` against sentence-transformers' own ``encode``, on the same
texts with the same model, in one run; and the STS-B test ρ of each backend.

Rows:

- ``sentence-transformers/torch``: ``SentenceTransformer(path).encode(texts,
  normalize_embeddings=True)`` with its defaults (batch 32, sorted by characters) — encoding only;
- ``encodr index --backend B`` for B in torch, onnx, onnx-int8: the whole build through
  :func:`encodr.index.build` — reading, deduplication, encoding, language detection (no
  ``--lang``: the default), SQLite, FAISS — timed from the model being loaded to the index being
  renamed into place, as ``encodr index`` reports ``seconds``. The ONNX export (first use only,
  then cached) is timed apart.

texts/s and the ratio to sentence-transformers are printed and written to JSON, with each
backend's STS-B test Spearman ρ×100 (cosine; ``encodr eval sts``) and the mean cosine between its
vectors and the torch ones.

Encoding inside one process; ``bench/index_process.py`` times the same backends as whole
``encodr index`` processes against the script (median of 3, interleaved rounds), which is what a
user waits for. Both record the CPU's flags.

    python bench/encode_speed.py                                   # the 17,534 bundled Wikipedia sentences
    python bench/encode_speed.py --limit 3000 --batch-sizes 16 32 64 128   # choose BATCH_SIZES
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402

from encodr import evaluation  # noqa: E402
from encodr.index import BuildOptions, Index, build  # noqa: E402
from encodr.models import load_encoder  # noqa: E402
from encodr.models.onnx import export, export_dir  # noqa: E402
from encodr.paths import bundled  # noqa: E402

BACKENDS = ("torch", "onnx", "onnx-int8")


def st_encode(texts: list[str], model: str) -> tuple[float, np.ndarray]:
    """Seconds and vectors of sentence-transformers' encode with its defaults (after a warm-up)."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(_model_path(model)), device="cpu")
    st.encode(texts[:256], normalize_embeddings=True)
    started = time.perf_counter()
    vectors = st.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    return time.perf_counter() - started, np.asarray(vectors, dtype=np.float32)


def _model_path(model: str) -> Path:
    from encodr.models import resolve

    return resolve(model).path


def encodr_index(corpus: Path, model: str, backend: str, work: Path, batch_size: int | None) -> tuple[float, np.ndarray]:
    """Seconds ``encodr index`` reports (model loaded → index in place) and the stored vectors, in line order."""
    out = work / f"idx-{backend}-{batch_size}"
    meta = build([str(corpus)], out, BuildOptions(model=model, index_type="flat", backend=backend, batch_size=batch_size))
    index = Index.open(out)
    n = len(index)
    vectors = index.faiss.reconstruct_n(0, n)
    lines = index.texts.column("line")
    order = np.argsort(lines)
    return float(meta["seconds"]), vectors[order]


# python -m bench run encode_speed --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--limit", "200", "--no-sts", "--backends", "torch", "--out", "{tmp}/encode_speed.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument(
        "--batch-sizes", nargs="+", type=int, default=[None], help="encodr batch sizes to try (default: the encoder's own)"
    )
    parser.add_argument("--no-sts", action="store_true", help="skip the STS-B test scores")
    parser.add_argument("--out", type=Path, default=RESULTS / "encode_speed.json")
    args = parser.parse_args()

    lines = bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines()[: args.limit]
    texts = [t for t in lines if t.strip()]
    rows, export_s = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = work / "wiki.txt"
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
        st_s, st_vectors = st_encode(texts, args.model)
        rows.append(
            {"run": "sentence-transformers/torch", "batch": 32, "seconds": round(st_s, 1), "texts/s": round(len(texts) / st_s, 1)}
        )
        print(f"sentence-transformers: {len(texts) / st_s:.1f} texts/s", flush=True)
        for backend in args.backends:
            if backend != "torch":
                started = time.perf_counter()
                cached = (
                    export_dir(load_encoder(args.model)) / ("model.onnx" if backend == "onnx" else "model_qint8.onnx")
                ).is_file()
                export(load_encoder(args.model, device="cpu"), backend)
                export_s[backend] = None if cached else round(time.perf_counter() - started, 1)
            for batch_size in args.batch_sizes:
                seconds, vectors = encodr_index(corpus, args.model, backend, work, batch_size)
                encoder = load_encoder(args.model, backend=backend)
                row = {
                    "run": f"encodr index --backend {backend}",
                    "batch": batch_size or encoder.batch_size,
                    "seconds": round(seconds, 1),
                    "texts/s": round(len(texts) / seconds, 1),
                    "× sentence-transformers": round(st_s / seconds, 2),
                    "cos to ST vectors": round(float(np.mean(np.sum(vectors * st_vectors, axis=1))), 4),
                }
                if not args.no_sts and batch_size == args.batch_sizes[0]:
                    report = evaluation.run("sts", encoder, ["stsb-test"])
                    row["STS-B test ρ"] = round(report.scores[0].value, 2)
                rows.append(row)
                print(row, flush=True)
    columns = ["run", "batch", "seconds", "texts/s", "× sentence-transformers", "cos to ST vectors", "STS-B test ρ"]
    print_table(f"encode speed: {len(texts):,} Wikipedia sentences, {args.model}", rows, columns)
    print(f"ONNX export (first use, then cached): {export_s}")
    write_json(
        args.out,
        {
            "texts": len(texts),
            "model": args.model,
            "rows": rows,
            "onnx_export_seconds": export_s,
            "machine": {**machine(), "cpu_flags": cpu_flags()},
        },
    )


if __name__ == "__main__":
    main()
