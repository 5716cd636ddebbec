"""The Runs pane: the registry's runs (:func:`encodr.registry.runs`); for the selected one,
its details, loss curve, dev curve and recipe (as ``encodr runs show``), and two actions:
index with this model, evaluate this model."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Static
from textual_plotext import PlotextPlot

from .widgets import Table


class RunsPane(Vertical):
    """The Runs tab (see the module docstring)."""

    DEFAULT_CSS = """
    RunsPane #runs-table { height: 10; }
    RunsPane #run-detail { width: 60; height: 1fr; }
    RunsPane #run-curves { width: 1fr; height: 1fr; }
    RunsPane #run-loss, RunsPane #run-dev { height: 1fr; }
    RunsPane .row { height: 3; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.selected: dict | None = None

    def compose(self) -> ComposeResult:
        yield Table(id="runs-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(classes="row"):
            yield Button("Index with this model", id="run-index", disabled=True)
            yield Button("Evaluate this model", id="run-eval", disabled=True)
            yield Button("Refresh", id="runs-refresh")
        with Horizontal():
            yield Static("select a run", id="run-detail")
            with Vertical(id="run-curves"):
                yield PlotextPlot(id="run-loss")
                yield PlotextPlot(id="run-dev")

    def on_mount(self) -> None:
        self.refresh_runs()

    @on(Button.Pressed, "#runs-refresh")
    def refresh_runs(self) -> None:
        """List the registry's runs again, newest first; the highlighted run stays highlighted
        (the newest one when none was)."""
        from ..core import dispatch
        from ..core.requests import RunsRequest

        table = self.query_one("#runs-table", DataTable)
        table.clear(columns=True)
        table.add_columns("id", "created", "status", "recipe", "model", "data", "out")
        for row in dispatch.call(RunsRequest, {"limit": 100}, "tui").rows:
            table.add_row(
                str(row["id"]),
                str(row["created"])[:16],
                row.get("status") or "done",
                str(row.get("recipe_name") or ""),
                str(row.get("model", "")),
                str(row.get("data", "")),
                str(row.get("out", "")),
                key=str(row["id"]),
            )
        if table.row_count:
            keep = str(self.selected["id"]) if self.selected else None
            row = table.get_row_index(keep) if keep is not None and keep in table.rows else 0
            table.move_cursor(row=row)
            self.show_run(int(table.coordinate_to_cell_key((row, 0)).row_key.value))

    @on(DataTable.RowHighlighted, "#runs-table")
    @on(DataTable.RowSelected, "#runs-table")
    def run_picked(self, event) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self.show_run(int(event.row_key.value))

    def show_run(self, run_id: int) -> None:
        """The run's details, recipe, loss curve and dev curve (what ``encodr runs show`` prints and plots)."""
        from ..core import dispatch
        from ..core.requests import RunRequest

        row = dispatch.call(RunRequest, {"run_id": run_id}, "tui").record
        self.selected = row
        metrics = row.get("metrics") or {}
        lines = [
            f"run {row['id']} · {row.get('status') or 'done'}",
            f"model: {row.get('model')}",
            f"recipe: {row.get('recipe_name')}",
            f"data: {row.get('data')}",
            f"out: {row.get('out')}",
            f"seconds: {row.get('duration_s')}",
        ]
        lines += [f"{k}: {v}" for k, v in metrics.items() if not isinstance(v, (dict, list))]
        lines += ["", "recipe:"] + [f"  {k}: {v}" for k, v in (row.get("recipe") or {}).items()]
        self.query_one("#run-detail", Static).update("\n".join(lines))
        log = row["loss_log"]
        for plot_id, xs, ys, title in (
            ("#run-loss", [r["step"] for r in log], [r["loss"] for r in log], "training loss"),
            (
                "#run-dev",
                [p["step"] for p in metrics.get("dev_curve") or []],
                [p["dev"] for p in metrics.get("dev_curve") or []],
                f"dev {metrics.get('dev_metric', '')} ({metrics.get('dev_set', 'none')})",
            ),
        ):
            plot = self.query_one(plot_id, PlotextPlot)
            plot.plt.clear_data()
            plot.plt.title(title if ys else f"{title}: none")
            if ys:
                plot.plt.plot(xs, ys, marker="braille")
            plot.refresh()
        usable = row.get("status") != "cancelled"
        self.query_one("#run-index", Button).disabled = not usable
        self.query_one("#run-eval", Button).disabled = not usable

    @on(Button.Pressed, "#run-index")
    def index_with(self) -> None:
        if self.selected:
            self.app.query_one("#index-model").value = str(self.selected["out"])
            self.app.action_show_tab("index")

    @on(Button.Pressed, "#run-eval")
    def evaluate_with(self) -> None:
        if self.selected:
            self.app.query_one("#eval-model").value = str(self.selected["out"])
            self.app.action_show_tab("eval")
