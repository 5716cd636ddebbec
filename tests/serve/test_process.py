"""``encodr serve`` as a real process: the official openai client, SIGTERM under load, a client
that disconnects mid-request, and an index replaced by ``encodr index --add`` while it is served."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

TEXTS = [
    f"document {i}: the {w} sat near the {v}"
    for i, (w, v) in enumerate(zip(["cat", "dog", "bird", "fox"] * 10, ["mat", "door", "tree", "den"] * 10))
]


RAY_PORTS = {6379, 8000, 8076, 8265, 10001, 52365, 52366}  # Ray's own defaults (GCS, Serve, dashboard and its agent…)


def free_port() -> int:
    """A free port on 127.0.0.1, never one a local Ray takes for itself once started (the server
    under test may start Ray, whose dashboard agent then binds 52365 before Serve's proxy binds ours)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in RAY_PORTS:
            return port


class Server:
    """``encodr serve`` in a subprocess; ``url`` once it has said it is listening."""

    def __init__(self, *args: str, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "encodr", "serve", "--port", str(self.port), *args],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        for line in self.proc.stderr:  # blocks until the server says it listens (or dies)
            self.lines.append(line)
            if "listening on" in line:
                break
        else:
            raise AssertionError("server did not start: " + "".join(self.lines))
        self.rest = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self.rest.start()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self.rest.join(timeout=10)
        return code


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(TEXTS[:20]) + "\n")
    return path


@pytest.fixture
def index_dir(tmp_path, tiny_model, corpus):
    """An index of :func:`corpus`, built here (the process under test is the server, not the builder)."""
    from encodr.index import BuildOptions, build

    out = tmp_path / "docs"
    build([str(corpus)], out, BuildOptions(model=str(tiny_model), lang="eng"))
    return out


def test_openai_client_gets_the_vectors_sentence_transformers_gives(tiny_model, tmp_path):
    openai = pytest.importorskip("openai")
    from sentence_transformers import SentenceTransformer

    from encodr.models import load_encoder

    saved = tmp_path / "tiny-st"
    load_encoder(str(tiny_model)).save(saved)  # a saved bi-encoder, as encodr tune writes one
    server = Server("--model", str(saved), "--api-key", "k3y")
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="k3y")
        got = client.embeddings.create(model=str(saved), input=TEXTS[:5])  # the client asks for base64 and decodes it
        floats = client.embeddings.create(model=str(saved), input=TEXTS[0], encoding_format="float")
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=server.url + "/v1", api_key="wrong").embeddings.create(model=str(saved), input="x")
    finally:
        assert server.stop() == 0
    expected = SentenceTransformer(str(saved), device="cpu").encode(TEXTS[:5])
    assert np.allclose(np.array([d.embedding for d in got.data]), expected, atol=1e-5)
    assert np.allclose(floats.data[0].embedding, expected[0], atol=1e-5)


def test_sigterm_under_load_lets_in_flight_requests_finish(tiny_model, index_dir):
    server = Server("--model", str(tiny_model), "--index", str(index_dir))
    answered, sigterm = threading.Event(), threading.Event()
    outcomes = []  # (sent before SIGTERM, answered after it, status, texts in the answer)

    def client_loop():
        while True:
            before = not sigterm.is_set()
            try:  # a new connection each time: an idle keep-alive connection is closed at shutdown, as it should be
                r = httpx.post(server.url + "/v1/embeddings", json={"model": str(tiny_model), "input": TEXTS * 50}, timeout=60)
            except httpx.TransportError:  # refused: the server no longer accepts
                return
            outcomes.append((before, sigterm.is_set(), r.status_code, len(r.json()["data"])))
            answered.set()

    threads = [threading.Thread(target=client_loop) for _ in range(4)]
    for t in threads:
        t.start()
    answered.wait(timeout=60)
    sigterm.set()
    code = server.stop()
    for t in threads:
        t.join(timeout=60)
    assert code == 0, "".join(server.lines)
    assert {(status, n) for _, _, status, n in outcomes} == {(200, len(TEXTS) * 50)}  # every answer whole
    assert any(before and after for before, after, _, _ in outcomes)  # a request in flight at SIGTERM was answered
    assert any("stopped" in line for line in server.lines)


def test_a_client_that_disconnects_mid_request_harms_no_one(tiny_model, index_dir):
    server = Server("--model", str(tiny_model), "--index", str(index_dir))
    try:
        body = json.dumps({"model": str(tiny_model), "input": TEXTS * 50}).encode()
        for _ in range(3):  # send a request, then hang up before the answer
            with socket.create_connection(("127.0.0.1", server.port)) as s:
                s.sendall(
                    b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                    % len(body)
                    + body
                )
        with socket.create_connection(("127.0.0.1", server.port)) as s:  # and one that leaves mid-body
            s.sendall(
                b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                b'99999\r\n\r\n{"model":'
            )
        r = httpx.post(server.url + "/v1/embeddings", json={"model": str(tiny_model), "input": "still here"}, timeout=60)
        assert r.status_code == 200 and len(r.json()["data"]) == 1
    finally:
        assert server.stop() == 0
    assert not any("Traceback" in line for line in server.lines), "".join(server.lines)


def test_index_add_under_load_is_seen_whole(tiny_model, index_dir, tmp_path):
    more = tmp_path / "more.txt"
    more.write_text("\n".join(TEXTS[20:]) + "\n")
    server = Server("--index", str(index_dir))
    counts, hits, errors, done = [], [], [], threading.Event()

    def reader():  # each reader keeps its own sequence: appends from three threads interleave in no order
        seen = []
        counts.append(seen)
        with httpx.Client(base_url=server.url, timeout=30) as http:
            while not done.is_set():
                r = http.get("/v1/indexes")
                s = http.post("/v1/search", json={"index": index_dir.name, "query": "the fox sat near the den", "k": 40})
                if r.status_code != 200 or s.status_code != 200:
                    errors.append((r.status_code, s.text))
                    return
                seen.append(r.json()[0]["count"])
                hits.append(len(s.json()["results"][0]["hits"]))

    try:
        with ThreadPoolExecutor(3) as pool:
            futures = [pool.submit(reader) for _ in range(3)]
            add = subprocess.run(
                [sys.executable, "-m", "encodr", "index", str(more), "--add", "--out", str(index_dir), "--lang", "eng"],
                capture_output=True,
                text=True,
            )
            with httpx.Client(base_url=server.url, timeout=30) as http:  # one request after the add has finished
                final = http.get("/v1/indexes").json()[0]["count"]
            done.set()
            for f in futures:
                f.result()
    finally:
        assert server.stop() == 0
    assert add.returncode == 0, add.stderr
    assert errors == []
    assert set().union(*counts) <= {20, 40} and set(hits) <= {20, 40} and final == 40
    assert all(seen == sorted(seen) for seen in counts)  # each reader sees old, then new: never back, never between


def test_a_port_in_use_is_one_line(tiny_model):
    server = Server("--model", str(tiny_model))
    try:
        second = subprocess.run(
            [sys.executable, "-m", "encodr", "serve", "--model", str(tiny_model), "--port", str(server.port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        assert server.stop() == 0
    errors = [line for line in second.stderr.splitlines() if "error" in line.lower()]
    assert second.returncode == 2 and len(errors) == 1 and errors[0].startswith("encodr: error: cannot listen on 127.0.0.1:"), (
        second.stderr
    )
    assert "Traceback" not in second.stderr


def test_answers_are_not_held_by_nagles_algorithm():
    """Each accepted connection has TCP_NODELAY: without it every answer waited ~40 ms for the
    client's delayed ACK (a socket made without naming IPPROTO_TCP gets no TCP_NODELAY from asyncio)."""
    import asyncio

    from encodr.serve import listening_socket

    async def accepted_nodelay() -> int:
        sock = listening_socket("127.0.0.1", 0)
        accepted: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_connect(_reader, writer):
            accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            value = await asyncio.wait_for(accepted, 30)
            writer.close()
        return value

    assert asyncio.run(accepted_nodelay()) != 0


def test_no_auth_is_said_in_the_start_banner(tiny_model, monkeypatch):
    monkeypatch.delenv("ENCODR_API_KEY", raising=False)
    server = Server("--model", str(tiny_model), "--no-auth")  # on 127.0.0.1: tests bind nothing wider
    assert server.stop() == 0
    said = " ".join(line.strip() for line in server.lines)  # the console wraps a long line at its width
    assert (
        said.count("--no-auth") == 1
        and f"warning: --no-auth: anyone who can reach 127.0.0.1:{server.port} can read the served indexes" in said
    )


def test_a_sharded_index_on_ray_serve_answers_as_it_does_here(tiny_model, corpus, tmp_path, capsys, monkeypatch):
    pytest.importorskip("ray.serve")
    from encodr.index import BuildOptions, Searcher, build
    from encodr.index.options import SearchOptions
    from tests.conftest import run_cli

    out = tmp_path / "sharded"
    build([str(corpus)], out, BuildOptions(model=str(tiny_model), lang="eng", shards=2))
    here = [(h.ext_id, h.line) for h in Searcher(out).search(["the fox near the den"], SearchOptions(k=5))[0]]
    server = Server("--index", str(out), "--engine", "ray")
    try:
        body = {"index": "sharded", "query": "the fox near the den", "k": 5}
        answer = httpx.post(f"{server.url}/v1/search", json=body, timeout=60).json()
        assert not answer["partial"] and answer["missing_shards"] == []
        assert [(h["ext_id"], h["line"]) for h in answer["results"][0]["hits"]] == here
        exact = SearchOptions(k=5, mode="keyword", keyword_stats="global")  # a first round trip for the shards' statistics
        here_exact = [(h.line, round(h.score, 4)) for h in Searcher(out).search(["the fox near the den"], exact)[0]]
        body = {**body, "mode": "keyword", "keyword_stats": "global"}
        answer = httpx.post(f"{server.url}/v1/search", json=body, timeout=60).json()
        assert [(h["line"], round(h["score"], 4)) for h in answer["results"][0]["hits"]] == here_exact
        code, printed, err = run_cli(
            ["search", "the fox near the den", "--index", "sharded", "-k", "5", "--server", server.url, "--json"],
            capsys,
            monkeypatch,
        )
        assert code == 0 and [(h["ext_id"], h["line"]) for h in json.loads(printed)["results"][0]["hits"]] == here, err
        from encodr.mcp import Agents

        agents = Agents(remote=server.url)  # encodr mcp --server URL: the agent's searches go to the deployment
        assert set(agents.tools()) == {"search", "list_indexes"}
        found = agents.call("search", {"index": "sharded", "query": "the fox near the den", "k": 5})
        assert [(h["ext_id"], h["line"]) for h in found["results"][0]["hits"]] == here
        assert [row["name"] for row in agents.call("list_indexes", {})["indexes"]] == ["sharded"]
    finally:
        assert server.stop() == 0, "".join(server.lines)
