"""``encodr tune``: read strings, load a base model, train with a recipe, save atomically,
record the run. The method itself lives in :mod:`encodr.train` and :mod:`encodr.losses`."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Callable

import yaml

from . import registry
from .augment import add_drophead, set_dropout
from .data.text import Corpus, default_corpus, read_corpus
from .errors import EncodrError
from .models import Encoder, load_encoder, pick_device
from .outputs import atomic_dir, check_target
from .recipes import Recipe
from .train import TrainResult, fit, mirror_batches, mirror_loss, steps_per_epoch, tokenize

MIN_STRINGS = 2  # InfoNCE needs at least one in-batch negative


def load_training_strings(data: str | Corpus | None, recipe: Recipe, limit: int | None = None) -> Corpus:
    """The deduplicated training strings: from ``data`` (a file or a :class:`Corpus`), or
    the recipe's bundled default.

    Raises:
        EncodrError: unreadable input (see :func:`encodr.corpus.read_corpus`), or fewer
            than two distinct strings.
    """
    if isinstance(data, Corpus):
        corpus = data
    else:
        corpus = read_corpus(data, recipe.max_length) if data else default_corpus(recipe.default_data)
    if limit:
        corpus.strings = corpus.strings[:limit]
    if len(corpus.strings) < MIN_STRINGS:
        raise EncodrError(
            f"{corpus.source} has {len(corpus.strings)} distinct string after dropping {corpus.blank} blank and "
            f"{corpus.duplicates} duplicate lines; Mirror-BERT needs at least {MIN_STRINGS} (in-batch negatives), "
            f"ideally {recipe.batch_size}: add more lines"
        )
    return corpus


def run_tune(
    data: str | Corpus | None,
    recipe: Recipe,
    model: str | None,
    out: Path,
    overwrite: bool = False,
    device: str | None = None,
    limit: int | None = None,
    progress: bool = True,
    warn: Callable[[str], None] = print,
    on_step: Callable[[int, float], None] | None = None,
    eval_steps: int = 0,
    on_eval: Callable[[int, Encoder], None] | None = None,
) -> dict:
    """Fine-tune ``model`` on ``data`` with ``recipe`` and write a SentenceTransformer to ``out``.

    Args:
        data: UTF-8 text file, one string a line, or a :class:`Corpus`; ``None`` uses the
            recipe's default data.
        recipe: resolved recipe.
        model: base model spec (alias, directory, Hub id).
        out: output directory; it appears only when training succeeded.
        overwrite: replace an existing ``out``.
        device: ``cpu``/``cuda``; default: CUDA when available.
        limit: use only the first ``limit`` distinct strings.
        progress: show the progress bar.
        warn: where one-line warnings go.
        on_step: per-step callback ``(step, loss)``.
        eval_steps: with ``on_eval``, call it every this many steps (and at epoch ends).
        on_eval: ``(step, encoder)`` callback with the model being trained, in eval mode
            (e.g. to trace a dev-set score during training).

    Returns:
        The run summary (also written to ``out/encodr.json`` and the run registry).

    Raises:
        EncodrError: any bad input; KeyboardInterrupt passes through with nothing written.
    """
    out = Path(out)
    check_target(out, overwrite)
    registry.database()  # an unusable workspace or registry fails now, not after training
    corpus = load_training_strings(data, recipe, limit)
    n = len(corpus.strings)
    if n < recipe.batch_size:
        warn(f"only {n} distinct strings, fewer than batch_size {recipe.batch_size}: training with batch size {n}")
        recipe = dataclasses.replace(recipe, batch_size=n)
    device = pick_device(device)
    encoder = load_encoder(model, recipe.pooling, recipe.raw_pooling, recipe.max_length, device)
    ids, truncated = tokenize(encoder.tokenizer, corpus.strings, recipe.max_length)
    if truncated or corpus.long_lines:
        first = f" (first: line {corpus.long_lines[0]})" if corpus.long_lines else ""
        warn(f"{max(truncated, len(corpus.long_lines))} strings are longer than max_length={recipe.max_length} tokens and were truncated{first}")

    guide = None
    if recipe.false_negative_cos > 0:  # frozen base-model view of every string, before any update
        guide = encoder.encode(corpus.strings, batch_size=256, progress=progress)
    set_dropout(encoder.transformer, recipe.dropout)
    hooks = add_drophead(encoder.transformer, recipe.drophead) if recipe.drophead > 0 else []
    total = steps_per_epoch(n, recipe.batch_size) * recipe.epochs
    started = time.time()
    with atomic_dir(out, overwrite) as tmp:
        try:
            result: TrainResult = fit(
                encoder.st, mirror_batches(encoder.tokenizer, ids, recipe, guide), mirror_loss(recipe), recipe, total, device, progress, on_step,
                eval_steps=eval_steps, on_eval=(lambda step, epoch: on_eval(step, encoder)) if on_eval else None,
            )
        finally:
            for h in hooks:
                h.remove()
        encoder.save(tmp)
        summary = {
            "encodr_version": __import__("encodr").__version__,
            "base_model": encoder.name,
            "pooling": encoder.pooling,
            "recipe": recipe.to_dict(),
            "data": corpus.source,
            "data_sha256": corpus.sha256,
            "strings": n,
            "steps": result.steps,
            "examples": result.examples,
            "duration_s": round(time.time() - started, 2),
            "train_seconds": round(result.seconds, 2),
            "examples_per_s": round(result.examples_per_s, 2),
            "final_loss": round(result.final_loss, 5),
            "precision": result.precision,
            "device": result.device,
        }
        (tmp / "recipe.yaml").write_text(yaml.safe_dump(recipe.to_dict(), sort_keys=False))
        (tmp / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in result.log))
        (tmp / "encodr.json").write_text(json.dumps(summary, indent=2))
    summary["out"] = str(out.resolve())
    summary["run_id"] = registry.record(
        {
            "kind": "tune",
            "model": encoder.name,
            "recipe_name": recipe.name,
            "recipe": recipe.to_dict(),
            "data": corpus.source,
            "data_sha256": corpus.sha256,
            "strings": n,
            "duration_s": summary["duration_s"],
            "out": summary["out"],
            "metrics": {k: summary[k] for k in ("steps", "examples_per_s", "final_loss", "precision", "device")},
        }
    )
    return summary
