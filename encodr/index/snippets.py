"""The snippet of a hit: the sentences of its passage that best answer the query, and the line
of its file where they start.

Elasticsearch's highlighter picks fragments around the query's matches (``fragment_size``,
``number_of_fragments``); a question rarely repeats the words of its answer, so here each
sentence of the passage is scored by both of what a hybrid search uses:

- its keyword matches: the query's words it holds (compared by stem, as the keyword index
  compares them), each weighted by how rare the word is in the language (wordfreq's Zipf
  frequency: ``the`` counts for nothing, ``Broncos`` for much), as a share of the query's weight;
- the cosine of the query's vector and the sentence's (the index's model), when the caller
  gives the sentences' similarities (it computes them only where the keywords do not decide:
  :func:`decided`).

The best sentence is kept, then the ones after it, while the snippet stays within
:data:`SNIPPET_CHARS` characters; a front end cuts it to what it has room for, from its start.
"""

from __future__ import annotations

import functools
import math
import re

SNIPPET_CHARS = 320  # the most characters a snippet holds (a front end shows what fits)
_HEADING = re.compile(r"#{1,6}\s")  # a Markdown heading line's start
_BLOCK = re.compile(r"#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|\||>|```|~~~")  # a line that starts a Markdown block
_SENTENCE_END = re.compile(r"(?<=[.!?;。！？])[\"'”’)\]]*\s+|(?P<bare>\n\s*)")  # bare: a line break after no stop


_ABBREVIATIONS = frozenset(
    "dr mr mrs ms prof st nr no ca bzw vgl etc usw sog inkl evtl ggf geb gest hl jr sr vs al approx dept est inc ltd "
    "co corp vol fig ed eds "
    "pp engl franz lat griech span port ital sp esp núm pág sra sr dña mme mlle".split()
)  # a period after one of these (any case) ends no sentence
_WORD_BEFORE = re.compile(r"(\w+)\W*$")


def _ends_sentence(text: str, stop: int, after: int) -> bool:
    """Whether a period at ``text[stop - 1]`` followed by spaces up to ``after`` ends a sentence:
    not after an abbreviation (:data:`_ABBREVIATIONS`), an initial (``J.``, ``U.S.``) or a day's
    number (``am 5. April``), and not before a lower-case letter."""
    if text[stop - 1] != "." or after >= len(text):
        return True
    if text[after].islower():
        return False
    m = _WORD_BEFORE.search(text, max(0, stop - 16), stop - 1)
    word = m.group(1) if m else ""
    return not (len(word) == 1 or word.casefold() in _ABBREVIATIONS or (word.isdigit() and len(word) <= 2))


def _line_start(text: str, at: int) -> int:
    """The offset where the line holding offset ``at`` of ``text`` starts."""
    return text.rfind("\n", 0, at) + 1


def sentence_spans(text: str, wrapped: bool = False) -> list[tuple[int, int]]:
    """The sentences of ``text`` as (start, end) character ranges, end exclusive, stripped of
    the spaces around them: cut after ``. ! ? ;`` (and CJK full stops) followed by a space,
    unless the period closes an abbreviation, an initial or a day's number, or the next word
    starts in lower case (:func:`_ends_sentence`), and at every line break (a heading, a list
    item, a table row, a line of code is a sentence of its own).

    With ``wrapped`` (prose whose paragraphs may be wrapped: Markdown, text, a PDF's lines), a
    line break inside a paragraph is a space: it ends a sentence only as a space would, or before
    a blank line or a line that starts a block (:data:`_BLOCK`: a heading, a list item, a table
    row, a quote, a code fence) and after a heading, so a sentence wrapped over three lines is one
    sentence."""
    spans, at = [], 0
    for m in _SENTENCE_END.finditer(text):
        breaks = m.group().count("\n")
        if wrapped and breaks == 1 and not _BLOCK.match(text, m.end()) and not _HEADING.match(text, _line_start(text, m.start())):
            breaks = 0  # a wrapped line: the break is a space
            if m.group("bare") is not None:
                continue  # no stop before it
        if not breaks and m.start() > 0 and not _ends_sentence(text, m.start(), m.end()):
            continue
        closing = len(m.group()) - len(m.group().lstrip("\"'”’)]"))  # a closing quote or bracket stays with its sentence
        spans.append((at, m.start() + closing))
        at = m.end()
    spans.append((at, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out or [(0, len(text))]


@functools.lru_cache(maxsize=64)
def _two_letter(lang: str | None) -> str:
    """The ISO 639-1 code of the wordfreq list a language's words are weighed by: its own where
    wordfreq has one, else English's (a language wordfreq lacks, such as Somali, would make it
    print a warning line to stderr, or raise ``LookupError``)."""
    if not lang or lang == "und":
        return "en"
    from wordfreq import available_languages

    try:
        from ..data.language import known_languages

        code = known_languages()[lang].iso_code_639_1.name.lower()
    except Exception:  # a language the detector does not know
        return "en"
    return code if code in available_languages() else "en"


SEGMENTED = ("zh", "ja", "ko")  # wordfreq cuts these languages' text into words with an extra (jieba, MeCab)


@functools.lru_cache(maxsize=65536)
def word_weight(word: str, lang: str | None) -> float:
    """How much a query word says, from 0 (``the``) to 8 (a word wordfreq has not seen): 8
    minus its Zipf frequency in ``lang`` (ISO 639-3), floored at 0.

    Chinese, Japanese and Korean words are looked up in wordfreq's list as they are: wordfreq's
    own lookup first cuts them into words with jieba or MeCab, extras that are not installed."""
    from wordfreq import get_frequency_dict, zipf_frequency

    from ..data.language import unspaced

    short = _two_letter(lang)
    if short in SEGMENTED or not word.isascii() and any(unspaced(c) for c in word):
        frequency = get_frequency_dict(short if short in SEGMENTED else "zh", "best").get(word, 0.0)
        return max(0.0, 8.0 - (math.log10(frequency) + 9 if frequency > 0 else 0.0))
    return max(0.0, 8.0 - zipf_frequency(word, short))


def keyword_scores(query: str, text: str, spans: list[tuple[int, int]], lang: str | None = None) -> list[float]:
    """Each sentence's share, in [0, 1], of the query's word weight (:func:`word_weight`) that it
    holds, words compared by their stems in ``lang``; a word of Chinese, Japanese or Korean
    characters (written without spaces between words) is held where the sentence contains it."""
    from ..data.language import unspaced
    from .keywords import stem_words
    from .keywords import words as word_spans

    words = [query[a:b].lower() for a, b in word_spans(query)]
    if not words:
        return [0.0] * len(spans)
    weights: dict[str, float] = {}
    for word, stem in zip(words, stem_words(words, lang)):
        weights[stem] = max(weights.get(stem, 0.0), word_weight(word, lang))
    total = sum(weights.values()) or 1.0
    contained = [stem for stem in weights if not stem.isascii() and any(map(unspaced, stem))]  # held where contained
    scores = []
    for s, e in spans:
        found = [text[s + a : s + b].lower() for a, b in word_spans(text[s:e])]
        held = set(found) | set(stem_words(found, lang))
        if contained:
            sentence = text[s:e].lower()
            held |= {stem for stem in contained if stem in sentence}
        scores.append(sum(w for stem, w in weights.items() if stem in held) / total)
    return scores


DECISIVE = 0.2  # a lead in keyword share that the sentences' cosines do not overturn: they are not computed


def decided(scores: list[float]) -> bool:
    """Whether the keyword scores alone choose the sentence: the best leads the next by at least
    :data:`DECISIVE` of the query's word weight. Adding the sentences' cosines then leaves the
    choice as it is (chosen on XQuAD's English questions, a shared set: no choice changed at
    this lead, some at smaller ones), so their forward pass is saved for such hits."""
    top = sorted(scores, reverse=True)
    return len(top) < 2 or top[0] - top[1] >= DECISIVE


COSINE_BUDGET = 256  # estimated tokens of sentences a query's snippets encode beyond its first undecided hit


def within_budget(wanted: list[tuple[int, int]], spans: list[list[list[tuple[int, int]]]]) -> list[tuple[int, int]]:
    """The hits whose sentences' cosines are computed for their snippets, of ``wanted`` (the
    undecided (query, hit) pairs, in rank order within each query): each query's first one,
    then, in rank order, each whose sentences still fit in :data:`COSINE_BUDGET` estimated
    tokens (:func:`~encodr.models.encoder.estimated_tokens`). Encoding every sentence of
    every hit costs as much as encoding the hits themselves (ten abstracts: hundreds of
    milliseconds on a CPU), so the hits past the budget choose their snippet by keywords
    alone, as decided hits do; the first hit, the one a person reads first, always has its
    sentences compared with the query.

    Args:
        wanted: (query number, hit number) pairs, in rank order within each query.
        spans: per query, per hit, the (start, end) character ranges of its sentences.
    """
    from ..models.encoder import estimated_tokens

    used: dict[int, int] = {}
    kept = []
    for q, i in wanted:
        cost = sum(estimated_tokens(e - s) for s, e in spans[q][i])
        if q in used and used[q] + cost > COSINE_BUDGET:
            continue
        used[q] = used.get(q, 0) + cost
        kept.append((q, i))
    return kept


def choose(
    text: str, spans: list[tuple[int, int]], scores: list[float], budget: int = SNIPPET_CHARS, markdown: bool = False
) -> tuple[int, int]:
    """The (start, end) of ``text`` a snippet shows: the best-scored sentence of ``spans``, then
    the sentences after it while the whole stays within ``budget`` characters; the best sentence
    alone when it is longer (a front end cuts it). The snippet starts at the best sentence, so
    its line is that sentence's line and a front end that shows only its first line shows it.
    In ``markdown`` text a heading line (``# …``) starts no snippet unless every sentence is one:
    a hit names its heading path as its section already, and what answers sits under it."""
    if markdown:
        headings = [bool(_HEADING.match(text, a)) for a, _ in spans]
        if not all(headings):
            scores = [float("-inf") if heading else score for heading, score in zip(headings, scores)]
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    last = best
    while last + 1 < len(spans) and spans[last + 1][1] - spans[best][0] <= budget:
        last += 1
    return spans[best][0], spans[last][1]


def line_and_column(text: str, line: int, offset: int) -> tuple[int, int]:
    """The 1-based (line, column) of character ``offset`` of a passage ``text`` that starts on
    file line ``line`` (the column counted from the passage's start on its first line)."""
    before = text[:offset]
    return line + before.count("\n"), offset - (before.rfind("\n") + 1) + 1


SENTENCES_KEPT = 8192  # sentence vectors a searcher keeps for its next snippets (SentenceVectors; 12 MiB at 384 dimensions)


class SentenceVectors:
    """The vectors of the sentences of the passages a searcher's snippets compared with their
    queries, kept for its next snippets, least recently used passage out past ``kept`` sentences: a person
    typing a query searches at each pause and meets the same hits again, and a server meets its
    popular hits again, so each passage's sentences are encoded once.

    A passage's sentences are encoded as a batch of their own, not with the other hits' (one
    forward pass a passage): an int8 encoder quantises its activations over the whole batch, so a
    sentence's vector would otherwise depend on the passages it was batched with, and a hit's
    snippet on which hits came with it, or before it. The vectors are kept for one encoder,
    document prompt and dimension; asked with another, it lets them all go. Thread-safe (a
    server's searches run at once)."""

    def __init__(self, kept: int = SENTENCES_KEPT):
        import threading

        from .kept import Kept

        self._vectors = Kept(kept)  # a passage's sentences → float32 (n, d), counted by its sentences
        self._for: tuple | None = None  # (encoder, prompt, dimension) they were made with
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The sentence vectors kept."""
        return self._vectors.size

    def encode(self, index, encoder, passages: list[tuple[str, ...]]) -> list:
        """Each passage's float32 (n, d) unit vectors of its n sentences, as ``index`` encodes its
        passages (:meth:`~.reader.QueryEncoding.encode_passages`, by ``encoder``): those met
        before read back, the others encoded, a passage a batch, and kept."""
        made_with = (encoder, index.meta.document_prompt, index.meta.dimension)
        with self._lock:
            if self._for is None or self._for[0] is not encoder or self._for[1:] != made_with[1:]:
                self._vectors.clear()
                self._for = made_with
            made_with = self._for  # what a search with another encoder may replace while this one encodes
            found = {passage: self._vectors.get(passage) for passage in passages}
        for passage in [p for p, vectors in found.items() if vectors is None]:
            found[passage] = vectors = index.encode_passages(encoder, list(passage))
            with self._lock:
                if self._for is made_with:
                    self._vectors.put(passage, vectors, len(vectors))
        return [found[passage] for passage in passages]
