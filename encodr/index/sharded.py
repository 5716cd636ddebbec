"""A sharded index: one folder holding N ordinary encodr indexes (its shards), each with the
documents whose id routes to it, as Elasticsearch splits an index into primary shards.

Layout::

    IDX/sharded.json     the manifest: format, shard count, routing, model, each shard's generation
    IDX/shard-000/       an ordinary index (generations, FTS5, sections, filters)
    IDX/shard-001/ …

Routing: a document goes to shard ``blake2b-64(document id) mod N`` (:func:`route`), as
Elasticsearch routes by a hash of ``_id`` (murmur3 there). All passages of a document share its
id, so a document lives whole in one shard, and a write touches only the shards that own the
documents it changes. The hash does not depend on the machine, the process or the order of
the files, so every writer agrees where a document lives.

Writes (:func:`build_sharded`, :func:`delete_sharded`, :func:`upsert_sharded`): each shard's write
is the ordinary one (:func:`~.build.build` with :attr:`~.options.BuildOptions.shard` set), atomic
per shard; after each shard's write the manifest names its new generation. A shard whose write
fails keeps its last good generation, the shards written before it keep theirs, and the error
names the shard. A new sharded index is built in a temporary folder and renamed into place, so
a failed build leaves nothing. How ours differs from Elasticsearch: there is no translog and no
cross-shard transaction, so a write that fails on shard 2 of 4 is visible on shards 0 and 1
until it is run again (``--add`` and ``--sync`` are idempotent: the same command finishes it).

Every shard's write reads all the inputs and keeps its own documents: reading is done N times,
encoding once. Reading is the small part of a build (bench/index_phases.py), except for many
PDFs, where one reading pass routing to N writers would be faster.

Searching: :mod:`.scatter`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Callable

from ..errors import EncodrError, S
from ..outputs import atomic_dir, atomic_file, check_target, current_generation
from ..progress import ProgressEvent, ProgressFn, silent
from .lock import index_lock
from .manifest import MANIFEST, ROUTING, SHARDED_FORMAT, holds_shards, read_manifest, route, shard_folder
from .options import UPDATES, BuildOptions
from .reader import locate

NOT_SUMMED = ("dimension", "bytes_per_vector", "seconds")  # of a build's summary: the same in every shard, or not a count


def is_sharded(spec: str | Path) -> bool:
    """Whether ``spec`` (a folder or a workspace name, :func:`~.reader.locate`) is a sharded index."""
    return holds_shards(locate(spec))


def _write_manifest(root: Path, manifest: dict) -> None:
    """Write ``manifest`` at ``root`` atomically (a reader sees the old one or the new one)."""
    with atomic_file(root / MANIFEST) as tmp:
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")


def _generation(folder: Path) -> str | None:
    """The name of ``folder``'s current generation (None: no index there yet)."""
    gen = current_generation(folder)
    return gen.name if gen is not None else None


def _summary(root: Path, metas: list[dict], started: float) -> dict:
    """The result of a sharded write: shard 0's settings, the counts summed over the shards,
    each shard's own counts, and the manifest's generations."""
    summary = dict(metas[0])
    for key in metas[0]:
        values = [m.get(key) for m in metas]
        if key not in NOT_SUMMED and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            summary[key] = sum(values)  # the counts: documents, passages, added…
    skipped = {s["path"]: s for m in metas for s in m.get("skipped_files", [])}
    languages = sorted({lang for m in metas for lang in (m.get("languages") or [])})
    summary.update(
        shards=len(metas),
        skipped_files=list(skipped.values()),
        languages=languages or metas[0].get("languages"),
        per_shard=[{"shard": i, "count": m.get("count"), "documents": m.get("documents")} for i, m in enumerate(metas)],
        seconds=round(time.time() - started, 2),
        path=str(Path(root).resolve()),
    )
    return summary


def build_sharded(
    files: list[str],
    out: str | Path,
    options: BuildOptions,
    progress: ProgressFn = silent,
    warn: Callable[[str], None] = lambda line: None,
    write: Callable[..., dict] | None = None,
) -> dict:
    """:func:`~.build.build` of a sharded index: a new one of ``options.shards`` shards
    (``write`` ``new`` or ``overwrite``), or an update (``add``, ``sync``) of an existing one,
    each shard written by the ordinary build of its own documents (:func:`route`).
    With ``options.engine`` ``ray``, the shards of a new index are built in parallel, one Ray
    task each (each encodes on its own process); otherwise one after another, here.

    ``write`` is :func:`~.build.build` (what writes one shard; passed in, as :mod:`.build` calls
    this module).

    Returns:
        As :func:`~.build.build`, the counts summed over the shards, plus ``shards`` and ``per_shard``.

    Raises:
        EncodrError: ``shards`` below 1 or above the number of documents (nothing written),
            ``shards`` given for an update, an existing index that is not sharded given with
            ``shards``; a shard's write that fails, naming the shard (the other shards and the
            manifest at their last good generation); see :func:`~.build.build`.
    """
    started, warn = time.time(), _once(warn)
    if options.write in UPDATES:
        return _update(files, locate(out), options, progress, warn, started, write)
    out = Path(out)
    n = options.shards
    check_target(out, options.write == "overwrite", inputs=files, kind="index")
    with index_lock(out), atomic_dir(out, overwrite=options.write == "overwrite") as tmp:
        shard_options = dataclasses.replace(options, write="new", shards=None, engine="local", address=None)
        metas = _build_shards(files, tmp, shard_options, options, progress, warn, write)
        documents = sum(m.get("documents", 0) or 0 for m in metas)
        if n > documents:
            raise EncodrError(
                f"{S.shards} {n}: more shards than documents ({documents}); pass {S.shards} {max(1, documents)} or fewer",
                field="shards",
            )
        manifest = {
            "format": SHARDED_FORMAT,
            "shards": n,
            "routing": ROUTING,
            "model": metas[0].get("model"),
            "fingerprint": metas[0].get("fingerprint"),
            "generations": {shard_folder(tmp, i).name: _generation(shard_folder(tmp, i)) for i in range(n)},
        }
        _write_manifest(tmp, manifest)
    return _summary(out, metas, started)


def _build_shards(
    files: list[str], tmp: Path, shard_options: BuildOptions, options: BuildOptions, progress, warn, build: Callable[..., dict]
) -> list[dict]:
    """Each shard's new index under ``tmp`` by ``build``: in this process, or on Ray tasks (``options.engine``)."""
    n = options.shards
    if options.engine != "ray":
        metas = []
        for i in range(n):
            own = dataclasses.replace(shard_options, shard=(i, n))
            metas.append(build(files, shard_folder(tmp, i), own, _labelled(progress, i, n), warn))
        return metas
    from .engines import ray_session

    if not isinstance(options.model, (str, type(None))):
        raise EncodrError(f"{S.engine} ray loads the model on each task: give the model by name or path", field="model")
    with ray_session(options.address) as ray:
        task = ray.remote(_build_one)
        pending = [
            task.remote(build, files, str(shard_folder(tmp, i)), dataclasses.replace(shard_options, shard=(i, n)))
            for i in range(n)
        ]
        done = 0
        progress(ProgressEvent("indexing", 0, n))
        metas = []
        for ref in pending:
            metas.append(_ray_result(ray, ref))
            done += 1
            progress(ProgressEvent("indexing", done, n))
        return metas


def _labelled(progress: ProgressFn, shard: int, shards: int) -> ProgressFn:
    """``progress`` with each event's task named after the shard (a bar a shard)."""
    return lambda event: progress(dataclasses.replace(event, task=f"{event.task} shard {shard + 1}/{shards}"))


def _once(warn: Callable[[str], None]) -> Callable[[str], None]:
    """``warn`` that passes each line once (every shard's build says the same things)."""
    said: set[str] = set()

    def once(line: str) -> None:
        if line not in said:
            said.add(line)
            warn(line)

    return once


def _build_one(build: Callable[..., dict], files: list[str], folder: str, options: BuildOptions) -> dict:
    """One shard's ``build`` on a Ray task (its warnings come back in the result's ``skipped_files``)."""
    return build(files, folder, options)


def _ray_result(ray, ref) -> dict:
    """A Ray task's result, its :class:`EncodrError` raised here as itself (one line)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.as_instanceof_cause()
        if isinstance(cause, EncodrError):
            raise EncodrError(str(cause).splitlines()[0], field=getattr(cause, "field", None)) from None
        raise


def _update(files: list[str], root: Path, options: BuildOptions, progress, warn, started: float, build) -> dict:
    """``--add`` / ``--sync`` of the sharded index ``root`` by ``build``: each shard's own documents, one shard after another."""
    manifest = read_manifest(root)
    n = int(manifest["shards"])
    if options.shards is not None and options.shards != n:
        raise EncodrError(
            f"{S.shards} {options.shards}: index {root} has {n} shards and keeps them on {S('write', 'add')} and "
            f"{S('write', 'sync')}; "
            f"drop {S.shards}, or rebuild it with {S('write', 'overwrite')} {S.shards} {options.shards}",
            field="shards",
        )
    if options.engine == "ray":
        raise EncodrError(
            f"{S.engine} ray builds a new sharded index; drop it for {S('write', 'add')} and {S('write', 'sync')}", field="engine"
        )
    with index_lock(root):
        return _each_shard(
            root,
            manifest,
            lambda i, folder: build(
                files, folder, dataclasses.replace(options, shards=None, shard=(i, n)), _labelled(progress, i, n), warn
            ),
            started,
        )


def _each_shard(root: Path, manifest: dict, write: Callable[[int, Path], dict], started: float) -> dict:
    """Run ``write(shard, folder)`` on every shard of ``root`` in order (:func:`_write_shard`)."""
    metas = [_write_shard(root, manifest, i, write) for i in range(int(manifest["shards"]))]
    return _summary(root, metas, started)


def upsert_sharded(root: str | Path, records: list, warn: Callable[[str], None], encoder, upsert: Callable[..., dict]) -> dict:
    """``upsert`` (:func:`~.build.upsert`) on a sharded index: each record to the shard its id
    routes to; shards no record routes to are left as they are."""
    root = locate(root)
    manifest = read_manifest(root)
    n = int(manifest["shards"])
    by_shard: dict[int, list] = {}
    for record in records:
        by_shard.setdefault(route(record.document_id, n), []).append(record)
    started = time.time()
    with index_lock(root):
        return _touched(
            root, manifest, by_shard, lambda i, folder: upsert(folder, by_shard[i], warn=warn, encoder=encoder), started
        )


def delete_sharded(root: str | Path, ids, sources, filters, warn: Callable[[str], None], delete: Callable[..., dict]) -> dict:
    """``delete`` (:func:`~.delete.delete`) on a sharded index: ids to the shards they route to, a
    source glob or filter to every shard (each removes its own matches).

    Returns:
        As :func:`~.delete.delete`, summed; ``not_found`` the ids no shard holds.
    """
    root = locate(root)
    manifest = read_manifest(root)
    n = int(manifest["shards"])
    by_shard: dict[int, list] = {i: [] for i in range(n)} if (sources or filters) else {}
    for doc in ids:
        by_shard.setdefault(route(doc, n), []).append(doc)
    if not by_shard:
        raise EncodrError(f"name the documents to delete: IDs, {S.source} GLOB or {S.filter} FIELD=VALUE", field="ids")
    started = time.time()
    with index_lock(root):
        result = _touched(
            root, manifest, by_shard, lambda i, folder: delete(folder, by_shard[i], sources, filters, warn=warn), started
        )
    return result


def _touched(root: Path, manifest: dict, by_shard: dict, write: Callable[[int, Path], dict], started: float) -> dict:
    """``write`` on the shards in ``by_shard`` only (:func:`_write_shard`): numbers summed, lists
    joined, the rest as the first shard gave it; ``touched`` the shards written."""
    n = int(manifest["shards"])
    summary: dict = {}
    for i in sorted(by_shard):
        for key, value in _write_shard(root, manifest, i, write).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "seconds":
                summary[key] = summary.get(key, 0) + value
            elif isinstance(value, list):
                summary[key] = summary.get(key, []) + value
            else:
                summary.setdefault(key, value)
    summary.update(
        shards=n,
        touched=sorted(by_shard),
        count=sum(_count(shard_folder(root, i)) for i in range(n)),
        path=str(Path(root).resolve()),
        seconds=round(time.time() - started, 2),
    )
    return summary


def _write_shard(root: Path, manifest: dict, i: int, write: Callable[[int, Path], dict]) -> dict:
    """Shard ``i``'s write, the manifest naming the generation it holds afterwards; a failure
    names the shard (it keeps its last good generation; the shards written before keep theirs).

    Raises:
        EncodrError: ``write``'s, prefixed with the shard and what the other shards hold.
    """
    folder = shard_folder(root, i)
    try:
        return write(i, folder)
    except EncodrError as exc:
        raise EncodrError(
            f"shard {i} ({folder}): {exc} (shard {i} keeps its last good generation; a shard written before it holds the "
            "write, the manifest names each one's generation); run the same command again",
            field=exc.field,
            status=exc.status,
        ) from None
    finally:
        manifest["generations"][folder.name] = _generation(folder)
        _write_manifest(root, manifest)


def _count(folder: Path) -> int:
    """The number of texts in the shard index ``folder`` (its ``index.json``), 0 when unreadable."""
    from .reader import peek_meta

    meta = peek_meta(folder)
    return meta.count if meta else 0
