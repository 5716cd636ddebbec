"""The Index and Eval panes: forms over the core's ``index`` and ``eval`` commands
(:func:`encodr.core.commands.index`, :func:`encodr.core.commands.evaluate` through :mod:`encodr.core.dispatch`; each widget's id
derived from its field: :func:`encodr.tui.forms.widget_id`), run in worker threads, with a progress bar, the result's
table and a bar chart."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, DataTable, Input, Label, ProgressBar, Select, Static
from textual_plotext import PlotextPlot

from ..core import dispatch
from ..core.fields import default
from ..core.requests import EvalRequest, IndexRequest
from ..errors import EncodrError
from .forms import choice_select, field_input, values, widget_id
from .widgets import Table, TextBox


class IndexPane(VerticalScroll):
    """Build an index from files, or append to one, then open it in Search (key ``o``). Its rows
    fit 100 columns; it scrolls where the terminal is shorter than the form. When an index opens
    in Search, the form takes that index's settings (:meth:`load`), so Sync and Build act on it."""

    BINDINGS = [Binding("o", "open_search", "Open in Search")]
    DEFAULT_CSS = """
    IndexPane Input, IndexPane Select { width: 80; }
    IndexPane #index-index-type, IndexPane #index-backend, IndexPane #index-pcr-variant, IndexPane #index-quantize { width: 22; }
    IndexPane #index-processes, IndexPane #index-engine, IndexPane #index-shards, IndexPane #index-write { width: 22; }
    IndexPane #index-lang, IndexPane #index-batch-size, IndexPane #index-address, IndexPane #index-glob { width: 30; }
    IndexPane #index-dim { width: 26; }
    IndexPane #index-max-file-size { width: 40; }
    IndexPane #index-text-field, IndexPane #index-text-column, IndexPane #index-id-column, IndexPane #index-title-column {
    width: 30; }
    IndexPane #index-meta-columns { width: 56; }
    IndexPane .row { height: 3; }
    IndexPane #index-result { height: auto; padding: 1 0; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built: Path | None = None
        self.summary: dict | None = None  # the last build's summary

    def compose(self) -> ComposeResult:
        R = IndexRequest
        yield Label("corpus: files or folders, space-separated (documents, notes, source code, CSV, JSONL)")
        yield TextBox(placeholder="corpus.txt", id=widget_id(IndexRequest, "corpus"))
        yield Label("model (alias, folder or hub id; ignored with append)")
        yield field_input(R, "model", "model")
        yield Label("index: a folder, or a name in the workspace (blank: named after the first file)")
        yield TextBox(placeholder="my-index", id=widget_id(IndexRequest, "out"))
        with Horizontal(classes="row"):
            yield choice_select(R, "index_type")
            yield choice_select(R, "quantize", "vectors")
            yield choice_select(R, "backend")
            yield choice_select(R, "pcr_variant", "PCR variant")
        with Horizontal(classes="row"):
            yield Checkbox("--pcr", id=widget_id(IndexRequest, "pcr"))
            yield Checkbox("IVF lists on disk", id=widget_id(IndexRequest, "on_disk"))
            yield choice_select(R, "write", "write")
        with Horizontal(classes="row"):
            yield field_input(R, "lang", "language, blank: detected")
            yield field_input(R, "batch_size", "batch size, blank: auto")
            yield field_input(R, "dim", "dimensions, blank: all")
        with Horizontal(classes="row"):
            yield field_input(R, "processes", "processes")
            yield choice_select(R, "engine", "engine")
            yield TextBox(placeholder="Ray address (blank: local)", id=widget_id(IndexRequest, "address"))
        with Horizontal(classes="row"):
            yield TextBox(placeholder="in folders, only: *.pdf", id=widget_id(IndexRequest, "glob"))
            yield Checkbox("whole texts (no passages)", id=widget_id(IndexRequest, "whole"))
            yield field_input(R, "shards", "shards, blank: one index")
        with Horizontal(classes="row"):
            yield Checkbox("ignored files too", id=widget_id(IndexRequest, "no_ignore"))
            yield field_input(R, "max_file_size", "max file bytes")
            yield Checkbox(
                "code: fast stage first", value=default(IndexRequest, "fast_stage"), id=widget_id(IndexRequest, "fast_stage")
            )
        with Horizontal(classes="row"):
            yield Checkbox("text files: blank-line blocks", id=widget_id(IndexRequest, "documents"))
            yield Checkbox("text files in folders: a text a line", id=widget_id(IndexRequest, "records"))
        with Horizontal(classes="row"):
            yield field_input(R, "text_field", "JSONL text field")
            yield field_input(R, "text_column", "CSV text column")
            yield TextBox(placeholder="CSV id column (id)", id=widget_id(IndexRequest, "id_column"))
        with Horizontal(classes="row"):
            yield TextBox(placeholder="CSV title column (title)", id=widget_id(IndexRequest, "title_column"))
            yield TextBox(placeholder="CSV metadata columns, for filters", id=widget_id(IndexRequest, "meta_columns"))
        with Horizontal(classes="row"):
            yield Button("Build", id="index-build", variant="success")
            yield Button("Sync", id="index-sync-now", variant="primary")
            yield Button("Open in Search (o)", id="index-open", disabled=True)
        yield ProgressBar(id="index-bar")
        yield Static("", id="index-result")

    def load(self, path: Path, meta) -> None:
        """The form set to an open index's settings (its :class:`~encodr.index.meta.IndexMeta`):
        its folders and files, model, path, index type, vectors, backend, PCR and IVF-on-disk, so
        that Sync and Build (append) act on it as it was built."""
        self.query_one("#index-corpus", Input).value = " ".join(meta.sources)
        self.query_one("#index-model", Input).value = meta.model
        self.query_one("#index-out", Input).value = str(path)
        from ..core.fields import rendering

        for key, value in (
            ("index_type", meta.index_type),
            ("quantize", meta.quantize),
            ("backend", meta.backend),
            ("pcr_variant", meta.pcr_variant),
        ):
            if value in rendering(IndexRequest, key).choices:
                self.query_one(f"#{widget_id(IndexRequest, key)}", Select).value = value
        self.query_one("#index-pcr", Checkbox).value = meta.pcr
        self.query_one("#index-on-disk", Checkbox).value = meta.on_disk

    @on(Button.Pressed, "#index-sync-now")
    def sync_pressed(self) -> None:
        """Bring the index in step with its files: the form's request, written as a sync."""
        self.build_pressed(sync=True)

    @on(Button.Pressed, "#index-build")
    def build_pressed(self, sync: bool = False) -> None:
        try:
            given = values(self, IndexRequest)
            if sync:
                given.update(write="sync")
            request = dispatch.prepare(IndexRequest, given, "tui")
        except EncodrError as exc:
            self.query_one("#index-result", Static).update(f"[red]error:[/] {escape(str(exc))}")
            return
        self.query_one("#index-build", Button).disabled = True
        self.query_one("#index-result", Static).update(
            f"{'syncing' if request.write_mode() == 'sync' else 'indexing'} → {request.target()} …"
        )
        self.build(request)

    @work(thread=True, exclusive=True, group="index")
    def build(self, request: IndexRequest) -> None:
        try:
            result = dispatch.run(request, "tui", progress=self.report)
        except EncodrError as exc:
            self.app.call_from_thread(self.finished, None, f"error: {exc}")
            return
        self.app.call_from_thread(self.finished, result, None)

    def report(self, event) -> None:
        self.app.call_from_thread(self.query_one("#index-bar", ProgressBar).update, total=event.total, progress=event.completed)

    def finished(self, result, message: str | None) -> None:
        self.query_one("#index-build", Button).disabled = False
        if result is None:
            self.query_one("#index-result", Static).update(f"[red]{escape(str(message))}[/]")
            return
        self.summary, self.built = result.record, Path(result.record["path"])
        (table,) = result.tables()
        self.query_one("#index-result", Static).update("\n".join(f"{k}: {v}" for k, v in table.rows) + "\n\npress o to search it")
        self.query_one("#index-open", Button).disabled = False
        self.query_one(
            "#index-open", Button
        ).focus()  # the Build button was disabled while it ran, taking the focus (and the pane's o key) with it

    @on(Button.Pressed, "#index-open")
    def action_open_search(self) -> None:
        if self.built is not None:
            self.app.open_index(self.built)
            self.app.action_show_tab("search")


class EvalPane(Vertical):
    """Run an evaluation suite on a model, optionally against a second one: a table and a bar chart."""

    DEFAULT_CSS = """
    EvalPane Input, EvalPane Select { width: 80; }
    EvalPane #eval-backend, EvalPane #eval-pcr-variant, EvalPane #eval-limit, EvalPane #eval-split, EvalPane #eval-mode,
    EvalPane #eval-fusion { width: 24; }
    EvalPane #eval-index, EvalPane #eval-queries, EvalPane #eval-qrels { width: 40; }
    EvalPane .row { height: 3; }
    EvalPane #eval-table { height: auto; max-height: 14; }
    EvalPane #eval-chart { height: 1fr; min-height: 12; }
    """

    def compose(self) -> ComposeResult:
        R = EvalRequest
        yield Label("suite")
        yield choice_select(R, "suite")
        yield Label("model")
        yield field_input(R, "model", "model")
        yield Label("compare with (optional)")
        yield TextBox(placeholder="a second model", id=widget_id(EvalRequest, "compare"))
        yield Label(
            "data (optional; space-separated files, BEIR folders for retrieval, or bundled names, else the suite's bundled sets)"
        )
        yield TextBox(placeholder="", id=widget_id(EvalRequest, "data"))
        with Horizontal(classes="row"):
            yield choice_select(R, "backend")
            yield Checkbox("--pcr (bitext)", id=widget_id(EvalRequest, "pcr"))
            yield Button("Evaluate", id="eval-run", variant="success")
        with Horizontal(classes="row"):
            yield Checkbox("cross-encoder", id=widget_id(EvalRequest, "cross"))
            yield Checkbox("compare is a cross-encoder", id=widget_id(EvalRequest, "compare_cross"))
            yield choice_select(R, "pcr_variant", "PCR variant")
            yield TextBox(placeholder="limit (items per dataset)", id=widget_id(EvalRequest, "limit"))
            yield TextBox(placeholder="split (retrieval: test)", id=widget_id(EvalRequest, "split"))
        with Horizontal(classes="row"):
            yield choice_select(R, "mode", "retrieval mode")
            yield choice_select(R, "fusion", "fusion")
            yield TextBox(placeholder="retrieval: re-rank with a cross-encoder", id=widget_id(EvalRequest, "rerank"))
            yield field_input(R, "rerank_weight", "its weight w")
            yield Checkbox("whole documents", id=widget_id(EvalRequest, "whole"))
            yield Checkbox("index anew (no cache)", id=widget_id(EvalRequest, "no_cache"))
        with Horizontal(classes="row"):
            yield TextBox(placeholder="retrieval: an existing index (alone: its judgments)", id=widget_id(EvalRequest, "index"))
            yield TextBox(placeholder="its queries.jsonl (blank: its judgments)", id=widget_id(EvalRequest, "queries"))
            yield TextBox(placeholder="its qrels .tsv (blank: its judgments)", id=widget_id(EvalRequest, "qrels"))
            yield TextBox(placeholder="filter: FIELD=VALUE …", id=widget_id(EvalRequest, "filter"))
        yield Static("", id="eval-status")
        yield Table(id="eval-table", zebra_stripes=True)
        yield PlotextPlot(id="eval-chart")

    def set_model(self, model: str) -> None:
        self.query_one("#eval-model", Input).value = model

    @on(Button.Pressed, "#eval-run")
    def run_pressed(self) -> None:
        try:
            request = dispatch.prepare(EvalRequest, values(self, EvalRequest), "tui")  # the CLI's checks, before any model loads
        except EncodrError as exc:
            self.query_one("#eval-status", Static).update(f"[red]error:[/] {escape(str(exc))}")
            return
        self.query_one("#eval-run", Button).disabled = True
        self.query_one("#eval-status", Static).update(
            f"evaluating {' and '.join(filter(None, [request.model, request.compare]))} on {request.suite} …"
        )
        self.evaluate(request)

    @work(thread=True, exclusive=True, group="eval")
    def evaluate(self, request: EvalRequest) -> None:
        try:
            result = dispatch.run(
                request, "tui", warn=lambda line: self.app.call_from_thread(self.query_one("#eval-status", Static).update, line)
            )
        except EncodrError as exc:
            self.app.call_from_thread(self.finished, None, f"error: {exc}")
            return
        self.app.call_from_thread(self.finished, result, None)

    def finished(self, result, message: str | None) -> None:
        self.query_one("#eval-run", Button).disabled = False
        if result is None:
            self.query_one("#eval-status", Static).update(f"[red]{escape(str(message))}[/]")
            return
        self.query_one("#eval-status", Static).update("done")
        table = self.query_one("#eval-table", DataTable)
        table.clear(columns=True)
        (shown,) = result.tables()
        table.add_columns(*shown.columns)
        for row in shown.rows:
            table.add_row(*row)
        reports = result.reports
        chart = self.query_one("#eval-chart", PlotextPlot)
        plt = chart.plt
        plt.clear_data()
        plt.clear_figure()
        metric = result.primary
        names = [s["dataset"] for s in reports[0]["scores"] if s["metric"] == metric]
        series = [[s["value"] for s in r["scores"] if s["metric"] == metric] for r in reports]
        if len(series) == 1:
            plt.bar(names, series[0])
        else:
            plt.multiple_bar(names, series, labels=[r["model"] for r in reports])
        plt.title(f"{result.suite}: {metric}")
        chart.refresh()
