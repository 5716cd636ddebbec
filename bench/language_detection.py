"""Corpus-level language detection, before and after counting only confident labels
(``encodr.data.language.CONFIDENT``), and with the languages found on an evenly spaced sample
(``sampled_languages``, what a corpus of one window gets): which languages a corpus is said to
have, and how many texts end up with the right language after the second pass among those
languages — what ``encodr index`` does without ``--lang``.

Corpora: the first 3,000 bundled English Wikipedia sentences (one language), and 500 Bible
verses in each of 8 languages (``../shared/data/bible``; Genesis onward, different verses per
language: the i-th block of 500 verses for the i-th language, so no verse is repeated across
languages).

    python bench/language_detection.py

Prints a table and writes bench/results/language_detection.json.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402
from mixed_language_search import BIBLE  # noqa: E402

LANGS = ("ara", "deu", "eng", "fra", "ita", "rus", "spa", "vie")


def bible(per_language: int = 500) -> tuple[list[str], list[str]]:
    texts, truth = [], []
    for block, lang in enumerate(LANGS):
        with open(BIBLE / f"{lang}.tsv", encoding="utf-8") as f:
            next(f)
            rows = [line.rstrip("\n").split("\t") for line in f]
        verses = [r[3].strip() for r in rows if len(r) >= 4 and r[3].strip()]
        chosen = verses[block * per_language : (block + 1) * per_language]
        texts += chosen
        truth += [lang] * len(chosen)
    return texts, truth


def main() -> None:
    from encodr.data.bundled import default_corpus
    from encodr.data.language import SAMPLE, corpus_languages, detect_languages, detect_with_confidence, sampled_languages

    wiki = list(default_corpus("wiki").strings[:3000])
    corpora = {"wikipedia (eng), 3,000": (wiki, ["eng"] * len(wiki)), "bible, 8 × 500": bible()}
    rows = []
    for name, (texts, truth) in corpora.items():
        first = detect_with_confidence(texts, None, accurate=True)  # the first pass of a corpus of ≤ 10,000 texts
        labels = [code for code, _ in first]
        first_acc = 100 * sum(a == b for a, b in zip(labels, truth)) / len(truth)
        for rule, kept in (("all labels (before)", corpus_languages(labels)),
                           ("confident labels (after)", corpus_languages(labels, confidences=[c for _, c in first])),
                           (f"confident labels of an even sample of {SAMPLE:,} (one-window corpus)", sampled_languages(texts))):  # fmt: skip
            second = detect_languages(texts, kept)
            rows.append({"corpus": name, "rule": rule, "languages kept": ",".join(kept), "first pass acc %": round(first_acc, 2),
                         "after second pass acc %": round(100 * sum(a == b for a, b in zip(second, truth)) / len(truth), 2),
                         "wrong": sum(a != b for a, b in zip(second, truth))})  # fmt: skip
            print(rows[-1], flush=True)
    print_table("language detection at corpus level (lingua, all 75 languages then among those kept)", rows, list(rows[0]))
    write_json(RESULTS / "language_detection.json", {"machine": machine(), "rows": rows})


if __name__ == "__main__":
    main()
