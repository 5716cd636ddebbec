"""The TUI's own kinds of Textual's table and text box: each changes one behaviour, said in its docstring."""

from __future__ import annotations

from rich.markup import escape
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import DataTable, Input


def literal(cell):
    """A string cell with Rich markup's brackets escaped, so it shows as it is; any other cell as it is."""
    return escape(cell) if isinstance(cell, str) else cell


class Table(DataTable):
    """A :class:`~textual.widgets.DataTable` whose string cells are text, not markup.

    Textual reads a ``str`` cell as Rich markup, so a title such as ``[draft] plan`` or a source
    such as ``notes/[old].md`` would lose its bracketed word; here every string cell has its
    brackets escaped (:func:`rich.markup.escape`), so it shows as it is. A cell read back with
    ``get_row_at`` is that escaped string. Everything else is DataTable's.
    """

    def add_row(self, *cells, **kwargs):
        return super().add_row(*map(literal, cells), **kwargs)

    def update_cell_at(self, coordinate, value, *, update_width: bool = False) -> None:
        super().update_cell_at(coordinate, literal(value), update_width=update_width)


class TextBox(Input):
    """An :class:`~textual.widgets.Input` whose typing does not lay the whole screen out again.

    Textual declares a widget's ``virtual_size`` as a reactive that asks for a layout pass of the
    screen whenever it changes, and an Input's virtual size follows the width of its text, so every
    keystroke in a plain Input lays out every widget on the screen: on the Search tab that pass
    runs beside each query's search and competes with it for the two cores. A box's own size
    depends on its text only when its width or height is ``auto``, and then Input asks for the
    layout itself (``Input._watch_value``); so here the virtual size is declared without it.
    Scrolling along a long text still follows the cursor (the virtual size is still kept).
    """

    virtual_size = Reactive(Size(0, 0), layout=False)
