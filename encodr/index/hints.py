"""The hint lines a search or a build adds when the index's model does not fit its texts or its
queries: an English-only model over other languages (:func:`model_language_hints`), or queried in
another language (:func:`language_hints`). Every front end shows them as they are.
"""

from __future__ import annotations

HINT_WORDS, HINT_CONFIDENCE = 3, 0.8  # a query gets the language hint when it has this many words and the detector is this sure
# … and finds English this unlikely: short English queries read as another language ("white matter in newborns": Swedish
# 0.89, English 0.045)
HINT_ENGLISH_AT_MOST = 0.01


def hint_applies(model: str, languages: list[str]) -> bool:
    """Whether :func:`language_hints` looks at the queries of an index built with ``model`` whose
    texts are in ``languages``: English texts and a model trained on English only
    (:data:`encodr.models.aliases.ENGLISH_ONLY`)."""
    from ..models.aliases import ENGLISH_ONLY

    return model in ENGLISH_ONLY and set(languages or []) - {"und"} == {"eng"}


def model_language_hints(model: str, languages: list[str]) -> list[str]:
    """One hint line when an index built with ``model`` holds texts in ``languages`` other than
    English, and the model was trained on English only (:data:`encodr.models.aliases.ENGLISH_ONLY`):
    it names the languages and the multilingual model. Empty otherwise."""
    from ..models.aliases import ENGLISH_ONLY, MULTILINGUAL

    other = sorted(set(languages or []) - {"eng", "und"})
    if model not in ENGLISH_ONLY or not other:
        return []
    return [
        f"texts in {', '.join(other)}, but {model} was trained on English only: index them with --model {MULTILINGUAL} "
        "(multilingual) to search them well"
    ]


def language_hints(queries: list[str], meta) -> list[str]:
    """One hint line when an index of English texts, built with a model trained on English only
    (:data:`encodr.models.aliases.ENGLISH_ONLY`), is searched with a query in another language
    (detected among all languages, :func:`encodr.data.language.detect_against`: another language
    at :data:`HINT_CONFIDENCE` or more and English at :data:`HINT_ENGLISH_AT_MOST` or less, whose
    common words it holds at least as many of as English's, :func:`_reads_as`): it
    names the multilingual model. Empty otherwise (and for any other model or index). ``meta``:
    the index's :class:`~encodr.index.meta.IndexMeta`."""
    from ..data.language import detect_against
    from ..models.aliases import MULTILINGUAL

    if not hint_applies(meta.model, meta.languages):
        return []
    sure = [q for q in queries if len(q.split()) >= HINT_WORDS or _unspaced_words(q) >= HINT_WORDS - 1]
    found = detect_against(sure, "eng") if sure else []
    other = sorted(
        {
            code
            for query, (code, p, english) in zip(sure, found)
            if code not in ("eng", "und") and p >= HINT_CONFIDENCE and english <= HINT_ENGLISH_AT_MOST and _reads_as(query, code)
        }
    )
    if not other:
        return []
    return [
        f"a query looks like {', '.join(other)}, but model {meta.model} was trained on English only: rebuild the index with "
        f"--model {MULTILINGUAL} (multilingual) to search it across languages"
    ]


def _unspaced_words(query: str) -> int:
    """About how many words a query in a script written without spaces holds: its characters of
    such scripts, two to a word (a Chinese or Japanese word is one to three characters)."""
    from ..data.language import unspaced

    return sum(map(unspaced, query)) // 2


def _reads_as(query: str, code: str) -> bool:
    """Whether ``query`` reads as language ``code`` at least as well as as English: no more of
    its words are common English words than common words of ``code`` (wordfreq's lists,
    :func:`~encodr.data.language.common_share`). The detector reads short English queries as
    other languages ("okapi zebra events": Maori 0.97), whose words wordfreq then knows as
    English; a language wordfreq has no list for is not confirmed, unless no word is English."""
    from ..data.language import common_share

    english = common_share(query, "eng")
    if not english:
        return True
    own = common_share(query, code)
    return own is not None and own >= english
