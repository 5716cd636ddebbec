"""The TUI's forms over the core's requests (:mod:`encodr.core.requests`): which widget of a
pane renders which request field, and reading a pane's widgets into a request's values.

``tests/core/test_fronts.py`` checks that every field a request declares for the TUI has a
widget here; the panes build their requests only through :func:`values`, so a field without
a widget cannot reach the core from the TUI.
"""

from __future__ import annotations

from textual.widgets import Checkbox, Input, Select

from ..core.requests import (
    CompareRequest,
    EvalRequest,
    IndexRequest,
    JudgeRequest,
    JudgmentsRequest,
    SearchRequest,
    TuneRequest,
    UnjudgeRequest,
)
from .widgets import TextBox

# request class → {field: widget id}: the widget a pane reads the field from (the Search tab's
# requests take a hit's document, grade and passage from the results table, and the index from
# the one opened in the Workspace's index table)
FORMS = {
    SearchRequest: {
        "query": "query",
        "index": "indexes",
        "mode": "search-mode",
        "hit_lang": "hit-lang",
        "filter": "search-filter",
        "rerank": "search-rerank",
    },
    JudgeRequest: {"query": "query", "doc": "results", "grade": "results", "passage": "results", "index": "indexes"},
    UnjudgeRequest: {"query": "judgments-table", "doc": "judgments-table"},
    JudgmentsRequest: {"index": "indexes"},
    CompareRequest: {"a": "text-a", "b": "text-b", "index": "indexes"},
    IndexRequest: {
        "corpus": "index-files",
        "model": "index-model",
        "out": "index-out",
        "index_type": "index-type",
        "quantize": "index-quantize",
        "dim": "index-dim",
        "on_disk": "index-on-disk",
        "write": "index-write",
        "meta_columns": "index-meta-columns",
        "pcr": "index-pcr",
        "pcr_variant": "index-pcr-variant",
        "lang": "index-lang",
        "batch_size": "index-batch-size",
        "backend": "index-backend",
        "processes": "index-processes",
        "engine": "index-engine",
        "address": "index-address",
        "shards": "index-shards",
        "glob": "index-glob",
        "whole": "index-whole",
        "documents": "index-documents",
        "records": "index-records",
        "text_field": "index-text-field",
        "text_column": "index-text-column",
        "id_column": "index-id-column",
        "title_column": "index-title-column",
    },
    EvalRequest: {
        "suite": "eval-suite",
        "data": "eval-data",
        "model": "eval-model",
        "compare": "eval-compare",
        "cross": "eval-cross",
        "compare_cross": "eval-compare-cross",
        "pcr": "eval-pcr",
        "pcr_variant": "eval-pcr-variant",
        "limit": "eval-limit",
        "backend": "eval-backend",
        "split": "eval-split",
        "mode": "eval-mode",
        "fusion": "eval-fusion",
        "rerank": "eval-rerank",
        "rerank_weight": "eval-rerank-weight",
        "whole": "eval-whole",
        "no_cache": "eval-no-cache",
        "index": "eval-index",
        "queries": "eval-queries",
        "qrels": "eval-qrels",
        "filter": "eval-filter",
    },
    TuneRequest: {
        "file": "train-data",
        "recipe": "train-recipe",
        "model": "train-model",
        "dev": "train-dev",
        "bitext": "train-bitext",
        "out": "train-out",
        "set": "train-fields",
        "index": "train-index",
        "no_dev": "train-no-dev",
    },
}


def choice_select(model, name: str, widget_id: str, label: str = "") -> Select:
    """A Select over field ``name`` of request class ``model``: its declared choices, set to its
    declared default (the first of a list's), or blank with a prompt when it has none. ``label``
    prefixes each option (``engine: local``)."""
    from ..core.fields import default, rendering

    value = default(model, name)
    value = value[0] if isinstance(value, list) and value else value
    options = [(f"{label}: {c}" if label else c, c) for c in rendering(model, name).choices]
    if value is None:
        required = model.model_fields[name].is_required()
        return Select(
            options,
            prompt=f"choose the {label or name}" if required else f"{label or name.replace('_', ' ')} (default)",
            id=widget_id,
        )
    return Select(options, value=value, allow_blank=False, id=widget_id)


def field_input(model, name: str, widget_id: str, label: str) -> Input:
    """An Input for field ``name`` of ``model``: blank, its placeholder the ``label`` and the
    field's declared default (blank leaves the default to the request)."""
    from ..core.fields import default

    value = default(model, name)
    shown = " ".join(map(str, value)) if isinstance(value, list) else value
    return TextBox(placeholder=f"{label} (default: {shown})" if shown not in (None, "") else label, id=widget_id)


def values(pane, model, skip: tuple[str, ...] = ()) -> dict:
    """The values of ``model``'s fields in ``pane``'s widgets: an Input's text (split on
    spaces for a list field; blank: left out, so the request's default applies), a
    Checkbox's state, a Select's value (blank: left out). ``skip``: fields the pane reads itself."""
    import typing

    from ..core.fields import default

    out = {}
    for name, widget_id in FORMS[model].items():
        if name in skip:
            continue
        widget = pane.query_one(f"#{widget_id}")
        if isinstance(widget, Checkbox):
            out[name] = widget.value
        elif isinstance(widget, Select):
            declared = default(model, name)
            if isinstance(widget.value, str) and widget.value not in (
                declared,
                *(declared if isinstance(declared, list) else []),
            ):
                out[name] = widget.value  # a choice other than the default: the default is the request's to apply
        elif isinstance(widget, Input) and widget.value.strip():
            is_list = (
                "list" in str(model.model_fields[name].annotation)
                or typing.get_origin(model.model_fields[name].annotation) is list
            )
            out[name] = widget.value.split() if is_list else widget.value.strip()
    return out
