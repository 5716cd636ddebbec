"""The keyword index beside the vectors: SQLite FTS5 with BM25 over analysed text.

Guarantee: a text and a query go through the same analysis, :func:`keyword_terms`, so a query
word matches a text word when both reduce to the same term in their languages.

Analysis, in order (Lucene's and Elasticsearch's language analyzers do the same steps):

1. split into words (letters and digits, any script) and runs of the scripts written without
   spaces: CJK (Han, kana, Hangul), Thai, Lao, Khmer and Burmese; an identifier's parts are
   words of their own (``get_console`` → ``get console``, ``ConsolePrint`` → ``console print``:
   :func:`words`), then lower-case;
2. a Thai run is cut into words by PyThaiNLP's ``newmm`` dictionary segmenter (what
   Elasticsearch's ``thai`` tokenizer and Lucene's ``ThaiTokenizer`` do with ICU's dictionary):
   ``เครื่องสูบน้ำต้องมีแรงดัน`` → ``เครื่องสูบน้ำ ต้อง มี แรงดัน``; a CJK, Lao, Khmer or Burmese
   run becomes its overlapping character bigrams (``東京都`` → ``東京 京都``; one character
   stays itself), as Lucene's ``CJKBigramFilter`` does: no dictionary, and a query's bigrams
   match inside longer words (for Lao, Khmer and Burmese, which no kept segmenter here covers,
   the bigrams are the fallback). A text's run also keeps its last character as a term of its
   own, after the bigrams, and a query of one character asks for the terms it starts (FTS5's
   prefix query ``"猫"*``: the bigrams it starts and itself): each place the character stands
   is then found once, where Lucene's filter, without its unigrams, finds none;
3. every other word is stemmed by the Snowball stemmer of the text's language (PyStemmer's C
   build; :data:`STEMMERS`), when there is one: ``studies`` and ``studied`` both become
   ``studi``. A text of another language, or of none (``und``), is left unstemmed;
4. FTS5's ``unicode61`` tokenizer then folds case and removes diacritics (``café`` = ``cafe``).

A query is analysed in its own detected language (:meth:`encodr.index.Searcher.query_languages`),
so a German query meets German stems.
"""

from __future__ import annotations

import functools
import re
from typing import Callable, Iterable

KEYWORD_TABLE = "texts_fts"
# FTS5's Unicode tokenizer, after keyword_terms: splits on spaces, folds case, drops diacritics.
KEYWORD_TOKENIZER = "unicode61 remove_diacritics 2"
# recorded in index.json; an index made by another analysis gets a hint, and encodr index --upgrade
# builds its keywords again (encodr.index.upgrade.keywords_stale)
ANALYZER = "snowball-stems+identifier-parts+cjk-bigrams+cjk-last-unigram+thai-newmm"

# ISO 639-3 → Snowball stemmer (PyStemmer's algorithm names)
STEMMERS = {
    "ara": "arabic",
    "hye": "armenian",
    "eus": "basque",
    "cat": "catalan",
    "ces": "czech",
    "dan": "danish",
    "nld": "dutch",
    "eng": "english",
    "epo": "esperanto",
    "est": "estonian",
    "fin": "finnish",
    "fra": "french",
    "deu": "german",
    "ell": "greek",
    "hin": "hindi",
    "hun": "hungarian",
    "ind": "indonesian",
    "gle": "irish",
    "ita": "italian",
    "lit": "lithuanian",
    "nep": "nepali",
    "nob": "norwegian",
    "nno": "norwegian",
    "nor": "norwegian",
    "fas": "persian",
    "pes": "persian",
    "pol": "polish",
    "por": "portuguese",
    "ron": "romanian",
    "rus": "russian",
    "srp": "serbian",
    "sot": "sesotho",
    "spa": "spanish",
    "swe": "swedish",
    "tam": "tamil",
    "tur": "turkish",
    "yid": "yiddish",
}

_CJK = "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
_BIGRAMS = _CJK + "\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f"  # … and Lao, Khmer, Burmese: bigrams
_THAI = "\u0e00-\u0e7f"
_WORDS = re.compile(f"([{_BIGRAMS}]+)|([{_THAI}]+)|([^\\W_{_BIGRAMS}{_THAI}]+)")  # "_" joins an identifier's parts


@functools.lru_cache(maxsize=None)
def _stemmer(lang: str | None):
    import Stemmer

    name = STEMMERS.get(lang or "")
    return Stemmer.Stemmer(name) if name else None


def keyword_terms(text: str, lang: str | None, identifiers: bool = True, query: bool = False) -> list[str]:
    """The terms of ``text`` in language ``lang`` (ISO 639-3, or None) for the keyword index:
    stemmed words and CJK bigrams, in order, before FTS5's case and diacritic folding (see
    the module docstring).

    Args:
        text: any text.
        lang: its language; selects the stemmer (none for languages without one).
        identifiers: add :func:`identifier_terms` (after the words, so a phrase of words
            matches a text's words in order).
        query: analyse a query: a run of one character is the prefix term ``猫*`` (FTS5's
            prefix query: the terms it starts), and a longer run keeps only its bigrams; a
            text's runs add their last characters (after every bigram, so a phrase's bigrams
            stay next to each other).

    Returns:
        Terms, lower-case, possibly repeated (BM25 counts them).
    """
    to_stem: list[str] = []  # the words, each stemmed below
    terms: list[str] = []
    lasts: list[str] = []  # each CJK run's last character (a text's)
    camel = _CAMEL.search(text) is not None  # most prose has no CamelCase name: no word to cut
    for m in _WORDS.finditer(text):
        run, thai, word = m.groups()
        if run:
            run = run.lower()
            if len(run) == 1:
                terms.append(run + "*" if query else run)
                continue
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
            if not query:
                lasts.append(run[-1])
        elif thai:
            terms.extend(thai_words(thai))
        elif camel and _CAMEL.search(word):
            to_stem.extend(text[a:b].lower() for a, b in _parts(word, m.start()))
        else:
            to_stem.append(word.lower())
    return stem_words(to_stem, lang) + terms + lasts + (identifier_terms(text) if identifiers else [])


def words(text: str) -> list[tuple[int, int]]:
    """The (start, end) character offsets of the words of ``text`` as step 1 of the analysis
    cuts them: letters and digits, an identifier's parts each a word (``get_console`` → ``get``,
    ``console``; ``ConsolePrint`` → ``Console``, ``Print``), and each run of a script written
    without spaces whole; for the front ends' highlights and the snippets' word matches."""
    if not _CAMEL.search(text):  # most prose has no CamelCase name: each match is a word
        return [m.span() for m in _WORDS.finditer(text)]
    return [span for m in _WORDS.finditer(text) for span in (_parts(m.group(3), m.start()) if m.group(3) else [m.span()])]


def _parts(word: str, at: int) -> list[tuple[int, int]]:
    """The spans of ``word`` (found at offset ``at``), cut at its CamelCase boundaries
    (``getHTTPServer`` → ``get``, ``HTTP``, ``Server``); itself where it has none (``URLs``)."""
    if not _CAMEL.search(word):
        return [(at, at + len(word))]
    return [(at + m.start(), at + m.end()) for m in _CAMEL_PARTS.finditer(word)]


# each from a word's start (no backtracking into a word; the matches of \w+(?:[-.:/]\w+)+ and of
# \w*(?:[a-z][A-Z]|[A-Za-z0-9]_[A-Za-z0-9])\w*, found without trying every character of every word)
_CODE = re.compile(r"(?<!\w)\w++(?:[-.:/]\w++)+")  # HX-7731, v2.3.1, os.path.join, a/b
_IDENTIFIER = re.compile(r"(?<!\w)\w*?(?:[a-z][A-Z]|[A-Za-z0-9]_[A-Za-z0-9])\w*")  # CamelCase, snake_case
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CAMEL = re.compile(r"[a-z][A-Z]")  # a CamelCase boundary (getConsole; not URLs, or HTTPServer alone: an acronym's plural)
# the pair of characters every code or identifier holds: a text without one (most prose) needs neither pattern tried
_CODE_OR_IDENTIFIER = re.compile(r"\w[-.:/]\w|[a-z][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]")


def identifier_terms(text: str) -> list[str]:
    """The codes and identifiers of ``text`` kept whole, as one term each, beside the words
    they are split into by step 1 (FTS5's tokenizer would cut them at ``-``, ``.``, ``_``):
    ``HX-7731`` → ``hx7731``, ``v2.3.1`` → ``v231``, ``get_console`` → ``getconsole``,
    ``ConsolePrint`` → ``consoleprint`` (their words, ``get`` and ``console``, ``console`` and
    ``print``, are stemmed terms already). A query's code then matches the text that holds it
    exactly above texts holding only its parts (each whole term is rarer than its parts)."""
    out: list[str] = []
    if not _CODE_OR_IDENTIFIER.search(text):
        return out
    for m in _CODE.finditer(text):
        out.append(re.sub(r"\W|_", "", m.group()).lower())
    for m in _IDENTIFIER.finditer(text):
        out.append(m.group().replace("_", "").lower())
    return out


def thai_words(run: str) -> list[str]:
    """The words of a run of Thai script (PyThaiNLP's ``newmm``: maximal matching over its Thai
    dictionary, then the Thai Character Cluster rules for words it does not know).

    Raises:
        EncodrError: PyThaiNLP is not installed.
    """
    from ..extras import need

    word_tokenize = need("pythainlp.tokenize").word_tokenize
    return [w for w in word_tokenize(run, engine="newmm", keep_whitespace=False) if w.strip()]


def stem_words(words: list[str], lang: str | None) -> list[str]:
    """``words`` stemmed by ``lang``'s Snowball stemmer (step 3 above; unchanged for a language
    without one), one to one, in one call.

    Args:
        words: single lower-case words (``\\w+``), not CJK runs.
        lang: ISO 639-3, or None.
    """
    stemmer = _stemmer(lang)
    return stemmer.stemWords(words) if stemmer else list(words)


def keyword_text(text: str, lang: str | None) -> str:
    """:func:`keyword_terms` joined by spaces: what the keyword index stores for a text."""
    return " ".join(keyword_terms(text, lang))


_PHRASE = re.compile(r'"([^"]+)"')


def quoted(term: str) -> str:
    """``term`` as an FTS5 string: ``"studi"``; the prefix term ``猫*`` as FTS5's prefix query ``"猫"*``."""
    return f'"{term[:-1]}"*' if term.endswith("*") else f'"{term}"'


def keyword_expression(query: str, lang: str | None = None, weightless: Callable[[list[str]], set[str]] | None = None) -> str:
    """An FTS5 MATCH expression for a free-text query: each distinct term as a quoted string,
    joined by OR, so no character of the query is read as FTS5 syntax; a part of the query in
    double quotes is a phrase, its terms in order, which every hit must hold
    (``"relief valve" pressure`` → ``"relief valv" AND ("pressur")``); ``""`` when the query
    has no term.

    Args:
        query: the user's text.
        lang: its language (the stemmer of :func:`keyword_terms`).
        weightless: given the query's terms, those that ``bm25()`` weighs at nothing
            (:meth:`~.texts.TextStore.weightless_terms`): left out of a query without phrases
            when another term remains. Each would add at most 10⁻⁶·(k1 + 1) to a text's score,
            yet FTS5 would score every text holding it (``the``: most of an English index). The
            ranking changes only among texts within that much of each other, and drops the
            texts that hold none of the other terms (their scores are that small).
    """
    phrases = [
        " ".join(t for t in keyword_terms(p, lang, identifiers=False, query=True) if not t.endswith("*"))
        for p in _PHRASE.findall(query)
    ]  # a text's whole codes sit after its words
    terms = list(dict.fromkeys(keyword_terms(_PHRASE.sub(" ", query), lang, query=True)))
    if weightless is not None and terms and not any(phrases):
        left_out = weightless(terms)
        terms = [t for t in terms if t not in left_out] or terms
    alternatives = " OR ".join(quoted(t) for t in terms)
    required = " AND ".join(f'"{p}"' for p in phrases if p)
    if required and alternatives:
        return f"{required} AND ({alternatives})"
    return required or alternatives


def keyword_table(conn) -> None:
    """Make the keyword index's table of a store where it is missing: SQLite FTS5, external
    content (``content='texts'``: the analysed terms are indexed, the text itself is stored once,
    in ``texts``)."""
    conn.execute(
        f"create virtual table if not exists {KEYWORD_TABLE} using fts5(text, content='texts', content_rowid='id', "
        f"tokenize='{KEYWORD_TOKENIZER}')"
    )


def indexed_text(text: str, section: str | None) -> str:
    """The text a row's keyword entry analyses: its heading path's words, then its own."""
    return text if section is None else f"{section} {text}"


def keyword_entries(rows: Iterable[tuple[int, str, str | None]]) -> list[tuple[int, str]]:
    """(id, :func:`keyword_text`) of each row given as (id, :func:`indexed_text`, language): the
    entries :func:`add_keywords` writes (the analysis, kept apart from the write so that a writer
    does it outside the store's lock)."""
    return [(i, keyword_text(text, lang)) for i, text, lang in rows]


def add_keywords(conn, entries: Iterable[tuple[int, str]]) -> None:
    """Write the keyword entries (:func:`keyword_entries`) of rows just stored, making the table
    where it is missing (:func:`build_keywords` writes the same for every row)."""
    keyword_table(conn)
    conn.executemany(f"insert into {KEYWORD_TABLE}(rowid, text) values (?, ?)", entries)


def drop_keywords(conn, entries: Iterable[tuple[int, str]]) -> None:
    """Take out the keyword entries (id, the analysed text they were written with) of rows
    still stored: FTS5 takes an external-content row's entry out given the terms it indexed."""
    conn.executemany(f"insert into {KEYWORD_TABLE}({KEYWORD_TABLE}, rowid, text) values ('delete', ?, ?)", entries)


def build_keywords(conn) -> None:
    """(Re)build the keyword index of a store: an SQLite FTS5 table (:func:`keyword_table`)
    whose rows are the :func:`keyword_text` of each row's :func:`indexed_text` (its heading
    path's words count) in its language, ranked by ``bm25()`` (k1 = 1.2, b = 0.75). Runs inside
    the generation being written, so it changes atomically with the vectors.

    Args:
        conn: an ``sqlite3.Connection`` to the store being written.
    """
    conn.create_function(
        "encodr_keyword_text", 3, lambda text, section, lang: keyword_text(indexed_text(text, section), lang), deterministic=True
    )
    keyword_table(conn)
    conn.execute(f"insert into {KEYWORD_TABLE}({KEYWORD_TABLE}) values ('delete-all')")
    conn.execute(f"insert into {KEYWORD_TABLE}(rowid, text) select id, encodr_keyword_text(text, section, lang) from texts")
    conn.commit()
