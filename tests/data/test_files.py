import json

import pytest

from encodr.data.files import expand, iter_records, passage_splitter, read_document
from encodr.errors import EncodrError
from encodr.index.options import SearchOptions
from tests.conftest import run_cli


def tiny_pdf(text: str, title: str = "Pump manual") -> bytes:
    """A one-page PDF whose page shows ``text`` (Helvetica), with a document title."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode(),
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


@pytest.fixture
def mixed_folder(tmp_path):
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("the harbour was calm this morning\nboats left early for the fishing grounds\n")
    (root / "guide.md").write_text("# Garden guide\n\nWater the tomatoes every evening in summer.\n")
    (root / "page.html").write_text(
        "<html><head><title>Winter news</title><style>p{}</style></head><body><h1>Snow</h1>"
        "<p>The mountain pass closed after heavy snow.</p><script>var x = 1;</script></body></html>"
    )
    (root / "sub" / "manual.pdf").write_bytes(tiny_pdf("Error code XJ4471 means the pump has lost pressure"))
    (root / "sub" / "items.jsonl").write_text(
        json.dumps({"_id": "v1", "title": "Violin", "text": "a violin has four strings"}) + "\n"
    )
    (root / "sub" / "table.csv").write_text('text,id\n"planets, moons and rings",p1\n')
    (root / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (root / "empty.md").write_text("   \n")
    (root / ".hidden.txt").write_text("never read\n")
    return root


def test_documents_are_read_with_their_titles(mixed_folder, caplog):
    assert read_document(mixed_folder / "guide.md")[0] == "Garden guide"
    title, text = read_document(mixed_folder / "page.html")
    assert title == "Winter news" and "mountain pass closed" in text and "var x" not in text and "p{}" not in text
    title, text = read_document(mixed_folder / "sub" / "manual.pdf")
    assert title == "Pump manual" and "XJ4471" in text
    caplog.set_level("WARNING")
    with pytest.raises(EncodrError, match=r"broken.pdf: not a PDF that can be read"):
        read_document(mixed_folder / "broken.pdf")
    assert not [
        r.getMessage() for r in caplog.records if r.name.startswith("pypdf")
    ]  # its "EOF marker not found" is not printed beside our line


def test_a_folder_is_read_recursively_and_other_files_are_skipped(mixed_folder):
    files, skipped = expand([str(mixed_folder)])
    names = sorted(p.rsplit("/", 1)[-1] for p in files)
    assert names == ["broken.pdf", "empty.md", "guide.md", "items.jsonl", "manual.pdf", "notes.txt", "page.html", "table.csv"]
    assert [s.path.rsplit("/", 1)[-1] for s in skipped] == ["photo.png"]
    assert [p.rsplit("/", 1)[-1] for p in expand([str(mixed_folder)], glob="*.pdf")[0]] == ["broken.pdf", "manual.pdf"]
    with pytest.raises(EncodrError, match="no file to read in this folder matching"):
        expand([str(mixed_folder)], glob="*.docx")


def test_a_long_text_becomes_overlapping_passages_that_fit(tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    text = " ".join(f"Sentence number {i} talks about topic {i % 7} at some length." for i in range(60))
    split = passage_splitter(tokenizer, 60, overlap=20)
    parts = split(text)
    assert len(parts) > 4
    for offset, chunk in parts:
        assert text[offset : offset + len(chunk)] == chunk  # offsets point into the document
        assert len(tokenizer(chunk, add_special_tokens=False)["input_ids"]) <= 60
    assert parts[1][0] < parts[0][0] + len(parts[0][1])  # consecutive passages overlap
    assert split("short text") == [(0, "short text")]
    records = list(iter_records_of(text, split))
    assert {r.ext_id for r in records} == {"doc-1"} and [r.start for r in records] == [o for o, _ in parts]


def test_source_code_is_cut_between_lines_into_overlapping_passages_that_fit(tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    code = "".join(f"    total_{i} = compute(item_{i})\n" for i in range(80))
    code += "    x = " + " + ".join(f"term_{i}" for i in range(200)) + "\n"  # one line over the window
    parts = passage_splitter(tokenizer, 60, overlap=20, quick=True)(code, code=True)
    assert len(parts) > 8
    for offset, chunk in parts:
        assert code[offset : offset + len(chunk)] == chunk
        assert len(tokenizer(chunk, add_special_tokens=False)["input_ids"]) <= 60
    lines = [chunk for _, chunk in parts if chunk.startswith("total_")]
    assert len(lines) > 4 and all(chunk.endswith(")") for chunk in lines)  # whole lines only
    assert parts[1][0] < parts[0][0] + len(parts[0][1])  # consecutive passages share lines
    assert "term_199" in parts[-1][1]


def iter_records_of(text, split):
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp())
    (folder / "docs.jsonl").write_text(json.dumps({"_id": "doc-1", "text": text}) + "\n")
    return iter_records(str(folder / "docs.jsonl"), None, split)


def test_index_a_mixed_folder_in_one_command_and_find_the_pdf(mixed_folder, tmp_path, tiny_model, capsys, monkeypatch):
    out = tmp_path / "idx"
    code, stdout, err = run_cli(
        ["index", str(mixed_folder), "--model", str(tiny_model), "--out", str(out), "--lang", "eng", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    meta = json.loads(stdout)
    assert sorted(s["path"].rsplit("/", 1)[-1] for s in meta["skipped_files"]) == ["broken.pdf", "photo.png"]
    assert meta["empty_files"] == 1  # empty.md: counted as empty, not a failure
    assert "2 file(s) skipped" in err and "broken.pdf: not a PDF that can be read" in err
    assert (
        meta["count"] == 6
    )  # the note (a .txt in a folder is one document), the guide, the page, the manual, the violin, the planets
    code, stdout, err = run_cli(
        ["search", "xj4471 pressures", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch
    )
    hit = json.loads(stdout)["results"][0]["hits"][0]
    assert hit["title"] == "Pump manual" and hit["source"].endswith("manual.pdf") and "XJ4471" in hit["text"]
    assert [hit["text"][a:b] for a, b in hit["highlights"]] == ["XJ4471", "pressure"]  # any case; by English stem


def test_the_index_bar_ends_full_though_a_files_lines_are_not_its_records(mixed_folder, tmp_path, tiny_model):
    from encodr.index import BuildOptions, build

    events = []
    build([str(mixed_folder)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"), progress=events.append)
    counted = [e for e in events if e.task == "indexing"]
    assert counted[-1].completed == counted[-1].total
    assert counted[0].completed == 0 and all(a.completed <= b.completed for a, b in zip(counted, counted[1:]))
    # the total is in records once the files are read: the PDF's and the HTML page's lines far outnumber
    # their records, and a bar counted against lines stood at a few per cent until it jumped to full
    before_end = counted[-2]
    assert before_end.total == counted[-1].total and before_end.completed == before_end.total, counted[-3:]


def test_the_index_bars_total_becomes_records_as_files_are_read(tmp_path):
    """A file's lines stand for its records until it is read, scaled by what the files read gave."""
    from encodr.index.build import RecordTotal

    total = RecordTotal(["a.pdf", "b.pdf", "c.md"], [400, 400, 100])
    assert total.value == 900  # nothing read: a line a record
    total.read("a.pdf", 4)
    assert total.value == 4 + round(500 * 4 / 400)  # 4 read, 5 estimated
    total.read("b.pdf", 6)
    total.read("c.md", 3)
    assert total.value == 13  # every file read: exact


def test_a_file_named_on_the_command_line_is_an_error_not_a_skip(mixed_folder, tmp_path, tiny_model, capsys, monkeypatch):
    code, _, err = run_cli(
        ["index", str(mixed_folder / "broken.pdf"), "--model", str(tiny_model), "--out", str(tmp_path / "x")], capsys, monkeypatch
    )
    assert code == 2 and "broken.pdf: not a PDF that can be read" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()  # nothing half-written


def test_the_csv_of_the_issue_is_read_as_records(tmp_path, tiny_model, capsys, monkeypatch):
    data = tmp_path / "data.csv"
    data.write_text('text,id\n"hello, world",1\n')
    code, _, err = run_cli(
        ["index", str(data), "--model", str(tiny_model), "--out", str(tmp_path / "csvidx"), "--lang", "eng"], capsys, monkeypatch
    )
    assert code == 0, err
    code, out, _ = run_cli(["search", "hello", "--index", str(tmp_path / "csvidx"), "--json"], capsys, monkeypatch)
    assert [h["text"] for h in json.loads(out)["results"][0]["hits"]] == ["hello, world"]
    (tmp_path / "bad.csv").write_text("title,body\nx,y\n")
    code, _, err = run_cli(
        ["index", str(tmp_path / "bad.csv"), "--model", str(tiny_model), "--out", str(tmp_path / "bad")], capsys, monkeypatch
    )
    assert code == 2 and "bad.csv: no column 'text' in its header (title, body); pass --text-column with one of them" in err
    assert not (tmp_path / "bad").exists()
    code, _, err = run_cli(
        [
            "index",
            str(tmp_path / "bad.csv"),
            "--model",
            str(tiny_model),
            "--out",
            str(tmp_path / "named"),
            "--lang",
            "eng",
            "--text-column",
            "body",
            "--title-column",
            "title",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    code, out, _ = run_cli(["search", "y", "--index", str(tmp_path / "named"), "--json"], capsys, monkeypatch)
    (hit,) = json.loads(out)["results"][0]["hits"]
    assert hit["text"] == "x y" and hit["title"] == "x"


def test_search_ranks_documents_by_their_best_passage_unless_passages(tmp_path, tiny_model):
    from encodr.index import BuildOptions, Searcher, build

    long = " ".join(f"The lighthouse keeper wrote entry {i} about the tide and the weather that night." for i in range(60))
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(d) + "\n"
            for d in [
                {"_id": "log", "title": "Keeper's log", "text": long},
                {"_id": "b", "text": "a short note about the lighthouse"},
            ]
        )
    )
    meta = build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    assert meta["split_documents"] == 1 and meta["passages"] == meta["count"] - 1 > 3
    searcher = Searcher(tmp_path / "idx")
    docs = searcher.search(["lighthouse tide"], SearchOptions(k=5, mode="keyword"))[0]
    assert sorted(h.document for h in docs) == ["b", "log"] and [h.rank for h in docs] == [1, 2]
    passages = searcher.query(["lighthouse tide"], SearchOptions(k=5, mode="keyword", passages=True))[1][0]
    assert len(passages) == 5 and sum(h.document == "log" for h in passages) >= 4
    log = next(h for h in docs if h.document == "log")
    indexed = "Keeper's log " + long  # a JSONL document's text is its title and text, as BEIR joins them
    assert log.title == "Keeper's log" and indexed[log.start : log.start + len(log.text)] == log.text


def test_a_hit_opens_its_whole_document_at_the_passage(tmp_path, tiny_model):
    from encodr.core.results import term_spans
    from encodr.index import BuildOptions, Searcher, build

    long = " ".join(f"Entry {i}: the keeper logged the tide at the lighthouse." for i in range(80))
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(json.dumps({"_id": "log", "text": long}) + "\n")
    build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    searcher = Searcher(tmp_path / "idx")
    hit = searcher.query(["Entry 63"], SearchOptions(k=1, mode="keyword", passages=True))[1][0][0]
    text, at = searcher.document(hit)
    assert text == long and text[at : at + len(hit.text)] == hit.text and at > 0
    assert [hit.text[s:e] for s, e in term_spans(hit.text, "ENTRY lighthouse")][:2] == ["Entry", "lighthouse"]
    assert term_spans("Café au lait", "cafe") == [(0, 4)]
    assert term_spans("Die Pumpen verloren Druck", "pumpe", "deu", "deu") == [(4, 10)]  # German stems
    assert term_spans("Die Pumpen verloren Druck", "pumpe") == []  # no language: no stems


@pytest.mark.parametrize("cores", [1, 4])
def test_records_split_on_threads_come_out_in_order_and_an_error_after_what_was_read(monkeypatch, cores):
    from encodr.data.files import split_records
    from encodr.data.records import Record

    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    texts = [("long " * (i % 5)).strip() or f"t{i}" for i in range(23)]

    def split(text):  # a text of n words: n one-word passages
        words = text.split()
        return [(i, w) for i, w in enumerate(words)] if len(words) > 1 else [(0, text)]

    def records():
        for i, text in enumerate(texts):
            yield Record(text, "f.jsonl", i + 1, f"r{i}")
        raise EncodrError("f.jsonl, line 24: broken")

    out = []
    with pytest.raises(EncodrError, match="line 24"):
        for record in split_records(records(), split, batch=4):
            out.append(record)
    expected = [(f"r{i}", w) for i, t in enumerate(texts) for _, w in split(t)]
    assert [(r.document_id, r.text) for r in out] == expected


def test_malformed_records_name_their_line(tmp_path):
    from encodr.data.records import read_records

    (tmp_path / "rows.csv").write_text('text,id\n"one, two",1,extra\n')
    with pytest.raises(EncodrError, match=r"rows.csv, line 2: 3 fields where the header has 2"):
        list(read_records(tmp_path / "rows.csv"))
    (tmp_path / "objs.jsonl").write_text('{"text": "fine"}\n["not", "an", "object"]\n')
    with pytest.raises(EncodrError, match=r"objs.jsonl, line 2: needs a JSON object with a string 'text' field"):
        list(read_records(tmp_path / "objs.jsonl"))


def test_passages_are_measured_without_the_tokenizers_own_truncation(tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    tokenizer.backend_tokenizer.enable_truncation(32)  # as a model's tokenizer.json may ship it (all-MiniLM-L6-v2 does)
    text = " ".join(f"Sentence number {i} talks about topic {i % 7} at some length." for i in range(30))
    parts = passage_splitter(tokenizer, 60)(text)
    assert len(parts) > 4 and all(
        len(tokenizer(c, add_special_tokens=False, truncation=False)["input_ids"]) <= 60 for _, c in parts
    )


@pytest.fixture
def office_folder(tmp_path):
    """One file of each converted kind, written by the libraries people write them with, and a damaged .docx."""
    import docx
    import openpyxl
    import pptx
    from ebooklib import epub
    from odf import dc
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    root = tmp_path / "office"
    root.mkdir()
    word = docx.Document()
    word.core_properties.author, word.core_properties.title = "Ada Lovelace", "Boiler handbook"
    word.add_heading("Install", 1)
    word.add_paragraph("Mount the boiler on a wall that carries its weight.")
    word.save(root / "report.docx")
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text, slide.placeholders[1].text = "Quarterly results", "Revenue rose by twelve percent in the north."
    deck.save(root / "deck.pptx")
    book = openpyxl.Workbook()
    book.active.title = "Parts"
    for line in (["part", "price"], ["valve", 12], ["flywheel", 140]):
        book.active.append(line)
    book.save(root / "parts.xlsx")
    odt = OpenDocumentText()
    odt.meta.addElement(dc.Title(text="Notes on valves"))
    odt.text.addElement(H(outlinelevel=1, text="Valves"))
    odt.text.addElement(P(text="A gate valve stops the water when closed."))
    odt.save(str(root / "notes.odt"))
    ebook = epub.EpubBook()
    ebook.set_identifier("pump-book")
    ebook.set_title("The pump book")
    ebook.set_language("en")
    ebook.add_author("Jane Doe")
    chapter = epub.EpubHtml(title="Chapter 1", file_name="c1.xhtml", lang="en")
    chapter.content = "<h1>Pumps</h1><p>A centrifugal pump moves water uphill.</p>"
    ebook.add_item(chapter)
    ebook.toc, ebook.spine = (chapter,), ["nav", chapter]
    ebook.add_item(epub.EpubNcx())
    ebook.add_item(epub.EpubNav())
    epub.write_epub(str(root / "book.epub"), ebook)
    (root / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip archive")
    return root


def test_office_and_ebook_files_are_read_as_markdown_with_their_properties(office_folder):
    from encodr.data.files import read_document_meta

    title, text, meta = read_document_meta(office_folder / "report.docx")
    assert title == "Boiler handbook" and meta["author"] == "Ada Lovelace" and "created" in meta
    assert text.startswith("# Install") and "carries its weight" in text  # headings as Markdown
    assert read_document_meta(office_folder / "notes.odt")[:2] == (
        "Notes on valves",
        "# Valves\n\nA gate valve stops the water when closed.\n",
    )
    assert "| flywheel | 140 |" in read_document_meta(office_folder / "parts.xlsx")[1]  # a sheet as a Markdown table
    title, text, meta = read_document_meta(office_folder / "book.epub")
    assert title == "The pump book" and meta["author"] == "Jane Doe" and "centrifugal pump" in text
    assert "Quarterly results" in read_document_meta(office_folder / "deck.pptx")[1]
    with pytest.raises(EncodrError, match=r"broken.docx: not a .docx file that can be read, damaged or password-protected"):
        read_document_meta(office_folder / "broken.docx")


def test_a_folder_of_office_files_is_indexed_and_a_damaged_one_is_skipped_with_one_warning(
    office_folder, tmp_path, tiny_model, capsys, monkeypatch
):
    out = tmp_path / "idx"
    code, stdout, err = run_cli(
        ["index", str(office_folder), "--model", str(tiny_model), "--out", str(out), "--lang", "eng", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    meta = json.loads(stdout)
    assert [s["path"].rsplit("/", 1)[-1] for s in meta["skipped_files"]] == ["broken.docx"] and meta["documents"] == 5
    assert err.count("broken.docx") == 1 and "damaged or password-protected" in err
    for query, source in [
        ("centrifugal", "book.epub"),
        ("flywheel", "parts.xlsx"),
        ("gate valve", "notes.odt"),
        ("twelve percent", "deck.pptx"),
    ]:
        code, stdout, _ = run_cli(["search", query, "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch)
        assert json.loads(stdout)["results"][0]["hits"][0]["source"].endswith(source)
    import docx

    word = docx.Document()  # --sync treats them as any other file: one edited, one deleted
    word.add_heading("Install", 1)
    word.add_paragraph("Mount the condensing boiler beside the chimney.")
    word.save(office_folder / "report.docx")
    (office_folder / "notes.odt").unlink()
    code, stdout, _ = run_cli(["index", str(office_folder), "--out", str(out), "--sync", "--json"], capsys, monkeypatch)
    synced = json.loads(stdout)
    assert code == 0 and synced["updated"] == 1 and synced["removed"] == 1 and synced["documents"] == 4
    code, stdout, _ = run_cli(
        ["search", "condensing chimney", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch
    )
    assert json.loads(stdout)["results"][0]["hits"][0]["source"].endswith("report.docx")


def test_a_presentations_slides_are_its_pages_and_a_hit_names_its_slide(tmp_path):
    import pptx

    from encodr.core.results import where
    from encodr.data.files import iter_records, read_document_file
    from encodr.index.search import Hit

    deck = pptx.Presentation()
    for n in range(1, 4):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text, slide.placeholders[1].text = f"Part {n}", f"The pump of part {n} runs at {n} bar."
    deck.save(tmp_path / "deck.pptx")
    doc = read_document_file(tmp_path / "deck.pptx")
    assert "ENCODRPAGE" not in doc.text and len(doc.pages) == 3 and doc.text[doc.pages[1] :].startswith("## Part 2")
    passages = list(iter_records(str(tmp_path / "deck.pptx")))
    assert [(p.page, p.section) for p in passages] == [(1, "Part 1"), (2, "Part 2"), (3, "Part 3")]
    hit = Hit(
        1, 1.0, passages[1].text, str(tmp_path / "deck.pptx"), passages[1].line, 0, page=2, section="Part 2", path="deck.pptx"
    )
    assert where(hit) == f"deck.pptx:{passages[1].line} slide 2 › Part 2"


def test_heading_paths_follow_the_outline_and_skip_code_and_the_title():
    from encodr.data.files import heading_paths

    text = (
        "# Boiler handbook\n\nIntro.\n\n## Install\n\nWall.\n\n```\n# not a heading\n```\n\n### GPU\n\nFour "
        "bar.\n\n## Service\n\nAutumn.\n"
    )
    paths = [path for _, path in heading_paths(text, "Boiler handbook")]
    assert paths == [
        "",
        "Install",
        "Install › GPU",
        "Service",
    ]  # the title's heading adds nothing; a deeper heading closes at its sibling
    offsets = [offset for offset, _ in heading_paths(text)]
    assert [text[o : o + 2] for o in offsets] == ["# ", "##", "##", "##"]


def test_a_headings_attribute_list_is_not_part_of_its_title_or_section(tmp_path):
    from encodr.data.files import heading_paths

    page = tmp_path / "request-files.md"
    page.write_text("# Request Files { #request-files }\n\nUpload.\n\n## Import `File` {: #import .x }\n\nfrom x import File\n")
    title, text = read_document(str(page))
    assert title == "Request Files"
    assert [path for _, path in heading_paths(text, title)] == ["", "Import `File`"]
    assert heading_paths("# Sets {x}\n\nbody\n") == [(0, "Sets {x}")]  # braces that are words stay


def test_mkdocs_admonition_markers_and_includes_are_not_text_and_every_line_stays_in_place(tmp_path):
    page = tmp_path / "files.md"
    raw = (
        "# Files\n\n/// info | Before you start\n\nInstall `python-multipart`.\n\n///\n\n"
        '!!! tip "Good to know"\n    A class.\n\n{* ../../docs_src/files/tutorial001.py hl[3] *}\n'
        '--8<-- "snippet.md"\n\n```text\n///\n!!! kept in code\n```\n'
    )
    page.write_text(raw)
    _, text = read_document(str(page))
    assert len(text.split("\n")) == len(raw.split("\n"))  # a hit's path:line is the file's
    lines = text.split("\n")
    assert lines[2] == "Before you start" and lines[6] == "" and lines[8] == "Good to know" and lines[9] == "    A class."
    assert lines[11] == "" and lines[12] == "" and "{*" not in text and "--8<--" not in text
    assert lines[15:17] == ["///", "!!! kept in code"]  # a code block is as written


def test_a_hit_knows_its_section_in_every_front_end(tmp_path, tiny_model, capsys, monkeypatch):
    """A passage of a long Markdown document records its heading path: the CLI's source column
    and --json show it (HTTP and MCP answer with the same payload), and its words reach BM25."""
    import json

    docs = tmp_path / "docs"
    docs.mkdir()
    filler = " ".join(f"word{i}" for i in range(400))  # long sections: the document is split into passages
    (docs / "handbook.md").write_text(
        f"# Boiler handbook\n\n## Install\n\n{filler}\n\n### Graphics card\n\nThe fan spins at full speed. {filler}\n\n"
        f"## Service\n\nBleed the radiators every autumn. {filler}\n"
    )
    (docs / "page.html").write_text(
        "<html><head><title>Winter news</title></head><body><h1>Snow</h1><p>The pass closed.</p>"
        f"<h2>Roads</h2><p>Drive slowly on ice. {filler}</p></body></html>"
    )
    out = tmp_path / "idx"
    assert (
        run_cli(["index", str(docs), "--model", str(tiny_model), "--out", str(out), "--lang", "eng"], capsys, monkeypatch)[0] == 0
    )
    code, stdout, _ = run_cli(["search", "fan spins", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch)
    hit = json.loads(stdout)["results"][0]["hits"][0]
    assert code == 0 and hit["section"] == "Install › Graphics card" and hit["title"] == "Boiler handbook"
    code, stdout, _ = run_cli(
        ["search", "graphics", "--index", str(out), "--mode", "keyword", "--passages", "--json"], capsys, monkeypatch
    )
    found = json.loads(stdout)["results"][0][
        "hits"
    ]  # a heading's words find its passages, even those whose text does not repeat them
    assert any(h["section"] == "Install › Graphics card" and "graphics" not in h["text"].lower() for h in found)
    code, stdout, _ = run_cli(["search", "drive slowly", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch)
    assert json.loads(stdout)["results"][0]["hits"][0]["section"] == "Snow › Roads"  # HTML headings too
    from encodr import cli

    monkeypatch.setattr(cli.out_console, "width", 200)  # the table's source column on one line
    code, stdout, _ = run_cli(
        ["search", "fan spins", "--index", str(out), "--mode", "keyword", "-k", "1", "--passages"], capsys, monkeypatch
    )
    assert code == 0 and "handbook.md:" in stdout and " › Install › Graphics card" in stdout


def test_files_the_walk_leaves_out_are_said_before_encoding_starts_and_once(tmp_path, tiny_model):
    """An index sent to a file printed nothing for minutes: its skipped files were said after
    the build. Now the walk's are said as it finds them, before the first text is encoded."""
    from encodr.core import commands
    from encodr.core.requests import IndexRequest

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.md").write_text("# Pump\n\nThe pump pressure must stay below 4 bar.\n")
    (docs / "blob.bin").write_bytes(b"\x00\x01" * 10)
    (docs / "big.txt").write_text("word " * 400)
    events: list[str] = []
    commands.index(
        IndexRequest(corpus=[str(docs)], model=str(tiny_model), out=str(tmp_path / "idx"), lang="eng", max_file_size=1000),
        progress=lambda event: events.append(f"progress {event.task}"),
        warn=lambda line: events.append(line),
    )
    first_progress = next(i for i, e in enumerate(events) if e.startswith("progress"))
    said = [e for e in events if e.startswith("skipped")]
    assert said[0] == "skipped 1 .bin file: not a kind encodr reads" and said[1].endswith("big.txt") and len(said) == 2
    assert all(events.index(line) < first_progress for line in said)  # before the encoding's first event
    assert len(said) == len(set(said))  # and not again after it
