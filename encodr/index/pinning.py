"""Judgments that act at once: the documents judged for a query move in its hits the moment
they are judged, as Algolia's and Elastic App Search's curations pin or hide a result for a
query — grade 2 first, then grade 1, then the hits as ranked, then grade 0 — and a judged
document that the search did not find joins at its place.

A query's judgments are those of the same query (whitespace and case aside:
:func:`~.judgments.query_key`), else those of the judged query nearest to it when their cosine
is at least :data:`NEAR_DUPLICATE` (a reworded question). Evaluation never applies them: it
would score its own answers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from .judgments import Judgment, query_key

# the cosine above which another judged query counts as the same question; chosen with
# bench/judged_at_once.py on SciFact's shared train claims (dev fold): the nearest judged claim at
# or above it shares a relevant abstract with the claim every time there
NEAR_DUPLICATE = 0.85


def judged_for(
    query: str, vector: np.ndarray, judgments: list[Judgment], vectors: Callable[[list[str]], np.ndarray]
) -> list[Judgment]:
    """The judgments that apply to ``query``: its own, else those of the nearest judged query at
    cosine ≥ :data:`NEAR_DUPLICATE`; empty when none applies.

    Args:
        query: the query as typed.
        vector: its unit vector (d,), float32, as the index encodes queries.
        judgments: the index's judgments.
        vectors: judged query keys (:func:`~.judgments.query_key`) → their unit vectors (n, d),
            the same encoding.
    """
    key = query_key(query)
    own = [j for j in judgments if query_key(j.query) == key]
    if own or not judgments:
        return own
    keys = list(dict.fromkeys(query_key(j.query) for j in judgments))
    cosines = vectors(keys) @ vector
    best = int(np.argmax(cosines))
    if cosines[best] < NEAR_DUPLICATE:
        return []
    return [j for j in judgments if query_key(j.query) == keys[best]]


def pinned(hits: list, grades: dict[str, int], k: int, fetch: Callable[[str], object | None]) -> list:
    """``hits`` reordered by ``grades``: grade 2 documents first, then grade 1, then the rest as
    ranked, then grade 0; a graded 2 or 1 document missing from ``hits`` is fetched
    (``fetch(doc)``: its first passage as a hit, or None when the index no longer holds it). Each
    moved hit carries its grade (``judged``); ranks renumbered, the first ``k`` kept.

    Args:
        hits: one query's hits (:class:`~.search.Hit`), best first.
        grades: document → grade (of :func:`judged_for`'s judgments).
        k: hits wanted.
        fetch: document id → a hit for it, or None.
    """
    if not grades:
        return hits
    present = {h.document for h in hits}
    extra = [fetch(doc) for doc, grade in grades.items() if grade > 0 and doc not in present]
    pool = [*hits, *(h for h in extra if h is not None)]

    def place(h) -> int:
        return {2: 0, 1: 1, 0: 3}.get(grades.get(h.document), 2)

    order = sorted(range(len(pool)), key=lambda i: (place(pool[i]), i))
    out = [replace(pool[i], judged=grades.get(pool[i].document)) for i in order][:k]
    return [h.at(r) for r, h in enumerate(out, 1)]
