"""A hit as a table shows it: a snippet around its matched words, as wide as asked, spans moved with it."""

import pytest

from encodr.core.results import code_snippet, snippet


def test_a_snippet_is_cut_around_the_first_match_and_keeps_its_highlights():
    text = "# Pump manual\n\n" + "filler words here " * 20 + "the pump pressure must stay below 4 bar " + "more filler text " * 20
    start = text.index("pressure")
    shown, spans = snippet(text, [(start, start + len("pressure"))], 60)
    assert len(shown) <= 60 and shown.startswith("…") and shown.endswith("…") and "\n" not in shown
    assert [shown[s:e] for s, e in spans] == ["pressure"]


def test_a_short_text_or_width_zero_is_whole():
    assert snippet("a cat\non a mat", [(2, 5)], 0) == ("a cat on a mat", [(2, 5)])
    assert snippet("a cat", [(2, 5)], 60) == ("a cat", [(2, 5)])


def test_code_shows_as_its_lines_dedented_tabs_expanded_and_cut_to_the_width():
    text = '    def bleed(self):\n\n        """Open the relief valve of the pump."""\n        return self.valve.open()\n'
    marks = [(text.index(w), text.index(w) + len(w)) for w in ("bleed", "relief", "pump", "open")]
    shown, spans = code_snippet(text, marks, 2, 30)
    assert shown.split("\n") == ["def bleed(self):", '    """Open the relief valve…']  # blank line skipped; two lines
    assert [shown[s:e] for s, e in spans] == ["bleed", "relief"]  # "pump" was cut off, "open" is on a third line
    shown, _ = code_snippet("\tfunc main() {\n\t\tfmt.Println(1)\n\t}\n", [], 5, 40)
    assert shown == "func main() {\n    fmt.Println(1)\n}"  # a tab is 4 columns, the common one removed
    # a passage's stored text starts at its first word: a line that opens a block sits a level left of the next
    assert code_snippet("def f(x):\n        return x\n", [], 4, 40, first_indented=False)[0] == "def f(x):\n    return x"
    assert code_snippet("'''Docs.'''\n        return x\n", [], 4, 40, first_indented=False)[0] == "'''Docs.'''\nreturn x"


def _rows(shown: str, width: int) -> list[str]:
    """``shown`` as a terminal draws it ``width`` cells wide: rich's own wrap."""
    from rich.console import Console
    from rich.text import Text

    return [line.plain for line in Text(shown).wrap(Console(width=width), width)]


def test_a_snippet_of_n_lines_fills_them_when_wrapped_and_never_spills_onto_one_more():
    """``lines``: what fills that many wrapped lines, its ``…`` included. A budget of lines ×
    width characters spilled onto one line more (word wrap leaves each line short of the width)."""
    words = "a pump of the heating circuit keeps four bar when the boiler runs at full load in winter".split()
    text = " ".join(words[i % len(words)] * (1 + i % 2) for i in range(200))  # words of 1 to 14 letters
    for width, lines in ((20, 1), (20, 3), (33, 2), (76, 3), (76, 6)):
        shown, _ = snippet(text, [], width, around=False, lines=lines)
        rows = _rows(shown, width)
        assert len(rows) == lines and shown.endswith("…") and text.startswith(shown[:-1]), (width, lines, rows)
        longer = text[: text.index(" ", len(shown)) if " " in text[len(shown) :] else len(text)] + "…"
        assert len(_rows(longer, width)) > lines  # one word more would not fit
    shown, _ = snippet(text[20:], [], 30, around=True, lines=2)  # from its first matched word, "…" before it
    assert len(_rows(shown, 30)) <= 2
    wide = "東京都の水道局は" * 10  # CJK: two cells a character, no spaces to wrap at
    shown, _ = snippet(wide, [], 10, lines=2)
    assert shown.endswith("…") and len(_rows(shown, 10)) == 2
    assert snippet("a cat on a mat", [(2, 5)], 20, lines=1) == ("a cat on a mat", [(2, 5)])  # it fits: whole
    from encodr.core.results import wrapped_end

    with pytest.raises(ValueError, match="at least one line of one cell, not 0 of 20"):
        wrapped_end("a cat", 0, 0, 20)


def test_a_markdown_code_block_shows_as_its_lines_not_as_prose():
    """A hit whose snippet starts at a fenced block (or inside one) shows the block's lines as a
    code hit does, its fence left out, up to its closing fence; prose around it stays prose."""
    from encodr.core.results import fenced_block, hit_snippet
    from encodr.index.search import Hit

    text = (
        "Keep the index in step:\n\n```bash\nencodr index notes/ --sync   # new added, gone removed\n"
        "encodr index notes/ --watch  # sync on every change\n```\n\nThen search it."
    )
    fence, inside, after = text.index("```bash"), text.index("encodr index notes/ --watch"), text.index("Then")
    assert fenced_block(text, fence) == text[text.index("encodr") : text.index("```\n\nThen")]
    assert fenced_block(text, inside).startswith("encodr index notes/ --watch")
    assert fenced_block(text, 0) is None and fenced_block(text, after) is None
    assert fenced_block(text, text.index("```\n\nThen")) is None  # the closing fence
    hit = Hit(1, 0.9, text, "notes/search.md", 1, 1, snippet=text[fence:], snippet_line=3, path="notes/search.md")
    shown, spans = hit_snippet(hit, "watch", 3, 40)
    assert shown.split("\n") == ["encodr index notes/ --sync   # new adde…", "encodr index notes/ --watch  # sync on…"]
    assert [shown[a:b] for a, b in spans] == ["watch"]
    whole, spans = hit_snippet(hit, "watch", 0, 40)  # --full: the passage's lines as written
    assert whole == text and [whole[a:b] for a, b in spans] == ["watch"]
    hit = Hit(1, 0.9, text, "notes/search.txt", 1, 1, snippet=text[fence:], snippet_line=3, path="notes/search.txt")
    assert "\n" not in hit_snippet(hit, "watch", 3, 40)[0]  # a text file is not read as Markdown: prose
    assert "\n" not in hit_snippet(hit, "watch", 0, 40)[0]  # its lines join, whole too


def test_prose_before_a_code_block_is_shown_as_prose_without_the_block_folded_into_it():
    """A hit whose words sit in prose followed by a code block showed the block's fences and
    lines folded into its sentences (```` ```python from fastapi import … ``` ````)."""
    from encodr.core.results import hit_snippet
    from encodr.index.search import Hit

    text = "Import `File` from `fastapi`.\n\n```python\nfrom fastapi import File\napp = FastAPI()\n```\n\nThe end."
    hit = Hit(1, 0.9, text, "docs/files.md", 1, 1, path="docs/files.md")  # no sentence chosen: around the first word
    shown, spans = hit_snippet(hit, "import File", 3, 60)
    assert shown == "Import `File` from `fastapi`." and "```" not in shown
    hit = Hit(1, 0.9, text, "docs/files.md", 1, 1, snippet="Import `File` from `fastapi`.", path="docs/files.md")
    assert hit_snippet(hit, "import File", 3, 60)[0] == "Import `File` from `fastapi`."
    shown, _ = hit_snippet(Hit(1, 0.9, text, "docs/files.md", 1, 1, path="docs/files.md"), "FastAPI app", 3, 60)
    assert shown.split("\n")[0] == "app = FastAPI()"  # the word is in the block: its lines
