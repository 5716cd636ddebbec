"""encodr.serve.cluster: a sharded index on Ray Serve (the whole path: tests/serve/test_process.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from encodr.errors import EncodrError


@pytest.mark.parametrize(
    "failure", ["actor", "serve", "timeout"], ids=["a proxy actor died", "serve refused", "a deployment timed out"]
)
def test_a_ray_serve_that_does_not_start_is_one_line_naming_the_port(failure):
    pytest.importorskip("ray.serve")
    from ray.exceptions import ActorDiedError
    from ray.serve.exceptions import RayServeException

    from encodr.serve.cluster import _deploy

    raised = {
        "actor": ActorDiedError(),
        "serve": RayServeException("HTTP proxy failed to start\n  Traceback (most recent call last): ..."),
        "timeout": TimeoutError("the deployment did not become healthy"),
    }[failure]
    calls = []

    def start(**_):
        calls.append("start")
        raise raised

    serve = SimpleNamespace(start=start, run=lambda *a, **k: calls.append("run"), shutdown=lambda: calls.append("shutdown"))
    with pytest.raises(EncodrError) as caught:
        _deploy(serve, object(), SimpleNamespace(host="127.0.0.1", port=8799))
    message = str(caught.value)
    assert "\n" not in message and "127.0.0.1:8799" in message and "port is free" in message
    assert str(raised).splitlines()[0] in message and "Traceback" not in message
    assert calls == ["start", "shutdown"]  # nothing run, and Serve shut down before the error is said


def test_a_ray_serve_that_starts_runs_the_application():
    pytest.importorskip("ray.serve")
    from encodr.serve.cluster import _deploy

    calls = []
    serve = SimpleNamespace(
        start=lambda **k: calls.append(("start", k)),
        run=lambda app, **k: calls.append(("run", app, k["name"])),
        shutdown=lambda: calls.append("shutdown"),
    )
    _deploy(serve, "app", SimpleNamespace(host="127.0.0.1", port=8799))
    assert calls == [("start", {"http_options": {"host": "127.0.0.1", "port": 8799}}), ("run", "app", "encodr")]
