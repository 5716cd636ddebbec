"""reStructuredText as the Python ecosystem writes its documentation (Sphinx, docutils): a file's
title and its sections, from docutils' own parse.

The text is kept as written, so a passage's lines are the file's: docutils finds the section
titles (whatever adornment characters a file uses, with or without an overline, in the order
they first appear, as its parser ranks them) and each section runs from its title's first line to
the next title. Sphinx's directives and roles (``.. autoclass::``, ``:func:``) are not known to
plain docutils; they are left as text and their errors are not reported.
"""

from __future__ import annotations

RST_SUFFIXES = (".rst", ".rest")
SETTINGS = {
    "report_level": 5,  # nothing reported: Sphinx's directives are unknown here, and no reader needs to hear of it
    "halt_level": 5,
    "warning_stream": False,
    "file_insertion_enabled": False,  # an include names a file: never read one from a document's text
    "raw_enabled": False,
    "doctitle_xform": False,  # the top title stays a section, so its line is known
    "sectsubtitle_xform": False,
}
SEPARATOR = " › "


def rst_sections(text: str) -> tuple[str | None, list[tuple[int, int, str]]]:
    """The title of a reStructuredText text and its sections.

    Args:
        text: the file's text.

    Returns:
        (its first section's title, or None; (start, end, heading path) character ranges that
        cover ``text`` in order: the text before the first title with an empty path, then one
        from each title's first line, its overline included, to the next, the path of titles
        above it joined by " › " without the document's title).
    """
    from docutils import nodes
    from docutils.core import publish_doctree

    tree = publish_doctree(text, settings_overrides=SETTINGS)
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    heads: list[tuple[int, list[str]]] = []

    def walk(node, path: list[str]) -> None:
        for child in node.children:
            if isinstance(child, nodes.section) and child.children and isinstance(child[0], nodes.title):
                title = " ".join(child[0].astext().split())
                line = _title_line(lines, child[0].line)
                if line is not None:
                    heads.append((starts[line], [*path, title]))
                walk(child, [*path, title])

    walk(tree, [])
    heads.sort(key=lambda h: h[0])
    title = heads[0][1][0] if heads else None
    cuts = [(0, "")] if not heads or heads[0][0] > 0 else []
    for offset, path in heads:
        shown = path[1:] if title is not None and path[0] == title else path
        cuts.append((offset, SEPARATOR.join(shown)))
    return title, [(start, cuts[i + 1][0] if i + 1 < len(cuts) else len(text), name) for i, (start, name) in enumerate(cuts)]


def _title_line(lines: list[str], underline: int | None) -> int | None:
    """The 0-based line where a title whose underline is 1-based line ``underline`` starts: its
    text's line, or its overline's where the line above is one (the same character repeated)."""
    if underline is None or underline < 2:
        return None
    at = underline - 2  # the title's text
    above = lines[at - 1].strip() if at >= 1 else ""
    mark = lines[underline - 1].strip() if underline - 1 < len(lines) else ""
    if above and mark and len(set(above)) == 1 and above[0] == mark[0] and not above[0].isalnum():
        return at - 1
    return at
