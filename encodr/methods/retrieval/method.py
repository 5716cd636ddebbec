"""Retrieval training on a user's documents: read them as ``encodr index`` reads them, hold out
a label-free dev set (``--dev auto``) or read a real one (``--dev DIR``), split the documents
into passages that fit the model, train on label-free pairs, keep the best checkpoint, save a
SentenceTransformer. Runs through :func:`encodr.training.run.run`."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ...data.files import Skipped, expand, iter_records, passage_splitter
from ...data.records import Record
from ...errors import EncodrError
from ...models import load_encoder
from ...training import Outcome, RunContext
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
        raise EncodrError(
            "the retrieval recipe learns from your documents; pass a file or folder: encodr tune DOCS --recipe "
            "retrieval --dev auto"
        )
    files, skipped = expand([str(data)])
    found = set(files) - {str(data)}
    documents: list[Record] = []
    for f in files:
        for record in iter_records(f, None, None, skipped if f in found else None):
            documents.append(record)
            if limit and len(documents) >= limit:
                return documents, skipped
    if len(documents) < 2:
        raise EncodrError(
            f"{data}: {len(documents)} document(s) with text; retrieval training needs at least 2 (in-batch negatives)"
        )
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
    from ..base import batch_that_fits, fit_report, fit_selected, load_dev

    request, recipe = ctx.request, ctx.recipe
    documents, skipped = read_documents(request.data, request.limit)
    for s in skipped:
        ctx.warn(f"skipped {s.path}: {s.reason}")
    with tempfile.TemporaryDirectory(prefix="encodr-retrieval-dev-") as tmp:
        held = None
        if request.dev == AUTO:
            held = pseudo_dev(documents, recipe.dev_queries, recipe.seed, recipe.dev_documents)
            documents = held.training_documents(
                recipe.dev_holdout
            )  # the pseudo-queries (or their documents) are never trained on
            if len(documents) < 2:
                raise EncodrError(
                    f"dev_holdout documents leaves {len(documents)} document(s) to train on; lower dev_queries or use "
                    "dev_holdout sentences"
                )
            dev = load_dev(ctx, str(held.write(Path(tmp) / "auto-dev")), "ndcg@10")
        else:
            dev = load_dev(ctx, request.dev, "ndcg@10")
        report = load_dev(ctx, request.report, "ndcg@10", role="the report set")
        encoder = load_encoder(request.models[0], recipe.pooling, recipe.raw_pooling, recipe.max_length, ctx.trainer.device)
        check_dims(dims_list(recipe.matryoshka_dims), encoder.dimension)  # before any training
        split = passage_splitter(encoder.tokenizer, recipe.max_length - 2)
        passages = [Passage.of(chunk, d.title) for d in documents for _, chunk in split(d.text)]
        recipe = batch_that_fits(ctx, recipe, len(passages), "passages")
        stream = retrieval_stream(encoder.tokenizer, passages, recipe, ctx.trainer.world)
        result = fit_selected(ctx, encoder, [stream], recipe, dev, report)
    ctx.save(".", encoder.save)
    summary, metrics, shown = fit_report(ctx, result, dev)
    data = str(request.data)
    summary = {
        "base_model": encoder.name,
        "pooling": encoder.pooling,
        "data": data,
        "documents": len(documents),
        "passages": len(passages),
        "signals": recipe.signals,
        "matryoshka_dims": recipe.matryoshka_dims or None,
        "dev_queries": len(held.queries) if held else None,
        **summary,
    }
    rows = [{"kind": "tune", "model": encoder.name, "data": data, "strings": len(passages), "out": ".", "metrics": metrics}]
    return Outcome(summary, rows, result.log, ("base_model", "data", "documents", "passages", "signals", *shown))
