"""Query language detection: accuracy, load time and time per query of the detector a search
runs (``Searcher.query_languages``: lingua among the index's languages, high-accuracy mode),
against lingua's low-accuracy mode among the same languages, the cheaper option.

Queries are short texts in a known language, one at a time, as a person types them:

- Tatoeba (the bundled multilingual dev set): the spa, fra and deu sentences and their English
  translations, detected among {eng, spa, fra, deu} (an index of those four languages);
- the Bible (``../shared/data/bible``): the first 250 verses of Matthew's Gospel in each of 8
  languages, detected among all 8 (an index of those eight).

Each row runs in a fresh process: ``all queries ms`` includes lingua loading each language's
models the first time a text may be in it (``max ms``: the slowest query, the one that loaded
most), and ``median µs/query`` is a query once they are loaded. A search of an index with one
language, or a dense search of an index without PCR, runs no detector at all
(``query_languages``); this measures the others.

    python bench/query_language.py

Prints a table and writes bench/results/query_language.json.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402
from mixed_language_search import BIBLE  # noqa: E402

QUICK = ["--limit", "30", "--out", "{tmp}/query_language.json"]
BIBLE_LANGS = ("ara", "deu", "eng", "fra", "ita", "rus", "spa", "vie")


def tatoeba(limit: int) -> list[tuple[str, str]]:
    from encodr.data.bitext import read_tatoeba
    from encodr.paths import bundled

    out = []
    for lang in ("spa", "fra", "deu"):
        pairs = read_tatoeba(bundled(f"tatoeba/tatoeba.{lang}-eng.{lang}"))[:limit]
        out += [(p.source, lang) for p in pairs] + [(p.target, "eng") for p in pairs]
    return out


def bible(limit: int) -> list[tuple[str, str]]:
    out = []
    for lang in BIBLE_LANGS:
        with open(BIBLE / f"{lang}.tsv", encoding="utf-8") as f:
            next(f)
            rows = [line.rstrip("\n").split("\t") for line in f]
        verses = [r[3].strip() for r in rows if len(r) >= 4 and r[3].strip() and r[0].strip() == "40"]  # book 40: Matthew
        out += [(v, lang) for v in verses[:limit]]
    return out


def measure(queries: list[tuple[str, str]], candidates: tuple[str, ...], accurate: bool) -> dict:
    """Accuracy (%); the time of all the queries in a process that had not detected before (lingua
    loads a language's models the first time a text may be in it), the slowest query, the median one."""
    from encodr.data.language import _lingua, known_languages

    lingua, known = _lingua(), known_languages()
    builder = lingua.LanguageDetectorBuilder.from_languages(*[known[c] for c in candidates])
    detector = (builder if accurate else builder.with_low_accuracy_mode()).build()
    right, times = 0, []
    for text, lang in queries:
        started = time.perf_counter()
        values = detector.compute_language_confidence_values(text)
        times.append((time.perf_counter() - started) * 1e6)
        top = values[0].language.iso_code_639_3.name.lower() if values and values[0].value > 0 else "und"
        right += top == lang
    return {
        "accuracy %": round(100 * right / len(queries), 2),
        "all queries ms": round(sum(times) / 1000, 1),
        "max ms": round(max(times) / 1000, 1),
        "median µs/query": round(float(np.median(times)), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="sentences per language (0: Tatoeba's all, 250 Bible verses)")
    parser.add_argument("--out", type=Path, default=RESULTS / "query_language.json")
    args = parser.parse_args()
    sets = {
        "tatoeba spa/fra/deu + eng": (tatoeba(args.limit or 10**9), ("deu", "eng", "fra", "spa")),
        "bible (Matthew), 8 languages": (bible(args.limit or 250), BIBLE_LANGS),
    }
    rows = []
    for name, (queries, candidates) in sets.items():
        for accurate in (True, False):
            with ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn")
            ) as fresh:  # lingua's models load once a process
                measured = fresh.submit(measure, queries, candidates, accurate).result()
            row = {
                "queries": name,
                "n": len(queries),
                "mode": "high accuracy (what search runs)" if accurate else "low accuracy",
                **measured,
            }
            rows.append(row)
            print(row, flush=True)
    print_table("query language detection among the index's languages, one query at a time", rows, list(rows[0]))
    write_json(args.out, {"cpu_flags": cpu_flags(), "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
