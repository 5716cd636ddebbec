"""``encodr tui``: a Textual app over the same core as the CLI (:class:`encodr.index.Searcher`,
:func:`encodr.index.list_indexes`, :func:`encodr.models.list_models`,
:func:`encodr.registry.runs`, and through its panes :func:`encodr.methods.tune`,
:func:`encodr.index.build`, :func:`encodr.evaluation.run`). It holds presentation only.

Keys: F1 help · F2–F9 or the tabs: Search, Compare, Workspace, Train, Index, Eval, Runs, Judgments ·
Enter searches at once · 0 / 1 / 2 judge the selected hit · Ctrl+Q quits. Results update as you type (debounced).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, Input, Markdown, Select, Static, TabbedContent, TabPane

from ..core.requests import CompareRequest, SearchRequest
from ..core.results import judged_mark, own_title, reads_as_markdown, where
from ..errors import EncodrError
from .forms import choice_select, widget_id
from .panes import EvalPane, IndexPane
from .runs import RunsPane
from .train import TrainPane
from .widgets import CELL_PADDING, LineTable, Table, TextBox

HELP = (  # (key, what it does), a heading where the key is empty; a key is short, so its column never wraps at 80 columns
    ("", "Anywhere"),
    ("F1", "this help (Esc closes it)"),
    ("F2 F3 F4", "Search / Compare / Workspace tab"),
    ("F5 F6 F7 F8", "Train / Index / Eval / Runs tab"),
    ("F9", "Judgments tab: the index's judgments; Delete removes one"),
    ("Ctrl+Q", "quit"),
    ("", "Search (F2)"),
    ("typing", "search as you type (debounced)"),
    ("Enter", "search now"),
    ("Down", "from the query box into the hits; Up on the first hit goes back"),
    ("Enter on a hit", "its whole document, at the passage (Esc closes)"),
    ("0 / 1 / 2", "judge the selected hit: not relevant / relevant / highly relevant (encodr judge)"),
    ("Ctrl+D", "delete the selected hit's document from the index, once you answer y"),
    ("languages box", "only hits in these languages, e.g. spa,fra; Enter applies"),
    ("filter box", "only documents where FIELD=VALUE (!=, >=, <=), several separated by ;, e.g. team=ops; year>=2020"),
    ("re-rank box", "a CrossEncoder (path, Hub id, an encodr cross/) re-scores the first hits; Enter loads it, blank: none"),
    ("", "Other tabs"),
    ("Workspace Enter", "open the selected index"),
    (
        "Train",
        "Start tunes with the form's model, recipe, data, dev set and output; Cancel writes nothing; Enter on a file "
        "in the tree uses it as the data",
    ),
    ("Index", "Build or append (--add), then o opens it in Search; Sync brings it in step with its files (--sync)"),
    ("Eval", "Evaluate a suite on a model, optionally against a second; an index with no queries is scored on its judgments"),
    ("Runs", "arrows: a run's details, loss and dev curves; buttons: index / evaluate with its model"),
)
KEY_WIDTH = max(len(key) for key, _ in HELP)


def help_table():
    """:data:`HELP` as a rich table: the key column as wide as its longest key (never wrapped), the
    action column taking the rest and wrapping."""
    from rich.table import Table as RichTable
    from rich.text import Text

    table = RichTable(show_header=False, box=None, padding=(0, 2, 0, 0), expand=True)
    table.add_column("key", no_wrap=True, min_width=KEY_WIDTH, style="bold")
    table.add_column("action", ratio=1)
    for key, action in HELP:
        if not key:
            table.add_row(Text(action, style="bold underline"), "")
        else:
            table.add_row(key, Text(action))
    return table


GRADE_MARKS = {0: "✗ 0", 1: "✓ 1", 2: "✓✓ 2"}  # a judged hit's grade, in the results' last column
# "rank score": the hit's rank and score, its bar, its language (score_cell); "hit": its snippet, then its title
# and path:line › section (hit_cell). Three cells a row, each already cut into its lines (a LineTable draws them as
# given), and a narrow first column leaves the snippet most of an 80-column terminal.
RESULT_COLUMNS = ("rank score", "hit", "grade")
HIT_COLUMN, GRADE_COLUMN = 1, 2
# Each column's width, the hit's set to what the terminal leaves it (RESULT_WIDTHS's None): fixed widths and a
# fixed row height keep the table's virtual size the same from one query to the next with as many hits, so a
# new query redraws the table's cells without laying the screen out again.
RESULT_WIDTHS = (11, None, 5)
# the other columns, every cell's padding, the scroll bar
FIXED_WIDTH = sum(w for w in RESULT_WIDTHS if w) + 2 * CELL_PADDING * len(RESULT_COLUMNS) + 2
SNIPPET_ROWS = 2  # lines of a hit's snippet in the results; its location takes one more
HIT_HEIGHT = SNIPPET_ROWS + 1
GRADE_WORDS = {0: "not relevant", 1: "relevant", 2: "highly relevant"}


def clip(text: str, width: int = 90) -> str:
    """``text`` cut to ``width`` characters with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def score_bar(score: float, width: int = 10, top: float = 1.0) -> str:
    """A bar of ``width`` cells for a score in [0, ``top``]: a cosine against 1, a BM25 score
    (unbounded) against the best hit's; negative scores show empty."""
    filled = max(0, min(width, round(score / (top or 1.0) * width)))
    return "█" * filled + "·" * (width - filled)


def score_cell(hit, top: float) -> list:
    """A hit's first cell, its :data:`HIT_HEIGHT` lines: its rank and score, the score's bar
    (:func:`score_bar`, against ``top``), and its language, dim."""
    from rich.text import Text

    dim = Text(hit.lang or "")
    dim.stylize("dim")  # a span, as a Text joined from styled parts has: a LineTable draws a span, not a line's style
    return [f"{hit.rank:<2} {hit.score:.4f}", score_bar(hit.score, top=top), dim]


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question before a change that cannot be undone (deleting a document): ``y`` or
    Enter answers yes, ``n`` or Escape no."""

    BINDINGS = [Binding("y,enter", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Static(f"{self.question}  [y] yes  [n] no", id="confirm", markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class HelpScreen(ModalScreen):
    """F1: the keys (:data:`HELP`), as a table that reads at 80 columns."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Close")]

    def compose(self) -> ComposeResult:
        from rich.text import Text

        with VerticalScroll(id="help-scroll"):  # longer than a small terminal: it scrolls
            yield Static(Text("encodr — keys", style="bold"))
            yield Static(help_table(), id="help")


def marked(text: str, query: str, query_lang: str | None = None, text_lang: str | None = None):
    """``text`` as rich Text with the query's words in bold yellow, matched as the keyword index
    matches them (:func:`~encodr.core.results.term_spans`, the languages' stems)."""

    from ..core.results import term_spans

    return highlighted(text, term_spans(text, query, query_lang, text_lang))


def highlighted(text: str, spans: list[tuple[int, int]]):
    """``text`` as rich Text, its ``spans`` (character offsets) in bold yellow."""
    from rich.text import Text

    shown = Text(text)
    for start, end in spans:
        shown.stylize("bold yellow", start, end)
    return shown


def hit_cell(hit, query: str, width: int, console, query_lang: str | None = None) -> list:
    """A hit as the results table shows it, as lines ``width`` cells wide: its snippet (the chosen
    sentences and what follows them, else its text around the query's words; source code as its
    lines: :func:`~encodr.core.results.hit_snippet`) on :data:`SNIPPET_ROWS` lines, the query's words in
    bold, then on a dim line its title where it says more than its path, and where the answer is
    (``path:line › section``, :func:`~encodr.core.results.where`), cut to fit."""
    from rich.text import Text

    from ..core.results import hit_snippet

    body = highlighted(*hit_snippet(hit, query, SNIPPET_ROWS, width, query_lang))  # lines that fill the rows, "…" at a cut
    lines = list(body.wrap(console, width))[:SNIPPET_ROWS]
    located = Text(clip(" · ".join(x for x in (own_title(hit), where(hit)) if x) + judged_mark(hit), width))
    located.stylize("dim")
    return [*lines, located]


class DocumentScreen(ModalScreen):
    """A hit's whole document, scrolled to the hit, the query's words highlighted. A document
    read as Markdown (Markdown, HTML, Office and e-book files) is rendered as Markdown (headings,
    lists, tables) before and after the hit's passage, which is shown as its text with the
    query's words highlighted; any other document is shown as its text."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Close")]
    DEFAULT_CSS = """
    DocumentScreen VerticalScroll { margin: 2 6; padding: 1 2; border: round $accent; background: $panel; }
    DocumentScreen #document-text.passage { border-left: thick $accent; padding: 0 1; }
    """

    def __init__(self, title: str, text: str, at: int, hit, query: str, query_lang: str | None = None):
        super().__init__()
        self.heading, self.text, self.at, self.length, self.query_text = title, text, at, len(hit.text), query
        self.langs = (query_lang, hit.lang)
        self.markdown = reads_as_markdown(hit.source)

    def compose(self) -> ComposeResult:
        from rich.text import Text

        with VerticalScroll(id="document"):
            yield Static(Text(self.heading, style="bold"))
            if not self.markdown:
                body = marked(self.text, self.query_text, *self.langs)
                body.stylize("reverse", self.at, self.at + self.length)  # the passage that matched
                yield Static(body, id="document-text")
                return
            before, after = self.text[: self.at], self.text[self.at + self.length :]
            if before.strip():
                yield Markdown(before, id="document-before")
            yield Static(
                marked(self.text[self.at : self.at + self.length], self.query_text, *self.langs),
                id="document-text",
                classes="passage",
            )
            if after.strip():
                yield Markdown(after, id="document-after")

    def on_mount(self) -> None:
        scroll = self.query_one("#document")
        if self.markdown:
            self.call_after_refresh(lambda: scroll.scroll_to_widget(self.query_one("#document-text"), animate=False, top=True))
            return
        before = self.text[: self.at].count("\n") + self.at // 100  # about the hit's line: scroll it into view
        scroll.scroll_to(y=max(0, before - 2), animate=False)


class EncodrApp(App):
    """The encodr terminal UI."""

    TITLE = "encodr"
    CSS = """
    #query, #compare-a, #compare-b { margin: 0 1; }
    #query-row { height: auto; }
    #query { width: 3fr; }
    #search-hit-lang, #search-filter { width: 1fr; margin: 0 1 0 0; }
    #search-mode { width: 16; }
    #search-rerank { width: 1fr; }
    #cosine { padding: 0 2; height: 3; content-align: left middle; text-style: bold; }
    TabbedContent { height: 1fr; }
    #status { height: 1; background: $boost; padding: 0 1; }
    #help-scroll { margin: 1 2; border: round $accent; background: $panel; padding: 0 1; }
    #help { padding: 1 2; }
    #workspace-tables DataTable { height: auto; max-height: 16; }
    .pane-title { padding: 0 1; text-style: bold; }
    """
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("f2", "show_tab('search')", "Search"),
        Binding("f3", "show_tab('compare')", "Compare"),
        Binding("f4", "show_tab('workspace')", "Workspace"),
        Binding("f5", "show_tab('train')", "Train"),
        Binding("f6", "show_tab('index')", "Index"),
        Binding("f7", "show_tab('eval')", "Eval"),
        Binding("f8", "show_tab('runs-tab')", "Runs"),
        Binding("f9", "show_tab('judgments')", "Judgments"),
        Binding("1", "judge(1)", "Relevant"),
        Binding("2", "judge(2)", "Highly"),
        Binding("0", "judge(0)", "Not relevant"),
        Binding("ctrl+q", "quit", "Quit"),
        Binding("ctrl+d", "delete_hit", "Delete document", show=False),
    ]

    def __init__(
        self, index_dir: str | Path | None = None, k: int = 10, debounce: float = 0.25, searcher=None, rerank: str | None = None
    ):
        super().__init__()
        self.index_dir = Path(index_dir) if index_dir else None
        self.k = k
        self.debounce = debounce
        self.searcher = searcher
        self.rerank = rerank  # the cross-encoder the re-rank box names (``encodr tui --rerank``)
        self.reranker = None  # … loaded (None: search is not re-ranked)
        self.searches = 0  # result sets shown
        self.hits: list = []  # the hits shown, by row
        self.query_lang: str | None = None  # their query's language (its stems are highlighted)
        self.last_lang: str | None = None  # the last search's query language, its time (ms) and its hints
        self.last_timings: dict = {}  # the last search's phases and total, in ms (run_search)
        self.notes: list[str] = []  # its hint lines, as encodr search prints them: first on the status line
        self.caption = ""  # and its caption: last on the status line
        self.search_thread = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="encodr-search"
        )  # every search runs here (run_search)

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="search"):
            with TabPane("Search", id="search"):
                with Horizontal(id="query-row"):
                    yield TextBox(placeholder="type a query…", id="query")
                    yield TextBox(placeholder="languages: spa,fra (blank: all)", id=widget_id(SearchRequest, "hit_lang"))
                    yield TextBox(placeholder="filter: year>=2020; source=notes/*.md", id=widget_id(SearchRequest, "filter"))
                    yield choice_select(SearchRequest, "mode")
                    yield TextBox(
                        self.rerank or "",
                        placeholder="re-rank: a CrossEncoder (blank: none)",
                        id=widget_id(SearchRequest, "rerank"),
                    )
                yield LineTable(
                    [(label, width or 30) for label, width in zip(RESULT_COLUMNS, RESULT_WIDTHS)],
                    row_height=HIT_HEIGHT,
                    id="results",
                )
            with TabPane("Compare", id="compare"):
                yield TextBox(placeholder="text A", id=widget_id(CompareRequest, "a"))
                yield TextBox(placeholder="text B (Enter to compare)", id=widget_id(CompareRequest, "b"))
                yield Static("cosine: –", id="cosine")
                with Horizontal():
                    with Vertical():
                        yield Static("nearest to A", classes="pane-title")
                        yield Table(id="near-a", zebra_stripes=True)
                    with Vertical():
                        yield Static("nearest to B", classes="pane-title")
                        yield Table(id="near-b", zebra_stripes=True)
            with TabPane("Workspace", id="workspace"), VerticalScroll(id="workspace-tables"):
                yield Static("indexes (Enter opens)", classes="pane-title")
                yield Table(id="indexes", cursor_type="row")
                yield Static("models", classes="pane-title")
                yield Table(id="models")
                yield Static("runs", classes="pane-title")
                yield Table(id="runs")
            with TabPane("Train", id="train"):
                yield TrainPane()
            with TabPane("Index", id="index"):
                yield IndexPane()
            with TabPane("Eval", id="eval"):
                yield EvalPane()
            with TabPane("Runs", id="runs-tab"):
                yield RunsPane()
            with TabPane("Judgments", id="judgments"):
                yield Static("", id="judgments-counts", classes="pane-title", markup=False)
                yield Table(id="judgments-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="status", markup=False)  # plain text: a model or file name may hold brackets
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#results", LineTable).set_width(HIT_COLUMN, self.hit_width())
        for table_id in ("#near-a", "#near-b"):
            self.query_one(table_id, DataTable).add_columns("rank", "score", "text")
        self.refresh_workspace()
        if self.searcher is not None:
            self.update_status()
            self.query_one(IndexPane).load(self.index_dir or self.searcher.index.path, self.searcher.index.meta)
        elif self.index_dir is not None:
            self.open_index(self.index_dir)
        else:
            self.set_status("no index open: pick one in Workspace (F4), or start with encodr tui --index NAME")
        if self.rerank:
            self.load_reranker(self.rerank)
        self.query_one("#query", Input).focus()

    # ── workspace ────────────────────────────────────────────────────────────
    def refresh_workspace(self) -> None:
        from ..core import dispatch
        from ..core.requests import IndexesRequest, ModelsRequest, RunsRequest
        from ..core.results import human

        indexes = self.query_one("#indexes", DataTable)
        indexes.clear(columns=True)
        indexes.add_columns("name", "model", "type", "count", "pcr")
        for row in dispatch.call(IndexesRequest, {}, "tui").rows:
            indexes.add_row(*[human(row.get(k), k) for k in ("name", "model", "index_type", "count", "pcr")], key=row["path"])
        models = self.query_one("#models", DataTable)
        models.clear(columns=True)
        models.add_columns("name", "source", "path")
        for row in dispatch.call(ModelsRequest, {}, "tui").rows:
            models.add_row(row["name"], row["source"], row["path"] or "(not installed)")
        table = self.query_one("#runs", DataTable)
        table.clear(columns=True)
        table.add_columns("id", "created", "model", "recipe", "strings", "out")
        for row in dispatch.call(RunsRequest, {"limit": 20}, "tui").rows:
            table.add_row(
                str(row["id"]),
                row["created"],
                row["model"],
                str(row.get("recipe_name", "")),
                str(row.get("strings", "")),
                row.get("out", ""),
            )

    @on(TabbedContent.TabActivated)
    def tab_shown(self, event: TabbedContent.TabActivated) -> None:
        """Workspace and Runs read the workspace and registry again each time they are shown, so
        a run, index or model made in another pane (or another process) is listed."""
        pane = event.pane.id if event.pane is not None else None
        if pane == "workspace":
            self.refresh_workspace()
        elif pane == "runs-tab":
            self.query_one("RunsPane").refresh_runs()
        elif pane == "judgments":
            self.refresh_judgments()

    @on(DataTable.RowSelected, "#indexes")
    def pick_index(self, event: DataTable.RowSelected) -> None:
        self.open_index(Path(str(event.row_key.value)))
        self.action_show_tab("search")

    def on_unmount(self) -> None:
        """The search thread ends with the app (a search still running finishes first, unanswered)."""
        self.search_thread.shutdown(wait=False, cancel_futures=True)

    @work(thread=True, exclusive=True, group="open")
    def open_index(self, path: Path) -> None:
        from ..core import dispatch
        from ..core.requests import SearchRequest
        from ..core.session import settle

        self.call_from_thread(self.set_status, f"opening {path} …")
        try:
            searcher = dispatch.open_searcher(SearchRequest(index=str(path)), "tui")
            try:
                warming = self.search_thread.submit(
                    searcher.warm
                    # on the search thread: the first query typed does not pay for the first forward pass, the first reads
                    # or that thread's set-up
                )
            except RuntimeError:  # the app closed while the index opened (its search thread is shut down)
                return
            warming.result()
            settle()  # the app and its warm searcher live as long as it does: no full collection walks them again
        except EncodrError as exc:
            self.call_from_thread(self.set_status, f"error: {exc}")
            return
        self.searcher = searcher
        self.index_dir = path
        self.call_from_thread(self.index_opened)

    def index_opened(self) -> None:
        """A new index is open: the old index's hits go, and the query in the box is searched again."""
        self.query_one("#results", LineTable).clear()
        self.query_one(IndexPane).load(self.index_dir or self.searcher.index.path, self.searcher.index.meta)
        self.update_status()
        self.run_search(self.query_one("#query", Input).value, 0.0)

    # ── search ───────────────────────────────────────────────────────────────
    @on(Input.Changed, "#query")
    def query_changed(self, event: Input.Changed) -> None:
        self.run_search(event.value, self.debounce)

    @on(Input.Submitted, "#query")
    def query_submitted(self, event: Input.Submitted) -> None:
        self.run_search(event.value, 0.0)

    @on(Input.Submitted, "#search-hit-lang")
    @on(Input.Submitted, "#search-filter")
    @on(Select.Changed, "#search-mode")
    def search_again(self, event) -> None:
        self.run_search(self.query_one("#query", Input).value, 0.0)

    @on(Input.Submitted, "#search-rerank")
    def rerank_submitted(self, event: Input.Submitted) -> None:
        self.load_reranker(event.value.strip())

    @work(thread=True, exclusive=True, group="rerank")
    def load_reranker(self, spec: str) -> None:
        """The re-rank box's cross-encoder, loaded once (``dispatch.open_reranker``, as ``encodr
        search --rerank`` loads it); blank: search without one. A model that cannot be had keeps
        the previous one and says why in the status line."""
        from ..core import dispatch

        if spec:
            self.call_from_thread(self.set_status, f"loading the re-ranker {spec} …")
        try:
            reranker = dispatch.open_reranker(spec or None, "tui")
        except EncodrError as exc:
            self.call_from_thread(self.set_status, f"error: {exc}")
            return
        self.reranker, self.rerank = reranker, spec or None
        self.call_from_thread(self.reranker_loaded)

    def reranker_loaded(self) -> None:
        """A re-ranker was loaded or dropped: the query in the box is searched again with it."""
        self.update_status()
        self.run_search(self.query_one("#query", Input).value, 0.0)

    def hit_langs(self) -> list[str] | None:
        """The language filter box as ``--hit-lang`` takes it."""
        codes = [c.strip() for c in self.query_one("#search-hit-lang", Input).value.split(",") if c.strip()]
        return codes or None

    def request(self, query: str) -> SearchRequest:
        """The Search tab's search of ``query`` as ``encodr search`` takes it (a checked
        :class:`~encodr.core.requests.SearchRequest`, with its timings): k, the mode box, the
        languages box and the filter box (FIELD=VALUE conditions separated by ``;``); every
        other setting its declared default. Raises EncodrError naming a bad one."""
        from ..core import dispatch

        given = [f.strip() for f in self.query_one("#search-filter", Input).value.split(";") if f.strip()]
        mode = self.query_one("#search-mode", Select).value
        return dispatch.prepare(
            SearchRequest,
            {
                "query": [query],
                "index": str(self.index_dir or ""),
                "k": self.k,
                "mode": mode if isinstance(mode, str) else None,
                "hit_lang": self.hit_langs(),
                "filter": given or None,
                "timings": True,
            },
            "tui",
        )

    @work(exclusive=True, group="search")
    async def run_search(self, query: str, delay: float) -> None:
        """Debounced search: a newer keystroke cancels this worker while it waits, or before its
        hits are shown. The search itself runs on the app's one search thread
        (:attr:`search_thread`, kept for the app's life, where the index was warmed), and its hits
        are shown from here, on the app's loop: a thread worker would hand them back through
        ``call_from_thread``, a round trip through the loop that the query waits on."""
        import asyncio

        if delay:
            await asyncio.sleep(delay)
        searcher, reranker = self.searcher, self.reranker
        if searcher is None or not query.strip():
            return
        from ..core import dispatch

        try:
            request = self.request(query)
        except EncodrError as exc:
            self.set_status(f"error: {exc}")
            return

        def search():  # the search every front end runs (commands.search): judgments, snippets, hints
            return dispatch.run(request, "tui", searcher=searcher, reranker=reranker)

        try:
            result = await asyncio.get_running_loop().run_in_executor(self.search_thread, search)
        except EncodrError as exc:
            self.set_status(f"error: {exc}")
            return
        answer = result.results[0]
        self.last_timings = dict(result.timings or {})  # each phase's ms (encodr.timing.PHASES) and the total
        self.last_lang = answer.lang
        self.notes, self.caption = list(result.hints), result.caption or ""
        self.show_hits(query, answer.hits, answer.lang)

    def show_hits(self, query: str, hits, lang: str | None = None) -> None:
        if query != self.query_one("#query", Input).value:
            return  # a stale answer for an older query
        self.searches += 1
        table = self.query_one("#results", LineTable)
        self.hits, self.query_lang = hits, lang
        grades = self.grades(query)
        top = max([1.0, *(h.score for h in hits)])  # a cosine fills the bar at 1; BM25 and fused scores at the best hit's
        width = self.hit_width()
        table.set_width(HIT_COLUMN, width)  # the terminal's width may have changed (on_resize)
        table.set_rows(
            (score_cell(h, top), hit_cell(h, query, width, self.console, lang), GRADE_MARKS.get(grades.get(h.document), ""))
            for h in hits
        )
        self.update_status()

    def hit_width(self) -> int:
        """The hit column's width in cells: what the terminal leaves the other columns, at least 30."""
        return max(30, self.size.width - FIXED_WIDTH)

    def on_resize(self, event) -> None:
        """The hits drawn again to the new width (their snippets wrap to it), once the app has its new size."""
        if self.hits:
            self.call_after_refresh(self.show_hits, self.query_one("#query", Input).value, self.hits, self.query_lang)

    def grades(self, query: str) -> dict[str, int]:
        """Document id → the grade judged for ``query`` (whitespace and case aside) in the open index."""
        from ..core import dispatch
        from ..core.requests import JudgmentsRequest

        if self.searcher is None:
            return {}
        try:
            rows = dispatch.call(
                JudgmentsRequest, {"index": str(self.searcher.index.path)}, "tui", searcher=self.searcher
            ).payload()
        except EncodrError:
            return {}
        key = " ".join(query.split()).casefold()
        return {r["doc"]: r["grade"] for r in rows if " ".join(r["query"].split()).casefold() == key}

    def action_judge(self, grade: int) -> None:
        """0, 1 or 2 on a hit of the Search tab (the results focused): judge it for the query in
        the box (``encodr judge``); its grade column shows the grade."""
        table = self.query_one("#results", LineTable)
        if self.focused is not table or self.searcher is None or not self.hits or table.cursor_row >= len(self.hits):
            return
        hit, row = self.hits[table.cursor_row], table.cursor_row
        self.judge_hit(self.query_one("#query", Input).value, hit, grade, row)

    @work(thread=True, group="judge")
    def judge_hit(self, query: str, hit, grade: int, row: int) -> None:
        from ..core import dispatch
        from ..core.requests import JudgeRequest

        try:
            dispatch.call(
                JudgeRequest,
                {
                    "query": query,
                    "doc": hit.document,
                    "index": str(self.searcher.index.path),
                    "grade": grade,
                    "passage": hit.text,
                },
                "tui",
                searcher=self.searcher,
            )
        except EncodrError as exc:
            self.call_from_thread(self.set_status, f"error: {exc}")
            return
        self.call_from_thread(self.judged, row, grade)

    def judged(self, row: int, grade: int) -> None:
        table = self.query_one("#results", LineTable)
        if row < table.row_count:
            table.update_cell_at((row, GRADE_COLUMN), GRADE_MARKS[grade])
        self.notify(f"judged {GRADE_WORDS[grade]} (grade {grade})")
        self.run_search(self.query_one("#query", Input).value, 0.0)  # a judgment acts at once: the hits move

    # ── judgments ────────────────────────────────────────────────────────────
    def refresh_judgments(self) -> None:
        """The open index's judgments (``encodr judgments``), with their counts."""
        from ..core import dispatch
        from ..core.requests import JudgmentsRequest
        from ..core.results import human

        table = self.query_one("#judgments-table", DataTable)
        table.clear(columns=True)
        self.judgment_rows = []
        if self.searcher is None:
            self.query_one("#judgments-counts", Static).update("no index open")
            return
        try:
            result = dispatch.call(JudgmentsRequest, {"index": str(self.searcher.index.path)}, "tui", searcher=self.searcher)
        except EncodrError as exc:
            self.query_one("#judgments-counts", Static).update(f"error: {exc}")
            return
        self.judgment_rows = result.rows
        table.add_columns(*result.columns)
        for r in result.rows:
            table.add_row(*[human(r.get(c), c) for c in result.columns])
        self.query_one("#judgments-counts", Static).update(f"{result.where} · Delete removes the selected judgment")

    def on_key(self, event) -> None:
        """Down in the query box: into the hits (Enter then opens one); Up on the first hit: back
        to the query box. Delete on the Judgments tab's table: remove the selected judgment."""
        results, box = self.query_one("#results", LineTable), self.query_one("#query", Input)
        if event.key == "down" and self.focused is box and results.row_count:
            event.stop()
            results.focus()
            results.move_cursor(row=0)
            return
        if event.key == "up" and self.focused is results and results.cursor_row == 0:
            event.stop()
            box.focus()
            return
        table = self.query_one("#judgments-table", DataTable)
        if (
            event.key == "delete"
            and self.focused is table
            and getattr(self, "judgment_rows", None)
            and table.cursor_row < len(self.judgment_rows)
        ):
            from ..core import dispatch
            from ..core.requests import UnjudgeRequest

            row = self.judgment_rows[table.cursor_row]
            try:
                dispatch.call(
                    UnjudgeRequest,
                    {"query": row["query"], "doc": row["doc"]},
                    "tui",
                    index=str(self.searcher.index.path),
                    searcher=self.searcher,
                )
            except EncodrError as exc:
                self.set_status(f"error: {exc}")
                return
            self.refresh_judgments()

    @on(LineTable.RowSelected, "#results")
    def open_hit(self, event: LineTable.RowSelected) -> None:
        """Enter on a hit: its whole document, at the passage."""
        if self.searcher is None or event.cursor_row >= len(self.hits):
            return
        hit = self.hits[event.cursor_row]
        text, at = self.searcher.document(hit)
        title = " · ".join(x for x in (own_title(hit), where(hit)) if x)
        self.push_screen(DocumentScreen(title, text, at, hit, self.query_one("#query", Input).value, self.query_lang))

    def action_delete_hit(self) -> None:
        """Ctrl+D on a hit of the Search tab: once the user says yes (:class:`ConfirmScreen`), delete its
        document (``encodr delete ID``), then search again."""
        table = self.query_one("#results", LineTable)
        if self.searcher is None or not self.hits or table.cursor_row >= len(self.hits):
            return
        document = self.hits[table.cursor_row].document
        self.push_screen(
            ConfirmScreen(f"Delete {document} from the index (every passage of it)?"),
            lambda yes: self.delete_document(document) if yes else self.set_status("nothing deleted"),
        )

    @work(thread=True, exclusive=True, group="delete")
    def delete_document(self, document: str) -> None:
        from ..core import dispatch
        from ..core.requests import DeleteRequest

        try:
            result = dispatch.call(DeleteRequest, {"ids": [document], "index": str(self.searcher.index.path)}, "tui")
        except EncodrError as exc:
            self.call_from_thread(self.set_status, f"error: {exc}")
            return
        self.call_from_thread(
            self.notify,
            f"deleted {document} ({result.record['deleted_texts']} passage(s)); {result.record['documents']} documents left",
        )
        self.call_from_thread(self.run_search, self.query_one("#query", Input).value, 0.0)

    # ── compare ──────────────────────────────────────────────────────────────
    @on(Input.Submitted, "#compare-a")
    @on(Input.Submitted, "#compare-b")
    def compare_submitted(self, event: Input.Submitted) -> None:
        a = self.query_one("#compare-a", Input).value
        b = self.query_one("#compare-b", Input).value
        if a.strip() and b.strip():
            self.run_compare(a, b)

    @work(thread=True, exclusive=True, group="compare")
    def run_compare(self, a: str, b: str) -> None:
        if self.searcher is None:
            self.call_from_thread(self.set_status, "open an index first (Workspace, F4)")
            return
        from ..core import dispatch

        try:
            result = dispatch.call(
                CompareRequest, {"a": a, "b": b, "index": str(self.searcher.index.path)}, "tui", searcher=self.searcher
            )
        except EncodrError as exc:
            self.call_from_thread(self.set_status, str(exc))
            return
        self.call_from_thread(self.show_compare, result)

    def show_compare(self, result) -> None:
        self.query_one("#cosine", Static).update(f"cosine: {result.cosine:.3f}  {score_bar(result.cosine, 20)}")
        for table_id, hits in (("#near-a", result.results[0].hits), ("#near-b", result.results[1].hits)):
            table = self.query_one(table_id, DataTable)
            table.clear()
            for h in hits:
                table.add_row(str(h.rank), f"{h.score:.3f}", clip(h.text, 60))
        self.update_status()

    # ── chrome ───────────────────────────────────────────────────────────────
    def set_status(self, text: str) -> None:
        """The status line's text; its box is one line the screen's width (CSS), so no layout pass follows (one per query
        otherwise)."""
        self.query_one("#status", Static).update(text, layout=False)

    def update_status(self) -> None:
        s = self.searcher
        if s is None:
            return
        meta = s.index.meta
        self.set_status(  # the hints first: the line is one row, cut at the terminal's width
            "".join(f"{note} · " for note in self.notes)
            + f"model {meta.model} ({meta.pooling}) · index {s.index.path.name}: {len(s.index):,} texts, {meta.index_type}"
            f"{' + PCR' if meta.pcr else ''} · languages {', '.join(meta.languages or ['?'])}"
            f"{f' · query language {self.last_lang}' if self.last_lang else ''}"
            f"{f' · re-ranked by {self.rerank}' if self.reranker else ''}"
            f" · last query {self.last_timings.get('total', 0.0):.1f} ms" + (f" · {self.caption}" if self.caption else "")
        )

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_show_tab(self, name: str) -> None:
        self.query_one(TabbedContent).active = name
        # focus moves into the pane: TabbedContent follows the focused widget's pane
        self.query_one(f"#{name}").query("Input, DataTable").first().focus()
