"""reStructuredText read as Sphinx projects write it: a document per file, sections from its
titles (any adornment, with or without an overline), lines as in the file."""

from __future__ import annotations

from encodr.data.files import expand, iter_records, read_document_meta
from encodr.data.rst import rst_sections

PAGE = """\
==========
Quickstart
==========

.. currentmodule:: flask

Eager to get started?

Routing
-------

Use the :meth:`~Flask.route` decorator to bind a function to a URL.

Variable Rules
~~~~~~~~~~~~~~

Add variable sections to a URL with ``<name>``.

.. autoclass:: Flask
   :members:
"""


def test_a_pages_title_and_sections_come_from_its_titles_with_the_files_lines():
    title, sections = rst_sections(PAGE)
    assert title == "Quickstart"
    assert [path for _, _, path in sections] == ["", "Routing", "Routing › Variable Rules"]
    starts = [PAGE[:start].count("\n") + 1 for start, _, _ in sections]
    assert starts == [1, 9, 14]  # the overlined title from its overline, the others from their text
    assert sections[-1][1] == len(PAGE) and all(a[1] == b[0] for a, b in zip(sections, sections[1:]))
    assert rst_sections("no titles here\n") == (None, [(0, 15, "")])


def test_a_folders_rst_files_are_documents_cut_at_their_sections(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "quickstart.rst").write_text(PAGE)
    found, skipped = expand([str(docs)])
    assert found == [str(docs / "quickstart.rst")] and not skipped
    assert read_document_meta(str(docs / "quickstart.rst"))[0] == "Quickstart"
    records = list(iter_records(found[0], None, in_folder=True))
    routing = next(r for r in records if r.section == "Routing")
    assert routing.line == 9 and "bind a function to a URL" in routing.text and routing.title == "Quickstart"
    assert not any(set(r.text.strip()) <= set("=-~") for r in records)  # no adornment line is a record of its own
