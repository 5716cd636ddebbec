"""A hit as a table shows it: a snippet around its matched words, as wide as asked, spans moved with it."""

from encodr.core.results import snippet


def test_a_snippet_is_cut_around_the_first_match_and_keeps_its_highlights():
    text = "# Pump manual\n\n" + "filler words here " * 20 + "the pump pressure must stay below 4 bar " + "more filler text " * 20
    start = text.index("pressure")
    shown, spans = snippet(text, [(start, start + len("pressure"))], 60)
    assert len(shown) <= 60 and shown.startswith("…") and shown.endswith("…") and "\n" not in shown
    assert [shown[s:e] for s, e in spans] == ["pressure"]


def test_a_short_text_or_width_zero_is_whole():
    assert snippet("a cat\non a mat", [(2, 5)], 0) == ("a cat on a mat", [(2, 5)])
    assert snippet("a cat", [(2, 5)], 60) == ("a cat", [(2, 5)])
