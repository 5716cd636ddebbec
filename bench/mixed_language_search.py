"""Language-agnostic search over a mixed-language corpus, through the CLI, as a user runs it.

The corpus: the first ``--verses`` verses of the Bible (Genesis 1:1 onward) in each of six
languages, shuffled together into one plain-text file, one verse a line, with no language
column (``../shared/data/bible``, public-domain translations; the file is written to a
temporary folder, not shipped). Then:

    encodr index mixed.txt --model me5 --pcr --out IDX      # languages detected per verse
    encodr search "In the beginning God created the heavens and the earth." --index IDX -k 10

and counts how many of the other five translations of Genesis 1:1 are among the 10 hits
(with ``--pcr`` and without it, for comparison), and how many of the 6,000 detected languages
are right.

    python bench/mixed_language_search.py [--langs eng spa fra deu rus ara] [--verses 1000]

Prints both commands' output and a table; writes bench/results/mixed_language_search.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

BIBLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "bible"
QUERY = "In the beginning God created the heavens and the earth."


def verses(lang: str, n: int) -> list[str]:
    """The first n verse texts of one translation, in Bible order."""
    out = []
    with open(BIBLE / f"{lang}.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4 and parts[3].strip():
                out.append(parts[3].strip())
            if len(out) == n:
                break
    return out


def encodr(*args: str) -> tuple[str, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "encodr", *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"encodr {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout, time.perf_counter() - started


# python -m bench run mixed_language_search --quick: a small run that checks the benchmark still runs (its JSON to a
# temporary folder)
QUICK = ["--verses", "50", "--model", "minilm", "--out", "{tmp}/mixed_language_search.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--langs", nargs=6, default=["eng", "spa", "fra", "deu", "rus", "ara"])
    parser.add_argument("--verses", type=int, default=1000)
    parser.add_argument("--model", default="me5")
    parser.add_argument("--out", type=Path, default=RESULTS / "mixed_language_search.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="encodr-mixed-"))
    texts = {lang: verses(lang, args.verses) for lang in args.langs}
    lines = [(lang, t) for lang in args.langs for t in texts[lang]]
    random.Random(0).shuffle(lines)
    corpus = work / "mixed.txt"
    corpus.write_text("\n".join(t for _, t in lines) + "\n", encoding="utf-8")
    first = {lang: texts[lang][0] for lang in args.langs}  # Genesis 1:1 in each language
    truth = {t: lang for lang, t in lines}
    rows, runs = [], {}
    for pcr in (True, False):
        name = "pcr" if pcr else "no-pcr"
        out = work / f"idx-{name}"
        index_args = ["index", str(corpus), "--model", args.model, "--out", str(out), "--json"] + (["--pcr"] if pcr else [])
        built, index_s = encodr(*index_args)
        meta = json.loads(built)
        shown, _ = encodr("search", QUERY, "--index", str(out), "-k", "10")
        found, _ = encodr("search", QUERY, "--index", str(out), "-k", "10", "--json")
        hits = json.loads(found)["results"][0]["hits"]  # one query: its hits (encodr search --json)
        hit_texts = [h["text"] for h in hits]
        translations = [lang for lang in args.langs if lang != "eng" and first[lang] in hit_texts]
        stored = {h["text"]: h["lang"] for h in hits}
        detected_ok = sum(stored[t] == truth[t] for t in hit_texts)
        with sqlite3.connect(out / "current" / "texts.db") as db:  # every text's detected language against its file's
            labels = db.execute("select text, lang from texts").fetchall()
        corpus_ok = sum(truth[t] == code for t, code in labels)
        print(f'$ encodr {" ".join(index_args[:-1])}\n{meta}\n$ encodr search "{QUERY}" --index {out} -k 10\n{shown}', flush=True)
        runs[name] = {"index": meta, "hits": hits}
        rows.append(
            {
                "index": f"{args.model}{' --pcr' if pcr else ''}",
                "texts": meta["count"],
                "languages": ",".join(meta["languages"]),
                "index s": round(index_s, 1),
                "query language": json.loads(found)["results"][0]["lang"],
                "translations in top 10": f"{len(translations)}/5 ({','.join(translations)})",
                "hit languages right": f"{detected_ok}/{len(hits)}",
                "detected languages right": f"{corpus_ok}/{len(labels)} ({100 * corpus_ok / len(labels):.1f} %)",
            }
        )
    print_table(
        f"Genesis 1:1 across languages ({args.verses} verses × {len(args.langs)} languages, shuffled, languages detected)",
        rows,
        list(rows[0]),
    )
    write_json(
        args.out, {"machine": machine(), "query": QUERY, "langs": args.langs, "verses": args.verses, "rows": rows, "runs": runs}
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
