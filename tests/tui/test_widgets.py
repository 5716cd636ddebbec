"""The TUI's own kinds of Textual widgets: each draws what Textual's own would draw."""

from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import DataTable, Input

from encodr.tui.widgets import LineTable, Table


class One(App):
    """A text box, then one table of the kind given, with three rows."""

    def __init__(self, kind: type[DataTable]):
        super().__init__()
        self.kind = kind

    def compose(self) -> ComposeResult:
        yield Input()
        yield self.kind(zebra_stripes=True, cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("rank", "text")
        for rank, text in (("1", "plan"), ("2", "notes"), ("3", "more notes")):
            table.add_row(rank, text)


def lines(table: DataTable) -> list:
    """The table's whole repaint, each line as its segments (text and Rich style)."""
    return [list(strip) for strip in table.render_lines(Region(0, 0, table.size.width, table.size.height))]


async def repaints(kind: type[DataTable]) -> list[list]:
    """The table's repaint as mounted, after its background changes, and after it takes the focus."""
    app = One(kind)
    seen = []
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(DataTable)
        await pilot.pause()
        seen.append(lines(table))
        table.styles.background = "red"
        await pilot.pause()
        seen.append(lines(table))
        table.focus()  # the focus changes the cursor's component style
        await pilot.pause()
        seen.append(lines(table))
    return seen


async def test_table_repaints_as_datatable_does_and_follows_style_changes():
    """The styles one repaint reads once are read again by the next: each change between
    repaints shows in Table's next repaint as it does in DataTable's."""
    ours, theirs = await repaints(Table), await repaints(DataTable)
    assert ours == theirs and ours[0] != ours[1] != ours[2]


class Hits(App):
    """A LineTable of rows two lines high, beside a DataTable of the same rows one line high."""

    ROWS = [(f"{i}", Text(f"hit number {i}\nnotes/[old].md:{i}"), "") for i in range(1, 8)]

    def compose(self) -> ComposeResult:
        yield LineTable([("rank", 4), ("hit", 20), ("grade", 5)], row_height=2)
        yield DataTable(zebra_stripes=True, cursor_type="row")

    def on_mount(self) -> None:
        self.query_one(LineTable).set_rows(self.ROWS)
        theirs = self.query_one(DataTable)
        for label, width in (("rank", 4), ("hit", 20), ("grade", 5)):
            theirs.add_column(label, width=width)
        for rank, hit, grade in self.ROWS:
            theirs.add_row(rank, hit.plain.split("\n")[0], grade)
        self.selected = []

    def on_line_table_row_selected(self, event: LineTable.RowSelected) -> None:
        self.selected.append(event.cursor_row)


def texts(table) -> list[str]:
    return ["".join(s.text for s in line) for line in lines(table)]


def background(table, y: int):
    """The background colour table line ``y`` is drawn on (its first cell's)."""
    return lines(table)[y][0].style.bgcolor


async def test_line_table_draws_its_cells_as_given_line_by_line():
    app = Hits()
    async with app.run_test(size=(60, 24)) as pilot:
        table = app.query_one(LineTable)
        table.styles.height = 7  # the header and three rows: the rest scroll
        await pilot.pause()
        drawn = texts(table)
        cells = lambda *texts: "".join(f" {t.ljust(w)} " for t, w in zip(texts, (4, 20, 5)))  # noqa: E731
        assert drawn[0].startswith(cells("rank", "hit", "grade"))  # one blank cell each side of a cell
        assert drawn[1].startswith(cells("1", "hit number 1", "")) and drawn[2].startswith(cells("", "notes/[old].md:1", ""))
        assert len({len(line) for line in drawn}) == 1  # every line the table's width
        table.update_cell_at((0, 1), Text("a hit whose text is wider than its column\nx.md:1"))
        table.update_cell_at((1, 2), "✓ 1")
        await pilot.pause()
        drawn = texts(table)
        assert drawn[1].startswith(cells("1", "a hit whose text is ", ""))  # cut at its column's width
        assert drawn[3].startswith(cells("2", "hit number 2", "✓ 1"))
        assert table.get_row_at(1)[2] == "✓ 1"


async def test_line_table_cursor_moves_scrolls_and_selects_as_datatable_rows_do():
    app = Hits()
    async with app.run_test(size=(60, 24)) as pilot:
        table, theirs = app.query_one(LineTable), app.query_one(DataTable)
        table.styles.height = 7
        await pilot.pause()
        seen = {}
        for focused in (table, theirs):  # the cursor's, an odd row's and an even row's backgrounds, as DataTable's
            focused.focus()
            await pilot.pause()
            seen[focused] = [background(table, 1), background(table, 3), background(table, 5)]
            seen[focused] += [background(theirs, 1), background(theirs, 2), background(theirs, 3)]
        assert seen[table][:3] == seen[theirs][3:] and seen[theirs][:3] == seen[table][3:]
        assert seen[table][0] != seen[theirs][0]  # the cursor's style follows the focus: read afresh each repaint
        assert len(set(seen[table][:3])) == 3
        table.focus()
        for key in ("down", "down", "down", "up", "pagedown"):
            await pilot.press(key)
        await pilot.pause()
        assert table.cursor_row == 5 and table.scroll_y == 5 * 2 + 2 - 6  # row 5's two lines at the bottom
        assert texts(table)[-1].startswith("       notes/[old].md:6 ")  # the last row's cells, its last line
        await pilot.press("end", "enter", "home")
        await pilot.pause()
        assert app.selected == [6] and table.cursor_row == 0 and table.scroll_y == 0
        await pilot.click(LineTable, offset=(10, 4))  # the second row's second line
        assert app.selected == [6, 1] and table.cursor_row == 1
        table.clear()
        await pilot.press("enter")
        assert table.row_count == 0 and app.selected == [6, 1] and texts(table)[1].strip() == ""


def test_a_cells_line_is_drawn_as_rich_draws_it():
    """line_segments gives what Rich's own render and line fitting give, segment for segment:
    spans at the edges, past the end, empty, on a styled line, overlapping (left to Rich), wide
    characters, lines cut and padded."""
    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style

    from encodr.tui.widgets import line_segments

    def styled(text: str, style: str = "", *spans) -> Text:
        line = Text(text, style=style)
        for span in spans:
            line.stylize(*span)
        return line

    lines = [
        Text(""),
        Text("plain words"),
        Text("a styled line, no spans", style="dim"),
        styled("a bold word and an italic one", "", ("bold yellow", 2, 6), ("italic", 19, 25)),
        styled("span at the end", "", ("bold", 12, 15)),
        styled("span past the end", "", ("bold", 5, 40)),
        styled("an empty span", "", ("bold", 3, 3)),
        styled("styled under a span", "dim", (Style(bold=True), 0, 6)),
        styled("overlapping spans here", "blue", ("bold", 0, 9), ("red", 5, 15)),
        styled("日本語のテキスト and more", "", ("bold", 0, 3)),
    ]
    console = Console(width=100)
    for width in (4, 12, 25, 40):
        for line in lines:
            assert line_segments(line, width, console) == Segment.adjust_line_length(
                list(line.render(console)), width, pad=True
            ), (line, width)


async def test_line_table_takes_a_cell_as_its_lines():
    """A cell given as a list of lines (Text or str) draws as the same Text joined by newlines."""
    app = Hits()
    async with app.run_test(size=(60, 24)) as pilot:
        table = app.query_one(LineTable)
        await pilot.pause()
        joined = texts(table)
        table.set_rows([(rank, hit.split("\n"), grade) for rank, hit, grade in Hits.ROWS])
        await pilot.pause()
        assert texts(table) == joined and table.get_row_at(0)[1][1].plain == "notes/[old].md:1"
