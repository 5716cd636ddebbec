"""The Train pane: pick a base model, a recipe (its fields editable, checked inline by the
same validation as ``encodr tune --set``), a data file, a dev set and an output folder, then
run :func:`encodr.methods.tune` — the core of ``encodr tune`` — in a worker thread, with a
live loss curve, examples/s, ETA, the dev curve and one line per phase. Cancel raises
:class:`encodr.methods.RunCancelled` from the step callback: nothing is written at the
output, and the registry records the run as cancelled."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, DirectoryTree, Input, Label, ProgressBar, Select, Static
from textual_plotext import PlotextPlot

from ..core.fields import default
from ..core.requests import TuneRequest
from ..errors import EncodrError
from .forms import widget_id
from .widgets import TextBox

HIDDEN_FIELDS = ("name", "method", "description")


def fmt_eta(seconds: float | None) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a number of seconds; ``–`` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "–"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class TrainPane(Vertical):
    """The Train tab (see the module docstring)."""

    DEFAULT_CSS = """
    TrainPane #train-form { width: 64; }
    TrainPane #train-monitor { width: 1fr; }
    TrainPane .field-row { height: 3; }
    TrainPane .field-name { width: 20; padding: 1 1 0 0; }
    TrainPane .field-input { width: 18; }
    TrainPane .field-check { width: 1fr; padding: 1 0 0 1; color: $text-muted; }
    TrainPane .field-check.bad { color: $error; }
    TrainPane #train-set { height: 12; border: round $panel; }
    TrainPane #train-tree { height: 8; }
    TrainPane #train-preview { height: 4; color: $text-muted; }
    TrainPane #train-loss { height: 1fr; min-height: 10; }
    TrainPane #train-phases { height: auto; max-height: 6; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.cancel = threading.Event()
        self.steps: list[int] = []
        self.losses: list[float] = []
        self.dev: list[tuple[int, float]] = []
        self.phases: dict[str, str] = {}
        self.started = 0.0
        self.result = None  # the finished run (encodr.core.results.TuneResult)
        self.error: str | None = None
        self.running = False

    def compose(self) -> ComposeResult:
        from ..core import dispatch
        from ..core.requests import ModelsRequest, RecipesRequest

        models = [(f"{m['name']} ({m['source']})", m["name"]) for m in dispatch.call(ModelsRequest, {}, "tui").rows]
        recipes = [(row["name"], row["name"]) for row in dispatch.call(RecipesRequest, {}, "tui").rows]
        devs = [(name, name) for name in dispatch.dev_sets()] + [
            ("auto (retrieval: pseudo-queries cut from your documents)", "auto")
        ]
        with Horizontal():
            with VerticalScroll(id="train-form"):
                yield Label("base model (alias or Hugging Face cache) — or a folder / hub id below")
                base = default(TuneRequest, "model")[0]  # the declared default base model, when it is installed
                yield (
                    Select(models, value=base, id=widget_id(TuneRequest, "model"))
                    if any(v == base for _, v in models)
                    else Select(models, id=widget_id(TuneRequest, "model"))
                )
                yield TextBox(placeholder="model folder or hub id (overrides the list)", id="train-model-path")
                yield Label("recipe — or a YAML file below")
                yield Select(
                    recipes, value=default(TuneRequest, "recipe"), id=widget_id(TuneRequest, "recipe"), allow_blank=False
                )
                yield TextBox(placeholder="recipe YAML file (overrides the list)", id="train-recipe-file")
                yield VerticalScroll(id=widget_id(TuneRequest, "set"))
                yield Label("data file (Enter on a file in the tree, or type a path; blank: the recipe's bundled data)")
                yield TextBox(placeholder="text file", id=widget_id(TuneRequest, "file"))
                yield DirectoryTree(".", id="train-tree")
                yield Static("", id="train-preview")
                yield Label("dev set (optional: keeps the best checkpoint)")
                yield Select(devs, id=widget_id(TuneRequest, "dev"))
                yield Label("bitext (optional: translation-pair files, space-separated, for recipes that learn from bitext)")
                yield TextBox(placeholder="pairs.tsv", id=widget_id(TuneRequest, "bitext"))
                yield Label("output folder")
                yield TextBox(placeholder="blank: encodr-runs/RECIPE-TIME, as encodr tune", id=widget_id(TuneRequest, "out"))
                with Horizontal(classes="field-row"):
                    yield Button("Start", id="train-start", variant="success")
                    yield Button("Cancel", id="train-cancel", variant="error", disabled=True)
                yield Label("judged recipe: the index whose judgments it learns from (blank: the data file, a BEIR folder)")
                yield TextBox(placeholder="index folder or workspace name", id=widget_id(TuneRequest, "index"))
                yield Checkbox(
                    "no selection (too few judged queries or documented definitions: train on them all)",
                    id=widget_id(TuneRequest, "no_dev"),
                )
            with Vertical(id="train-monitor"):
                yield ProgressBar(id="train-bar", show_eta=False)
                yield Static("not started", id="train-stats")
                yield PlotextPlot(id="train-loss")
                yield Static("", id="train-dev-curve")
                yield Static("", id="train-phases")
                yield Static("", id="train-result")

    def on_mount(self) -> None:
        self.show_fields()
        self.draw_loss()

    # ── the recipe's fields ──────────────────────────────────────────────────
    def recipe_spec(self) -> str:
        path = self.query_one("#train-recipe-file", Input).value.strip()
        return path or str(self.query_one("#train-recipe", Select).value)

    def overrides(self) -> dict[str, str]:
        """The edited fields, as ``--set`` takes them (only those that differ from the recipe)."""
        return {
            inp.name: inp.value.strip()
            for inp in self.query(".field-input").results(Input)
            if inp.value.strip() != inp.placeholder
        }

    def show_fields(self) -> None:
        """One input per recipe field, filled with the recipe's value, its meaning and rule as its tooltip."""
        from ..core import dispatch

        box = self.query_one("#train-set", VerticalScroll)
        box.remove_children()
        try:
            fields, notes = dispatch.recipe_fields(self.recipe_spec()), dispatch.recipe_notes(self.recipe_spec())
        except EncodrError as exc:
            box.mount(Static(f"recipe: {exc}", classes="field-check bad"))
            return
        rows = []
        for key, value in fields.items():
            if key in HIDDEN_FIELDS:
                continue
            text = "" if value is None else str(value)
            field_input = TextBox(text, placeholder=text, name=key, classes="field-input", tooltip=notes.get(key) or None)
            rows.append(
                Horizontal(
                    Label(key, classes="field-name"),
                    field_input,
                    Static("", id=f"check-{key}", classes="field-check"),
                    classes="field-row",
                )
            )
        box.mount_all(rows)

    @on(Select.Changed, "#train-recipe")
    @on(Input.Submitted, "#train-recipe-file")
    def recipe_changed(self, event) -> None:
        self.show_fields()

    @on(Input.Changed, ".field-input")
    def field_changed(self, event: Input.Changed) -> None:
        """The CLI's validation of one ``--set KEY=VALUE``, shown beside the field."""
        from ..core import dispatch

        check = self.query_one(f"#check-{event.input.name}", Static)
        try:
            dispatch.recipe_fields(self.recipe_spec(), {event.input.name: event.value.strip()})
        except EncodrError as exc:
            check.update(str(exc))
            check.add_class("bad")
            return
        check.update("✓" if event.value.strip() != event.input.placeholder else "")
        check.remove_class("bad")

    # ── data file ────────────────────────────────────────────────────────────
    @on(DirectoryTree.FileSelected, "#train-tree")
    def file_picked(self, event: DirectoryTree.FileSelected) -> None:
        self.query_one("#train-file", Input).value = str(event.path)
        self.preview(event.path)

    @on(Input.Submitted, "#train-file")
    def data_typed(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.preview(Path(event.value.strip()))

    def preview(self, path: Path) -> None:
        """The first lines of the file and its number of distinct strings (the reader of ``encodr tune``)."""
        from ..core import dispatch

        box = self.query_one("#train-preview", Static)
        try:
            count, first = dispatch.preview(path)
        except EncodrError as exc:
            box.update(f"[red]{escape(str(exc))}[/]")
            return
        head = " · ".join(s[:40] for s in first)
        box.update(f"{count:,} distinct strings\n{head}")

    # ── running ──────────────────────────────────────────────────────────────
    @on(Button.Pressed, "#train-start")
    def start_pressed(self) -> None:
        self.start()

    @on(Button.Pressed, "#train-cancel")
    def cancel_pressed(self) -> None:
        self.cancel.set()
        self.query_one("#train-stats", Static).update("cancelling after the current step…")

    def request(self):
        """The recipe and job the form describes, checked as ``encodr tune`` checks them
        (:func:`encodr.core.dispatch.call`: :func:`encodr.core.commands.prepare_tune`). Raises EncodrError."""
        from ..core import dispatch
        from ..core.requests import TuneRequest
        from .forms import values

        model = self.query_one("#train-model-path", Input).value.strip() or self.query_one("#train-model", Select).value
        if not isinstance(model, str):  # the Select's blank value
            raise EncodrError("choose a base model")
        given = values(self, TuneRequest, skip=("recipe", "model", "set"))
        given.update(recipe=self.recipe_spec(), model=[model], set=[f"{k}={v}" for k, v in self.overrides().items()])
        return dispatch.call(TuneRequest, given, "tui", progress=self.report, warn=self.warn, on_step=self.step)

    def start(self) -> None:
        if self.running:
            return
        try:
            recipe, request = self.request()
        except EncodrError as exc:
            self.query_one("#train-result", Static).update(f"[red]error:[/] {escape(str(exc))}")
            return
        self.cancel.clear()
        self.steps, self.losses, self.dev, self.phases = [], [], [], {}
        self.result, self.error, self.running, self.started = None, None, True, time.perf_counter()
        self.query_one("#train-start", Button).disabled = True
        self.query_one("#train-cancel", Button).disabled = False
        self.query_one("#train-result", Static).update(f"training → {request.out} …")
        self.train(recipe, request)

    @work(thread=True, exclusive=True, group="train")
    def train(self, recipe, request) -> None:
        from ..core import dispatch

        try:
            result = dispatch.tune(recipe, request)
            self.app.call_from_thread(self.finished, result, None)
        except dispatch.cancelled():
            self.app.call_from_thread(
                self.finished, None, f"cancelled: nothing written at {request.out}; the registry says cancelled"
            )
        except EncodrError as exc:
            self.app.call_from_thread(self.finished, None, f"error: {exc}")

    def step(self, step: int, loss: float) -> None:
        """The run's step callback (worker thread): stop when Cancel was pressed."""
        from ..core import dispatch

        if self.cancel.is_set():
            raise dispatch.cancelled()()

    def report(self, event) -> None:
        """The run's progress callback (worker thread)."""
        self.app.call_from_thread(self.show_event, event)

    def warn(self, message: str) -> None:
        self.app.call_from_thread(self.query_one("#train-result", Static).update, f"[yellow]{escape(str(message))}[/]")

    def show_event(self, event) -> None:
        label = f"{event.task}: {event.completed}/{event.total or '?'}"
        self.phases[event.task] = label
        self.query_one("#train-phases", Static).update("\n".join(self.phases.values()))
        bar = self.query_one("#train-bar", ProgressBar)
        bar.update(total=event.total, progress=event.completed)
        fields = event.fields
        if "dev" in fields:
            self.dev.append((event.completed, fields["dev"]))
            self.query_one("#train-dev-curve", Static).update(
                f"dev {fields.get('dev_metric', 'score')}: " + " → ".join(f"{v:.2f} (step {s})" for s, v in self.dev)
            )
        if "loss" in fields:
            self.steps.append(len(self.steps) + 1)
            self.losses.append(fields["loss"])
            elapsed = time.perf_counter() - self.started
            eta = elapsed / event.completed * (event.total - event.completed) if event.total and event.completed else None
            self.query_one("#train-stats", Static).update(
                f"{event.task} · step {event.completed}/{event.total} · loss {fields['loss']:.4f} · "
                f"{fields.get('ex/s', 0):.0f} ex/s · ETA {fmt_eta(eta)}"
            )
            self.draw_loss()

    def draw_loss(self) -> None:
        plot = self.query_one("#train-loss", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.title("training loss")
        plt.xlabel("step")
        if self.losses:
            plt.plot(self.steps, self.losses, marker="braille")
        plot.refresh()

    def finished(self, summary: dict | None, message: str | None) -> None:
        self.running = False
        self.result, self.error = summary, message
        self.query_one("#train-start", Button).disabled = False
        self.query_one("#train-cancel", Button).disabled = True
        if summary is None:
            self.query_one("#train-result", Static).update(f"[red]{escape(str(message))}[/]")
            self.query_one("#train-stats", Static).update("stopped")
            return
        (table,) = summary.tables()
        lines = [f"saved {summary.out} (run {', '.join(map(str, summary.run_ids))})"] + [
            f"{r[0]}: {r[1]}" for r in table.rows[:12]
        ]
        self.query_one("#train-result", Static).update("\n".join(lines))
        self.query_one("#train-stats", Static).update("done")
