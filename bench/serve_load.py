"""Load on ``encodr serve``: requests/s, texts/s, p50/p99 latency and errors for 1, 4 and 16
concurrent clients, side by side with offline ``Encoder.encode`` at its best batch size,
measured in the same run on the same machine.

Scenarios (each ``--seconds`` long, after a short warm-up):
  embed-1    single short texts to POST /v1/embeddings
  embed-32   batches of 32 short texts to POST /v1/embeddings
  search-1   single queries to POST /v1/search
and embed-1 at the most clients against a server started with ``--workers 1`` (one forward pass
at a time, on all the cores) and one with ``--no-batching`` (the figure without dynamic batching).

The clients are asyncio tasks in this process (one kept-alive connection each, a minimal
HTTP/1.1 client on asyncio streams), so the load generator costs little CPU; it still shares
the machine's cores with the server, as offline encoding does not — the comparison is
conservative. The offline anchor encodes the queries (every 7th indexed sentence, at most
1,024: 715 by default) sorted by length, as ``Encoder.encode`` does. Beside it, where the
time goes: the same texts offline 16 at a time in arrival order (a server cannot sort across
more texts than it holds), offline in the server's own schedule (its workers' passes at once,
no HTTP), and the cost of a forward pass that holds almost nothing (paid by every pass).

    python bench/serve_load.py                      # 60 s per scenario, minilm, 5,000 Wikipedia sentences indexed
    python bench/serve_load.py --seconds 5 --clients 1 4   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, machine, print_table, write_json  # noqa: E402


def sentences(n: int) -> list[str]:
    from encodr.paths import bundled

    lines = [
        line
        for line in bundled("wiki/wiki_sentences_en.txt").read_text(encoding="utf-8").splitlines()
        if 5 <= len(line.split()) <= 30
    ]
    return lines[:n]


def offline(model: str, texts: list[str], sizes: list[int], repeats: int = 2, arrival: int = 16, backend: str = "torch") -> dict:
    """Offline ``Encoder.encode`` of ``texts``, each figure the best of ``repeats`` passes (after
    one warm-up pass):

    - ``speeds``: texts/s at each batch size in ``sizes`` (sorted by length, as ``encode`` does):
      the anchor is offline encoding at its fastest;
    - ``in_order``: texts/s when they are encoded ``arrival`` at a time in their order, as a
      server holding one text from each of ``arrival`` clients must (its batches cannot be
      sorted by length across more texts than it holds);
    - ``schedule``: texts/s of the server's own schedule without HTTP: its batcher's workers
      (``default_workers``) on threads at once, each encoding its share of the ``arrival`` texts
      at a time in their order on its share of the cores;
    - ``pass_ms``: one forward pass of two one-word texts, the cost every pass pays whatever
      it holds (the layers' weights read, Python's calls).
    """
    import threading

    from encodr.models import load_encoder
    from encodr.serve.batcher import _cores, default_workers

    encoder = load_encoder(model, device="cpu", backend=backend)
    encoder.encode(texts[:256])
    workers = default_workers(encoder)
    share = max(1, arrival // workers)
    chunks = [texts[start : start + share] for start in range(0, len(texts), share)]

    def worker(mine: list[list[str]]) -> None:
        encoder.use_threads(max(1, _cores() // workers))
        for chunk in mine:
            encoder.encode(chunk)

    out = {"speeds": {size: 0.0 for size in sizes}, "in_order": 0.0, "schedule": 0.0, "workers": workers, "pass_ms": float("inf")}
    for _ in range(repeats):
        for size in sizes:
            started = time.perf_counter()
            encoder.encode(texts, batch_size=size)
            out["speeds"][size] = max(out["speeds"][size], len(texts) / (time.perf_counter() - started))
        started = time.perf_counter()
        for start in range(0, len(texts), arrival):
            encoder.encode(texts[start : start + arrival])
        out["in_order"] = max(out["in_order"], len(texts) / (time.perf_counter() - started))
        threads = [threading.Thread(target=worker, args=(chunks[i::workers],)) for i in range(workers)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        out["schedule"] = max(out["schedule"], len(texts) / (time.perf_counter() - started))
        for _ in range(10):
            started = time.perf_counter()
            encoder.encode(["word", "another"])
            out["pass_ms"] = min(out["pass_ms"], (time.perf_counter() - started) * 1000)
    return out


class Server:
    def __init__(self, args: list[str]):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "encodr", "serve", "--port", str(self.port), *args], stderr=subprocess.PIPE, text=True
        )
        for line in self.proc.stderr:
            if "listening on" in line:
                return
        raise SystemExit("server did not start")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)


async def request(reader, writer, route: str, body: bytes) -> tuple[int, bytes]:
    """One HTTP/1.1 POST on a kept-alive connection: the status and the body (the server answers
    with Content-Length, as uvicorn does for JSON)."""
    writer.write(
        b"POST %s HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
        % (route.encode(), len(body), body)
    )
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def load(url: str, clients: int, seconds: float, route: str, bodies: list[dict], texts_per: int) -> dict:
    """``clients`` concurrent clients, each on its own kept-alive connection, posting ``bodies``
    in turn for ``seconds``. The client is a minimal HTTP/1.1 one on asyncio streams (as wrk or
    oha are minimal): it takes about 1% of a core here, where httpx took about 15% of one,
    taken from the server on a 2-core machine."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    encoded = [json.dumps(b).encode() for b in bodies]
    latencies: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + seconds

    async def client(i: int) -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection(host, int(port))
        j = i
        try:
            while time.perf_counter() < stop_at:
                body = encoded[j % len(encoded)]
                j += clients
                started = time.perf_counter()
                try:
                    status, _ = await request(reader, writer, route, body)
                    ok = status == 200
                except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                    ok = False
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, int(port))
                latencies.append(time.perf_counter() - started)
                errors += not ok
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    wall = time.perf_counter() - started
    lat = np.array(latencies) * 1000
    return {
        "requests": len(latencies),
        "requests_per_s": len(latencies) / wall,
        "texts_per_s": len(latencies) * texts_per / wall,
        "p50_ms": float(np.percentile(lat, 50)),
        "p99_ms": float(np.percentile(lat, 99)),
        "errors": errors,
    }


def passes(url: str, model: str) -> tuple[int, int]:
    """(forward passes, texts) the server's batcher for ``model`` has run so far (``GET /health``)."""
    import http.client

    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port))
    conn.request("GET", "/health")
    counts = json.loads(conn.getresponse().read())["models"].get(model) or {}
    conn.close()
    return int(counts.get("passes", 0)), int(counts.get("texts", 0))


def scenarios(model: str, index: str, texts: list[str]) -> dict:
    return {
        "embed-1": ("/v1/embeddings", [{"model": model, "input": t} for t in texts], 1),
        "embed-32": ("/v1/embeddings", [{"model": model, "input": texts[i : i + 32]} for i in range(0, len(texts) - 32, 32)], 32),
        "search-1": ("/v1/search", [{"index": index, "query": t, "k": 10} for t in texts], 1),
    }


# python -m bench run serve_load --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--seconds", "2", "--clients", "1", "--corpus", "400", "--out", "{tmp}/serve_load.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--backend", default="torch", help="the forward pass, offline and in the server (encodr serve --backend)")
    parser.add_argument("--corpus", type=int, default=5000, help="Wikipedia sentences indexed for search-1")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: bench/results/serve_load.json (serve_load_BACKEND.json for another backend)",
    )
    args = parser.parse_args()
    args.out = args.out or RESULTS / ("serve_load.json" if args.backend == "torch" else f"serve_load_{args.backend}.json")

    texts = sentences(args.corpus)
    queries = texts[::7][:2000]
    rows = []
    anchor = offline(args.model, queries[:1024], [16, 32, 64, 128], arrival=max(args.clients), backend=args.backend)
    speeds, in_order, schedule = anchor["speeds"], anchor["in_order"], anchor["schedule"]
    best = max(speeds, key=speeds.get)
    for size, rate in speeds.items():
        rows.append({"setup": f"offline Encoder.encode, batch {size}", "clients": "", "texts_per_s": rate})
    rows.append(
        {"setup": f"offline, {max(args.clients)} texts at a time in arrival order", "clients": "", "texts_per_s": in_order}
    )
    share = max(1, max(args.clients) // anchor["workers"])
    rows.append(
        {
            "setup": f"offline, the server's schedule ({anchor['workers']} threads, each {share} at a time in arrival order)",
            "clients": "",
            "texts_per_s": schedule,
            "texts_per_pass": share,
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "wiki.txt"
        corpus.write_text("\n".join(texts) + "\n")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "encodr",
                "index",
                str(corpus),
                "--model",
                args.model,
                "--out",
                f"{tmp}/wiki",
                "--lang",
                "eng",
                "--backend",
                args.backend,
            ],
            check=True,
            capture_output=True,
        )
        most = [max(args.clients)]
        runs = [(name, [], args.clients) for name in scenarios(args.model, "wiki", queries)]
        runs += [("embed-1", ["--workers", "1"], most), ("embed-1", ["--no-batching"], most)]  # one pass at a time; no batching
        for name, flags, counts in runs:  # a fresh server for each scenario: no row inherits another's state
            route, bodies, per = scenarios(args.model, "wiki", queries)[name]
            server = Server(["--model", args.model, "--index", f"{tmp}/wiki", "--backend", args.backend, *flags])
            try:
                for clients in counts:
                    asyncio.run(load(server.url, clients, min(3.0, args.seconds), route, bodies, per))  # warm-up
                    before = passes(server.url, args.model)
                    result = asyncio.run(load(server.url, clients, args.seconds, route, bodies, per))
                    after = passes(server.url, args.model)
                    ran = after[0] - before[0]  # where the time goes: how many texts each forward pass carried
                    result["texts_per_pass"] = round((after[1] - before[1]) / ran, 2) if ran else None
                    rows.append({"setup": f"{name}{' (' + ' '.join(flags) + ')' if flags else ''}", "clients": clients, **result})
                    print(rows[-1], flush=True)
            finally:
                server.stop()
    single16 = next(r for r in rows if r["setup"] == "embed-1" and r["clients"] == max(args.clients))
    unbatched = next(r for r in rows if r["setup"] == "embed-1 (--no-batching)")
    one_worker = next(r for r in rows if r["setup"] == "embed-1 (--workers 1)")
    ratio = single16["texts_per_s"] / speeds[best]
    print_table(
        f"encodr serve under load ({args.model}, {os.cpu_count()} CPU threads, {args.seconds:g} s per row)",
        rows,
        ["setup", "clients", "requests_per_s", "texts_per_s", "texts_per_pass", "p50_ms", "p99_ms", "errors"],
    )
    print(
        f"{max(args.clients)} single-text clients: {single16['texts_per_s']:.1f} texts/s = {ratio:.2f}× offline at batch {best} "
        f"({speeds[best]:.1f} texts/s), {single16['texts_per_s'] / in_order:.2f}× offline {max(args.clients)} at a "
        "time in arrival order "
        f"({in_order:.1f} texts/s), {single16['texts_per_s'] / schedule:.2f}× the server's schedule offline "
        f"({schedule:.1f} texts/s); "
        f"a pass of two one-word texts {anchor['pass_ms']:.1f} ms; one pass at a time (--workers 1) "
        f"{one_worker['texts_per_s']:.1f} texts/s = "
        f"{one_worker['texts_per_s'] / speeds[best]:.2f}×; without batching {unbatched['texts_per_s']:.1f} texts/s = "
        f"{unbatched['texts_per_s'] / speeds[best]:.2f}×"
    )
    from cpu_precision import cpu_flags

    write_json(
        args.out,
        {
            "machine": machine(),
            "cpu_flags": cpu_flags(),
            "model": args.model,
            "backend": args.backend,
            "seconds": args.seconds,
            "rows": rows,
            "offline_best_batch": best,
            "ratio_16_single_to_offline": ratio,
            "ratio_16_single_to_arrival_order": single16["texts_per_s"] / in_order,
            "ratio_16_single_to_schedule": single16["texts_per_s"] / schedule,
            "pass_ms": anchor["pass_ms"],
            "ratio_one_worker": one_worker["texts_per_s"] / speeds[best],
            "ratio_unbatched": unbatched["texts_per_s"] / speeds[best],
        },
    )


if __name__ == "__main__":
    main()
