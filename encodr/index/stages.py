"""Two stages of a new index of source code: searchable within seconds with a static model
distilled from the index's model, then at the model's own quality.

The first stage encodes with the model's static counterpart (model2vec's distillation,
:func:`~encodr.models.distil.fast_static`: a table of token vectors, opened without torch), made
once per model and cached under ``$ENCODR_HOME/static``; its generation records ``stage: fast``
and the model it is heading to (``full_model``). The second stage is an ordinary build with the
model, published over the first in one atomic step; a search reads whichever is current and says
which stage answered (:class:`~encodr.core.results.SearchResult`'s ``stage``). A sync of an index
left at its fast stage (the second stage interrupted) makes the second stage of the whole corpus;
``add`` adds to it with its static model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ..data.code import CODE_SUFFIXES
from ..errors import EncodrError, Said
from ..models.encoder import Encoder
from .ingest import IndexSpec

FAST_STAGE_MIN_BYTES = 200_000  # source bytes below which the model itself indexes within seconds: one stage
CODE_SHARE = 0.5  # the share of the bytes read that must be source code


@dataclass
class FastPlan:
    """The first stage of a build: the static model it encodes with, and the model (its name,
    and the encoder when distilling loaded it) the second stage encodes with."""

    static: str
    full_model: str
    encoder: Encoder | None


def wants_fast_stage(spec: IndexSpec) -> bool:
    """Whether a build runs a fast stage first: a new index (not ``add``/``sync`` of one), local,
    not a shard, without PCR or ``dim``, of files at least :data:`CODE_SHARE` source code by bytes
    and :data:`FAST_STAGE_MIN_BYTES` of it, with ``fast_stage`` on and the model not static."""
    o = spec.options
    if not o.fast_stage or spec.update or o.engine != "local" or o.shard is not None or o.pcr or o.dim is not None:
        return False
    if isinstance(o.model, Encoder) or spec.records:
        return False
    code = total = 0
    for path in spec.files:
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        total += size
        code += size if path.lower().endswith(CODE_SUFFIXES) else 0
    return code >= FAST_STAGE_MIN_BYTES and code >= CODE_SHARE * total


def fast_plan(spec: IndexSpec, full_model: str, load) -> FastPlan | None:
    """The fast stage of ``spec``'s build with ``full_model`` (None where the model is static, or
    cannot be distilled: one ``warn`` line, one stage). ``load``: loads ``full_model`` (called only
    when its static model is not cached yet: distilling it takes the model, half a minute once).

    Raises:
        EncodrError: ``full_model`` cannot be resolved.
    """
    from ..models import resolve
    from ..models.distil import cached_static, fast_static
    from ..models.loading import table_encoder
    from ..paths import home

    ref = resolve(full_model)
    if ref.path is None or table_encoder(full_model) is not None:
        return None
    cached = cached_static(home(), ref.path)
    if cached is not None:
        return FastPlan(str(cached), full_model, None)
    encoder = load(full_model)
    spec.warn(Said(f"making {full_model}'s static model for the fast stage, once (cached in {home() / 'static'})"))
    try:
        return FastPlan(str(fast_static(home(), ref.path, encoder)), full_model, encoder)
    except (EncodrError, OSError) as exc:
        spec.warn(Said(f"no fast stage: {exc}; the index is searchable once {full_model} has encoded it"))
        return None


def fast_spec(spec: IndexSpec, plan: FastPlan) -> IndexSpec:
    """The first stage's build: ``spec`` with the static model, its own list of skipped files."""
    return replace(
        spec, options=replace(spec.options, model=plan.static, backend="torch"), skipped=[], full_model=plan.full_model
    )


def full_spec(spec: IndexSpec, plan: FastPlan) -> IndexSpec:
    """The second stage's build: ``spec`` with the model (loaded, where distilling loaded it), over the first."""
    return replace(spec, options=replace(spec.options, model=plan.encoder or plan.full_model, write="overwrite"))
