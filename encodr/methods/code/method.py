"""The code recipe's run: read the source folder, hold out the dev fold, mine negatives with the
starting model, train, keep the best checkpoint (the starting model among the candidates), save a
SentenceTransformer with the dev figures before and after. Runs through
:func:`encodr.training.run.run`."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ...errors import S
from ...models import load_encoder
from ...training import Outcome, RunContext
from .general import general_sentences, general_stream
from .pairs import code_stream, comment_pairs, comment_stream, dev_folder, in_dev, mine_negatives, read_units


def choose_fusion(evaluator, encoder, weights: str) -> tuple[dict, str]:
    """The hybrid fusion weight α for an index of code built with the tuned ``encoder``, chosen on
    the dev fold (``evaluator``: its :class:`~encodr.evaluation.retrieval.RetrievalEvaluator`)
    among ``weights`` (comma-separated) and the declared source-code α
    (:data:`~encodr.index.fusion.CODE_ALPHA`), by mean hybrid nDCG@10; ties keep the declared one.

    Returns:
        (``{"fusion_weight": α}`` when another α beats the declared one, else ``{}``; a line
        saying the dev fold's hybrid nDCG@10 at the declared α and at the chosen one).
    """
    from ...index.fusion import CODE_ALPHA
    from ...index.options import HYBRID, SearchOptions
    from ..base import number_list

    alphas = sorted(set(number_list(weights)) | {CODE_ALPHA})
    ranked = evaluator.ranked(encoder, tuple(SearchOptions(mode=HYBRID, fusion_weight=a) for a in alphas))
    means = {a: float(evaluator.per_query(r).mean()) for a, r in zip(alphas, ranked.values())}
    best = max(alphas, key=lambda a: (means[a], a == CODE_ALPHA))
    line = f"dev hybrid nDCG@10 {means[CODE_ALPHA]:.2f} at the declared α {CODE_ALPHA:g}"
    if best == CODE_ALPHA:
        return {}, line + ", kept"
    return {"fusion_weight": best}, line + f", {means[best]:.2f} at α {best:g}, saved"


def run(ctx: RunContext) -> Outcome:
    """Fine-tune ``ctx.request.models[0]`` on the documented definitions of the source folder
    ``ctx.request.data``.

    The documented units (a query of at least ``min_words`` words) are split by
    :func:`~.pairs.in_dev`; the dev fold's queries search every unit's code (theirs without
    their documentation: :func:`~.pairs.dev_folder`) by dense nDCG@10 at the start, every
    ``eval_steps`` and each epoch's end, and the best is kept (the start when no step beats it).

    With fewer than ``min_documented`` documented units (or none in the dev fold), the
    starting model is saved unchanged, said in one line, unless ``--no-dev``: then every
    documented unit trains, without selection.

    Raises:
        EncodrError: no source folder, or no definition in it.
    """
    from ..base import batch_that_fits, fit_report, fit_selected, load_dev

    request, recipe = ctx.request, ctx.recipe
    units = read_units(request.data, recipe)
    documented = [u for u in units if u.query]
    dev = [] if request.no_dev else [u for u in documented if in_dev(u, recipe.dev_share)]
    held = {u.key for u in dev}
    train = [u for u in documented if u.key not in held]
    encoder = load_encoder(request.models[0], recipe.pooling, recipe.raw_pooling, recipe.max_length, ctx.trainer.device)
    base = {"base_model": encoder.name, "data": str(request.data), "definitions": len(units), "documented": len(documented)}
    if len(train) < 2 or (not request.no_dev and (len(documented) < recipe.min_documented or not dev)):
        ctx.warn(
            f"only {len(documented)} documented definitions (a documentation of at least {recipe.min_words} words; at least "
            f"{recipe.min_documented} to hold out a dev fold): saved the starting model unchanged"
            f"{'' if request.no_dev else f' (pass {S.no_dev} to train on them without selection)'}"
        )
        ctx.save(".", encoder.save)
        return Outcome(
            {**base, "kept": "start"},
            [
                {
                    "kind": "tune",
                    "model": encoder.name,
                    "data": str(request.data),
                    "strings": 0,
                    "out": ".",
                    "metrics": {"kept": "start"},
                }
            ],
            None,
            (*base, "kept"),
        )
    recipe = batch_that_fits(ctx, recipe, len(train), "training pairs")
    negatives = mine_negatives(encoder, train, units, held) if recipe.hard_negatives else None
    with tempfile.TemporaryDirectory(prefix="encodr-code-dev-") as tmp:
        devset = (
            load_dev(ctx, str(dev_folder(units, dev, Path(tmp) / "code-dev")), "ndcg@10", role="the dev fold") if dev else None
        )
        report = load_dev(ctx, request.report, "ndcg@10", role="the report set")
        streams = [code_stream(encoder, train, negatives, recipe, ctx.trainer.world)]
        comments = comment_pairs(units, recipe) if recipe.comments else []
        if len(comments) >= 2:
            streams.append(comment_stream(encoder, comments, recipe, ctx.trainer.world))
        if recipe.general:
            streams.append(general_stream(encoder, general_sentences(recipe.general, recipe.seed), recipe))
        result = fit_selected(ctx, encoder, streams, recipe, devset, report)
        search, fusion = choose_fusion(devset.evaluator, encoder, recipe.fusion_weights) if devset else ({}, None)
    ctx.save(".", encoder.save)
    summary, metrics, shown = fit_report(ctx, result, devset)
    curve = [p["dev"] for p in result.dev_curve]
    summary = {
        **base,
        "pooling": encoder.pooling,
        "pairs": len(train),
        "dev_queries": len(dev),
        "hard_negatives": recipe.hard_negatives,
        "comment_pairs": len(comments),
        "general": recipe.general,
        "dev_before": curve[0] if curve else None,
        "dev_after": max(curve) if curve else None,
        **summary,
        "dev": "the dev fold of the documented definitions" if dev else None,
        "fusion_weight": fusion,
        "search": search,
    }
    rows = [
        {"kind": "tune", "model": encoder.name, "data": str(request.data), "strings": len(train), "out": ".", "metrics": metrics}
    ]
    return Outcome(
        summary,
        rows,
        result.log,
        ("base_model", "data", "definitions", "pairs", "dev_queries", "dev_before", "dev_after", "fusion_weight", *shown),
    )
