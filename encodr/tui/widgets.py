"""The TUI's own kinds of Textual's table and text box: each changes one behaviour, said in its docstring."""

from __future__ import annotations

from rich.markup import escape
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import DataTable, Input


def literal(cell):
    """A string cell with Rich markup's brackets escaped, so it shows as it is; any other cell as it is."""
    return escape(cell) if isinstance(cell, str) else cell


class _Pinned:
    """A component's styles (:class:`~textual.css.styles.RenderStyles`) whose Rich style is read once."""

    def __init__(self, styles):
        self._styles, self.rich_style = styles, styles.rich_style

    def __getattr__(self, name: str):
        return getattr(self._styles, name)


class Table(DataTable):
    """A :class:`~textual.widgets.DataTable` whose string cells are text, not markup, and whose
    repaint reads its styles once.

    Textual reads a ``str`` cell as Rich markup, so a title such as ``[draft] plan`` or a source
    such as ``notes/[old].md`` would lose its bracketed word; here every string cell has its
    brackets escaped (:func:`rich.markup.escape`), so it shows as it is. A cell read back with
    ``get_row_at`` is that escaped string.

    DataTable asks, for every line it draws, for its own Rich style and its components' (header,
    zebra rows), and Textual computes each by walking the widget's ancestors; those styles cannot
    change while one repaint (:meth:`render_lines`) runs, so here each is computed once a repaint
    and the next repaint reads them afresh. Everything else is DataTable's.
    """

    _pass_styles: dict | None = None  # the styles read during the repaint under way; None between repaints

    def render_lines(self, crop):
        self._pass_styles = {}
        try:
            return super().render_lines(crop)
        finally:
            self._pass_styles = None

    def _once(self, key, read):
        """``read()``, kept for the rest of the repaint under way (read afresh outside one)."""
        memo = self._pass_styles
        if memo is None:
            return read()
        if key not in memo:
            memo[key] = read()
        return memo[key]

    @property
    def rich_style(self):
        return self._once("rich_style", lambda: super(Table, self).rich_style)

    @property
    def background_colors(self):
        return self._once("background_colors", lambda: super(Table, self).background_colors)

    def get_component_styles(self, *names: str):
        if self._pass_styles is None:  # outside a repaint: Textual's own object, as DataTable gives it
            return super().get_component_styles(*names)
        return self._once(names, lambda: _Pinned(super(Table, self).get_component_styles(*names)))

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
