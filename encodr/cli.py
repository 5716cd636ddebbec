"""The ``encodr`` command line (Typer). A thin layer: every command calls the core
modules (:mod:`encodr.methods`, :mod:`encodr.index`, :mod:`encodr.evaluation`, :mod:`encodr.registry`) and prints
a rich table, or JSON with ``--json``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from .errors import EncodrError

BACKEND_HELP = "torch | onnx | onnx-int8 (onnxruntime on the CPU; int8: dynamic quantisation, faster, see bench/encode_speed.py for the quality cost)."

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Turn pretrained masked language models into strong encoders (Mirror-BERT, Trans-Encoder), index and search text, evaluate.",
)
out_console = Console()
err_console = Console(stderr=True)


def _warn(message: str) -> None:
    err_console.print(f"[yellow]encodr: warning:[/] {message}", highlight=False, soft_wrap=True)


def _emit_json(payload) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


def _interactive_threads() -> None:
    """For query-at-a-time commands: idle OpenMP threads sleep instead of spinning, so torch and
    FAISS do not steal each other's cores. Must run before torch or faiss is imported."""
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _print_record(title: str, record: dict, keys: tuple[str, ...], as_json: bool) -> None:
    """One record as JSON (all fields) or as a field/value table of ``keys``."""
    if as_json:
        _emit_json(record)
        return
    table = Table(title=title)
    table.add_column("field")
    table.add_column("value")
    for key in keys:
        table.add_row(key, str(record[key]))
    out_console.print(table)


def _print_rows(title: str, rows: list[dict], columns: tuple[str, ...], as_json: bool, missing: str = "") -> None:
    """A list of records as JSON (all fields) or as a table of ``columns``."""
    if as_json:
        _emit_json(rows)
        return
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for r in rows:
        table.add_row(*[missing if r.get(c) is None else str(r[c]) for c in columns])
    out_console.print(table)


class _Bars:
    """Draws :class:`~encodr.progress.ProgressEvent` s as rich bars on stderr, one bar per
    task label; nothing is drawn before the first event (so a bad-input error stays alone)."""

    def __init__(self, enabled: bool = True):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bars = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                             TimeElapsedColumn(), TimeRemainingColumn(), console=err_console, disable=not enabled)  # fmt: skip
        self.tasks: dict[str, int] = {}

    def __call__(self, event) -> None:
        if not self.bars.live.is_started:
            self.bars.start()
        if event.task not in self.tasks:
            self.tasks[event.task] = self.bars.add_task(event.task, total=event.total, info="")
        info = "  ".join(f"{k} {v:.4f}" if k == "loss" else (f"{k} {v:.2f}" if k == "dev" else f"{v:.0f} {k}") for k, v in event.fields.items())
        self.bars.update(self.tasks[event.task], completed=event.completed, total=event.total, info=info)

    def __enter__(self) -> "_Bars":
        return self

    def __exit__(self, *exc) -> None:
        if self.bars.live.is_started:
            self.bars.stop()


def _is_main_process() -> bool:
    """False in the non-zero ranks of a torchrun / accelerate launch."""
    import os

    return int(os.environ.get("RANK", "0")) == 0


@app.command()
def tune(
    file: Optional[str] = typer.Argument(None, help="Training data: UTF-8 text, one string a line (Trans-Encoder: pairs or sentences). Default: the recipe's bundled data."),
    recipe: str = typer.Option("sentence", "--recipe", "-r", help="Bundled recipe (encodr recipes) or a .yaml path."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Base model: alias, local directory or Hub id (default: minilm). Repeat for Trans-Encoder mutual distillation."),
    dev: Optional[str] = typer.Option(None, help="Keep the best checkpoint on this set: a bundled one (stsb-dev, mesh-dev, wordsim353) or a scored-pairs file."),
    bitext: Optional[List[str]] = typer.Option(None, "--bitext", help="Translation pairs, source<TAB>target (recipes that learn from bitext); repeatable."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: encodr-runs/RECIPE-TIME)."),
    overwrite: bool = typer.Option(False, help="Replace an existing output directory."),
    limit: Optional[int] = typer.Option(None, min=2, help="Use only the first N distinct strings (Trans-Encoder: pairs)."),
    device: Optional[str] = typer.Option(None, help="cpu, cuda, cuda:N or mps (default: cuda when available)."),
    temperature: Optional[float] = typer.Option(None, help="InfoNCE temperature τ."),
    span_mask: Optional[int] = typer.Option(None, help="Span mask length k in tokens (0: off)."),
    max_length: Optional[int] = typer.Option(None, help="Max sequence length in tokens."),
    epochs: Optional[int] = typer.Option(None),
    batch_size: Optional[int] = typer.Option(None, help="Examples per step over all processes (Mirror: distinct strings, 2× views)."),
    mini_batch: Optional[int] = typer.Option(None, help="GradCache chunk size: a large batch in the memory of this many views (0: off)."),
    lr: Optional[float] = typer.Option(None, help="AdamW learning rate."),
    weight_decay: Optional[float] = typer.Option(None),
    max_grad_norm: Optional[float] = typer.Option(None, help="Gradient clipping (0: off)."),
    dropout: Optional[float] = typer.Option(None),
    drophead: Optional[float] = typer.Option(None),
    pooling: Optional[str] = typer.Option(None, help="auto | cls | mean"),
    raw_pooling: Optional[str] = typer.Option(None, help="Pooling for a raw MLM: cls | mean"),
    seed: Optional[int] = typer.Option(None),
    amp: Optional[str] = typer.Option(None, help="auto | bf16 | fp16 | no (auto: bf16 or fp16 on CUDA, fp32 on CPU)"),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Any recipe field as KEY=VALUE; repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
) -> None:
    """Fine-tune a base model with a recipe (encodr recipes lists them); saves a SentenceTransformer (Trans-Encoder: bi/ and cross/)."""
    from .methods import TuneRequest, check_request, load_recipe
    from .methods import tune as run_tune  # heavy imports before the start line: a Ctrl-C after it must not land inside one

    overrides = {
        "temperature": temperature, "span_mask": span_mask, "max_length": max_length, "epochs": epochs,
        "batch_size": batch_size, "mini_batch": mini_batch, "lr": lr, "weight_decay": weight_decay, "max_grad_norm": max_grad_norm,
        "dropout": dropout, "drophead": drophead, "pooling": pooling, "raw_pooling": raw_pooling, "seed": seed, "amp": amp,
    }  # fmt: skip
    for item in set_ or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise EncodrError(f"--set takes KEY=VALUE, got '{item}'; e.g. --set temperature=0.05")
        overrides[key.strip()] = value.strip()
    resolved = load_recipe(recipe, {k: v for k, v in overrides.items() if v is not None})
    models = model or ["minilm"]
    out = out or Path("encodr-runs") / f"{resolved.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    bars = _Bars(enabled=not as_json)
    request = TuneRequest(out=out, data=file, models=models, overwrite=overwrite, device=device, dev=dev, bitext=list(bitext or []),
                          limit=limit, progress=bars, warn=_warn)  # fmt: skip
    check_request(resolved, request)
    try:  # from the first line printed on, Ctrl-C is reported as one line with exit status 2
        if _is_main_process():
            err_console.print(f"encodr: tuning {' + '.join(models)} with recipe '{resolved.name}' → {out}", highlight=False)
        with bars:
            summary = run_tune(resolved, request)
    except KeyboardInterrupt as exc:
        raise EncodrError(f"{_interruption(exc)}; nothing was written to {out}, and the run is recorded as cancelled") from None
    if summary is None:  # not the main process: it prints nothing
        return
    table = summary.pop("table")
    if as_json:
        _emit_json(summary)
        return
    ids = summary["run_ids"]
    caption = "; ".join(filter(None, [table.get("caption"), f"run{'s' * (len(ids) > 1)} {', '.join(map(str, ids))} in encodr runs"]))
    view = Table(title=f"{table['title']} → {summary['out']}", caption=caption)
    for col in table["columns"]:
        view.add_column(col)
    for row in table["rows"]:
        view.add_row(*row)
    out_console.print(view)


def _load_scorer(spec: str, cross: bool, device: Optional[str], backend: str = "torch"):
    """A bi-encoder, or with ``cross`` a cross-encoder (both have ``pair_scores``)."""
    if cross:
        if backend != "torch":
            raise EncodrError(f"--backend {backend} runs bi-encoders; a cross-encoder (--cross) runs on torch: drop --backend")
        from .models import load_cross

        return load_cross(spec, device=device)
    from .models import load_encoder

    return load_encoder(spec, device=device, backend=backend)


def _pcr_variant(pcr: bool, variant: Optional[str]) -> Optional[str]:
    """The PCR variant ``--pcr`` / ``--pcr-variant`` ask for (``None`` without ``--pcr``), checked
    before any work."""
    from .models.pcr import DEFAULT_VARIANT, PCR_VARIANTS

    if variant and not pcr:
        raise EncodrError("--pcr-variant chooses how --pcr fits its components; pass --pcr too")
    if variant and variant not in PCR_VARIANTS:
        raise EncodrError(f"unknown PCR variant '{variant}'; choose one of {', '.join(PCR_VARIANTS)}")
    return (variant or DEFAULT_VARIANT) if pcr else None


@app.command("eval")
def evaluate(
    suite: str = typer.Argument(..., help="sts | words | linking | pairs | bitext"),
    files: Optional[List[str]] = typer.Argument(None, help="Evaluation files (same as --data)."),
    model: str = typer.Option("minilm", "--model", "-m", help="Model to evaluate (alias, directory, Hub id)."),
    data: Optional[List[str]] = typer.Option(None, "--data", "-d", help="Evaluation file or bundled task name; repeatable."),
    compare: Optional[str] = typer.Option(None, help="A second model, shown side by side with the difference."),
    cross: bool = typer.Option(False, "--cross", help="--model is a cross-encoder (sts and pairs only)."),
    compare_cross: bool = typer.Option(False, "--compare-cross", help="--compare is a cross-encoder."),
    pcr: bool = typer.Option(False, "--pcr", help="bitext: remove each language's first principal component before retrieval."),
    pcr_variant: Optional[str] = typer.Option(None, help="With --pcr: centred | uncentred."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="sts, words, pairs: write the score distributions of high- and low-gold pairs (each model) to this PNG."),
    device: Optional[str] = typer.Option(None),
    backend: str = typer.Option("torch", help=BACKEND_HELP + " For --model; --compare runs on torch."),
    as_json: bool = typer.Option(False, "--json", help="Print scores as JSON."),
) -> None:
    """Evaluate a model: STS (Spearman ρ×100), word similarity, entity linking (acc@k), binary pairs (ROC-AUC×100), or bitext retrieval (Tatoeba acc@1, both directions). Cross-encoders (--cross) on sts and pairs."""
    from . import evaluation
    from .evaluation.tasks import CROSS_SUITES

    data = [*(files or []), *(data or [])] or None
    evaluation.tasks_for(suite, data)  # validate before loading models
    if (cross or compare_cross) and suite not in CROSS_SUITES:
        raise EncodrError(f"a cross-encoder scores pairs; --cross works with 'eval {' / '.join(CROSS_SUITES)}', not '{suite}'")
    if compare_cross and not compare:
        raise EncodrError("--compare-cross says the --compare model is a cross-encoder; pass --compare MODEL too")
    if (pcr or pcr_variant) and suite != "bitext":
        raise EncodrError(f"--pcr applies to 'eval bitext' (cross-language retrieval), not '{suite}'")
    if plot is not None and suite not in ("sts", "words", "pairs"):
        raise EncodrError(f"--plot draws the scores of gold-scored pairs; it works with eval sts, words and pairs, not '{suite}'")
    if plot is not None:
        from .plots import check_png

        check_png(plot)
    variant = _pcr_variant(pcr, pcr_variant)
    options = {"pcr": variant} if variant else {}
    specs = [(model, cross)] + ([(compare, compare_cross)] if compare else [])
    scorers = [_load_scorer(spec, is_cross, device, backend if i == 0 else "torch") for i, (spec, is_cross) in enumerate(specs)]  # both load before either is scored
    reports = [evaluation.run(suite, scorer, data, progress=not as_json, **options) for scorer in scorers]
    if plot is not None:
        from .plots import distribution_figure, save_png

        panels = [p for scorer in scorers for p in evaluation.score_distributions(suite, scorer, data)]
        save_png(distribution_figure(f"encodr eval {suite}: scores of high- and low-gold pairs", panels), plot)
    if as_json:
        dicts = [{**r.to_dict(), "backend": backend if i == 0 else "torch"} for i, r in enumerate(reports)]
        _emit_json(dicts[0] if len(dicts) == 1 else {"models": dicts})
        return
    table = Table(title=f"encodr eval {suite}")
    table.add_column("dataset")
    table.add_column("metric")
    table.add_column("n", justify="right")
    for i, r in enumerate(reports):
        table.add_column(f"{r.model} ({backend})" if i == 0 and backend != "torch" else r.model, justify="right")
    if compare:
        table.add_column("Δ (model − compare)", justify="right")
    rows = [(s.dataset, s.metric, s.n) for s in reports[0].scores]
    for i, (dataset, metric, n) in enumerate(rows):
        values = [r.scores[i].value for r in reports]
        cells = [f"{v:.2f}" for v in values] + ([f"{values[0] - values[1]:+.2f}"] if compare else [])
        table.add_row(dataset, metric, str(n), *cells)
    if reports[0].mean is not None:
        means = [r.mean for r in reports]
        table.add_row("mean", evaluation.tasks.PRIMARY[suite], "", *[f"{m:.2f}" for m in means], *([f"{means[0] - means[1]:+.2f}"] if compare else []))
    out_console.print(table)


@app.command()
def score(
    text_a: str = typer.Argument(..., help="First text."),
    text_b: str = typer.Argument(..., help="Second text."),
    model: str = typer.Option("minilm", "--model", "-m", help="Model (alias, directory, Hub id)."),
    cross: bool = typer.Option(False, "--cross", help="--model is a cross-encoder: σ of its score, both orders averaged."),
    device: Optional[str] = typer.Option(None),
    backend: str = typer.Option("torch", help=BACKEND_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Similarity of two texts: cosine for a bi-encoder, σ(score) for a cross-encoder."""
    for name, text in (("TEXT_A", text_a), ("TEXT_B", text_b)):
        if not text.strip():  # as in the TUI's compare view, which scores only two non-blank texts
            raise EncodrError(f"{name} is blank; pass two non-blank texts, e.g. encodr score \"a cat\" \"a kitten\"")
    _interactive_threads()
    scorer = _load_scorer(model, cross, device, backend)
    value = float(scorer.pair_scores([text_a], [text_b])[0])
    record = {"model": model, "kind": "cross-encoder" if cross else "bi-encoder", "metric": "sigmoid score" if cross else "cosine",
              "score": round(value, 4), "text_a": text_a, "text_b": text_b}  # fmt: skip
    _print_record("encodr score", record, ("model", "kind", "metric", "score"), as_json)


@app.command("index")
def index_cmd(
    corpus: List[str] = typer.Argument(..., help="Text files (one text a line) or TSV files with a 'text' column (optional id, lang)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model (default: minilm; with --add, the index's model)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Index directory (default: $ENCODR_HOME/indexes/NAME; with --add, a workspace index name works too)."),
    index_type: str = typer.Option("auto", help="auto | flat | hnsw | ivf | ivfpq (auto: flat up to 50,000 vectors, hnsw up to 250,000, ivfpq above)."),
    add: bool = typer.Option(False, "--add", help="Append to an existing index (texts already in it are skipped)."),
    overwrite: bool = typer.Option(False, help="Replace an existing index."),
    pcr: bool = typer.Option(False, help="Remove each language's first principal component (language-agnostic search)."),
    pcr_variant: Optional[str] = typer.Option(None, help="With --pcr: centred (PCA of the covariance) | uncentred (CMLM §5.2: first singular vector)."),
    lang: Optional[str] = typer.Option(None, help="Language of texts without a lang column, ISO 639-3 (default: detected per text)."),
    batch_size: Optional[int] = typer.Option(None, min=1, help="Texts per forward pass (default: per backend and device)."),
    backend: str = typer.Option("torch", help=BACKEND_HELP),
    processes: int = typer.Option(1, min=1, help="Encode on N processes: one per GPU (cuda:0…) when CUDA is visible, else CPU processes sharing the cores. Torch backend."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Encode a corpus and store it in a FAISS + SQLite index."""
    from .index import build
    from .index.build import SUMMARY
    from .models.pcr import DEFAULT_VARIANT
    from .paths import home

    variant = _pcr_variant(pcr, pcr_variant) or DEFAULT_VARIANT
    out = out or home() / "indexes" / Path(corpus[0]).stem
    with _Bars(enabled=not as_json) as bars:
        meta = build(corpus, model, out, index_type, add, overwrite, pcr, lang, batch_size, progress=bars, pcr_variant=variant,
                     backend=backend, processes=processes)  # fmt: skip
    _print_record(f"encodr index → {meta['path']}", meta, SUMMARY, as_json)


@app.command()
def search(
    query: Optional[str] = typer.Argument(None, help="The query; without it, one query a line from stdin."),
    index: Path = typer.Option(..., "--index", "-i", help="Index directory, or the name of one in the workspace (encodr indexes)."),
    k: int = typer.Option(10, "-k", min=1, help="Results per query."),
    lang: Optional[str] = typer.Option(None, help="Query language, ISO 639-3 (for --pcr indexes; default: detected among the index's languages)."),
    hit_lang: Optional[str] = typer.Option(None, "--hit-lang", help="Only hits in these languages, comma-separated (e.g. spa,fra)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Must match the index's model."),
    backend: Optional[str] = typer.Option(None, help="torch | onnx | onnx-int8 for the queries (default: the one the index was built with)."),
    nprobe: Optional[int] = typer.Option(None, help="IVF indexes: lists visited per query (default 32 for ivf, 128 for ivfpq); more: slower, closer to exact."),
    ef_search: Optional[int] = typer.Option(None, "--ef-search", help="HNSW indexes: candidate list size (default 128); more: slower, closer to exact."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Nearest texts in an index: rank, score, language, text, source:line."""
    if query is not None and not query.strip():  # stdin and the TUI skip blank queries too
        raise EncodrError("QUERY is blank; pass a non-blank query, or none to read one query a line from stdin")
    _interactive_threads()
    from .index import Searcher

    searcher = Searcher(index, model, backend=backend, nprobe=nprobe, ef_search=ef_search)
    for line in searcher.warnings:
        _warn(line)
    queries = [query] if query is not None else [line.strip() for line in sys.stdin if line.strip()]
    if not queries:
        raise EncodrError("no query given; pass QUERY or one query a line on stdin")
    hit_langs = [c.strip() for c in hit_lang.split(",") if c.strip()] if hit_lang else None
    results = searcher.search(queries, k, lang, hit_langs)
    if as_json:
        payload = [{"query": q, "lang": code, "hits": [h.to_dict() for h in hits]} for q, code, hits in zip(queries, searcher.last_langs, results)]
        _emit_json(payload[0] if query is not None else payload)
        return
    for q, code, hits in zip(queries, searcher.last_langs, results):
        table = Table(title=f"{q}  [{code}]")
        for col, just in (("rank", "right"), ("score", "right"), ("lang", "left"), ("text", "left"), ("source", "left")):
            table.add_column(col, justify=just)
        for h in hits:
            table.add_row(str(h.rank), f"{h.score:.3f}", h.lang or "", h.text, f"{Path(h.source).name}:{h.line}")
        out_console.print(table)


@app.command()
def indexes(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the indexes in the workspace ($ENCODR_HOME/indexes)."""
    from .index import list_indexes

    _print_rows("indexes (search one with --index NAME)", list_indexes(), ("name", "model", "backend", "index_type", "count", "bytes_per_vector", "pcr", "languages", "error"), as_json)


@app.command()
def tui(index: Optional[Path] = typer.Option(None, "--index", "-i", help="Index directory or workspace index name (default: pick one).")) -> None:
    """Interactive terminal UI: search, compare two texts, pick indexes, models and runs."""
    _interactive_threads()
    from .tui import EncodrApp

    if index is not None:
        from .index import Index

        Index.open(index)  # report a broken index here, as a one-line error
    EncodrApp(index).run()


@app.command()
def models(as_json: bool = typer.Option(False, "--json")) -> None:
    """List model aliases and the models in the local Hugging Face cache."""
    from .models import list_models

    _print_rows("models", list_models(), ("name", "source", "description", "path"), as_json, missing="(not installed)")


@app.command("recipes")
def list_recipes(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the bundled recipes and their main settings."""
    from .methods import load_recipe
    from .methods.recipe import available

    rows = [load_recipe(name).to_dict() for name in available()]
    columns = ("name", "method", "temperature", "span_mask", "max_length", "epochs", "batch_size", "lr", "cycles", "pooling", "default_data")
    _print_rows("recipes", rows, columns, as_json, missing="–")


runs_app = typer.Typer(help="Recorded training runs: list them, newest first, or show one (encodr runs show ID).", no_args_is_help=False)
app.add_typer(runs_app, name="runs")


@runs_app.callback(invoke_without_command=True)
def runs(ctx: typer.Context, as_json: bool = typer.Option(False, "--json"), limit: int = typer.Option(50, min=1)) -> None:
    """List recorded training runs, newest first (encodr runs show ID: one run, its curves)."""
    if ctx.invoked_subcommand is not None:
        return
    from .registry import runs as list_runs

    rows = list_runs(limit=limit)
    if as_json:
        _emit_json(rows)
        return
    table = Table(title="runs")
    for col in ("id", "created", "kind", "model", "recipe", "data", "seconds", "ex/s", "result"):
        table.add_column(col, justify="right" if col in ("id", "seconds", "ex/s") else "left")
    table.add_column("out", overflow="fold")  # the whole path, to pass on to --model
    for r in rows:
        m = r.get("metrics") or {}
        if r.get("unreadable"):
            result = f"unreadable row: {r['unreadable']}"
        elif r.get("status") == "cancelled":
            result = "cancelled"
        elif "final_loss" in m:
            result = f"loss {m['final_loss']:.4f}"
            if m.get("dev_metric"):  # selected on --dev: the kept checkpoint's score
                best = m["best"]
                result += f" · dev {m['dev_metric']} {best['dev']:.2f} ({'start kept' if best['step'] == 0 else 'step ' + str(best['step'])})"
        else:
            dev = (m.get("best") or {}).get("dev")
            result = "–" if dev is None else f"dev ρ {dev:.2f}"
        table.add_row(
            str(r.get("id", "")), str(r.get("created", ""))[:16], str(r.get("kind", "")), _short_path(str(r.get("model", ""))),
            str(r.get("recipe_name", "")), _short_path(str(r.get("data", ""))), str(r.get("duration_s", "")), str(m.get("examples_per_s", "")),
            result, _short_path(str(r.get("out", ""))),
        )  # fmt: skip
    out_console.print(table)


@runs_app.command("show")
def runs_show(
    run_id: int = typer.Argument(..., help="The run's id (encodr runs)."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write the loss curve and the dev curve to this PNG."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """One run: its details, recipe, losses and dev curve; --plot draws the curves."""
    from .registry import get_run, run_log

    if plot is not None:
        from .plots import check_png

        check_png(plot)
    row = get_run(run_id)
    metrics = row.get("metrics") or {}
    log = run_log(row)
    curve = metrics.get("dev_curve") or []
    if plot is not None:
        if not log and not curve:
            raise EncodrError(f"run {run_id} has no loss log (its output {row.get('out')} is gone) and no dev curve; nothing to plot")
        from .plots import run_figure, save_png

        title = f"run {run_id}: {row.get('recipe_name', '')} on {_short_path(str(row.get('model', '')))}"
        save_png(run_figure(title, log, curve, f"{metrics.get('dev_metric', 'dev')} ({metrics.get('dev_set', 'dev')})"), plot)
    if as_json:
        _emit_json({**row, "loss_log": log, "plot": str(plot) if plot else None})
        return
    fields = [("id", row["id"]), *([("unreadable", row["unreadable"])] if row.get("unreadable") else []), ("created", row.get("created")), ("kind", row.get("kind")), ("model", row.get("model")),
              ("recipe", row.get("recipe_name")), ("data", row.get("data")), ("strings", row.get("strings")),
              ("seconds", row.get("duration_s")), ("out", row.get("out"))]  # fmt: skip
    fields += [(k, v) for k, v in metrics.items() if not isinstance(v, (dict, list))]
    if curve:
        fields.append(("dev curve", " → ".join(f"{p['dev']:.2f} (step {p['step']})" for p in curve)))
    if log:
        fields.append(("loss", f"{log[0]['loss']:.4f} (step {log[0]['step']}) → {log[-1]['loss']:.4f} (step {log[-1]['step']}), {len(log)} points"))
    if plot is not None:
        fields.append(("plot", str(plot)))
    record = {key: "" if value is None else value for key, value in fields}
    _print_record(f"run {run_id}", record, tuple(record), False)
    recipe = row.get("recipe") or {}
    if recipe:
        _print_record("recipe", recipe, tuple(recipe), False)


def _short_path(value: str) -> str:
    """``value`` relative to the working directory when it is a path below it, else unchanged."""
    try:
        return str(Path(value).relative_to(Path.cwd())) if Path(value).is_absolute() else value
    except ValueError:
        return value


def _interruption(exc: KeyboardInterrupt) -> str:
    """How a run was stopped: by Ctrl-C, or by a signal or a dead launcher (:mod:`encodr.signals`)."""
    from .signals import Terminated

    return f"stopped: {exc.reason}" if isinstance(exc, Terminated) else "interrupted by Ctrl-C"


def main() -> None:
    """Console-script entry point: user errors, OS faults (full disk, read-only…), Ctrl-C and
    SIGTERM → one line on stderr, exit status 2."""
    from .outputs import os_fault
    from .signals import install

    install()
    try:
        app()
    except EncodrError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(str(os_fault(exc)))
    except KeyboardInterrupt as exc:
        _fail(f"{_interruption(exc)}; nothing was written")


def _fail(message: str) -> None:
    err_console.print(f"[red]encodr: error:[/] {message}", highlight=False, soft_wrap=True)
    sys.exit(2)
