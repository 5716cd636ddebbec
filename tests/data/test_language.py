"""Language detection at index time, the query's language at search time, and the
language filter (CMLM §5.2 needs a language per text for PCR)."""

import json

import numpy as np
import pytest

from encodr.data.language import corpus_languages, detect_languages, sampled_languages
from encodr.errors import EncodrError
from encodr.index import BuildOptions, Searcher, build
from encodr.index.options import SearchOptions
from encodr.models.pcr import POOLED, fit_and_remove
from encodr.tui import EncodrApp
from tests.conftest import hit_fields, run_cli, search_with

# Six sentences in each of three languages, long enough for the detector to be sure
MIXED = {
    "eng": [
        "The children are playing in the garden after school.",
        "My brother works at the hospital every night.",
        "We are going to the market to buy fresh bread.",
        "She reads a book before she goes to sleep.",
        "The train to the city leaves in ten minutes.",
        "It has been raining all week and the river is high.",
    ],
    "spa": [
        "Los niños juegan en el jardín después de la escuela.",
        "Mi hermano trabaja en el hospital todas las noches.",
        "Vamos al mercado a comprar pan fresco.",
        "Ella lee un libro antes de dormirse.",
        "El tren a la ciudad sale dentro de diez minutos.",
        "Ha llovido toda la semana y el río está alto.",
    ],
    "deu": [
        "Die Kinder spielen nach der Schule im Garten.",
        "Mein Bruder arbeitet jede Nacht im Krankenhaus.",
        "Wir gehen auf den Markt, um frisches Brot zu kaufen.",
        "Sie liest ein Buch, bevor sie schlafen geht.",
        "Der Zug in die Stadt fährt in zehn Minuten ab.",
        "Es hat die ganze Woche geregnet und der Fluss ist hoch.",
    ],
}


@pytest.fixture
def mixed_file(tmp_path):
    lines = [text for i in range(6) for code in MIXED for text in [MIXED[code][i]]] + [
        "12345"
    ]  # interleaved, plus one text no detector can place
    f = tmp_path / "mixed.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


def test_detector_codes_and_candidates():
    assert detect_languages([MIXED["eng"][0], MIXED["spa"][0], MIXED["deu"][0], "12345"]) == ["eng", "spa", "deu", "und"]
    # among all 75 languages a lone word goes astray; among the index's languages it does not
    assert detect_languages(["Hola"], ["eng", "spa"]) == ["spa"]
    assert detect_languages(["anything at all"], ["deu", "und"]) == ["deu"]  # one candidate: no guess needed
    with pytest.raises(EncodrError, match="unknown language code"):
        detect_languages(["x"], ["english"])


def test_an_index_fast_stage_labels_its_texts_without_the_high_accuracy_models(monkeypatch):
    from encodr.data import language

    asked = []
    real = language._detector
    monkeypatch.setattr(
        language, "_detector", lambda candidates, accurate=False: asked.append(accurate) or real(candidates, accurate)
    )
    texts = ["The command runs its hooks before it executes.", "Der Befehl führt seine Haken aus, bevor er läuft."]
    candidates, found = language.labelled(texts, None, None, sample=True)
    assert asked and not any(asked)  # low accuracy, the sample's too (no 1 GB of models for a fast stage)
    assert "eng" in candidates and [code for code, _ in found][0] == "eng"
    asked.clear()
    language.labelled(texts, None, False, sample=True)
    assert any(asked)  # a full build's small corpus: its sample in high-accuracy mode


def test_corpus_languages_drop_rare_labels():
    labels = ["eng"] * 300 + ["spa"] * 200 + ["sot"] * 2 + ["tgl"] * 4 + ["und"] * 9
    assert corpus_languages(labels) == ["eng", "spa"]  # tgl: 4 texts but under 1 %
    assert corpus_languages(["ita", "ita", "fra"]) == ["ita"]  # nothing reaches 3 texts: the most common


def test_a_tiny_corpus_keeps_the_language_the_detector_is_surest_of():
    """Two one-letter headings ("# X", "# Y") and a sentence: the detector's labels and confidences
    as lingua gives them in high-accuracy mode; the first label, Somali, made the whole corpus Somali."""
    labels, sure = ["som", "cym", "eng"], [0.198, 0.118, 0.378]
    assert corpus_languages(labels, confidences=sure) == ["eng"]
    assert corpus_languages(["som", "som", "eng"], confidences=[0.2, 0.2, 0.9]) == ["eng"]
    assert corpus_languages(["som", "eng"], confidences=[0.3, None]) == ["eng"]  # a label given, not detected, counts 1
    assert sampled_languages(["# X", "# Y", "# Alpha\n\nThe alpha project uses a red widget for calibration."]) == ["eng"]


def test_a_whole_note_in_another_language_is_kept_in_a_folder_of_a_few_notes(tiny_model, tmp_path):
    """One English note and two German ones: too few texts for the English to reach 3, but it holds a
    third of the folder's text, confidently; a short heading the detector guessed at is still dropped."""
    labels, sure = ["deu", "eng", "deu"], [1.0, 0.97, 1.0]
    assert corpus_languages(labels, confidences=sure) == ["deu"]  # by texts alone, English is folded into German
    assert corpus_languages(labels, confidences=sure, sizes=[118, 180, 169]) == ["deu", "eng"]
    assert corpus_languages(["som", "eng", "eng", "eng"], confidences=[0.99, 0.9, 0.9, 0.9], sizes=[12, 300, 300, 300]) == [
        "eng"
    ]  # twelve characters of "Somali" are a heading, not a note
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "garden.md").write_text(
        "# Garden notes\n\nThe tomatoes need water every morning in the summer. Cut the roses back in early spring, "
        "and keep the hedge low along the path so the neighbours can see the street.\n"
    )
    (notes / "heizung.md").write_text(
        "# Heizung\n\nDer Druck der Heizung sollte zwischen 1,5 und 2 bar liegen. Wenn er unter 1 bar fällt, muss "
        "Wasser nachgefüllt werden. Der Kessel hängt im Keller an der Wand.\n"
    )
    (notes / "einkauf.md").write_text(
        "# Einkaufsliste\n\nBrot, Milch, Käse und Äpfel für die Woche. Am Samstag auf den Markt gehen und frisches "
        "Gemüse kaufen.\n"
    )
    meta = build([str(notes)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    assert meta["languages"] == ["deu", "eng"]
    [hits] = Searcher(tmp_path / "idx").search(["the tomatoes need water"], SearchOptions(k=3, mode="keyword"))
    assert hits and hits[0].path.endswith("garden.md") and hits[0].lang == "eng"


def test_index_detects_languages_and_search_filters_them(mixed_file, tiny_model, tmp_path):
    meta = build([str(mixed_file)], tmp_path / "idx", BuildOptions(model=str(tiny_model), pcr=True))
    assert meta["languages"] == ["deu", "eng", "spa", "und"]
    stored = json.loads((tmp_path / "idx" / "current" / "index.json").read_text())
    assert stored["lang_detection"]["languages"] == ["deu", "eng", "spa"] and stored["default_lang"] is None
    s = Searcher(tmp_path / "idx")
    rows = s.index.rows(range(len(s.index)))
    assert all(rows[i]["text"] in MIXED[rows[i]["lang"]] for i in rows if rows[i]["lang"] != "und")
    assert POOLED in s.index.components  # the lone undetermined text lost the pooled component
    # the query's language is detected among the index's, and picks its PCR component
    langs, hits = s.query(
        ["Die Kinder spielen nach der Schule im Garten.", "My brother works at the hospital every night."],
        SearchOptions(k=3, mode="dense"),
    )
    assert langs == ["deu", "eng"]
    assert hits[0][0].text == MIXED["deu"][0] and hits[1][0].text == MIXED["eng"][1]  # a tiny random model: the exact text first
    only = s.search([MIXED["deu"][0]], SearchOptions(k=20, hit_lang=["spa"], mode="dense"))[0]
    assert len(only) == 6 and {h.lang for h in only} == {"spa"}
    with pytest.raises(EncodrError, match="no texts in that language"):
        s.search(["x"], SearchOptions(hit_lang=["fra"], mode="dense"))


def test_add_detects_among_the_index_languages(mixed_file, tiny_model, tmp_path):
    build([str(mixed_file)], tmp_path / "idx", BuildOptions(model=str(tiny_model), pcr=True))
    more = tmp_path / "more.txt"
    more.write_text("Hola\nGuten Morgen, wie geht es dir heute?\n", encoding="utf-8")
    build([str(more)], tmp_path / "idx", BuildOptions(write="add"))
    s = Searcher(tmp_path / "idx")
    assert [r["lang"] for r in s.index.rows([19, 20]).values()] == ["spa", "deu"]


def test_lone_language_is_refused_only_when_given():
    vectors = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with pytest.raises(EncodrError, match="only 1 distinct text"):
        fit_and_remove(vectors.copy(), ["eng"] * 4 + ["spa"], "uncentred")
    out = vectors.copy()
    components = fit_and_remove(out, ["eng"] * 4 + ["spa"], "uncentred", strict=False)
    assert set(components) == {"eng", POOLED}
    assert abs(float(out[4] @ components[POOLED])) < 1e-5 and np.allclose(np.linalg.norm(out, axis=1), 1, atol=1e-5)


def test_cli_search_shows_languages_and_refuses_unknown_filter(mixed_file, tiny_model, tmp_path, capsys, monkeypatch):
    build([str(mixed_file)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    code, out, _ = run_cli(
        ["search", MIXED["spa"][2], "--index", str(tmp_path / "idx"), "--hit-lang", "spa,deu", "-k", "4", "--json"],
        capsys,
        monkeypatch,
    )
    (payload,) = json.loads(out)["results"]
    assert code == 0 and payload["lang"] == "spa" and {h["lang"] for h in payload["hits"]} <= {"spa", "deu"}
    code, _, err = run_cli(["search", "x", "--index", str(tmp_path / "idx"), "--hit-lang", "ita"], capsys, monkeypatch)
    assert code == 2 and "no texts in that language" in err and len(err.strip().splitlines()) == 1


async def test_tui_language_column_and_filter(mixed_file, tiny_model, tmp_path):
    build([str(mixed_file)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    app = EncodrApp(searcher=Searcher(tmp_path / "idx"), debounce=0.0)
    async with app.run_test(size=(140, 40)) as pilot:
        table = await search_with(app, pilot, "#search-hit-lang", "deu", "Los niños juegan")
        assert table.row_count == 6 and {hit_fields(table.get_row_at(i))[2] for i in range(6)} == {"deu"}
        assert "query language spa" in str(app.query_one("#status").render())


def test_a_small_share_must_hold_among_confident_labels():
    from encodr.data.language import corpus_languages

    labels = ["eng"] * 970 + ["lat"] * 30  # 3 %: kept by its share alone
    sure = [0.95] * 900 + [0.5] * 70 + [0.8] * 3 + [0.3] * 27  # but 3 of 903 sure labels are Latin
    assert corpus_languages(labels) == ["eng", "lat"]
    assert corpus_languages(labels, confidences=sure) == ["eng"]
    plain = ["eng"] * 6 + ["deu"] * 6  # short plain sentences: English unsure throughout, yet a third of the corpus
    assert corpus_languages(plain, confidences=[0.5] * 6 + [0.9] * 6) == ["deu", "eng"]


def test_a_one_window_corpus_finds_its_languages_on_an_even_sample(mixed_file, tiny_model, tmp_path, monkeypatch):

    from encodr.data import language

    seen = []  # the texts of each detection among all languages
    detect = language.detect_with_confidence

    def spy(texts, candidates=None, accurate=False, parallel=True):
        if candidates is None:
            seen.append(list(texts))
        return detect(texts, candidates, accurate, parallel)

    monkeypatch.setattr(language, "detect_with_confidence", spy)  # a small corpus is labelled in this process
    monkeypatch.setattr(language, "SAMPLE", 12)
    build([str(mixed_file)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    lines = mixed_file.read_text(encoding="utf-8").splitlines()
    assert seen == [
        [lines[i] for i in (0, 2, 3, 5, 7, 8, 10, 11, 13, 15, 16, 18)]
    ]  # 12 of 19, evenly spaced, first and last: 3+ of each language
    s = Searcher(tmp_path / "idx")
    rows = s.index.rows(range(len(s.index)))
    assert all(
        rows[i]["text"] in MIXED[rows[i]["lang"]] for i in rows if rows[i]["text"] != "12345"
    )  # labelled among the sample's languages

    seen.clear()
    build(
        [str(mixed_file)], tmp_path / "windows", BuildOptions(model=str(tiny_model), window=7)
    )  # three windows: no sample stands for the corpus
    assert [len(texts) for texts in seen] == [7, 7, 5]  # every text among all languages, as before
    s = Searcher(tmp_path / "windows")
    assert sorted({r["lang"] for r in s.index.rows(range(len(s.index))).values()} - {"und"}) == ["deu", "eng", "spa"]


def test_a_corpus_smaller_than_the_sample_is_found_in_high_accuracy_mode():
    from encodr.data.language import corpus_languages, detect_languages, sampled_languages

    texts = ["the cat sat", "the dog ran home", "a bird sang"]
    assert corpus_languages(detect_languages(texts)) != ["eng"]  # low accuracy would propose the wrong language (Maori)
    assert sampled_languages(texts) == ["eng"]


def test_a_dense_search_without_pcr_detects_no_language(mixed_file, tiny_model, tmp_path, monkeypatch):
    """Nothing a dense search of an index without PCR does depends on the query's language, so no
    detector runs (it loads lingua's models: the first query of a process paid for it); hybrid
    and keyword searches (the stemmer, the fusion's language step) still detect it."""
    import encodr.index.search as search_module

    build([str(mixed_file)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    s = Searcher(tmp_path / "idx")
    calls = []
    detect = search_module.detect_languages
    monkeypatch.setattr(search_module, "detect_languages", lambda texts, langs: calls.append(list(texts)) or detect(texts, langs))
    langs, _ = s.query([MIXED["deu"][0]], SearchOptions(k=3, mode="dense"))
    assert calls == [] and langs == ["und"]
    langs, _ = s.query([MIXED["deu"][0]], SearchOptions(k=3, mode="hybrid"))
    assert calls == [[MIXED["deu"][0]]] and langs == ["deu"]


def test_load_models_reads_every_model_of_the_detectors_a_search_uses(monkeypatch):
    """lingua reads a language's models when a text first might be in it; load_models builds the
    detector with every model preloaded (lingua keeps them for the process)."""
    import lingua

    from encodr.data import language

    built = []

    class Builder:
        def __init__(self, how):
            self.how = [how]

        def with_low_accuracy_mode(self):
            self.how.append("low accuracy")
            return self

        def with_preloaded_language_models(self):
            self.how.append("preloaded")
            return self

        def build(self):
            built.append(self.how)

    class Fake:
        Language = lingua.Language

        class LanguageDetectorBuilder:
            from_all_languages = staticmethod(lambda: Builder("all"))
            from_languages = staticmethod(lambda *langs: Builder(sorted(lang.iso_code_639_3.name.lower() for lang in langs)))

    monkeypatch.setattr(language, "_lingua", lambda: Fake)
    language.load_models(None)
    language.load_models(["rus", "eng", "und"])
    language.load_models(["eng", "und"])  # one language: nothing is detected, nothing read
    assert built == [["all", "low accuracy", "preloaded"], [["eng", "rus"], "preloaded"]]
    with pytest.raises(EncodrError, match="unknown language code"):
        language.load_models(["eng", "xx"])


def test_a_contents_pages_labels_count_as_unsure_so_a_manual_stays_english():
    from encodr.data.language import corpus_languages, prose_confidence

    texts = ["The library decodes DER data and reports each error by its code."] * 144
    texts += ["4.3 DER functions . . . . . . . . . . . . 15", "Function and Data Index" + " ." * 26 + " 33"] * 2
    labels = ["eng"] * 144 + ["lat"] * 4  # what the detector said, surely, of the contents lines too
    assert corpus_languages(labels, confidences=[0.99] * len(labels)) == ["eng", "lat"]
    assert corpus_languages(labels, confidences=[prose_confidence(t, 0.99) for t in texts]) == ["eng"]
    assert prose_confidence("東京都の歴史と文化について。", 0.9) == 0.9 and prose_confidence("12 . 34", None) is None


# English sentences lingua 2 labels Latin among English and Latin, surely (its n-gram
# probabilities run away on the whole sentence; each half of the first is English)
LATINATE = [
    'According to anarchist scholar Simon Critchley, "contemporary anarchism can be seen as a powerful critique of the '
    "pseudo-libertarianism of contemporary neo-liberalism ...",
    "In 1955 the Anarcho-Communist Federation of Argentina renamed itself as the Argentine Libertarian Federation.",
    "It is home to nearly 4,000 pteridophyte and spermatophyte plant species.",
]


def test_a_minority_label_whose_texts_read_as_the_major_language_is_misread():
    from encodr.data.language import detect_with_confidence, misread_languages, reads_as

    assert [code for code, _ in detect_with_confidence(LATINATE, ["eng", "lat"])] == ["lat"] * 3  # the mistake
    latin = (
        "Gallia est omnis divisa in partes tres, quarum unam incolunt Belgae, aliam Aquitani, tertiam qui ipsorum lingua Celtae."
    )
    french = "Le chat est sur la table de la cuisine."  # its words are common English words too: French's own list decides
    assert [reads_as(t, "eng", "lat") for t in LATINATE] == [True] * 3
    assert not reads_as(latin, "eng", "lat") and not reads_as(french, "eng", "fra")
    assert not reads_as(MIXED["spa"][0], "eng", "spa") and not reads_as(MIXED["deu"][0], "eng", "deu")
    assert misread_languages("eng", {"lat": LATINATE + [latin], "spa": MIXED["spa"], "fra": [french]}) == {"lat"}
    assert misread_languages("eng", {"lat": [latin] * 2 + LATINATE[:1]}) == set()  # most of them Latin: a real minority


def test_a_minority_label_on_tables_and_command_lines_that_read_as_no_language_is_misread():
    """English docs' tables of benchmark names and numbers and their command lines were
    labelled German (41 of 1,728 passages of this project's docs), and the index warned that
    the texts were in German."""
    from encodr.data.language import misread_languages

    tables = [
        "| after-stages | rich | hybrid | 242 | 2142 | 35.12 | 45.04 | 41.51 |",
        "| me5 | wiki sentences | sentence-transformers | fp16 | 256 | 17534 | 4.483 | 3,911 |",
        "## `latency_amx.json`\n\n- command: `python bench/latency.py --sizes 20000 --modes hybrid --cold 3`",
    ]
    assert misread_languages("eng", {"deu": tables}) == {"deu"}
    german = [
        "Im Anfang schuf Gott die Himmel und die Erde.",
        "Und die Erde war wüst und leer, und Finsternis war über der Tiefe.",
    ]
    assert misread_languages("eng", {"deu": german + tables[:1]}) == set()  # German sentences: a real minority


def test_english_sentences_labelled_latin_are_settled_as_english_and_keep_their_stems(tmp_path):
    from encodr.index.ingest import settle_languages
    from encodr.index.keywords import keyword_text
    from encodr.index.texts import TextStore

    store = TextStore.create(tmp_path / "texts.db")
    english = [f"{text} It happened in year {i}." for i in range(40) for text in MIXED["eng"][:2]]
    rows = [(text, "eng") for text in english] + [(text, "lat") for text in LATINATE]
    store.insert(
        [
            {"id": i, "text": text, "source": "f.txt", "line": i + 1, "lang": lang, "hash": f"h{i}", "lang_detected": 1}
            | {"lang_confidence": 0.99}
            for i, (text, lang) in enumerate(rows)
        ]
    )
    labels = store.detected_labels()
    assert corpus_languages([c for c, _, _ in labels], confidences=[s for _, s, _ in labels]) == ["eng", "lat"]  # by labels alone
    assert settle_languages(store) == ["eng"]
    assert {lang for (lang,) in store.conn.execute("select lang from texts")} == {"eng"}
    assert "feder" in keyword_text(LATINATE[1], "eng").split()  # stemmed as English: "federations" finds it


def test_detection_runs_a_chunk_a_call_with_the_labels_of_one_call(monkeypatch):
    """lingua holds the GIL through a call: a long corpus is detected a chunk a call, which
    changes no label, and a confidence only in its last bits."""
    from encodr.data import language

    texts = [text for code in MIXED for text in MIXED[code]] + ["12345"]
    whole = language.detect_with_confidence(texts, ["eng", "spa", "deu"])
    real, calls = language._detector, []

    class Counting:
        def __init__(self, detector):
            self.detector = detector

        def compute_language_confidence_values_in_parallel(self, chunk):
            calls.append(len(chunk))
            return self.detector.compute_language_confidence_values_in_parallel(chunk)

    monkeypatch.setattr(language, "_detector", lambda *a: Counting(real(*a)))
    monkeypatch.setattr(language, "DETECT_CHUNK", 4)
    chunked = language.detect_with_confidence(texts, ["eng", "spa", "deu"])
    assert [code for code, _ in chunked] == [code for code, _ in whole]
    assert [sure for _, sure in chunked] == pytest.approx([sure for _, sure in whole], abs=1e-9)
    assert calls == [4, 4, 4, 4, 3]


def test_a_build_labels_a_windows_texts_while_it_encodes_them(mixed_file, tiny_model, tmp_path, monkeypatch):
    """The writer thread detects a window's languages and writes its rows while the window
    encodes, not after: the encode sees the detection done."""
    import threading

    from encodr.data import language
    from encodr.models.encoder import Encoder

    labelled, seen = threading.Event(), []
    detect, encode = language.detect_with_confidence, Encoder.encode
    corpus = set(mixed_file.read_text(encoding="utf-8").splitlines())

    def detecting(*args, **kwargs):
        found = detect(*args, **kwargs)
        labelled.set()
        return found

    def encoding(self, texts, *args, **kwargs):
        if set(texts) == corpus:  # the window's encode (not a probe's)
            seen.append(labelled.wait(30))  # set by the writer thread, were the texts handed to it first
        return encode(self, texts, *args, **kwargs)

    monkeypatch.setattr(language, "detect_with_confidence", detecting)  # a small corpus is labelled in this process
    monkeypatch.setattr(Encoder, "encode", encoding)
    build([str(mixed_file)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    assert seen == [True]
    s = Searcher(tmp_path / "idx")
    rows = s.index.rows(range(len(s.index)))
    assert all(rows[i]["text"] in MIXED[rows[i]["lang"]] for i in rows if rows[i]["text"] != "12345")


def test_word_lists_are_read_while_the_corpus_encodes_under_the_key_the_settle_step_reads(
    mixed_file, tiny_model, tmp_path, monkeypatch
):
    import threading

    import wordfreq

    from encodr.data.language import common_share, warm_word_lists

    wordfreq.get_frequency_dict.cache_clear()
    warm_word_lists(["eng", "lat", "und"])  # Latin: no wordfreq list, passed over
    misses = wordfreq.get_frequency_dict.cache_info().misses
    assert common_share("the children are playing", "eng") == 1.0
    assert wordfreq.get_frequency_dict.cache_info().misses == misses  # the settle step finds the list read

    from encodr.data import language_worker

    warmed = []
    monkeypatch.setitem(
        language_worker.CALLS, "warm_word_lists", lambda codes: warmed.append((threading.current_thread().name, set(codes)))
    )
    build([str(mixed_file)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    assert [(name.startswith("encodr-store"), codes - {"und"}) for name, codes in warmed] == [(True, {"eng", "spa", "deu"})]
