"""Sentence pairs for Trans-Encoder: read them from a file, or mine them from plain text.

Trans-Encoder (Liu et al. 2022, §4) trains on unlabelled pairs from the task. Mining pairs
from a general corpus with a bi-encoder is the paper's stated future work (§5.1); here
each sentence is paired with one of its FAISS nearest neighbours (at a random rank), plus
random pairs, so the pseudo-labels span the whole similarity range.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import EncodrError
from ..paths import bundled
from .text import read_lines

STSB_FILES = ("stsb/sts-train.csv", "stsb/sts-dev.csv", "stsb/sts-test.csv")


@dataclass
class PairData:
    """Unordered, distinct sentence pairs (or sentences to mine them from).

    Attributes:
        pairs: (sentence1, sentence2) tuples; empty until mined for plain text.
        sentences: distinct sentences (for plain text: the lines; for pairs: both sides).
        source: file path or bundled data name.
        sha256: hex digest of the input bytes.
        mined: True when the input was plain text and ``pairs`` came from :func:`mine_pairs`.
        labels_ignored: the input carried gold scores, which were dropped.
    """

    pairs: list[tuple[str, str]]
    sentences: list[str]
    source: str
    sha256: str
    mined: bool = False
    labels_ignored: bool = False


def _distinct(pairs) -> list[tuple[str, str]]:
    seen, out = set(), []
    for a, b in pairs:
        a, b = a.strip(), b.strip()
        key = (a, b) if a <= b else (b, a)
        if a and b and a != b and key not in seen:
            seen.add(key)
            out.append((a, b))
    return out


def read_pairs(path: str | Path) -> PairData:
    """Read ``sentence1<TAB>sentence2`` lines, a scored STS file (its scores are ignored:
    STS-B, SICK or ``score<TAB>s1<TAB>s2``), or plain text with one sentence a line.

    Returns:
        A :class:`PairData`; for plain text ``pairs`` is empty and ``mined`` is True
        (call :func:`mine_pairs`).

    Raises:
        EncodrError: unreadable file (see :func:`encodr.data.text.read_lines`), a line with
            a tab where others have none (line number given), or too little data.
    """
    from .readers import read_sts

    lines, sha = read_lines(path)
    rows = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not rows:
        raise EncodrError(f"{path} is empty; pass sentence1<TAB>sentence2 lines or one sentence a line")
    tabs = {line.count("\t") for _, line in rows}
    if tabs == {0}:
        sentences = list(dict.fromkeys(line.strip() for _, line in rows))
        if len(sentences) < 3:
            raise EncodrError(
                f"{path} has {len(sentences)} distinct sentence{'' if len(sentences) == 1 else 's'}; mining pairs "
                "needs at least 3: add more lines"
            )
        return PairData([], sentences, str(path), sha, mined=True)
    if 0 in tabs:
        number = next(n for n, line in rows if "\t" not in line)
        raise EncodrError(
            f"{path}: line {number} has no tab while other lines are pairs; use sentence1<TAB>sentence2 on every line"
        )
    if tabs == {1}:
        pairs, ignored = _distinct(line.split("\t") for _, line in rows), False
    else:
        pairs, ignored = _distinct((p.text1, p.text2) for p in read_sts(path)), True
    if len(pairs) < 2:
        raise EncodrError(
            f"{path} has {len(pairs)} distinct pair of different sentences; Trans-Encoder needs at least 2: add more"
        )
    return PairData(pairs, list(dict.fromkeys(s for p in pairs for s in p)), str(path), sha, labels_ignored=ignored)


def stsb_pairs() -> PairData:
    """The bundled STS-B train + dev + test pairs without their labels (Trans-Encoder §4:
    all pairs of the task, unlabelled)."""
    from .readers import read_sts

    digest = hashlib.sha256()
    raw = []
    for name in STSB_FILES:
        path = bundled(name)
        digest.update(path.read_bytes())
        raw.extend((p.text1, p.text2) for p in read_sts(path))
    pairs = _distinct(raw)
    return PairData(
        pairs,
        list(dict.fromkeys(s for p in pairs for s in p)),
        "stsb-pairs (bundled STS-B train+dev+test, unlabelled)",
        digest.hexdigest(),
        labels_ignored=True,
    )


def mine_pairs(vectors: np.ndarray, k: int, random_fraction: float, seed: int) -> list[tuple[int, int]]:
    """Pair each sentence with one of its k nearest neighbours and add random pairs.

    Args:
        vectors: float32 (N, d) unit vectors of N ≥ 3 distinct sentences.
        k: neighbours searched per sentence (exact inner-product search with FAISS);
            the partner is drawn uniformly from ranks 1..k, so pairs range from
            near-paraphrases to loosely related.
        random_fraction: random pairs to add, as a fraction of the neighbour pairs.
        seed: seeds the rank draws and the random pairs.

    Returns:
        Distinct unordered index pairs (i, j), i ≠ j: neighbour pairs first, then random ones.
    """
    import faiss

    n = len(vectors)
    k = min(k, n - 1)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    _, neighbours = index.search(np.ascontiguousarray(vectors, dtype=np.float32), k + 1)
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []

    def add(i: int, j: int) -> None:
        key = (min(i, j), max(i, j))
        if i != j and key not in seen:
            seen.add(key)
            out.append((i, j))

    for i in range(n):
        candidates = [int(j) for j in neighbours[i] if j >= 0 and j != i][:k]
        if candidates:
            add(i, candidates[int(rng.integers(len(candidates)))])
    wanted = len(out) + int(round(random_fraction * len(out)))
    for _ in range(10 * wanted):
        if len(out) >= wanted:
            break
        i, j = rng.integers(n, size=2)
        add(int(i), int(j))
    return out
