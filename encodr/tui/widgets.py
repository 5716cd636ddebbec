"""The TUI's own kinds of Textual's table and text box: each changes one behaviour, said in its docstring."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.containers import Lines
from rich.markup import escape
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
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


class LineTable(ScrollView, can_focus=True):
    """A table of rows of one fixed height, each cell drawn line by line as given: the Search
    tab's hits.

    Textual's :class:`~textual.widgets.DataTable` lays each cell out again through Rich (its
    padding, its wrapping, its styles) whenever a new row is drawn, and a query replaces every
    row, so that work is the larger part of what the TUI adds to a search. Here a cell is a
    :class:`~rich.text.Text` (or a ``str``, shown as it is, not as markup) already cut into
    lines no wider than its column (at its newlines, or given as a list of lines:
    :func:`cell_lines`), a row's lines are joined into segments once (:func:`line_segments`),
    when the row is first drawn, and each repaint only styles them (the cursor, the zebra
    stripes) and crops them to the scroll. So unlike DataTable it neither wraps nor measures: a
    line wider than its column is cut, a cell of fewer lines than the row is padded, and columns
    keep the widths given.
    Keys, cursor and messages follow DataTable's row cursor: up, down, page up, page down, home
    and end move the cursor (:attr:`cursor_row`); Enter or a click on a row posts
    :class:`RowSelected`.
    """

    BINDINGS = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "scroll_top", "Top", show=False),
        Binding("end", "scroll_bottom", "Bottom", show=False),
    ]
    COMPONENT_CLASSES = {"line-table--header", "line-table--cursor", "line-table--even-row"}
    DEFAULT_CSS = """
    LineTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .line-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .line-table--header { background-tint: $foreground 5%; }
        }
        &:dark > .line-table--even-row { background: $surface-darken-1 40%; }
        & > .line-table--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .line-table--header { background: ansi_bright_blue; color: ansi_default; }
        & > .line-table--even-row { background: $surface-lighten-1 50%; }
        & > .line-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """
    cursor_row: Reactive[int] = Reactive(0, repaint=False)

    class RowSelected(Message):
        """Enter or a click on a row: ``cursor_row`` is its index."""

        def __init__(self, table: LineTable, cursor_row: int):
            super().__init__()
            self.table, self.cursor_row = table, cursor_row

        @property
        def control(self) -> LineTable:
            return self.table

    def __init__(self, columns: Sequence[tuple[str, int]], row_height: int = 1, **kwargs):
        """``columns``: each column's label and width in cells (padding aside: a cell has one
        blank cell each side); ``row_height``: every row's lines."""
        super().__init__(**kwargs)
        self.labels, self.widths = [label for label, _ in columns], [width for _, width in columns]
        self.row_height = row_height
        self._rows: list[list] = []
        self._strips: dict[int, list[list[Segment]]] = {}  # a row's lines, joined, drawn once (row_strips)
        self._paint: dict[str, Style] | None = None  # the styles of the repaint under way (render_lines)
        self._sync_size()

    # ── rows ───────────────────────────────────────────────────────────────
    @property
    def row_count(self) -> int:
        return len(self._rows)

    def set_rows(self, rows: Iterable[Sequence]) -> None:
        """The table's rows, in place of the ones it had; the cursor goes back to the first."""
        self._rows, self._strips = [list(cells) for cells in rows], {}
        self.cursor_row = 0
        self.scroll_to(y=0, animate=False)
        self._sync_size()
        self.refresh()

    def clear(self) -> None:
        """No rows."""
        self.set_rows([])

    def get_row_at(self, row: int) -> list:
        """Row ``row``'s cells, as given. Raises IndexError past the last row."""
        return list(self._rows[row])

    def update_cell_at(self, coordinate: tuple[int, int], value) -> None:
        """Cell (row, column) replaced by ``value``; the row is drawn again."""
        row, column = coordinate
        self._rows[row][column] = value
        self._strips.pop(row, None)
        self.refresh()

    def set_width(self, column: int, width: int) -> None:
        """Column ``column`` ``width`` cells wide; every row is drawn again."""
        if self.widths[column] != width:
            self.widths[column], self._strips = width, {}
            self._sync_size()
            self.refresh()

    @property
    def content_width(self) -> int:
        """The columns' widths and their cells' padding, in cells."""
        return sum(w + 2 * CELL_PADDING for w in self.widths)

    def _sync_size(self) -> None:
        self.virtual_size = Size(self.content_width, 1 + len(self._rows) * self.row_height)  # a header line, then the rows

    # ── drawing ────────────────────────────────────────────────────────────
    def row_strips(self, row: int) -> list[list[Segment]]:
        """Row ``row`` as :attr:`row_height` lines of unstyled segments, each the table's whole width."""
        lines = self._strips.get(row)
        if lines is None:
            console, pad = self.app.console, Segment(" " * CELL_PADDING)
            cells = [cell_lines(c, self.row_height) for c in self._rows[row]]
            lines = self._strips[row] = [
                [s for text, width in zip(line, self.widths) for s in (pad, *line_segments(text, width, console), pad)]
                for line in zip(*cells)
            ]
        return lines

    def _paints(self) -> dict[str, Style]:
        """The Rich styles a repaint applies: the widget's own, and its header's, even rows' and cursor's on it."""
        base = self.rich_style
        cursor = self.get_component_rich_style("line-table--cursor")
        return {
            "row": base,
            "header": base + self.get_component_rich_style("line-table--header"),
            "even": base + self.get_component_rich_style("line-table--even-row"),
            "cursor": base + cursor,
            "cursor over": Style.from_color(cursor.color, cursor.bgcolor),  # over the cells' own colours, as DataTable
        }

    def render_lines(self, crop):
        self._paint = self._paints()  # read once a repaint: they cannot change while it runs
        try:
            return super().render_lines(crop)
        finally:
            self._paint = None

    def render_line(self, y: int) -> Strip:
        paint = self._paint or self._paints()
        if y == 0:
            return self._styled(list(self.header_strip()), paint["header"])
        row, line = divmod(y - 1 + int(self.scroll_y), self.row_height)
        if row >= len(self._rows):
            return Strip.blank(self.size.width, paint["row"])
        if row == self.cursor_row:
            return self._styled(self.row_strips(row)[line], paint["cursor"], paint["cursor over"])
        return self._styled(self.row_strips(row)[line], paint["even"] if row % 2 == 0 else paint["row"])

    def header_strip(self) -> Strip:
        """The columns' labels, cut to their widths, as one unstyled strip."""
        pad = " " * CELL_PADDING
        return Strip([Segment(pad + label[:w].ljust(w) + pad) for label, w in zip(self.labels, self.widths)])

    def _styled(self, segments: list[Segment], style: Style, over: Style | None = None) -> Strip:
        """A line's ``segments`` cropped to the scroll, ``style`` under their own styles (``over``
        above them), filled to the width: what ``Segment.apply_style`` gives, one sum a segment."""
        x, width, length = int(self.scroll_x), self.size.width, self.content_width
        if x or length > width:
            strip = Strip(segments, length).crop(x, x + width)
            segments, length = list(strip), strip.cell_length
        summed: dict[int, Style] = {}  # a line's few styles, each summed once (a Style hashes in Python; its id in C)
        styled = []
        for text, own, _ in segments:
            paint = summed.get(id(own))
            if paint is None:
                paint = summed[id(own)] = style + own if over is None else style + own + over
            styled.append(Segment(text, paint))
        if length < width:
            styled.append(Segment(" " * (width - length), style))
        return Strip(styled, width)

    # ── cursor ─────────────────────────────────────────────────────────────
    def watch_cursor_row(self, old: int, new: int) -> None:
        for row in (old, new):
            self.refresh(Region(0, 1 + row * self.row_height - int(self.scroll_y), self.size.width, self.row_height))
        self.scroll_to_row(new)

    def move_cursor(self, row: int) -> None:
        """The cursor on ``row``, kept within the rows."""
        self.cursor_row = max(0, min(row, len(self._rows) - 1))

    def scroll_to_row(self, row: int) -> None:
        """Scrolled so that ``row`` shows below the header."""
        top, shown = row * self.row_height, max(self.row_height, self.size.height - 1)
        if top < self.scroll_y:
            self.scroll_to(y=top, animate=False)
        elif top + self.row_height > self.scroll_y + shown:
            self.scroll_to(y=top + self.row_height - shown, animate=False)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - max(1, (self.size.height - 1) // self.row_height))

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + max(1, (self.size.height - 1) // self.row_height))

    def action_scroll_top(self) -> None:
        self.move_cursor(0)

    def action_scroll_bottom(self) -> None:
        self.move_cursor(len(self._rows) - 1)

    def action_select_cursor(self) -> None:
        if self._rows:
            self.post_message(self.RowSelected(self, self.cursor_row))

    def on_click(self, event) -> None:
        if event.y < 1:
            return
        row = (event.y - 1 + int(self.scroll_y)) // self.row_height
        if row < len(self._rows):
            self.move_cursor(row)
            self.post_message(self.RowSelected(self, row))


CELL_PADDING = 1  # blank cells each side of a LineTable cell, as DataTable's cell_padding


def cell_lines(cell, height: int) -> list[Text]:
    """A :class:`LineTable` cell as ``height`` lines of Text: a list of lines (each a Text or a
    ``str``; or Rich's ``Lines``) as they are; a Text cut at its newlines, and a ``str`` as a Text
    of plain text (not markup); past its last line, empty lines. A tab is drawn as spaces, as Rich
    draws it."""
    if isinstance(cell, (list, tuple, Lines)):
        lines = [line if isinstance(line, Text) else Text(str(line)) for line in cell[:height]]
    else:
        lines = (cell if isinstance(cell, Text) else Text(str(cell))).split("\n", allow_blank=True)[:height]
    lines = [_expanded(line) if "\t" in line.plain else line for line in lines]
    return [*lines, *(Text() for _ in range(height - len(lines)))]


def _expanded(line: Text) -> Text:
    """A copy of ``line`` with its tabs expanded to spaces."""
    line = line.copy()
    line.expand_tabs()
    return line


def line_segments(line: Text, width: int, console) -> list[Segment]:
    """One line of a cell as ``Text.render`` draws it, cut or padded to ``width`` cells as
    ``Segment.adjust_line_length`` does: a segment a run between the starts and ends of its
    spans, each styled by the line's style plus its span's. Rich's render keeps a stack of the
    spans open at each offset and sorts and combines it at every boundary; a cell's line (a hit's
    snippet with its matches, a location line) has spans that do not overlap, and then each run
    has at most one span over the line's style, so here each run is one slice and one sum. Lines
    whose spans overlap are left to Rich's render."""
    plain, null = line.plain, Style.null()
    spans = sorted((s for s in line.spans if s.end > s.start), key=lambda s: s.start)
    if any(a.end > b.start for a, b in zip(spans, spans[1:])):
        return Segment.adjust_line_length(list(line.render(console)), width, pad=True)
    if not line.spans:  # as Rich draws it: one segment, unstyled
        segments = [Segment(plain)]
    else:
        base, segments, at = console.get_style(line.style, default=null), [], 0
        for span in spans:
            start, end = min(span.start, len(plain)), min(span.end, len(plain))
            if start > at:
                segments.append(Segment(plain[at:start], base))
            if end > start:
                segments.append(Segment(plain[start:end], base + console.get_style(span.style, default=null)))
            at = max(at, end)
        if at < len(plain):
            segments.append(Segment(plain[at:], base))
    length = cell_len(plain)
    if length == width:
        return segments
    if length < width:
        return [*segments, Segment(" " * (width - length))]
    return Segment.adjust_line_length(segments, width, pad=True)
