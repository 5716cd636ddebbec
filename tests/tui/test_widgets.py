"""The TUI's own kinds of Textual widgets: each draws what Textual's own would draw."""

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import DataTable, Input

from encodr.tui.widgets import Table


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
