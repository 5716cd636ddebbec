"""Asking a running ``encodr serve`` (or its Ray Serve deployment, ``encodr serve --engine ray``)
instead of loading a model here: what ``encodr search --server`` and ``encodr mcp --server`` send.
Plain ``urllib``: one request, no connection pool, as a command-line client needs."""

from __future__ import annotations

import json
import os

from ..errors import EncodrError, S

TIMEOUT = 60.0  # seconds a server has to answer one request


def ask(url: str, route: str, body: dict | None = None):
    """POST ``body`` to ``url`` + ``route`` (GET without one); the JSON answer. ``ENCODR_API_KEY``,
    when set, is sent as the bearer key.

    Raises:
        EncodrError: the server's refusal as one line (its status and message), or no server
            answering at ``url`` (naming ``--server``).
    """
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if os.environ.get("ENCODR_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['ENCODR_API_KEY']}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url.rstrip("/") + route, data=data, headers=headers, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = json.loads(exc.read()).get("error", {}).get("message", "")
        except ValueError:
            detail = ""
        raise EncodrError(f"{url}{route} answered {exc.code}: {detail or exc.reason}", status=exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        raise EncodrError(
            f"{S.server} {url}: no encodr server answers there ({getattr(exc, 'reason', exc)}); start one with encodr serve, "
            f"or drop {S.server}",
            field="server",
        ) from None
