"""The code-aware ranking stage: a repository's passages of source code re-ranked by what they
define, where they sit and how much of their file answers, after retrieval and fusion and before
a document's passages are collapsed (semble's ranking layer; Zoekt's symbol boost).

A stage over the candidates of one query, pure: the scores it is given (fused, BM25 or cosine)
are normalised as fractions of the best candidate's, then each passage of source code gains

- ``definition``: its syntax-tree section (the qualified name :func:`encodr.data.code.code_sections`
  gave it) is the symbol an identifier-shaped query names (``embedded`` for a name inside a
  longer question; ``member`` for a member of a queried class) (:mod:`.boosts`);
- ``stem`` and ``folder``: a query word names its file's stem or a folder of its path,
  prefixes and plurals included;
- ``coherence``: its file holds other strong candidates;

and every candidate whose path is a test, documentation, an example, generated, or a vendored or
legacy copy loses that kind's weight unless the query asks for that kind (:mod:`.paths`). Prose
passages keep their own order among themselves. An index with no source code among a query's
candidates is ranked exactly as without the stage.

The weights are :class:`CodeWeights`' declared defaults, chosen on the project's own development
sets, never on another tool's benchmark: bench/repo_questions.py's questions (which files answer;
bench/code_ranking.py) and bench/code_search.py's docstring queries (which function answers), the
second a floor the first may not push below. The path and embedded-name gains are declared but 0:
each lifted the repository questions a little and cost the function queries several points
(a query word that names another file's stem, a class a docstring mentions), so neither kept
a weight (bench/notes/code_ranking.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...settings import setting
from .boosts import coherence, definition_hit, path_hit
from .paths import path_kind
from .query import QueryIntent, as_name, read_query

__all__ = ["CodeWeights", "QueryIntent", "rank_code", "read_query", "path_kind"]


@dataclass(frozen=True)
class CodeWeights:
    """The code-ranking stage's weights, in units of the best candidate's score."""

    definition: float = setting(1.0, "Gain of a passage that defines the symbol an identifier query names.", ge=0)
    embedded: float = setting(0.0, "Gain of a passage that defines a symbol named inside a longer query.", ge=0)
    member: float = setting(0.15, "Gain of a passage that is a member of a queried class or type.", ge=0)
    stem: float = setting(0.0, "Gain for each query word (at most two) its file's stem names.", ge=0)
    folder: float = setting(0.0, "Gain when a query word names a folder of its path.", ge=0)
    coherence: float = setting(0.1, "Gain of a passage whose file holds two more strong candidates.", ge=0)
    tests: float = setting(0.8, "Loss of a test file's passage, unless the query asks for tests.", ge=0)
    docs: float = setting(0.8, "Loss of documentation beside code, unless the query asks for docs.", ge=0)
    examples: float = setting(0.3, "Loss of an example's passage, unless the query asks for examples.", ge=0)
    copy: float = setting(0.4, "Loss of a vendored or legacy copy (v1/, _vendor/, third_party/, compat/).", ge=0)
    generated: float = setting(0.4, "Loss of a generated file (protobuf, *_generated.*).", ge=0)
    identifier_alpha: float = setting(
        0.3, "Hybrid: dense weight for source code when the query is an identifier (keywords lead).", ge=0, le=1
    )


WEIGHTS = CodeWeights()
STRONG = 0.5  # a candidate's normalised score from which it counts towards its file's coherence


def rank_code(
    query: str | QueryIntent,
    ids: np.ndarray,
    scores: np.ndarray,
    rows: dict[int, dict],
    is_code,
    weights: CodeWeights = WEIGHTS,
    only_definitions: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """One query's candidates re-ranked by the stage (the module's description).

    Args:
        query: the query's text, or its :class:`QueryIntent`.
        ids: int64 (n,) candidate row ids, best first; scores: float (n,) their first-stage scores.
        rows: row id → a stored row with ``source``, ``path`` and ``section``, for every candidate.
        is_code: ``source → bool``: whether a stored text is source code.
        weights: the stage's weights.
        only_definitions: keep only the passages that define a symbol the query names (where
            is NAME defined), whatever the query's shape.

    Returns:
        (ids int64 (n,), scores float64 (n,)) best first; ``ids`` and ``scores`` as given when
        no candidate is source code (none with ``only_definitions``).
    """
    code = np.fromiter((bool(is_code(rows[i]["source"])) for i in ids.tolist()), dtype=bool, count=len(ids))
    intent = query if isinstance(query, QueryIntent) else read_query(query)
    if only_definitions:
        intent = as_name(intent)
        keep = np.array(
            [
                bool(c) and definition_hit(intent, rows[i]["section"], weights) >= weights.definition / 2
                for i, c in zip(ids.tolist(), code.tolist())
            ],
            dtype=bool,
        )
        ids, scores, code = np.asarray(ids)[keep], np.asarray(scores)[keep], code[keep]
    if not code.any():
        return ids, scores
    base = _normalised(np.asarray(scores, dtype=np.float64))
    gain = np.zeros(len(ids))
    files = [rows[i]["path"] or rows[i]["source"] or "" for i in ids.tolist()]
    for n, (i, path) in enumerate(zip(ids.tolist(), files)):
        kind = path_kind(path)
        if kind is not None and kind not in intent.asks:  # a query asks for tests, docs or examples by these names
            gain[n] -= getattr(weights, kind)
        if code[n]:
            gain[n] += definition_hit(intent, rows[i]["section"], weights) + path_hit(intent, path, weights)
    gain += coherence(files, base, code, STRONG) * weights.coherence
    final = base + gain
    order = np.lexsort((np.arange(len(final)), -gain, -final))  # a tie goes to the larger gain (a definition over a use)
    return np.asarray(ids)[order], final[order]


def _normalised(scores: np.ndarray) -> np.ndarray:
    """Scores as fractions of the best (fused z-scores through the logistic, BM25, cosines: all
    higher-better with 0 as "no evidence"), so the last of a short list is not forced to 0, as a
    min-max normalisation would force it; from the lowest where a score is negative; all 1 when
    they are equal or alone."""
    low, high = min(scores.min(), 0.0), scores.max()
    return (scores - low) / (high - low) if high > low else np.ones_like(scores)
