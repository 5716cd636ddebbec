"""Retrieval training on a user's documents: read them as ``encodr index`` reads them, hold out
a label-free dev set (``--dev auto``) or read a real one (``--dev DIR``), split the documents
into passages that fit the model, train on label-free pairs, keep the best checkpoint, save a
SentenceTransformer. Runs through :func:`encodr.training.run.run`."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from ...data.files import Skipped, expand, iter_records, passage_splitter
from ...data.records import Record
from ...errors import EncodrError
from ...models import load_encoder
from ...training import FitOptions, Outcome, RunContext
from .config import check_dims, dims_list
from .pairs import Passage, retrieval_stream

AUTO = "auto"  # --dev auto: the label-free dev set cut from the documents


def read_documents(data: str | None, limit: int | None = None) -> tuple[list[Record], list[Skipped]]:
    """The documents under ``data`` (a file or a folder, read as ``encodr index`` reads it:
    Markdown, HTML, PDF, Office and e-book files, text, CSV/TSV, JSONL), whole, the first ``limit`` of them.

    Raises:
        EncodrError: no data given, or no text in it; see :func:`encodr.data.files.iter_records`.
    """
    if not data:
        raise EncodrError("the retrieval recipe learns from your documents; pass a file or folder: encodr tune DOCS --recipe retrieval --dev auto")
    files, skipped = expand([str(data)])
    found = set(files) - {str(data)}
    documents: list[Record] = []
    for f in files:
        for record in iter_records(f, None, None, skipped if f in found else None):
            documents.append(record)
            if limit and len(documents) >= limit:
                return documents, skipped
    if len(documents) < 2:
        raise EncodrError(f"{data}: {len(documents)} document(s) with text; retrieval training needs at least 2 (in-batch negatives)")
    return documents, skipped


def run(ctx: RunContext) -> Outcome:
    """Fine-tune ``ctx.request.models[0]`` for retrieval on the request's documents.

    With ``--dev auto``, :func:`encodr.evaluation.pseudo.pseudo_dev` holds out
    ``dev_queries`` sentences (cut out of the training documents too; with ``dev_holdout:
    documents`` their whole documents stay out of training) and checkpoints are
    scored by nDCG@10 of dense search for them over the whole corpus; with ``--dev DIR``, on a
    BEIR folder's dev (else train) queries. The starting model is scored first and kept when no
    step beats it (one warning line says so). A report set (a BEIR folder, for studies) is
    scored at every evaluation too and recorded beside the dev curve.

    Raises:
        EncodrError: bad input (documents, dev set, model), checked before training.
    """
    from ...evaluation.pseudo import pseudo_dev
    from ..base import fit_report, load_dev

    request, recipe = ctx.request, ctx.recipe
    documents, skipped = read_documents(request.data, request.limit)
    for s in skipped:
        ctx.warn(f"skipped {s.path}: {s.reason}")
    with tempfile.TemporaryDirectory(prefix="encodr-retrieval-dev-") as tmp:
        held = None
        if request.dev == AUTO:
            held = pseudo_dev(documents, recipe.dev_queries, recipe.seed, recipe.dev_documents)
            documents = held.training_documents(recipe.dev_holdout)  # the pseudo-queries (or their documents) are never trained on
            if len(documents) < 2:
                raise EncodrError(f"dev_holdout documents leaves {len(documents)} document(s) to train on; lower dev_queries or use dev_holdout sentences")
            dev = load_dev(ctx, str(held.write(Path(tmp) / "auto-dev")), "ndcg@10")
        else:
            dev = load_dev(ctx, request.dev, "ndcg@10")
        report = load_dev(ctx, request.report, "ndcg@10", role="the report set")
        encoder = load_encoder(request.models[0], recipe.pooling, recipe.raw_pooling, recipe.max_length, ctx.trainer.device)
        check_dims(dims_list(recipe.matryoshka_dims), encoder.dimension)  # before any training
        split = passage_splitter(encoder.tokenizer, recipe.max_length - 2)
        passages = [Passage.of(chunk, d.title) for d in documents for _, chunk in split(d.text)]
        if len(passages) < recipe.batch_size:
            size = max(2, len(passages) - len(passages) % ctx.trainer.world)
            ctx.warn(f"only {len(passages)} passages, fewer than batch_size {recipe.batch_size}: training with batch size {size}")
            recipe = ctx.recipe = dataclasses.replace(recipe, batch_size=size)
        reported: list[float] = []

        def evaluate() -> float:
            if report is not None:
                reported.append(report.score(encoder))
            return dev.score(encoder)

        result = ctx.trainer.fit(
            encoder.module, [retrieval_stream(encoder.tokenizer, passages, recipe, ctx.trainer.world)], recipe.optim(),
            FitOptions(evaluate=evaluate if dev else None, dev_metric=dev.metric if dev else "dev", eval_steps=recipe.eval_steps, progress=ctx.progress,
                       on_step=request.on_step),
        )  # fmt: skip
    for point, value in zip(result.dev_curve, reported):
        point["report"] = value
    ctx.save(".", encoder.save)
    summary, metrics, shown = fit_report(ctx, result, dev)
    data = str(request.data)
    summary = {"base_model": encoder.name, "pooling": encoder.pooling, "data": data, "documents": len(documents), "passages": len(passages),
               "signals": recipe.signals, "matryoshka_dims": recipe.matryoshka_dims or None, "dev_queries": len(held.queries) if held else None, **summary}  # fmt: skip
    rows = [{"kind": "tune", "model": encoder.name, "data": data, "strings": len(passages), "out": ".", "metrics": metrics}]
    return Outcome(summary, rows, result.log, ("base_model", "data", "documents", "passages", "signals", *shown))
