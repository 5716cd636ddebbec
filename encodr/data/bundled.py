"""The recipes' bundled training data, by name (a recipe's ``default_data``): the strings
``encodr tune`` trains on when no file is given. Reads through :mod:`.text` and :mod:`.readers`
(kept apart from them, so neither imports the other)."""

from __future__ import annotations

import hashlib
import random

from ..errors import EncodrError
from ..paths import bundled
from .readers import read_sts
from .text import Corpus, read_corpus, top_words


def default_corpus(name: str, n: int = 10_000, seed: int = 42) -> Corpus:
    """Bundled training data for a recipe's ``default_data``.

    Args:
        name: ``words`` (wordfreq top-n), ``mesh`` (n sampled MeSH disease names),
            ``wiki`` (the bundled Wikipedia sentences, all of them), ``stsb-train``
            (the distinct sentences of STS-B train, labels unused).
        n: number of strings for ``words`` and ``mesh``.
        seed: sampling seed for ``mesh``.

    Raises:
        EncodrError: ``none`` or an unknown name.
    """

    if name == "words":
        strings = top_words(n)
        return Corpus(strings, f"wordfreq:en:top{n}", hashlib.sha256("\n".join(strings).encode()).hexdigest(), len(strings))
    if name == "mesh":
        import csv

        path = bundled("mesh/mesh_disease_names.tsv")
        with open(path, encoding="utf-8") as f:
            names = sorted({row["name"] for row in csv.DictReader(f, delimiter="\t")})
        strings = random.Random(seed).sample(names, min(n, len(names)))
        return Corpus(
            strings, f"mesh:sample{n}:seed{seed}", hashlib.sha256("\n".join(strings).encode()).hexdigest(), len(strings)
        )
    if name == "wiki":
        return read_corpus(bundled("wiki/wiki_sentences_en.txt"))
    if name == "stsb-train":
        pairs = read_sts(bundled("stsb/sts-train.csv"))
        strings = list(dict.fromkeys(s for p in pairs for s in (p.text1, p.text2)))
        return Corpus(strings, "stsb-train", hashlib.sha256("\n".join(strings).encode()).hexdigest(), len(strings))
    raise EncodrError("this recipe has no bundled default data; pass a text file: encodr tune FILE --recipe ...")
