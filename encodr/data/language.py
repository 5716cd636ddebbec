"""Language identification of texts, for language-agnostic search (CMLM §5.2 removes a
principal component *per language*, so every indexed text and every query needs one).

We use ``lingua-language-detector`` (rule + n-gram models of 75 languages, written in Rust)
rather than our own. Codes are ISO 639-3 in lower case (``eng``, ``spa``, ``deu``), the codes
of the Tatoeba and Bible files; ``und`` when the detector cannot decide.

A corpus of up to :data:`SMALL_CORPUS` texts is first labelled in high-accuracy mode (larger
models, slower to load; a corpus that ``encodr index`` reads in one window has only a sample
labelled so, :func:`sampled_languages`); a larger one in low-accuracy mode, which mislabels a share of
sentences against all 75 languages and single words often ("Hola" → Latvian;
docs/benchmarks/mixed_language_search.md gives the measured rates). Two things make it reliable:

- :func:`corpus_languages` keeps the languages that make up a real share of a corpus (of its
  confident labels, for a small share: :data:`CONFIDENT`), and the
  corpus is labelled again with only those as candidates, in high-accuracy mode (98.4 % ita
  to 100 % rus on the same verses among eng, spa, fra, deu, ita, rus);
- a query is labelled among the languages of the index it searches, in high-accuracy mode
  ("Hola", "ciao", "Guten Morgen", "Où est la gare ?" right among those six).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Callable, Iterable

from ..errors import EncodrError, OptionError, S
from ..extras import need

UNDETERMINED = "und"
_CODE = re.compile(r"^[a-z]{3}$")


def check_code(code: str, where: str = "lang") -> str:
    """``code`` when it has the shape of an ISO 639-3 code (three lower-case letters, as
    stored and detected: ``eng``, ``spa``, ``und``).

    Raises:
        OptionError: naming ``where``, an option's field name (each front end words it), or
            EncodrError naming a file's line, with the fix.
    """
    if not _CODE.match(code):
        problem = "is not an ISO 639-3 language code; give three lower-case letters such as eng, spa or deu"
        if where.isidentifier():
            raise OptionError(where, code, problem)
        raise EncodrError(f"{where} '{code}' {problem}")
    return code


DETECTOR = (
    "lingua-language-detector: among all languages (high-accuracy mode up to 10,000 texts; when the corpus is one window, "
    "an evenly spaced sample of 1,000 in low-accuracy mode, then high-accuracy among the languages found), then "
    "high-accuracy among the corpus's"
)
SMALL_CORPUS = 10_000  # up to this many texts, the first pass runs in high-accuracy mode
SAMPLE = 1_000  # texts of a one-window corpus labelled among all languages to find its languages
DETECT_CHUNK = 64  # texts a detector call takes: lingua holds the GIL through a call, so encoding threads wait at most one chunk
MIN_SHARE = 0.01  # a detected language must label at least 1 % of a corpus…
MIN_TEXTS = 3  # …and at least 3 texts to be kept as one of its languages
# A language that labels under MAJOR_SHARE of a corpus must also make up MIN_SHARE of the labels
# given with confidence ≥ CONFIDENT. The detector's mistakes are mostly unsure: on 3,000 English
# Wikipedia sentences, 37 come out Latin (names of species and places), few of them surely; short
# but plain sentences can be unsure too, so a language with a large share is kept on its share.
# bench/language_detection.py measures the rule.
CONFIDENT = 0.7
MAJOR_SHARE = 0.10
# In a corpus too small for MIN_TEXTS texts of each language (a folder of a few notes), a language is
# also kept where its confident texts hold MAJOR_SHARE of the corpus's characters and at least
# MIN_CHARS of them: a whole note in another language, not a heading the detector guessed at.
MIN_CHARS = 80  # about a sentence: lingua labels texts this long well; a heading is shorter
PROSE = 0.6  # a text under this share of letters among its non-space characters is not prose (see prose_confidence)


def _lingua():
    return need("lingua")


def known_languages() -> dict[str, object]:
    """ISO 639-3 code → lingua ``Language`` for every language the detector knows."""
    lingua = _lingua()
    return {lang.iso_code_639_3.name.lower(): lang for lang in lingua.Language.all()}


@lru_cache(maxsize=8)
def _detector(candidates: tuple[str, ...] | None, accurate: bool = False):
    lingua = _lingua()
    known = known_languages()
    if candidates is None:  # all 75: high accuracy loads 1 GB of models (4 s), low accuracy 90 MB
        builder = lingua.LanguageDetectorBuilder.from_all_languages()
        return (builder if accurate else builder.with_low_accuracy_mode()).build()
    languages = _languages_of(candidates, known)
    if len(candidates) == 1:
        return candidates[0]
    # high-accuracy mode, which short texts need (the models of a few languages are small)
    return lingua.LanguageDetectorBuilder.from_languages(*languages).build()


def _codes(candidates: Iterable[str]) -> tuple[str, ...]:
    """The distinct codes a detection is among, sorted (one detector per set), ``und`` left out."""
    return tuple(sorted({c for c in candidates if c != UNDETERMINED}))


def _languages_of(codes: Iterable[str], known: dict[str, object]) -> list:
    """lingua's ``Language`` of each ISO 639-3 code (``known``: :func:`known_languages`).

    Raises:
        EncodrError: an unknown code.
    """
    unknown = [c for c in codes if c not in known]
    if unknown:
        raise EncodrError(
            f"unknown language code(s) {', '.join(unknown)}; use ISO 639-3 codes such as eng, spa, fra, deu, rus, ara, vie"
        )
    return [known[c] for c in codes]


def preload(candidates: Iterable[str] | None = None) -> None:
    """Load the detector :func:`detect_with_confidence` will use among ``candidates`` (``None``:
    all languages, low-accuracy mode) in a background thread: lingua reads its models on the first
    detection (a quarter of a second for all languages, more for a few in high-accuracy mode), and
    a process that is about to load a model (a cold ``encodr search``) can read them meanwhile, on
    another core. Nothing is raised: an unknown code is refused again by the detection itself."""
    import threading

    def load() -> None:
        try:
            detect_with_confidence(["a few words to load the models"], candidates)
        except EncodrError:
            pass

    threading.Thread(target=load, name="encodr-language-preload", daemon=True).start()


def load_models(candidates: Iterable[str] | None = None) -> None:
    """Read now every model the detector among ``candidates`` (``None``: all languages, in
    low-accuracy mode, as :func:`detect_against` detects) can use. lingua otherwise reads a
    language's models the first time a text might be in it (its script allows it), so the first
    query in a new script waits for them (a Cyrillic query after Latin ones: about a tenth of a
    second); lingua keeps the models for the whole process, so every detector built later uses
    them. For a front end that keeps its searcher (:meth:`encodr.index.Searcher.warm`).

    Raises:
        EncodrError: an unknown language code.
    """
    lingua = _lingua()
    if candidates is None:
        builder = lingua.LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode()
    else:
        codes = _codes(candidates)
        if len(codes) < 2:  # no detection, no model
            return
        builder = lingua.LanguageDetectorBuilder.from_languages(*_languages_of(codes, known_languages()))
    builder.with_preloaded_language_models().build()


def detect_languages(
    texts: list[str], candidates: Iterable[str] | None = None, accurate: bool = False, parallel: bool = True
) -> list[str]:
    """The language of each text (see :func:`detect_with_confidence`)."""
    return [code for code, _ in detect_with_confidence(texts, candidates, accurate, parallel)]


def detect_with_confidence(
    texts: list[str], candidates: Iterable[str] | None = None, accurate: bool = False, parallel: bool = True
) -> list[tuple[str, float]]:
    """The language of each text, and the detector's confidence in it.

    Args:
        texts: n strings.
        candidates: ISO 639-3 codes to choose among (``None``: all 75 the detector knows).
            ``und`` among them is ignored; with one candidate every text gets it. Among given
            candidates the detector always runs in high-accuracy mode.
        accurate: among all 75 languages too (1 GB of models; for small corpora, whose
            short texts the low-accuracy mode gets wrong: "the cat sat" → Maori).
        parallel: on every core (lingua's threads), :data:`DETECT_CHUNK` texts a call; False:
            one text a call, on the calling thread only, for work beside a build's encoding,
            which keeps every core busy: lingua's threads then contend with the encoder's and
            spend more CPU time on the same labels.

    Returns:
        n (ISO 639-3 code, confidence in [0, 1]) pairs: lingua's confidence values, the top one;
        ``("und", 0.0)`` where the detector cannot decide (e.g. digits only); confidence 1.0
        where there is one candidate.

    Raises:
        EncodrError: an unknown code among ``candidates``, or none left.
    """
    if candidates is not None:
        candidates = _codes(candidates)
        if not candidates:
            raise EncodrError(f"no language to detect among; give {S.lang}, or index texts in a known language")
    detector = _detector(candidates, accurate and candidates is None)
    if isinstance(detector, str):
        return [(detector, 1.0)] * len(texts)
    return [_top(values) for values in _confidence_values(detector, texts, parallel)]


def _confidence_values(detector, texts: Iterable[str], parallel: bool = True) -> Iterable[list]:
    """lingua's confidence values of each text, :data:`DETECT_CHUNK` texts a call on all cores
    (``parallel``) or one a call on this thread: lingua keeps the GIL for a whole call, so a
    long one stalls every other Python thread of the process (a build's encoding threads,
    which label a window's texts alongside)."""
    if not parallel:
        yield from map(detector.compute_language_confidence_values, texts)
        return
    texts = list(texts)
    for start in range(0, len(texts), DETECT_CHUNK):
        yield from detector.compute_language_confidence_values_in_parallel(texts[start : start + DETECT_CHUNK])


def detect_against(texts: list[str], code: str) -> list[tuple[str, float, float]]:
    """Each text's most likely language among all, the detector's confidence in it, and its
    confidence that the text is in ``code`` instead (0 where ``code`` is not among its answers):
    :func:`detect_with_confidence` (low-accuracy mode) with a second opinion, so that a caller
    can ask for a language that is likely *and* another that is not.

    Raises:
        EncodrError: ``code`` is not an ISO 639-3 code the detector knows.
    """
    check_code(code)
    detector = _detector(None, False)
    out = []
    for values in _confidence_values(detector, texts):
        top, p = _top(values)
        own = next((float(v.value) for v in values if v.language.iso_code_639_3.name.lower() == code), 0.0)
        out.append((top, p, own))
    return out


def _top(values) -> tuple[str, float]:
    """The most likely language and its confidence; ``und`` where none has any, or where the
    first two tie (what lingua's ``detect_language_of`` answers with ``None``)."""
    if not values or values[0].value <= 0 or (len(values) > 1 and values[0].value == values[1].value):
        return UNDETERMINED, 0.0
    return values[0].language.iso_code_639_3.name.lower(), float(values[0].value)


def sampled_languages(texts: list[str], size: int | None = None, parallel: bool = True, quick: bool = False) -> list[str] | None:
    """The languages of a corpus, found on ``size`` evenly spaced texts of it, in two steps:
    the sample is labelled in low-accuracy mode among all languages (90 MB of models instead of
    1 GB: the loading is most of the time a small corpus spends on detection), and the
    languages :func:`corpus_languages` keeps of those labels (share only: a superset, with the
    low-accuracy mode's mistakes) are candidates among which the sample is labelled again in
    high-accuracy mode (the candidates' models only); the languages kept of these labels,
    with their confidences, are the corpus's. A corpus of fewer than ``size`` texts skips the
    first step (its shares are too few texts, and low accuracy mislabels short texts: "the cat
    sat" → Maori): all its texts are labelled in high-accuracy mode among all languages. The
    corpus is then labelled among these only, which is what its second pass does anyway, so
    only a language under the 1 % share the second pass drops could be missed by the sample.
    Spares labelling every text among all 75 languages.

    Args:
        texts: the corpus, n strings, in its order (a sample of a language-sorted corpus spans
            all its blocks).
        size: texts in the sample (all when n ≤ size; default :data:`SAMPLE`).
        parallel: see :func:`detect_with_confidence`.
        quick: the first step only, whatever the sample's size (low accuracy: an index's fast
            stage, which its second stage labels again).

    Returns:
        ISO 639-3 codes, sorted; ``None`` when the sample has no label (all ``und``).
    """
    n, size = len(texts), size or SAMPLE
    picked = sorted({round(i * (n - 1) / (size - 1)) for i in range(size)}) if n > size > 1 else range(n)
    sample = [texts[i] for i in picked]
    if quick:
        return corpus_languages(detect_languages(sample, parallel=parallel)) or None
    proposed = None  # a smaller corpus: its texts in high-accuracy mode among all languages
    if len(sample) >= size:  # low accuracy among all proposes, where a 1 % share is ≥ 10 texts
        proposed = corpus_languages(detect_languages(sample, parallel=parallel)) or None
    found = detect_with_confidence(sample, proposed, accurate=True, parallel=parallel)
    sure = [prose_confidence(text, c) for text, (_, c) in zip(sample, found)]
    return corpus_languages([code for code, _ in found], confidences=sure, sizes=[len(text) for text in sample]) or None


def labelled(
    texts: list[str], candidates: list[str] | None, accurate: bool | None, sample: bool
) -> tuple[list[str] | None, list[tuple[str, float]]]:
    """A first pass of detection over a window of a corpus, beside its encoding (one text a
    detector call: ``parallel=False``): the candidates it labels among (``candidates``, or with
    ``sample`` those :func:`sampled_languages` finds in ``texts``: the window is all of a new
    corpus), and each text's :func:`detect_with_confidence` among them (``accurate``: as there;
    ``None``: low accuracy, the sample's too, :func:`sampled_languages`'s ``quick``).

    Returns:
        (the candidates, ISO 639-3 codes or ``None`` for all languages; n (code, confidence)
        pairs, in ``texts``' order).

    Raises:
        EncodrError: an unknown code among ``candidates``.
    """
    if sample:
        candidates = sampled_languages(texts, parallel=False, quick=accurate is None)
    return candidates, detect_with_confidence(texts, candidates, bool(accurate), parallel=False)


def language_shares(texts: list[str]) -> dict[str, float]:
    """Each language's share of ``texts``' characters: the prose among them (at least
    :data:`PROSE` of a text's non-space characters letters) labelled among all languages in
    low-accuracy mode (:func:`detect_languages`), each label weighed by its text's length.

    Returns:
        ISO 639-3 code → share in (0, 1], the shares summing to 1; empty where no text is prose
        or every label is ``und``.
    """
    prose = [t for t in texts if prose_confidence(t, 1.0)]
    weights: Counter = Counter()
    for text, code in zip(prose, detect_languages(prose) if prose else []):
        if code != UNDETERMINED:
            weights[code] += len(text)
    total = sum(weights.values())
    return {code: n / total for code, n in weights.most_common()} if total else {}


def _large_shares(labels: list[str], confidences: Iterable[float | None] | None, sizes: list[int]) -> list[str]:
    """The languages whose confident texts (confidence ≥ :data:`CONFIDENT`, or a label given)
    hold at least :data:`MIN_CHARS` characters and :data:`MAJOR_SHARE` of all labelled texts'
    characters (``sizes``: each text's, in ``labels``' order)."""
    confidences = list(confidences) if confidences is not None else [None] * len(labels)
    total = sum(n for label, n in zip(labels, sizes) if label != UNDETERMINED)
    chars: Counter = Counter()
    for label, confidence, n in zip(labels, confidences, sizes):
        if label != UNDETERMINED and (confidence is None or confidence >= CONFIDENT):
            chars[label] += n
    return [label for label, n in chars.items() if n >= MIN_CHARS and n >= MAJOR_SHARE * total]


COMMON_ZIPF = 3.0  # a word a language uses at least once a million words (wordfreq's Zipf scale): its common words
READS_AS = 0.8  # a text whose words are at least this share of a language's common words reads as that language
MISREAD_SAMPLE = 200  # texts of a minority label checked against the major language (settle: ingest.settle_languages)
_WORDFREQ_ALIASES = {"tl": "fil", "hr": "sh", "sr": "sh", "bs": "sh"}  # ISO 639-1 → wordfreq's list for it


@lru_cache(maxsize=None)
def _wordfreq_code(code: str) -> str | None:
    """wordfreq's code for ISO 639-3 ``code``, or None where wordfreq has no word list for it (Latin, Welsh, Yoruba…)."""
    import wordfreq

    language = known_languages().get(code)
    if language is None:
        return None
    short = language.iso_code_639_1.name.lower()
    short = _WORDFREQ_ALIASES.get(short, short)
    return short if short in wordfreq.available_languages() else None


def warm_word_lists(codes: Iterable[str]) -> None:
    """Read now the wordfreq word lists :func:`common_share` uses for ``codes`` (ISO 639-3; those
    wordfreq lacks are passed over), and wordfreq itself: a build's writer thread reads them
    while the corpus encodes, so its settle step (:func:`settled_languages`) need not."""
    import wordfreq

    for code in set(codes) - {UNDETERMINED}:
        short = _wordfreq_code(code)
        if short is not None:
            wordfreq.get_frequency_dict(short, "best")  # as zipf_frequency calls it: the list it caches


def unspaced(char: str) -> bool:
    """Whether ``char`` is of a script written without spaces between words: a CJK ideograph,
    kana or a Hangul syllable (whose text wordfreq cuts into words with jieba or MeCab)."""
    point = ord(char)
    return 0x3040 <= point <= 0x30FF or 0x3400 <= point <= 0x9FFF or 0xAC00 <= point <= 0xD7AF or 0xF900 <= point <= 0xFAFF


def common_share(text: str, code: str) -> float | None:
    """The share of ``text``'s words that are common words of language ``code`` (ISO 639-3):
    wordfreq's Zipf frequency ≥ :data:`COMMON_ZIPF` (its word lists, from Wikipedia, subtitles,
    books, the web…, tokenized as wordfreq does for that language). None where wordfreq has no
    list for ``code``, cannot tokenize it here, or the text has no word."""
    import wordfreq

    short = _wordfreq_code(code)
    if short is None:
        return None
    try:
        words = [w for w in wordfreq.tokenize(text, short) if any(map(str.isalpha, w))]
    except Exception:  # a tokenizer wordfreq needs for the language and lacks here (MeCab for Japanese)
        return None
    if not words:
        return None
    return sum(wordfreq.zipf_frequency(w, short) >= COMMON_ZIPF for w in words) / len(words)


def reads_as(text: str, major: str, label: str) -> bool:
    """Whether ``text``, labelled ``label`` by the detector, reads as ``major`` instead: at least
    :data:`READS_AS` of its words are common ``major`` words and, where wordfreq knows
    ``label``, more of them than of ``label``'s. A second opinion on lingua, whose n-gram
    probabilities can run away on a long sentence: "According to anarchist scholar Simon
    Critchley, contemporary anarchism can be seen as a powerful critique…" is Latin at 0.9994
    among English and Latin, while each half of it is English. Word lists decide between two
    languages that share few common words; a French sentence is mostly common English words too
    (de, la, table), so a label wordfreq knows must also lose on its own list."""
    share = common_share(text, major)
    if share is None or share < READS_AS:
        return False
    own = common_share(text, label)
    return own is None or share > own


def misread_languages(major: str, texts_by_label: dict[str, list[str]]) -> set[str]:
    """The labels (ISO 639-3) in ``texts_by_label`` (label → some of the texts the detector gave
    it) that are the detector's mistakes on the corpus's ``major`` language: those most of whose
    texts :func:`reads_as` ``major``, or read as neither language and no more as their label
    than as ``major`` (:func:`_guessed`). :func:`corpus_languages` then counts their labels as
    unsure."""
    misread = set()
    for label, texts in texts_by_label.items():
        if label in (major, UNDETERMINED) or not texts:
            continue
        if sum(reads_as(text, major, label) or _guessed(text, major, label) for text in texts) > len(texts) / 2:
            misread.add(label)
    return misread


def _guessed(text: str, major: str, label: str) -> bool:
    """Whether ``label`` is the detector's guess on a text that is no language's prose: fewer
    than :data:`READS_AS` of its words are common words of ``label``, and no more than of
    ``major`` (a table of benchmark names and numbers, a command line, labelled German among
    English docs: 0.44 of its words German, 0.81 English); a German sentence is 0.9–1.0 German.
    False where wordfreq has no list for either language (Latin: the word lists cannot tell)."""
    own, other = common_share(text, label), common_share(text, major)
    return own is not None and other is not None and own < READS_AS and own <= other


def settled_languages(
    labels: list[str],
    confidences: list[float | None],
    sizes: list[int],
    texts_of: Callable[[list[str], int], dict[str, list[str]]],
    misread_of: Callable[[str, dict[str, list[str]]], set[str]] | None = None,
) -> list[str]:
    """The languages of a corpus from its first pass (:func:`corpus_languages` of its detected
    ``labels``, their ``confidences`` and texts' ``sizes``), where a minority label most of whose
    texts read as the major language (:func:`misread_languages`, or ``misread_of`` that runs
    it elsewhere) counts as unsure. ``texts_of(labels, n)``: label → up to n texts it labels,
    spread over the corpus."""
    counts = Counter(code for code in labels if code != UNDETERMINED)
    if len(counts) > 1:
        major = counts.most_common(1)[0][0]
        by_label = texts_of([code for code in counts if code != major], MISREAD_SAMPLE)
        misread = (misread_of or misread_languages)(major, by_label)
        confidences = [0.0 if code in misread else sure for code, sure in zip(labels, confidences)]
    return corpus_languages(labels, confidences=confidences, sizes=sizes)


def prose_confidence(text: str, confidence: float | None) -> float | None:
    """``confidence``, the detector's in ``text``'s label, or 0.0 where the text is not prose:
    fewer than :data:`PROSE` of its non-space characters are letters (a table of contents'
    dot leaders and page numbers, a table of figures, an identifier list). The detector guesses
    on such texts as surely as on sentences (a contents page of an English manual: Latin, 0.99),
    so :func:`corpus_languages` counts their labels as unsure. None stays None (a label given)."""
    if confidence is None:
        return None
    shown = len(text) - sum(map(str.isspace, text))  # non-space characters (counted in C: a passage each text indexed)
    return confidence if shown and sum(map(str.isalpha, text)) >= PROSE * shown else 0.0


def corpus_languages(
    labels: Iterable[str],
    min_share: float = MIN_SHARE,
    min_texts: int = MIN_TEXTS,
    confidences: Iterable[float | None] | None = None,
    sizes: Iterable[int] | None = None,
) -> list[str]:
    """The languages that make up a corpus, from its detected labels: those that label at
    least ``min_texts`` texts and at least ``min_share`` of them (``und`` never).

    With ``confidences`` (one per label, None for a label not detected), a language under
    :data:`MAJOR_SHARE` of the labels must also make up ``min_share`` of the labels given with
    confidence ≥ :data:`CONFIDENT`: the detector's mistakes (Latin for an English sentence
    full of species names) are mostly unsure. A language below the thresholds is most likely
    the detector's mistake on a text of one of the others. When none qualifies (a tiny
    corpus), the label the detector is surest of is kept: the one whose confidences sum highest
    (a label given, not detected, counts 1), or without ``confidences`` the most common one; a
    heading of one letter labelled Somali then does not outweigh a sentence labelled English.

    With ``sizes`` (each text's length in characters), a language with fewer texts is kept too
    where its confident texts hold :data:`MAJOR_SHARE` of the corpus's characters and at least
    :data:`MIN_CHARS` (:func:`_large_shares`): in a folder of three notes, one English and two
    German, the English one is English, not a German text the second pass relabels.

    Returns:
        ISO 639-3 codes, sorted; empty only when every label is ``und``.
    """
    labels = list(labels)
    counts = Counter(label for label in labels if label != UNDETERMINED)
    total = sum(counts.values())
    kept = [c for c, n in counts.items() if n >= min_texts and n >= min_share * total]
    if confidences is not None:
        sure = Counter(
            label for label, c in zip(labels, confidences) if label != UNDETERMINED and c is not None and c >= CONFIDENT
        )
        sure_total = sum(sure.values())
        if sure_total:
            kept = [c for c in kept if counts[c] >= MAJOR_SHARE * total or sure[c] >= min_share * sure_total]
    if sizes is not None:
        kept = set(kept) | set(_large_shares(labels, confidences, list(sizes)))
    kept = sorted(kept)
    if not kept and counts:
        weight = Counter()
        for label, c in zip(labels, confidences if confidences is not None else [1.0] * len(labels)):
            if label != UNDETERMINED:
                weight[label] += 1.0 if c is None else c
        kept = [max(weight, key=lambda label: (weight[label], counts[label]))]
    return kept
