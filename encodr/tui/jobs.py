"""The Index and Eval panes: forms over :func:`encodr.index.build` (the core of ``encodr
index``) and :func:`encodr.evaluation.run` (the core of ``encodr eval``), run in worker
threads, with a progress bar, a results table and a bar chart."""

from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, DataTable, Input, Label, ProgressBar, Select, Static
from textual_plotext import PlotextPlot

from ..errors import EncodrError


class IndexPane(Vertical):
    """Build an index from files, or append to one, then open it in Search (key ``o``)."""

    BINDINGS = [Binding("o", "open_search", "Open in Search")]
    DEFAULT_CSS = """
    IndexPane Input, IndexPane Select { width: 80; }
    IndexPane #index-type, IndexPane #index-backend { width: 24; }
    IndexPane .row { height: 3; }
    IndexPane #index-result { height: auto; padding: 1 0; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built: Path | None = None
        self.meta: dict | None = None

    def compose(self) -> ComposeResult:
        from ..index.store import INDEX_TYPES
        from ..models import BACKENDS

        yield Label("corpus files (space-separated): one text a line, or TSV with text, id, lang")
        yield Input(placeholder="corpus.txt", id="index-files")
        yield Label("model (alias, folder or hub id; ignored with append)")
        yield Input("minilm", id="index-model")
        yield Label("index: a folder, or a name in the workspace")
        yield Input(placeholder="my-index", id="index-out")
        with Horizontal(classes="row"):
            yield Select([(t, t) for t in INDEX_TYPES], value="auto", allow_blank=False, id="index-type")
            yield Select([(b, b) for b in BACKENDS], value="torch", allow_blank=False, id="index-backend")
            yield Checkbox("--pcr", id="index-pcr")
            yield Checkbox("append (--add)", id="index-add")
            yield Checkbox("overwrite", id="index-overwrite")
        with Horizontal(classes="row"):
            yield Button("Build", id="index-build", variant="success")
            yield Button("Open in Search (o)", id="index-open", disabled=True)
        yield ProgressBar(id="index-bar")
        yield Static("", id="index-result")

    @on(Button.Pressed, "#index-build")
    def build_pressed(self) -> None:
        files = self.query_one("#index-files", Input).value.split()
        out = self.query_one("#index-out", Input).value.strip()
        if not out:
            self.query_one("#index-result", Static).update("[red]error:[/] choose an index folder or name")
            return
        add = self.query_one("#index-add", Checkbox).value
        if not add and len(Path(out).parts) == 1 and not Path(out).exists():
            from ..paths import home

            out = str(home() / "indexes" / out)  # a bare name: the workspace, as encodr index does
        self.query_one("#index-build", Button).disabled = True
        self.query_one("#index-result", Static).update(f"indexing → {out} …")
        self.build(files, out, add)

    @work(thread=True, exclusive=True, group="index")
    def build(self, files: list[str], out: str, add: bool) -> None:
        from ..index import build

        model = self.query_one("#index-model", Input).value.strip() or None
        kind = str(self.query_one("#index-type", Select).value)
        pcr = self.query_one("#index-pcr", Checkbox).value
        overwrite = self.query_one("#index-overwrite", Checkbox).value
        backend = str(self.query_one("#index-backend", Select).value)
        try:
            meta = build(files, None if add else model, out, kind, add, overwrite, pcr, progress=self.report, backend=backend)
        except EncodrError as exc:
            self.app.call_from_thread(self.finished, None, f"error: {exc}")
            return
        self.app.call_from_thread(self.finished, meta, None)

    def report(self, event) -> None:
        self.app.call_from_thread(self.query_one("#index-bar", ProgressBar).update, total=event.total, progress=event.completed)

    def finished(self, meta: dict | None, message: str | None) -> None:
        self.query_one("#index-build", Button).disabled = False
        if meta is None:
            self.query_one("#index-result", Static).update(f"[red]{message}[/]")
            return
        self.meta, self.built = meta, Path(meta["path"])
        from ..index.build import SUMMARY

        self.query_one("#index-result", Static).update("\n".join(f"{k}: {meta.get(k)}" for k in SUMMARY) + "\n\npress o to search it")
        self.query_one("#index-open", Button).disabled = False

    @on(Button.Pressed, "#index-open")
    def action_open_search(self) -> None:
        if self.built is not None:
            self.app.open_index(self.built)
            self.app.action_show_tab("search")


class EvalPane(Vertical):
    """Run an evaluation suite on a model, optionally against a second one: a table and a bar chart."""

    DEFAULT_CSS = """
    EvalPane Input, EvalPane Select { width: 80; }
    EvalPane #eval-backend { width: 24; }
    EvalPane .row { height: 3; }
    EvalPane #eval-table { height: auto; max-height: 14; }
    EvalPane #eval-chart { height: 1fr; min-height: 12; }
    """

    def compose(self) -> ComposeResult:
        from ..evaluation.tasks import PRIMARY
        from ..models import BACKENDS

        yield Label("suite")
        yield Select([(s, s) for s in PRIMARY], value="sts", allow_blank=False, id="eval-suite")
        yield Label("model")
        yield Input("minilm", id="eval-model")
        yield Label("compare with (optional)")
        yield Input(placeholder="a second model", id="eval-compare")
        yield Label("data (optional; space-separated files or bundled names, else the suite's bundled sets)")
        yield Input(placeholder="", id="eval-data")
        with Horizontal(classes="row"):
            yield Select([(b, b) for b in BACKENDS], value="torch", allow_blank=False, id="eval-backend")
            yield Checkbox("--pcr (bitext)", id="eval-pcr")
            yield Button("Evaluate", id="eval-run", variant="success")
        yield Static("", id="eval-status")
        yield DataTable(id="eval-table", zebra_stripes=True)
        yield PlotextPlot(id="eval-chart")

    def set_model(self, model: str) -> None:
        self.query_one("#eval-model", Input).value = model

    @on(Button.Pressed, "#eval-run")
    def run_pressed(self) -> None:
        from .. import evaluation

        suite = str(self.query_one("#eval-suite", Select).value)
        data = self.query_one("#eval-data", Input).value.split() or None
        try:
            evaluation.tasks_for(suite, data)  # the CLI's check, before any model loads
        except EncodrError as exc:
            self.query_one("#eval-status", Static).update(f"[red]error:[/] {exc}")
            return
        models = [self.query_one("#eval-model", Input).value.strip(), self.query_one("#eval-compare", Input).value.strip()]
        self.query_one("#eval-run", Button).disabled = True
        self.query_one("#eval-status", Static).update(f"evaluating {' and '.join(m for m in models if m)} on {suite} …")
        self.evaluate(suite, [m for m in models if m], data)

    @work(thread=True, exclusive=True, group="eval")
    def evaluate(self, suite: str, models: list[str], data: list[str] | None) -> None:
        from .. import evaluation
        from ..models import load_encoder

        options = {"pcr": "uncentred"} if suite == "bitext" and self.query_one("#eval-pcr", Checkbox).value else {}
        backend = str(self.query_one("#eval-backend", Select).value)  # for the model; the comparison runs on torch, as in the CLI
        try:
            reports = [evaluation.run(suite, load_encoder(m, backend=backend if i == 0 else "torch"), data, **options) for i, m in enumerate(models)]
        except EncodrError as exc:
            self.app.call_from_thread(self.finished, None, f"error: {exc}")
            return
        self.app.call_from_thread(self.finished, reports, None)

    def finished(self, reports, message: str | None) -> None:
        self.query_one("#eval-run", Button).disabled = False
        if reports is None:
            self.query_one("#eval-status", Static).update(f"[red]{message}[/]")
            return
        self.query_one("#eval-status", Static).update("done")
        table = self.query_one("#eval-table", DataTable)
        table.clear(columns=True)
        table.add_columns("dataset", "metric", "n", *[r.model for r in reports], *(["Δ"] if len(reports) == 2 else []))
        for i, score in enumerate(reports[0].scores):
            values = [r.scores[i].value for r in reports]
            table.add_row(score.dataset, score.metric, str(score.n), *[f"{v:.2f}" for v in values],
                          *([f"{values[0] - values[1]:+.2f}"] if len(values) == 2 else []))  # fmt: skip
        chart = self.query_one("#eval-chart", PlotextPlot)
        plt = chart.plt
        plt.clear_data()
        plt.clear_figure()
        from ..evaluation.tasks import PRIMARY

        metric = PRIMARY[reports[0].suite]
        names = [s.dataset for s in reports[0].scores if s.metric == metric]
        series = [[s.value for s in r.scores if s.metric == metric] for r in reports]
        if len(series) == 1:
            plt.bar(names, series[0])
        else:
            plt.multiple_bar(names, series, labels=[r.model for r in reports])
        plt.title(f"{reports[0].suite}: {metric}")
        chart.refresh()
