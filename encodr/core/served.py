"""What a server holds warm, for every front end that serves: the HTTP API (:mod:`encodr.serve`)
and the MCP server (:mod:`encodr.mcp`) both keep their indexes, models and re-rankers here, and
both write, refresh and list through it.

One :class:`Served` per server process:

- ``session``: its :class:`~.session.Session`, which keeps a warm :class:`~encodr.index.Searcher`
  per index name (the index folder's name) and the re-rankers, as the CLI's and the TUI's
  session keeps theirs (one rule: :meth:`~.session.Session.keep`), and answers its searches;
- ``models``: name → (scorer, batcher or ``None``): what HTTP serves as ``/v1/embeddings`` and
  ``/v1/score``; an index's model is among them when the HTTP server loaded it;
- ``writable`` and one ``write_lock``: writes are serialised, each one a new generation, and the
  searcher then opens it (searches in flight keep the generation they hold).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Callable

from ..errors import EncodrError
from . import commands, dispatch
from .session import Session

Announce = Callable[[str], None]


def _quiet(line: str) -> None:
    """An ``announce`` that says nothing."""


def workspace_indexes() -> list[str]:
    """The paths of the workspace's readable indexes (``encodr indexes``): what a server serves
    when it is given no index."""
    from ..index import list_indexes

    return [row["path"] for row in list_indexes() if "error" not in row]


@dataclass
class Served:
    """What one server process serves (see the module docstring)."""

    session: Session = field(default_factory=Session)  # index name → Searcher, and the re-rankers
    models: dict = field(default_factory=dict)  # model name → (scorer, batcher or None)
    writable: bool = False
    write_lock: threading.Lock = field(default_factory=threading.Lock)

    def open_indexes(self, specs: list[str], announce: Announce = _quiet, encoder_for: Callable | None = None) -> None:
        """Open a searcher for each index spec (default, with none: every index of the workspace), by folder name.

        Args:
            specs: index directories or workspace names.
            announce: told one line per index opened.
            encoder_for: ``(model name, backend) → encoder`` the searcher queries through (the HTTP
                server's batched encoder); ``None``: each searcher loads its index's model.

        Raises:
            EncodrError: an index that cannot be opened, or two with one folder name.
        """
        from ..index import Searcher, locate

        specs = specs or workspace_indexes()
        for spec in specs:
            path = locate(spec)
            if path.name in self.searchers:
                raise EncodrError(
                    f"two served indexes are named '{path.name}'; serve one of them, or rename its folder", field="index"
                )
            searcher = self.session.keep(path.name, functools.partial(Searcher, path, encoder=encoder_for))
            announce(f"serving index {path.name} ({path}, {len(searcher.index):,} texts, model {searcher.index.meta.model})")

    def searcher(self, name: str | None):
        """The searcher of served index ``name``, at its index's current generation, opened
        again when the index was rebuilt with another model (:meth:`.session.Session.keep`, as
        the CLI and the TUI keep theirs).

        Raises:
            EncodrError: no such index is served (404, field ``index``), naming those that are;
                one that cannot be opened again.
        """
        if name not in self.searchers:
            raise EncodrError(
                f"index '{name}' is not served here; served: {', '.join(self.searchers) or 'none'}", field="index", status=404
            )
        return self.session.keep(name)

    def model(self, name: str, field_name: str = "model"):
        """The (scorer, batcher or ``None``) of served model ``name``: its spec as served
        (``GET /v1/models``), or a model folder's own name (``my-model`` for
        ``/models/my-model``, an index's custom model) where one served model has it.

        Raises:
            EncodrError: no such model is served (404, naming ``field_name`` and the served models).
        """
        if name in self.models:
            return self.models[name]
        named = [spec for spec in self.models if "/" in spec and spec.rstrip("/").rsplit("/", 1)[-1] == name]
        if len(named) == 1:
            return self.models[named[0]]
        raise EncodrError(
            f"model '{name}' is not served here; served: {', '.join(self.models) or 'none'}", field=field_name, status=404
        )

    def reranker(self, spec: str | None):
        """The cross-encoder ``spec`` names (:meth:`.session.Session.reranker`: loaded once,
        again when its folder is written); ``None`` without one.

        Raises:
            EncodrError: see :func:`encodr.models.load_cross`.
        """
        return self.session.reranker(spec)

    def warm(self) -> None:
        """Make each served index's searcher ready before the first request
        (:meth:`encodr.index.Searcher.warm`: its snippets' int8 encoder, a throwaway query), then
        leave what the server now holds out of the garbage collector's full passes (:func:`.session.settle`)."""
        from .session import settle

        for searcher in self.searchers.values():
            searcher.warm()
        settle()  # what is warm now lives as long as the server: no full collection walks it again

    @property
    def searchers(self) -> dict:
        """Index name → its searcher as last kept (:attr:`.session.Session.searchers`)."""
        return self.session.searchers

    def require_writable(self) -> None:
        """Raises EncodrError (403, field ``index``) unless the server was started writable."""
        if not self.writable:
            raise EncodrError(
                "this server is read-only: documents can be written only when it is started with --writable (and an API key)",
                field="index",
                status=403,
            )

    def write(self, name: str, request, front: str, **context):
        """Answer a checked write ``request`` (an upsert, a sync, a delete by id) on served index
        ``name`` (:func:`encodr.core.dispatch.run`, ``index`` its path) under the write lock (one
        write at a time, each a new generation), then let its searcher open the new generation.

        Raises:
            EncodrError: the index is not served (404), or the command's own errors.
        """
        searcher = self.searcher(name)
        with self.write_lock:
            result = dispatch.run(request, front, index=str(searcher.index.path), **context)
        searcher.refresh()
        return result

    def index_rows(self) -> list[dict]:
        """The served indexes: the columns of ``encodr indexes`` of each one's current generation."""
        rows = []
        for name in list(self.searchers):
            searcher = self.searcher(name)  # at its current generation
            record = searcher.index.meta.to_dict()
            rows.append(
                {
                    "name": name,
                    "path": str(searcher.index.path),
                    **{k: record.get(k) for k in commands.INDEX_COLUMNS if k != "name"},
                }
            )
        return rows

    def close(self) -> None:
        """Stop every batcher, once the requests queued to it are answered."""
        for _, batcher in self.models.values():
            if batcher is not None:
                batcher.close()
