"""Corpus-level language detection, before and after counting only confident labels
(``encodr.data.language.CONFIDENT``), and with the languages found on an evenly spaced sample
(``sampled_languages``, what a corpus of one window gets): which languages a corpus is said to
have, and how many texts end up with the right language after the second pass among those
languages — what ``encodr index`` does without ``--lang``. The sample rule is shown as it was
(high-accuracy among all languages) and as it is (low-accuracy among all, then high-accuracy among
those found).

Corpora: the first 3,000 bundled English Wikipedia sentences (one language), 500 Bible verses in
each of 8 languages (``../shared/data/bible``; Genesis onward, different verses per language: the
i-th block of 500 verses for the i-th language, so no verse is repeated across languages), and
3,000 evenly spaced MeSH disease names (English terms, often Latin or Greek in form: a hard case).

    python bench/language_detection.py

Prints a table and writes bench/results/language_detection.json.
"""

from __future__ import annotations

import argparse
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


def mesh_names(count: int) -> list[str]:
    """``count`` evenly spaced MeSH disease names (English terms, many of them Latin or Greek in form)."""
    import csv

    from encodr.paths import bundled

    with open(bundled("mesh/mesh_disease_names.tsv"), encoding="utf-8") as f:
        names = [row["name"] for row in csv.DictReader(f, delimiter="\t")]
    return [names[round(i * (len(names) - 1) / (count - 1))] for i in range(count)]


def sampled_high_accuracy(texts: list[str]) -> list[str]:
    """The sample rule before the low-accuracy first step: the even sample labelled in
    high-accuracy mode among all languages (1 GB of models), its confident labels kept."""
    from encodr.data.language import SAMPLE, corpus_languages, detect_with_confidence

    n = len(texts)
    picked = sorted({round(i * (n - 1) / (SAMPLE - 1)) for i in range(SAMPLE)}) if n > SAMPLE else range(n)
    found = detect_with_confidence([texts[i] for i in picked], None, accurate=True)
    return corpus_languages([code for code, _ in found], confidences=[sure for _, sure in found])


def settled(texts: list[str]) -> list[str]:
    """What ``encodr index`` does for a one-window corpus: its texts labelled among the sampled
    languages, then the settle step's rule (``settled_languages``: confident labels, a minority
    label most of whose texts read as the major language counted as unsure)."""
    from encodr.data.language import detect_with_confidence, prose_confidence, sampled_languages, settled_languages

    found = detect_with_confidence(texts, sampled_languages(texts))
    labels = [code for code, _ in found]
    by_label: dict[str, list[str]] = {}
    for text, code in zip(texts, labels):
        by_label.setdefault(code, []).append(text)

    def texts_of(codes: list[str], n: int) -> dict[str, list[str]]:
        return {code: by_label[code][:: max(1, len(by_label[code]) // n)][:n] for code in codes}

    sure = [prose_confidence(text, c) for text, (_, c) in zip(texts, found)]
    return settled_languages(labels, sure, [len(t) for t in texts], texts_of)


QUICK = ["--texts", "200", "--out", "{tmp}/language_detection.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--texts",
        type=int,
        default=3000,
        help="Wikipedia sentences and MeSH names (the Bible: a sixth as many verses per language)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "language_detection.json")
    args = parser.parse_args()
    from encodr.data.bundled import default_corpus
    from encodr.data.language import SAMPLE, corpus_languages, detect_languages, detect_with_confidence, sampled_languages

    wiki = list(default_corpus("wiki").strings[: args.texts])
    mesh = mesh_names(args.texts)
    per = max(1, args.texts // 6)
    corpora = {
        f"wikipedia (eng), {len(wiki):,}": (wiki, ["eng"] * len(wiki)),
        f"bible, 8 × {per}": bible(per),
        f"MeSH names (eng), {len(mesh):,}": (mesh, ["eng"] * len(mesh)),
    }
    rows = []
    for name, (texts, truth) in corpora.items():
        first = detect_with_confidence(texts, None, accurate=True)  # the first pass of a corpus of ≤ 10,000 texts
        labels = [code for code, _ in first]
        first_acc = 100 * sum(a == b for a, b in zip(labels, truth)) / len(truth)
        for rule, kept in (
            ("all labels (before)", corpus_languages(labels)),
            ("confident labels (after)", corpus_languages(labels, confidences=[c for _, c in first])),
            (
                f"confident labels of an even sample of {SAMPLE:,}, high-accuracy (one-window corpus, before)",
                sampled_high_accuracy(texts),
            ),
            (
                f"an even sample of {SAMPLE:,}: low-accuracy, then confident labels among those found "
                "(one-window corpus, before)",
                sampled_languages(texts),
            ),
            (
                "labelled among the sample's languages, then confident labels with minority labels that read as the major "
                "language (wordfreq) unsure (one-window corpus, now)",
                settled(texts),
            ),
        ):
            second = detect_languages(texts, kept)
            rows.append(
                {
                    "corpus": name,
                    "rule": rule,
                    "languages kept": ",".join(kept),
                    "first pass acc %": round(first_acc, 2),
                    "after second pass acc %": round(100 * sum(a == b for a, b in zip(second, truth)) / len(truth), 2),
                    "wrong": sum(a != b for a, b in zip(second, truth)),
                }
            )
            print(rows[-1], flush=True)
    print_table("language detection at corpus level (lingua, all 75 languages then among those kept)", rows, list(rows[0]))
    write_json(args.out, {"machine": machine(), "texts": args.texts, "rows": rows})


if __name__ == "__main__":
    main()
