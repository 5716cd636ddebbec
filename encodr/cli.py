"""The ``encodr`` command line (Typer). A thin layer: every command calls the core
modules (:mod:`encodr.tune`, :mod:`encodr.evaluation`, :mod:`encodr.registry`) and prints
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

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Turn pretrained masked language models into strong encoders (Mirror-BERT), and evaluate them.",
)
out_console = Console()
err_console = Console(stderr=True)


def _warn(message: str) -> None:
    err_console.print(f"[yellow]encodr: warning:[/] {message}", highlight=False, soft_wrap=True)


def _emit_json(payload) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


@app.command()
def tune(
    file: Optional[str] = typer.Argument(None, help="UTF-8 text file, one string a line (default: the recipe's bundled data)."),
    recipe: str = typer.Option("sentence", "--recipe", "-r", help="Bundled recipe (word, phrase, sentence) or a .yaml path."),
    model: str = typer.Option("minilm", "--model", "-m", help="Base model: alias, local directory or Hub id."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: encodr-runs/RECIPE-TIME)."),
    overwrite: bool = typer.Option(False, help="Replace an existing output directory."),
    limit: Optional[int] = typer.Option(None, min=2, help="Use only the first N distinct strings."),
    device: Optional[str] = typer.Option(None, help="cpu or cuda (default: cuda when available)."),
    temperature: Optional[float] = typer.Option(None, help="InfoNCE temperature τ."),
    span_mask: Optional[int] = typer.Option(None, help="Span mask length k in tokens (0: off)."),
    max_length: Optional[int] = typer.Option(None, help="Max sequence length in tokens."),
    epochs: Optional[int] = typer.Option(None),
    batch_size: Optional[int] = typer.Option(None, help="Distinct strings per step (2× views)."),
    lr: Optional[float] = typer.Option(None, help="AdamW learning rate."),
    weight_decay: Optional[float] = typer.Option(None),
    dropout: Optional[float] = typer.Option(None),
    drophead: Optional[float] = typer.Option(None),
    pooling: Optional[str] = typer.Option(None, help="auto | cls | mean"),
    raw_pooling: Optional[str] = typer.Option(None, help="Pooling for a raw MLM: cls | mean"),
    seed: Optional[int] = typer.Option(None),
    amp: Optional[str] = typer.Option(None, help="auto | bf16 | fp16 | no (CUDA only)"),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
) -> None:
    """Fine-tune a base model with a Mirror-BERT recipe and save a SentenceTransformer."""
    from . import recipes
    from .tune import run_tune

    overrides = {
        "temperature": temperature, "span_mask": span_mask, "max_length": max_length, "epochs": epochs,
        "batch_size": batch_size, "lr": lr, "weight_decay": weight_decay, "dropout": dropout,
        "drophead": drophead, "pooling": pooling, "raw_pooling": raw_pooling, "seed": seed, "amp": amp,
    }  # fmt: skip
    resolved = recipes.load(recipe, overrides)
    out = out or Path("encodr-runs") / f"{resolved.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    err_console.print(f"encodr: tuning {model} with recipe '{resolved.name}' → {out}", highlight=False)
    try:
        summary = run_tune(file, resolved, model, out, overwrite, device, limit, progress=True, warn=_warn)
    except KeyboardInterrupt:
        raise EncodrError(f"interrupted by Ctrl-C; nothing was written to {out}") from None
    if as_json:
        _emit_json(summary)
        return
    table = Table(title=f"encodr tune → {summary['out']}")
    table.add_column("field")
    table.add_column("value")
    for key in ("base_model", "pooling", "data", "strings", "steps", "train_seconds", "examples_per_s", "final_loss", "precision", "device", "run_id"):
        table.add_row(key, str(summary[key]))
    out_console.print(table)


@app.command("eval")
def evaluate(
    suite: str = typer.Argument(..., help="sts | words | linking"),
    model: str = typer.Option("minilm", "--model", "-m", help="Model to evaluate (alias, directory, Hub id)."),
    data: Optional[List[str]] = typer.Option(None, "--data", "-d", help="Evaluation file or bundled task name; repeatable."),
    compare: Optional[str] = typer.Option(None, help="A second model, shown side by side with the difference."),
    device: Optional[str] = typer.Option(None),
    as_json: bool = typer.Option(False, "--json", help="Print scores as JSON."),
) -> None:
    """Evaluate a bi-encoder: STS (Spearman ρ×100), word similarity, or entity linking (acc@k)."""
    from . import evaluation
    from .models import load_encoder

    evaluation.tasks_for(suite, data)  # validate before loading models
    reports = []
    for spec in [model] + ([compare] if compare else []):
        encoder = load_encoder(spec, device=device)
        reports.append(evaluation.run(suite, encoder, data, progress=not as_json))
    if as_json:
        _emit_json(reports[0].to_dict() if len(reports) == 1 else {"models": [r.to_dict() for r in reports]})
        return
    table = Table(title=f"encodr eval {suite}")
    table.add_column("dataset")
    table.add_column("metric")
    table.add_column("n", justify="right")
    for r in reports:
        table.add_column(r.model, justify="right")
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
def models(as_json: bool = typer.Option(False, "--json")) -> None:
    """List model aliases and the models in the local Hugging Face cache."""
    from .models import list_models

    rows = list_models()
    if as_json:
        _emit_json(rows)
        return
    table = Table(title="models")
    for col in ("name", "source", "description", "path"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["source"], r["description"], r["path"] or "(not installed)")
    out_console.print(table)


@app.command("recipes")
def list_recipes(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the bundled recipes and their main settings."""
    from . import recipes

    rows = [recipes.load(name).to_dict() for name in recipes.available()]
    if as_json:
        _emit_json(rows)
        return
    table = Table(title="recipes")
    cols = ("name", "temperature", "span_mask", "max_length", "epochs", "batch_size", "lr", "pooling", "default_data")
    for col in cols:
        table.add_column(col)
    for r in rows:
        table.add_row(*[str(r[c]) for c in cols])
    out_console.print(table)


@app.command()
def runs(as_json: bool = typer.Option(False, "--json"), limit: int = typer.Option(50, min=1)) -> None:
    """List recorded training runs, newest first."""
    from .registry import runs as list_runs

    rows = list_runs(limit=limit)
    if as_json:
        _emit_json(rows)
        return
    table = Table(title="runs")
    for col in ("id", "created", "kind", "model", "recipe", "strings", "duration_s", "ex/s", "loss", "out"):
        table.add_column(col)
    for r in rows:
        m = r.get("metrics") or {}
        table.add_row(
            str(r["id"]), r["created"], r.get("kind", ""), r["model"], r.get("recipe_name", ""), str(r.get("strings", "")),
            str(r.get("duration_s", "")), str(m.get("examples_per_s", "")), str(m.get("final_loss", "")), r.get("out", ""),
        )  # fmt: skip
    out_console.print(table)


def main() -> None:
    """Console-script entry point: user errors → one line on stderr, exit status 2."""
    try:
        app()
    except EncodrError as exc:
        err_console.print(f"[red]encodr: error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("[red]encodr: error:[/] interrupted by Ctrl-C; nothing was written", highlight=False)
        sys.exit(2)
