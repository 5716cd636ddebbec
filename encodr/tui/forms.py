"""The TUI's forms over the core's requests (:mod:`encodr.core.requests`): which widget of a
pane renders which request field, and reading a pane's widgets into a request's values.

A widget's id is derived from its field (:func:`widget_id`): no map from fields to widgets is
kept by hand. ``tests/core/test_fronts.py`` checks that every field a request declares for the
TUI has a widget; the panes build their requests only through :func:`values`, so a field
without a widget cannot reach the core from the TUI.
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

PANES = {SearchRequest: "search", CompareRequest: "compare", IndexRequest: "index", EvalRequest: "eval", TuneRequest: "train"}
# the widgets several requests read a field from, not a form's own: the Search tab's query box and the
# Workspace's table of indexes (the open one); and the table whose selected row a request takes
SHARED = {"query": "query", "index": "indexes"}
ROWS = {JudgeRequest: "results", UnjudgeRequest: "judgments-table"}
SEARCH_TAB = (SearchRequest, CompareRequest, JudgeRequest, JudgmentsRequest)  # their query and index: SHARED


def widget_id(model, name: str) -> str:
    """The id of the widget the TUI reads field ``name`` of request class ``model`` from, derived
    from the field as harlequin derives a widget from its option: ``PANE-field-name`` (``index-batch-size``,
    ``search-mode``); the Search tab's requests read ``query`` and ``index`` from :data:`SHARED`,
    and a judgment's other fields come from the table row it was made on (:data:`ROWS`)."""
    if model in SEARCH_TAB and name in SHARED:
        return SHARED[name]
    if model in ROWS:
        return ROWS[model]
    return f"{PANES[model]}-{name.replace('_', '-')}"


def forms() -> dict:
    """Request class → {field: widget id}: every field each request offers the TUI
    (:func:`encodr.core.fields.fields_for`) and the widget it is read from (:func:`widget_id`)."""
    from ..core.fields import fields_for

    models = (*PANES, JudgeRequest, UnjudgeRequest, JudgmentsRequest)
    return {model: {name: widget_id(model, name) for name in fields_for(model, "tui")} for model in models}


def choice_select(model, name: str, label: str = "") -> Select:
    """A Select over field ``name`` of request class ``model`` (its id: :func:`widget_id`): its declared choices, set to its
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
            id=widget_id(model, name),
        )
    return Select(options, value=value, allow_blank=False, id=widget_id(model, name))


def field_input(model, name: str, label: str) -> Input:
    """An Input for field ``name`` of ``model``: blank, its placeholder the ``label`` and the
    field's declared default (blank leaves the default to the request)."""
    from ..core.fields import default

    value = default(model, name)
    shown = " ".join(map(str, value)) if isinstance(value, list) else value
    return TextBox(placeholder=f"{label} (default: {shown})" if shown not in (None, "") else label, id=widget_id(model, name))


def values(pane, model, skip: tuple[str, ...] = ()) -> dict:
    """The values of ``model``'s fields in ``pane``'s widgets: an Input's text (split on
    spaces for a list field; blank: left out, so the request's default applies), a
    Checkbox's state, a Select's value (blank: left out). ``skip``: fields the pane reads itself."""
    import typing

    from ..core.fields import default, fields_for

    out = {}
    for name in fields_for(model, "tui"):
        if name in skip:
            continue
        widget = pane.query_one(f"#{widget_id(model, name)}")
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
