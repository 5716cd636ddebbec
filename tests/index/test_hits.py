"""Hits a person can act on: k documents when k are asked for, the answer's sentence and line,
and an empty index answered without a traceback."""

import json

from tests.conftest import run_cli


def _index(tmp_path, tiny_model, capsys, monkeypatch, files: dict[str, str]):
    docs = tmp_path / "docs"
    for name, text in files.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text)
    out = tmp_path / "idx"
    code, _, err = run_cli(
        ["index", str(docs), "--model", str(tiny_model), "--out", str(out), "--lang", "eng"], capsys, monkeypatch
    )
    assert code == 0, err
    return out


def test_k_documents_come_back_when_one_document_holds_the_best_passages(tmp_path, tiny_model, capsys, monkeypatch):
    manual = "# Manual\n\n" + "".join(f"## Part {i}\n\nThe pump pump pump valve {i}.\n\n" for i in range(60))
    others = {f"note{i}.md": f"# Note {i}\n\nA pump once, among many other words here {i}.\n" for i in range(6)}
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"manual.md": manual, **others})
    for k in (5, 7):
        code, stdout, _ = run_cli(
            ["search", "pump", "--index", str(out), "--mode", "keyword", "-k", str(k), "--json"], capsys, monkeypatch
        )
        hits = json.loads(stdout)["results"][0]["hits"]
        assert code == 0 and len(hits) == k and len({h["ext_id"] for h in hits}) == k
    code, stdout, _ = run_cli(
        ["search", "pump", "--index", str(out), "--mode", "keyword", "-k", "20", "--json"], capsys, monkeypatch
    )
    assert len(json.loads(stdout)["results"][0]["hits"]) == 7  # all the index holds


def test_a_document_search_is_the_best_passage_of_each_document_of_a_passage_search(tmp_path, tiny_model, capsys, monkeypatch):
    from encodr.index import Searcher
    from encodr.index.options import SearchOptions
    from encodr.index.search import best_passages

    manual = "# Manual\n\n" + "".join(f"## Part {i}\n\nThe pump pump valve {i} turns.\n\n" for i in range(30))
    others = {f"note{i}.md": f"# Note {i}\n\nA pump once, a valve twice, among other words {i}.\n" for i in range(8)}
    searcher = Searcher(_index(tmp_path, tiny_model, capsys, monkeypatch, {"manual.md": manual, **others}))
    queries = ["pump valve", "words among notes"]
    for mode in ("keyword", "dense", "hybrid"):
        k = 4
        _, documents = searcher.query(queries, SearchOptions(k=k, mode=mode))
        _, passages = searcher.query(queries, SearchOptions(k=len(searcher.index), mode=mode, passages=True))
        assert documents == [best_passages(row, k) for row in passages], mode
        assert all(len(row) == k and len({h.document for h in row}) == k for row in documents), mode


def test_a_hit_shows_the_sentence_that_answers_and_its_line(tmp_path, tiny_model, capsys, monkeypatch):
    text = (
        "# Boiler\n\nThe boiler sits in the cellar. It was installed in 1998 by the previous owner.\n"
        "Its manual is in the drawer.\nThe relief valve opens at three bar of pressure.\nService it every autumn.\n"
    )
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"house/boiler.md": text, "other.md": "# Other\n\nNothing here.\n"})
    code, stdout, _ = run_cli(
        ["search", "relief valve pressure", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch
    )
    hit = json.loads(stdout)["results"][0]["hits"][0]
    assert hit["path"] == "house/boiler.md" and hit["snippet"].startswith("The relief valve opens")
    assert (hit["line"], hit["end_line"], hit["snippet_line"]) == (1, 6, 5)
    from encodr import cli

    monkeypatch.setattr(cli.out_console, "width", 80)
    code, stdout, _ = run_cli(
        ["search", "relief valve pressure", "--index", str(out), "--mode", "keyword", "-k", "1"], capsys, monkeypatch
    )
    assert "house/boiler.md:5" in stdout and "The relief valve opens at three bar" in stdout


def test_an_index_with_no_documents_answers_with_no_hits(tmp_path, tiny_model, capsys, monkeypatch):
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"a.md": "# A\n\npump\n"})
    assert run_cli(["delete", "--index", str(out), "--source", "*"], capsys, monkeypatch)[0] == 0
    for mode in ("hybrid", "dense", "keyword"):
        code, stdout, err = run_cli(["search", "pump", "--index", str(out), "--mode", mode, "--json"], capsys, monkeypatch)
        found = json.loads(stdout)
        assert (
            code == 0
            and found["results"][0]["hits"] == []
            and any("is empty" in h for h in found["hints"])
            and found["caption"] == ""
        )
        assert "Traceback" not in err


def test_grep_format_prints_line_100_as_a_number_not_an_emoji(tmp_path, tiny_model, capsys, monkeypatch):
    text = "# Docker\n" + "\n" * 98 + "Mount the socket read-only.\n"  # the sentence on line 100
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"docker.md": text})
    code, stdout, _ = run_cli(
        ["search", "socket", "--index", str(out), "--mode", "keyword", "--format", "grep"], capsys, monkeypatch
    )
    assert code == 0 and stdout.splitlines()[0] == "docker.md:100:1: Mount the socket read-only."  # rich's :100: is 💯


def test_grep_format_files_and_show_open_a_hit_where_it_is(tmp_path, tiny_model, capsys, monkeypatch):
    text = (
        "# Boiler\n\nThe boiler sits in the cellar.\n\n## Valve\n\nThe relief valve opens at three bar.\nService it "
        "every autumn.\n"
    )
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"house/boiler.md": text, "other.md": "# Other\n\nNothing here.\n"})
    code, stdout, _ = run_cli(
        ["search", "relief valve", "--index", str(out), "--mode", "keyword", "--format", "grep"], capsys, monkeypatch
    )
    assert (
        code == 0
        and stdout.splitlines()[0] == "house/boiler.md:7:1: The relief valve opens at three bar. Service it every autumn."
    )
    code, stdout, _ = run_cli(
        ["search", "relief valve", "--index", str(out), "--mode", "keyword", "--format", "files"], capsys, monkeypatch
    )
    assert stdout.splitlines() == ["house/boiler.md"]
    code, stdout, _ = run_cli(["show", "house/boiler.md:7", "-C", "1", "--index", str(out), "--json"], capsys, monkeypatch)
    shown = json.loads(stdout)
    assert [(r["line"], r["text"]) for r in shown["lines"]] == [
        (6, ""),
        (7, "The relief valve opens at three bar."),
        (8, "Service it every autumn."),
    ]
    code, _, err = run_cli(["show", "nowhere.md", "--index", str(out)], capsys, monkeypatch)
    assert code == 2 and "has no document 'nowhere.md'" in err and "Traceback" not in err
    code, _, err = run_cli(["show", "house/boiler.md:0", "--index", str(out)], capsys, monkeypatch)
    assert code == 2 and "'0' is not LINE or FIRST-LAST" in err and len(err.strip().splitlines()) == 1


def test_show_opens_a_record_of_a_one_record_a_line_file_and_a_passage_another_file_stored_first(
    tmp_path, tiny_model, capsys, monkeypatch
):
    (tmp_path / "recs.txt").write_text("alpha one\nbeta two\ngamma three\n")
    code, _, err = run_cli(
        ["index", str(tmp_path / "recs.txt"), "--model", str(tiny_model), "--out", str(tmp_path / "ri"), "--lang", "eng"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    code, stdout, _ = run_cli(["show", "recs.txt:2", "--index", str(tmp_path / "ri"), "--json"], capsys, monkeypatch)
    assert code == 0 and [(r["line"], r["text"]) for r in json.loads(stdout)["lines"]] == [(2, "beta two")]
    code, stdout, _ = run_cli(["show", "recs.txt:1-2", "--index", str(tmp_path / "ri"), "--json"], capsys, monkeypatch)
    assert code == 0 and [(r["line"], r["text"]) for r in json.loads(stdout)["lines"]] == [(1, "alpha one"), (2, "beta two")]
    code, _, err = run_cli(["show", "recs.txt", "--index", str(tmp_path / "ri")], capsys, monkeypatch)
    assert code == 2 and "names 3 documents" in err and "recs.txt:3" in err
    code, _, err = run_cli(["show", "recs.txt:7", "--index", str(tmp_path / "ri")], capsys, monkeypatch)
    assert code == 2 and err.strip().splitlines() == [
        "encodr: error: index ri has no document 'recs.txt' on line 7; a hit's document id or its path names one"
    ]
    shared = "# Shared\n\nThe same paragraph in two files.\n"
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"a.md": shared, "b.md": shared + "\n## Own\n\nOnly in b.\n"})
    code, stdout, _ = run_cli(["show", "b.md", "--index", str(out), "--json"], capsys, monkeypatch)
    lines = [r["text"] for r in json.loads(stdout)["lines"]]
    assert code == 0 and "The same paragraph in two files." in lines and "Only in b." in lines


def test_a_text_two_files_hold_is_a_hit_of_each_file(tmp_path, tiny_model, capsys, monkeypatch):
    """A checkout with ``httpx/_client.py`` and a copy of it: every passage was credited to the
    file read first, and the other file was never a hit. The text is stored and encoded once;
    each file is a hit of its own, with its own path."""
    shared = "# Client\n\nThe client follows redirects when asked to.\n"
    files = {"a/client.md": shared, "b/client.md": shared, "c/other.md": "# Other\n\nNothing alike.\n"}
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, files)
    code, stdout, _ = run_cli(
        ["search", "follows redirects", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch
    )
    hits = json.loads(stdout)["results"][0]["hits"]
    assert code == 0 and [h["path"] for h in hits[:2]] == ["a/client.md", "b/client.md"]
    assert hits[0]["score"] == hits[1]["score"] and hits[0]["line"] == hits[1]["line"] and hits[0]["ext_id"] != hits[1]["ext_id"]
    code, stdout, _ = run_cli(
        ["search", "follows redirects", "--index", str(out), "--mode", "keyword", "--filter", "source=b/*", "--json"],
        capsys,
        monkeypatch,
    )
    assert [h["path"] for h in json.loads(stdout)["results"][0]["hits"]][:1] == ["b/client.md"]


def test_search_context_prints_the_lines_around_each_hit_as_grep_does(tmp_path, tiny_model, capsys, monkeypatch):
    code_text = (
        "import os\n\n\nclass Pump:\n    '''A pump.'''\n\n    def bleed(self):\n        '''Open the relief "
        "valve.'''\n        return os.sep\n"
    )
    text = (
        "# Boiler\n\nThe boiler sits in the cellar.\n\n## Valve\n\nThe relief valve opens at three bar.\nService it "
        "every autumn.\n"
    )
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"house/boiler.md": text, "src/pump.py": code_text})
    code, stdout, _ = run_cli(
        ["search", "relief valve", "--index", str(out), "--mode", "keyword", "-C", "1"], capsys, monkeypatch
    )
    lines = stdout.splitlines()
    assert code == 0 and "--" in lines  # a separator between the hits' groups
    boiler = lines.index("house/boiler.md:7:1: The relief valve opens at three bar. Service it every autumn.")
    assert lines[boiler - 1] == "house/boiler.md-6-"
    pump = next(i for i, line in enumerate(lines) if line.startswith("src/pump.py:"))
    assert lines[pump - 1] == "src/pump.py-7-    def bleed(self):"  # the line before, its indentation kept
    assert lines[pump] == "src/pump.py:8:9: '''Open the relief valve.''' return os.sep"  # the method's docstring, at its column
    code, stdout, _ = run_cli(
        ["search", "relief valve", "--index", str(out), "--mode", "keyword", "-C", "1", "--json"], capsys, monkeypatch
    )
    hits = {h["path"]: h for h in json.loads(stdout)["results"][0]["hits"]}
    assert hits["house/boiler.md"]["context"] == [
        [6, ""],
        [7, "The relief valve opens at three bar."],
        [8, "Service it every autumn."],
    ]


def test_a_code_hit_prints_as_its_lines_from_its_snippets_line_and_whole_from_its_passages(
    tmp_path, tiny_model, capsys, monkeypatch
):
    from encodr import cli

    monkeypatch.setattr(cli.out_console, "width", 80)
    code_text = (
        'import os\n\n\nclass Pump:\n    """A pump."""\n\n'
        '    def bleed(self):\n        """Open the relief valve."""\n        return os.sep\n'
    )
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"src/pump.py": code_text})
    code, stdout, _ = run_cli(["search", "relief valve", "--index", str(out), "--mode", "keyword"], capsys, monkeypatch)
    lines = [line.rstrip() for line in stdout.splitlines()]
    at = next(i for i, line in enumerate(lines) if "src/pump.py:8" in line)
    assert code == 0 and lines[at + 1 : at + 3] == ['    """Open the relief valve."""', "    return os.sep"], stdout
    code, stdout, _ = run_cli(["search", "relief valve", "--index", str(out), "--mode", "keyword", "--full"], capsys, monkeypatch)
    lines = [line.rstrip() for line in stdout.splitlines()]
    at = next(i for i, line in enumerate(lines) if "src/pump.py:" in line)
    assert "src/pump.py:7" in lines[at] and lines[at + 1 : at + 4] == [
        "    def bleed(self):",
        '        """Open the relief valve."""',
        "        return os.sep",
    ], stdout  # the whole passage, from its own first line


def test_keyword_scores_decide_a_snippet_only_with_a_clear_lead():
    from encodr.index.snippets import DECISIVE, decided

    assert decided([0.9, 0.9 - DECISIVE]) and decided([1.0]) and not decided([0.5, 0.4, 0.0]) and not decided([0.0, 0.0])


def test_sentence_cosines_are_computed_for_each_querys_first_undecided_hit_then_within_the_budget():
    from encodr.index.snippets import COSINE_BUDGET, within_budget
    from encodr.models.encoder import CHARS_PER_TOKEN

    def hit(tokens: int) -> list[tuple[int, int]]:  # two sentences of tokens estimated tokens in all (2 special each)
        half = (tokens // 2 - 2) * CHARS_PER_TOKEN
        return [(0, half), (half + 1, 2 * half + 1)]

    big, small = hit(COSINE_BUDGET + 100), hit(COSINE_BUDGET // 4)
    spans = [[big, small, big, small], [small, small, small, small, small]]
    wanted = [(q, i) for q in (0, 1) for i in range(len(spans[q]))]
    # query 0: its first undecided hit is over the budget alone, so no other fits; query 1: four quarters, not a fifth
    assert within_budget(wanted, spans) == [(0, 0), (1, 0), (1, 1), (1, 2), (1, 3)]
    assert within_budget([(0, 1), (0, 2), (0, 3)], spans) == [(0, 1), (0, 3)]  # a hit that does not fit is skipped, not the rest


def test_sentences_are_not_cut_after_an_abbreviation_an_initial_or_a_days_number():
    from encodr.index.snippets import sentence_spans

    text = (
        'Brown v. Board of Education was decided. Dr. Smith came on 5. April to the U.S. Army. It was 1985. "Then," '
        "he said. (Aside.) End"
    )
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Brown v. Board of Education was decided.",
        "Dr. Smith came on 5. April to the U.S. Army.",
        "It was 1985.",
        '"Then," he said.',
        "(Aside.)",
        "End",
    ]


def test_a_hit_moved_to_another_rank_is_a_new_hit_equal_to_replace_and_the_first_is_unchanged():
    from dataclasses import replace

    from encodr.index.search import Hit, best_passages

    hit = Hit(3, 0.5, "text", "a.md", 4, 7, "eng", "doc-a", "A", 10, "A › B", 6, 2, "docs/a.md", judged=2)
    moved = hit.at(1)
    assert moved == replace(hit, rank=1) and moved is not hit and hit.rank == 3
    assert hit.at(3) is hit
    hits = [Hit(r, 1.0 - r / 10, f"t{r}", "a.md", r, r, ext_id=doc) for r, doc in enumerate(["x", "x", "y", "x", "z"], 1)]
    assert [(h.rank, h.ext_id, h.text) for h in best_passages(hits, 3)] == [(1, "x", "t1"), (2, "y", "t3"), (3, "z", "t5")]


def test_two_folders_files_of_one_name_show_apart(tmp_path, tiny_model, capsys, monkeypatch):
    for folder, colour in (("a", "red"), ("b", "blue"), ("c", "green")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "README.md").write_text(f"# {folder}\n\nThe project uses a {colour} widget.\n")
    out, common = tmp_path / "idx", ["--model", str(tiny_model), "--lang", "eng", "--out", str(tmp_path / "idx")]
    code, _, err = run_cli(["index", str(tmp_path / "a"), str(tmp_path / "b"), *common], capsys, monkeypatch)
    assert code == 0, err
    code, _, err = run_cli(["index", str(tmp_path / "c"), *common, "--add"], capsys, monkeypatch)  # a folder added later
    assert code == 0, err
    code, stdout, _ = run_cli(
        ["search", "widget", "--index", str(out), "--mode", "keyword", "--format", "files"], capsys, monkeypatch
    )
    assert sorted(stdout.splitlines()) == ["a/README.md", "b/README.md", "c/README.md"]
    code, stdout, _ = run_cli(["show", "b/README.md:3", "--index", str(out), "--json"], capsys, monkeypatch)
    assert code == 0 and [r["text"] for r in json.loads(stdout)["lines"]] == ["The project uses a blue widget."]


def test_a_file_edited_or_deleted_since_it_was_indexed_is_left_out_with_one_line_saying_so(
    tmp_path, tiny_model, capsys, monkeypatch
):
    files = {f"{name}.md": f"# {name}\n\nThe pump of the {name} house needs a new valve.\n" for name in ("a", "b", "c")}
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, files)
    (tmp_path / "docs" / "a.md").write_text("# a\n\nThe pump of the a house was replaced last week.\n")
    (tmp_path / "docs" / "b.md").unlink()
    for k in ("3", "1"):  # one hit asked for: the search goes deeper than the two changed documents
        code, stdout, err = run_cli(
            ["search", "pump valve", "--index", str(out), "--mode", "keyword", "-k", k, "--json"], capsys, monkeypatch
        )
        answer = json.loads(stdout)
        assert code == 0 and [(h["path"], h["rank"]) for h in answer["results"][0]["hits"]] == [("c.md", 1)]
        assert "left out 2 document(s) changed since the index read them (a.md edited, b.md deleted)" in answer["hints"][0]
        assert "--sync" in answer["hints"][0] and "Traceback" not in err
    code, stdout, err = run_cli(["show", "a.md", "--index", str(out), "--json"], capsys, monkeypatch)
    shown = json.loads(stdout)  # a person who asks for the document sees it as indexed, and is told
    assert code == 0 and shown["changed"] == "edited" and "a.md was edited since the index read it" in err
    code, _, err = run_cli(["index", str(tmp_path / "docs"), "--out", str(out), "--sync"], capsys, monkeypatch)
    assert code == 0, err
    code, stdout, _ = run_cli(["search", "pump", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch)
    answer = json.loads(stdout)
    assert sorted(h["path"] for h in answer["results"][0]["hits"]) == ["a.md", "c.md"] and not answer.get("hints")


def test_a_search_of_an_index_whose_every_document_changed_says_so_and_names_the_sync(tmp_path, tiny_model, capsys, monkeypatch):
    files = {f"{name}.md": f"# {name}\n\nThe pump of the {name} house needs a new valve.\n" for name in ("a", "b")}
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, files)
    for name in files:
        (tmp_path / "docs" / name).write_text("# moved\n\nNothing about it here any more.\n")
    code, stdout, err = run_cli(["search", "pump valve", "--index", str(out), "--mode", "keyword"], capsys, monkeypatch)
    assert code == 0 and "no hits" in stdout
    assert "every document of this index changed since it was read (a.md edited, b.md edited)" in err
    assert " ".join(err.split()).endswith("--sync")  # the command that reads them again


def test_the_caption_counts_the_documents_split_into_passages_without_calling_a_short_note_long(
    tmp_path, tiny_model, capsys, monkeypatch
):
    note = "# Note\n\n## Pump\n\nPump at four bar.\n\n## Valve\n\nValve every autumn.\n"  # a passage a section
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"note.md": note})
    code, stdout, _ = run_cli(["search", "pump", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch)
    assert json.loads(stdout)["caption"].startswith("documents ranked by their best passage (1 document is split into")


def test_a_markdown_heading_starts_no_snippet_unless_the_passage_is_all_headings():
    from encodr.index.snippets import choose, sentence_spans

    text = "# Pumps\n\nThe relief valve opens at three bar."
    spans = sentence_spans(text)
    assert text[slice(*choose(text, spans, [1.0, 0.5], markdown=True))] == "The relief valve opens at three bar."
    assert text[slice(*choose(text, spans, [1.0, 0.5]))] == text  # code: "# a comment" is a line like any other
    only = "# Pumps\n## Valves"
    assert choose(only, sentence_spans(only), [0.2, 0.9], markdown=True) == (8, len(only))


def test_a_wrapped_paragraphs_sentences_run_over_its_line_breaks_and_a_block_still_breaks_them():
    from encodr.index.snippets import sentence_spans

    text = "The relief valve opens at\nthree bar. Service it every\nautumn.\n\n# Valves\nCheck:\n- the seal\n- the spring"
    wrapped = [text[a:b] for a, b in sentence_spans(text, wrapped=True)]
    assert wrapped == [
        "The relief valve opens at\nthree bar.",
        "Service it every\nautumn.",
        "# Valves",
        "Check:",
        "- the seal",
        "- the spring",
    ]
    assert [text[a:b] for a, b in sentence_spans(text)][:2] == ["The relief valve opens at", "three bar."]  # code: a line each


def test_a_snippet_in_a_hard_wrapped_note_starts_where_its_sentence_starts(tmp_path, tiny_model, capsys, monkeypatch):
    note = (
        "# Boiler\n\nThe boiler sits in the cellar and heats the water for the whole house all year. The relief\n"
        "valve opens at three bar of pressure. Service it every autumn.\n"
    )
    out = _index(tmp_path, tiny_model, capsys, monkeypatch, {"boiler.md": note})
    code, stdout, _ = run_cli(["search", "relief valve pressure", "--index", str(out), "--json"], capsys, monkeypatch)
    hit = json.loads(stdout)["results"][0]["hits"][0]
    assert code == 0 and hit["snippet"].startswith("The relief\nvalve opens at three bar of pressure.")
    assert (hit["snippet_line"], hit["snippet_column"]) == (3, 81)  # the sentence's start, on the line before the match
