import json

from encodr.index.keywords import keyword_expression, keyword_terms
from encodr.index.options import SearchOptions


def test_words_are_stemmed_in_their_language_and_cjk_runs_become_bigrams():
    assert keyword_terms("Studies STUDIED studying", "eng") == ["studi", "studi", "studi"]
    assert (keyword_terms("Häuser", "deu"), keyword_terms("Häuser", "eng")) == (
        ["haus"],
        ["häuser"],
    )  # the text's own language's stemmer
    assert keyword_terms("Studies", "und") == ["studies"]  # no language, no stemming
    assert keyword_terms("東京都に住む", None) == ["東京", "京都", "都に", "に住", "住む", "む"]  # and the run's last character
    assert keyword_terms("東京都に住む", None, query=True) == ["東京", "京都", "都に", "に住", "住む"]
    assert keyword_terms("서울 中", "kor") == ["서울", "中", "울"]  # a single character stays itself
    assert keyword_expression("cafés x OR NEAR(", "fra") == '"caf" OR "x" OR "or" OR "near"'  # no character read as FTS5 syntax
    assert keyword_expression('cafés "x y" NEAR(', "fra") == '"x y" AND ("caf" OR "near")'  # a quoted phrase must hold
    assert keyword_expression("Studies studies", "eng") == '"studi"'


def indexed(docs: list[dict], tmp_path, tiny_model):
    """A searcher over ``docs`` (JSONL records with ``_id``, ``text`` and ``lang``), indexed with the tiny model."""
    from encodr.index import BuildOptions, Searcher, build

    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    return Searcher(tmp_path / "idx")


def test_keyword_search_finds_inflections_and_words_inside_cjk_text(tmp_path, tiny_model):
    docs = [
        {"_id": "en", "text": "The studies were published last year", "lang": "eng"},
        {"_id": "ja", "text": "私は東京都に住んでいます", "lang": "jpn"},
        {"_id": "zh", "text": "我们在北京大学学习", "lang": "zho"},
        {"_id": "other", "text": "A note about something else entirely", "lang": "eng"},
    ]
    searcher = indexed(docs, tmp_path, tiny_model)
    for query, expected in (("study", "en"), ("京都", "ja"), ("北京", "zh"), ("大学", "zh"), ("习", "zh"), ("京", "zh")):
        hits = searcher.query([query], SearchOptions(k=2, mode="keyword", lang=None))[1][0]
        assert [h.ext_id for h in hits][:1] == [expected], query
        if query == "study":  # a reader's first search is FTS5's alone; the next ones read postings it holds
            assert searcher.index.texts.holds_postings and searcher.index.texts.postings().size == 0
    assert searcher.index.texts.postings().size > 0


def test_a_query_of_one_cjk_character_finds_it_wherever_it_stands_and_counts_each_place_once(tmp_path, tiny_model):
    """Bigrams alone hold no term ``猫``: a one-character query found nothing (Lucene's
    CJKBigramFilter without its unigrams does the same). Now it is the prefix query ``"猫"*``
    over the bigrams it starts and a run's last character."""
    assert keyword_expression("猫", "zho") == '"猫"*'
    docs = [
        {"_id": "end", "text": "我喜欢猫。", "lang": "zho"},  # 猫 ends its run
        {"_id": "start", "text": "猫很可爱", "lang": "zho"},  # 猫 starts it
        {"_id": "twice", "text": "猫和猫", "lang": "zho"},  # twice: the best match
        {"_id": "none", "text": "我喜欢狗。", "lang": "zho"},
    ]
    searcher = indexed(docs, tmp_path, tiny_model)
    hits = searcher.query(["猫"], SearchOptions(k=4, mode="keyword", lang="zho"))[1][0]
    assert [h.ext_id for h in hits][0] == "twice" and {h.ext_id for h in hits} == {"end", "start", "twice"}


def test_thai_text_is_cut_into_words_and_a_thai_word_finds_its_sentence(tmp_path, tiny_model):
    """Thai is written without spaces: its runs are segmented (PyThaiNLP newmm), so a query word
    matches inside a sentence; before, each run was one term and nothing but the whole run matched.
    The sentences are written for this test ("The water pump must have a pressure of four bar";
    "Thai is the official language of Thailand"; "Bangkok is the capital city")."""
    assert keyword_terms("เครื่องสูบน้ำต้องมีแรงดันสี่บาร์", "tha") == ["เครื่องสูบน้ำ", "ต้อง", "มี", "แรงดัน", "สี่", "บาร์"]
    assert keyword_terms("ພາສາລາວ", "lao") == ["ພາ", "າສ", "ສາ", "າລ", "ລາ", "າວ", "ວ"]  # Lao: no kept segmenter here, bigrams
    docs = [
        {"_id": "pump", "text": "เครื่องสูบน้ำต้องมีแรงดันสี่บาร์", "lang": "tha"},
        {"_id": "language", "text": "ภาษาไทยเป็นภาษาราชการของประเทศไทย", "lang": "tha"},
        {"_id": "capital", "text": "กรุงเทพมหานครเป็นเมืองหลวง", "lang": "tha"},
    ]
    searcher = indexed(docs, tmp_path, tiny_model)
    for query, expected in (("แรงดัน", "pump"), ("ประเทศ", "language"), ("เมืองหลวง", "capital")):
        hits = searcher.query([query], SearchOptions(k=3, mode="keyword", lang="tha"))[1][0]
        assert [h.ext_id for h in hits] == [expected], query


def test_codes_and_identifiers_are_kept_whole_beside_their_parts():
    from encodr.index.keywords import keyword_terms

    terms = keyword_terms("Order HX-7731 via get_console or ConsolePrint in v2.3.1", "eng")
    assert {"hx7731", "getconsole", "consoleprint", "consol", "print", "v231", "hx", "7731"} <= set(terms)  # parts stemmed


def test_identifier_terms_are_those_of_the_plain_patterns_tried_at_every_character():
    """The anchored patterns (and the check that skips a text with no code or identifier) find
    what the plain ones find, on prose, code and runs of word and code characters."""
    import random
    import re

    from encodr.index.keywords import identifier_terms

    def plain(text):
        codes = [re.sub(r"\W|_", "", m.group()).lower() for m in re.finditer(r"\w+(?:[-.:/]\w+)+", text)]
        return codes + [
            m.group().replace("_", "").lower() for m in re.finditer(r"\w*(?:[a-z][A-Z]|[A-Za-z0-9]_[A-Za-z0-9])\w*", text)
        ]

    rng = random.Random(0)
    texts = [
        "Order HX-7731 via get_console or ConsolePrint in v2.3.1.",
        "The U.S. army moved 3.5 km at 10:30 on a/b roads; __init__ _x x_ getHTTPServer é_Ä.",
        "Plain prose, with no code at all.",
    ] + ["".join(rng.choice("aZb_9-./: xYé_Ä") for _ in range(rng.randint(0, 30))) for _ in range(5000)]
    assert [identifier_terms(t) for t in texts] == [plain(t) for t in texts]
    assert identifier_terms(texts[0]) == ["hx7731", "v231", "getconsole", "consoleprint"]


def test_an_exact_code_finds_the_document_that_holds_it_and_a_quoted_phrase_is_a_phrase(
    tmp_path, tiny_model, capsys, monkeypatch
):
    import json

    from tests.conftest import run_cli

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "toc.md").write_text("# Contents\n\nHX 12 and 7731 pages; HX series overview; HX pumps; 7731 spares.\n")
    (docs / "order.md").write_text("# Order\n\nPart HX-7731 is the valve seal.\n")
    (docs / "valve.md").write_text("# Valve\n\nThe valve relief opens late.\n")
    (docs / "relief.md").write_text("# Relief\n\nThe relief valve opens at three bar.\n")
    out = tmp_path / "idx"
    assert (
        run_cli(["index", str(docs), "--model", str(tiny_model), "--out", str(out), "--lang", "eng"], capsys, monkeypatch)[0] == 0
    )

    def top(query, *extra):
        _, stdout, _ = run_cli(["search", query, "--index", str(out), "--mode", "keyword", "--json", *extra], capsys, monkeypatch)
        return [h["path"] for h in json.loads(stdout)["results"][0]["hits"]]

    assert top("HX-7731")[0] == "order.md"
    assert top('"relief valve"') == ["relief.md"]  # valve.md holds both words, not the phrase


def test_terms_in_half_the_texts_are_left_out_of_the_query_unless_k_hits_need_them(tmp_path, tiny_model):
    """FTS5's bm25() weighs a term held by at least half the texts at 10⁻⁶: the query leaves it
    out, and the hits are those of the whole query, k of them whenever k texts match it."""
    docs = [{"_id": f"d{i}", "text": f"the report number {i} on the weather", "lang": "eng"} for i in range(6)]
    docs += [{"_id": "valve", "text": "a relief valve opened", "lang": "eng"}]
    searcher = indexed(docs, tmp_path, tiny_model)
    store = searcher.index.texts
    assert store.weightless_terms(["the", "weather", "valv", "report"]) == {"the", "weather", "report"}
    weightless = store.weightless_terms
    assert keyword_expression("the relief valve", "eng", weightless) == '"relief" OR "valv"'
    assert keyword_expression("the weather", "eng", weightless) == '"the" OR "weather"'  # nothing would be left
    assert keyword_expression('"the valve" weather', "eng", weightless) == '"the valv" AND ("weather")'
    hits = searcher.query(["the relief valve"], SearchOptions(k=1, mode="keyword", lang=None))[1][0]
    assert [h.ext_id for h in hits] == ["valve"]
    hits = searcher.query(["the relief valve"], SearchOptions(k=3, mode="keyword", lang=None))[1][0]
    assert [h.ext_id for h in hits][:1] == ["valve"] and len(hits) == 3  # the texts holding only "the" fill k


def test_an_identifiers_parts_are_stemmed_marked_and_scored_as_words():
    """``keyword_scores`` holds the words ``keyword`` and ``scores``: the keyword index stems each
    (``score``, as the query's ``scores`` is stemmed, not ``scor`` as the whole name stemmed and
    then cut gave), the highlights mark them, and a snippet scores the line that holds them."""
    from encodr.core.results import term_spans
    from encodr.index.keywords import keyword_terms, stem_words
    from encodr.index.snippets import keyword_scores

    terms = set(keyword_terms("def keyword_scores(): keywords_list = getConsoles()", "eng"))
    assert set(stem_words(["keyword", "scores", "keywords", "list", "get", "consoles"], "eng")) <= terms
    assert {"keywordscores", "keywordslist", "getconsoles"} <= terms and "scor" not in terms
    text = "def keyword_scores(query):\n    from .keywords import stem_words"
    assert [text[a:b] for a, b in term_spans(text, "keyword scores", "eng", "eng")] == ["keyword", "scores", "keywords"]
    signature, imports = keyword_scores("how are keyword scores fused", text, [(0, 26), (31, len(text))], "eng")
    assert signature > imports > 0  # the import line holds "keywords" only


def test_a_word_finds_the_code_that_names_it_inside_an_identifier(tmp_path, tiny_model, capsys, monkeypatch):
    import json

    from tests.conftest import run_cli

    code = tmp_path / "code"
    code.mkdir()
    (code / "scoring.py").write_text('def keyword_scores(query):\n    """Each line\'s share."""\n    return 1\n')
    (code / "rows.py").write_text('def fetch_rows(ids):\n    """Rows by id."""\n    return ids\n')
    out = tmp_path / "idx"
    assert run_cli(["index", str(code), "--model", str(tiny_model), "--out", str(out)], capsys, monkeypatch)[0] == 0
    _, stdout, _ = run_cli(["search", "scores", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch)
    assert [h["path"] for h in json.loads(stdout)["results"][0]["hits"]] == ["scoring.py"]


def _keyword_instances(store) -> list[tuple]:
    """Every (term, row, column, offset) the store's keyword index holds."""
    store.conn.execute("create virtual table if not exists temp.instances using fts5vocab(main, texts_fts, instance)")
    return sorted(store.conn.execute("select term, doc, col, offset from temp.instances"))


def test_keyword_entries_written_with_the_texts_are_a_rebuilds_after_a_relabel(tmp_path):
    from encodr.index.texts import TextStore

    store = TextStore.create(tmp_path / "texts.db")
    texts = [
        ("The federations renamed themselves.", "lat", "History › Argentina"),
        ("Studies of plant species", "eng", None),
        ("Die Häuser am Fluss", "deu", ""),
        ("The anarchists studied libertarian federations.", "lat", None),
    ]
    rows = [
        {"id": i, "text": t, "lang": lang, "section": section, "hash": f"h{i}", "lang_detected": 1, "source": "f", "line": i}
        for i, (t, lang, section) in enumerate(texts)
    ]
    store.insert(rows[:2], keywords=True)
    store.insert(rows[2:], keywords=True)  # a window at a time, as a build's writer stores them
    assert store.keywords_written
    store.relabel_detected(lambda batch: ["deu" if "Häuser" in t else "eng" for t in batch])  # Latin → English
    store.build_keywords(written=True)
    written = _keyword_instances(store)
    assert ("feder", 0, "text", 3) in written and ("histori", 0, "text", 0) in written  # stemmed as English, heading first
    store.build_keywords()  # every entry analysed again from the stored rows
    assert _keyword_instances(store) == written


def test_a_new_index_keeps_the_keyword_entries_its_writer_made(tmp_path, tiny_model, monkeypatch):
    import shutil

    from encodr.index import texts as texts_module
    from encodr.index.reader import STORE_FILE
    from encodr.outputs import current_generation

    rebuilt = []
    build_keywords = texts_module.build_keywords
    monkeypatch.setattr(texts_module, "build_keywords", lambda conn: rebuilt.append(1) or build_keywords(conn))
    docs = [{"_id": f"d{i}", "text": f"Pumps and valves, page {i}", "lang": "eng"} for i in range(6)]
    searcher = indexed(docs, tmp_path, tiny_model)
    hits = searcher.query(["valve 4"], SearchOptions(k=2, mode="keyword", lang=None))[1][0]
    assert rebuilt == [] and hits[0].ext_id == "d4"
    shutil.copy(current_generation(tmp_path / "idx") / STORE_FILE, tmp_path / "copy.db")
    copy = texts_module.TextStore.create(tmp_path / "copy.db")
    written = _keyword_instances(copy)
    copy.build_keywords()
    assert rebuilt == [1] and _keyword_instances(copy) == written and len(written) == 6 * 5
