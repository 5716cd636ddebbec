"""A sharded index against one index: the same hits, what the fan-out costs in process and on
Ray Serve, a shard replica killed under a query stream, and a model for 100M and 1B passages.

1. Data: SciFact's corpus (the first ``--documents`` abstracts; all 5,183 by default), split into
   passages as ``encodr index`` splits them; queries: SciFact's *train* claims (``--queries``
   of the 809; never its test claims).
2. Builds, same options (MiniLM, ``--backend onnx``, ``--index-type flat``, ``--lang eng``): one
   index, and sharded indexes of 1, 2 and 4 shards (``--shards N``).
3. Same hits: each query's top 10 passages (``--passages``) in ``dense``, ``keyword`` and
   ``hybrid`` mode, sharded against one index: the share of queries whose ten are identical
   (ids and order) and the mean overlap@10, with keyword statistics shard-local (``--keyword-stats
   shard``, the default) and global (``global``: one more round trip), and the p50 ms of each
   ranking in process, one query at a time.
4. In process: :class:`encodr.index.Searcher` on each index, one query at a time (default
   ``hybrid`` documents search, k = 10): p50 / p99 ms of the ranking alone, then of what a front
   end runs (the ranking, judgments and snippets), and queries/s with 2 client threads.
5. Over HTTP: ``encodr serve --index ONE`` (the anchor) and ``encodr serve --engine ray`` for
   1, 2 and 4 shards (one replica each, a local Ray of 2 CPUs started by the server): the same
   queries posted to ``/v1/search`` one at a time, then by 4 concurrent clients for
   ``--seconds``.
6. Faults: 2 shards with 2 replicas each, then with 1; 4 clients post queries for ``--seconds``;
   a third of the way in, one replica process of shard 0 is killed (SIGKILL). Every answer is
   counted: whole (200, ``partial`` false), partial (200, ``partial`` true) or failed (anything
   else); and how long Ray Serve took to start the replica that replaces it.
7. Model: shards, replicas, memory and p99 for 100M and 1B passages, from the fan-out overhead
   measured here and the per-shard costs of ``bench/ondisk_10m.py`` (bench/results/ondisk_10m.json).

Prints the tables and writes bench/results/sharded.json, with the CPU's flags and load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "scifact"
SHARDS = (1, 2, 4)
QUICK = ["--documents", "300", "--queries", "20", "--seconds", "4", "--out", "{tmp}/sharded.json"]


def cpu_flags() -> list[str]:
    """The CPU flags that matter for speed (:func:`encodr.models.encoder.cpu_flags`)."""
    from encodr.models.encoder import cpu_flags as flags

    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8")
    return [f for f in flags() if f in wanted]


def data(work: Path, documents: int, queries: int) -> tuple[Path, list[str]]:
    """The corpus file (the first ``documents`` SciFact abstracts) and ``queries`` train claims."""
    corpus = work / "corpus.jsonl"
    with open(SCIFACT / "corpus.jsonl") as f:
        corpus.write_text("".join(line for _, line in zip(range(documents), f)))
    train = {line.split("\t")[0] for line in (SCIFACT / "qrels" / "train.tsv").read_text().splitlines()[1:]}
    texts = [json.loads(line) for line in (SCIFACT / "queries.jsonl").read_text().splitlines()]
    return corpus, [q["text"] for q in texts if q["_id"] in train][:queries]


def builds(corpus: Path, work: Path) -> dict[str, Path]:
    """One index and the sharded ones, by ``encodr index`` (each in its own process)."""
    out = {}
    for name, extra in [("one", [])] + [(f"{n} shards", ["--shards", str(n)]) for n in SHARDS]:
        path = work / name.replace(" ", "-")
        out[name] = path
        if path.exists():  # built by an earlier run with the same --work
            continue
        command = ["encodr", "index", str(corpus), "--out", str(path), "--backend", "onnx", "--index-type", "flat"]
        subprocess.run([*command, "--lang", "eng", *extra], check=True, capture_output=True)
    return out


def same_hits(paths: dict[str, Path], queries: list[str]) -> list[dict]:
    """Per sharded index, mode and keyword statistics (shard-local, global): identical top-10
    share and mean overlap@10 against one index, and the ranking's p50 ms."""
    from encodr.index import Searcher
    from encodr.index.options import SearchOptions

    rows = []
    one = Searcher(paths["one"])
    for mode, stats in (("dense", "-"), ("keyword", "shard"), ("keyword", "global"), ("hybrid", "shard"), ("hybrid", "global")):
        options = SearchOptions(k=10, mode=mode, passages=True, keyword_stats="shard" if stats == "-" else stats)
        base = [[(h.ext_id, h.start) for h in hits] for hits in one.search(queries, options)]
        for name in paths:
            if name == "one":
                continue
            searcher, got, took = Searcher(paths[name]), [], []
            for q in queries:
                started = time.perf_counter()
                got.append([(h.ext_id, h.start) for h in searcher.search([q], options)[0]])
                took.append(time.perf_counter() - started)
            identical = np.mean([a == b for a, b in zip(base, got)])
            overlap = np.mean([len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(base, got)])
            rows.append(
                {
                    "index": name,
                    "mode": mode,
                    "keyword stats": stats,
                    "identical top 10 %": 100 * identical,
                    "overlap@10 %": 100 * overlap,
                    "ranking p50 ms": percentiles(took)["p50 ms"],
                }
            )
    return rows


def percentiles(latencies: list[float]) -> dict:
    ms = np.array(latencies) * 1000
    return {"p50 ms": float(np.percentile(ms, 50)), "p99 ms": float(np.percentile(ms, 99))}


def in_process(paths: dict[str, Path], queries: list[str]) -> list[dict]:
    """p50 / p99 of one query at a time and queries/s with 2 threads, per index."""
    from encodr.core import dispatch
    from encodr.core.requests import SearchRequest
    from encodr.index import Searcher
    from encodr.index.options import SearchOptions

    rows = []
    for name, path in paths.items():
        searcher = Searcher(path)
        searcher.warm()

        def ask(q: str) -> None:  # what a front end runs: hits, judgments, snippets (encodr.core.commands.search)
            dispatch.run(SearchRequest(query=[q], index=str(path), k=10), "cli", searcher=searcher)

        ranked, latencies = [], []
        for q in queries:
            started = time.perf_counter()
            searcher.search([q], SearchOptions(k=10))  # the ranking alone: encode, scatter, merge, fuse, rows
            ranked.append(time.perf_counter() - started)
            started = time.perf_counter()
            ask(q)
            latencies.append(time.perf_counter() - started)
        rate = throughput(ask, queries, clients=2)
        alone = {f"ranking {key}": value for key, value in percentiles(ranked).items()}
        rows.append({"index": name, **alone, **percentiles(latencies), "queries/s (2 threads)": rate})
    return rows


def throughput(ask, queries: list[str], clients: int, seconds: float | None = None) -> float:
    """Queries per second of ``clients`` threads calling ``ask`` (each query once, or for ``seconds``)."""
    done, lock = [0], threading.Lock()
    stop_at = time.perf_counter() + seconds if seconds else None

    def client(i: int) -> None:
        j = i
        while (stop_at is None and j < len(queries)) or (stop_at is not None and time.perf_counter() < stop_at):
            ask(queries[j % len(queries)])
            j += clients
            with lock:
                done[0] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0] / (time.perf_counter() - started)


class Server:
    """``encodr serve`` in a subprocess, until :meth:`stop`; ``index`` the served folder's name."""

    def __init__(self, path: Path, port: int, extra: list[str]):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        command = ["encodr", "serve", "--index", str(path), "--port", str(port), "--no-batching", *extra]
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.port, self.name = port, path.name
        for _ in range(600):
            time.sleep(0.5)
            if "listening on" in Path(self.log.name).read_text():
                return
            if self.process.poll() is not None:
                raise RuntimeError(Path(self.log.name).read_text()[-2000:])
        raise RuntimeError("the server did not start in 300 s")

    def ask(self, query: str) -> tuple[int, dict | None]:
        body = json.dumps({"index": self.name, "query": query, "k": 10}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/search", body, {"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, None
        except OSError:
            return 0, None

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
        subprocess.run(["ray", "stop", "--force"], capture_output=True)


def over_http(paths: dict[str, Path], queries: list[str], seconds: float) -> list[dict]:
    """p50 / p99 of one query at a time and queries/s with 4 clients, per served index."""
    rows = []
    for name, path in paths.items():
        extra = [] if name == "one" else ["--engine", "ray"]
        server = Server(path, 8791, extra)
        try:
            server.ask("warm up")
            latencies, statuses = [], []
            for q in queries:
                started = time.perf_counter()
                statuses.append(server.ask(q)[0])
                latencies.append(time.perf_counter() - started)
            rate = throughput(server.ask, queries, clients=4, seconds=seconds)
        finally:
            server.stop()
        served = "encodr serve (one process)" if name == "one" else f"Ray Serve, {name}"
        rows.append(
            {"served": served, **percentiles(latencies), "queries/s (4 clients)": rate, "errors": sum(s != 200 for s in statuses)}
        )
    return rows


def replica_pids(deployment: str) -> list[int]:
    """The process ids of the Ray Serve replicas of ``deployment`` (their process title names it)."""
    found = subprocess.run(["pgrep", "-f", f"ServeReplica:encodr:{deployment}"], capture_output=True, text=True).stdout
    return [int(pid) for pid in found.split()]


def killed_replica(path: Path, queries: list[str], seconds: float, replicas: int, timeout: float) -> dict:
    """Answers that were whole, partial or failed while one of shard 0's ``replicas`` replicas is
    killed (``--shard-timeout`` ``timeout``), and when Ray Serve had started its replacement."""
    server = Server(path, 8792, ["--engine", "ray", "--replicas", str(replicas), "--shard-timeout", str(timeout)])
    counts = {"whole": 0, "partial": 0, "failed": 0}
    lock, replaced = threading.Lock(), []
    try:
        server.ask("warm up")
        before = replica_pids("shard-000")

        def ask(q: str) -> None:
            status, body = server.ask(q)
            kind = "failed" if status != 200 else "partial" if body.get("partial") else "whole"
            with lock:
                counts[kind] += 1

        def kill() -> None:
            os.kill(before[0], signal.SIGKILL)
            killed = time.perf_counter()
            while time.perf_counter() - killed < 120:  # Ray Serve notices the dead replica and starts another
                after = replica_pids("shard-000")
                if len(after) >= len(before) and before[0] not in after:
                    replaced.append(time.perf_counter() - killed)
                    return
                time.sleep(0.1)

        killer = threading.Timer(seconds / 3, kill)
        killer.start()
        throughput(ask, queries, clients=4, seconds=seconds)
        killer.join()
    finally:
        server.stop()
    return {
        "replicas a shard": replicas,
        "shard timeout s": timeout,
        **counts,
        "seconds": seconds,
        "replaced after s": replaced[0] if replaced else None,
    }


RTT_MS = 0.5  # an assumed network round trip between the ingress and a shard in one data centre


def model(local: list[dict], overhead: list[dict], ondisk: dict) -> tuple[list[dict], list[str]]:
    """Shards, nodes, memory and p99 for 100M and 1B passages (see the assumptions returned)."""
    search = ondisk["stages"]["search"]
    build = ondisk["stages"]["build"]
    per_shard = 10_000_000
    disk_per_vector = (build["vectors_faiss_bytes"] + build["lists_bytes"]) / build["ntotal"]
    ranking = {int(r["index"].split()[0]): r["ranking p50 ms"] for r in local if r["index"] != "one"}
    slope = (ranking[max(ranking)] - ranking[min(ranking)]) / (max(ranking) - min(ranking))  # the coordinator's ms a shard
    http = {int(r["shards"]): r["overhead ms"] for r in overhead}
    fixed = http[min(http)]  # Ray Serve's proxy, ingress and one shard call, over one process's HTTP
    here = (http[max(http)] - http[min(http)]) / (max(http) - min(http))  # ms a shard on this machine: the upper end
    rows = []
    for total in (100_000_000, 1_000_000_000):
        shards = math.ceil(total / per_shard)
        fan_out = fixed + RTT_MS + shards * slope  # the calls go out together: one round trip
        rows.append(
            {
                "passages": f"{total:,}",
                "shards (10M each)": shards,
                "index GiB": shards * per_shard * disk_per_vector / 2**30,
                "text store GiB": shards * per_shard * 1100 / 2**30,
                "nodes (64 GiB, 4 shards)": math.ceil(shards / 4),
                "shard p99 ms": search["p99_ms"],
                "fan-out ms": fan_out,
                "p99 ms (lower bound)": search["p99_ms"] + fan_out,
                "fan-out ms at this machine's slope": fixed + shards * here,
                "replicas a shard for 100 q/s": math.ceil(100 / (1000 / search["p50_ms"])),
            }
        )
    assumptions = [
        "a shard is bench/ondisk_10m.py's 10M-vector on-disk IVF-PQ index (MiniLM, d = 384), searched with one FAISS thread",
        f"index bytes a vector {disk_per_vector:.0f} (its FAISS file and lists), all of it in the page cache of the "
        "node holding the shard",
        "text store 1,100 bytes a passage (SQLite texts and FTS5; SciFact's passages here), read only for the hits kept",
        "4 shards a 64 GiB node: 4 × 4.4 GiB index pages + the text pages the queries touch, with room for the OS",
        f"fan-out = Ray Serve's fixed cost ({fixed:.0f} ms here: 1 shard on Ray Serve against one process over HTTP) + per shard "
        f"the coordinator's own cost ({slope:.2f} ms: the in-process ranking's growth from 1 to 4 shards), + one network "
        f"round trip ({RTT_MS} ms, assumed: the calls go out together); the shards search in parallel, each on its own cores",
        f"the last fan-out column uses this machine's slope instead ({here:.0f} ms a shard over Ray Serve), where every shard "
        "shares 2 cores with the ingress: an upper end",
        "p99 is a lower bound: the slowest of S shards is slower than one shard's p99 (tail at scale, Dean & Barroso 2013); "
        "with S shards the answer waits for each shard's 1 − 0.01/S quantile, which bench/ondisk_10m.py did not measure",
        "replicas: a shard replica answers 1000 / p50 queries a second on one core; 100 q/s needs that many replicas "
        "of every shard",
        "to be measured on a real cluster: network round trips, per-shard tail latency at 10M, page-cache misses under load, "
        "and the ingress's encoding throughput on a GPU",
    ]
    return rows, assumptions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=5183)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of each throughput run and of the fault run")
    parser.add_argument("--work", type=Path, default=None, help="where the indexes go (default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=RESULTS / "sharded.json")
    args = parser.parse_args(argv)
    load = list(os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        corpus, queries = data(work, args.documents, args.queries)
        paths = builds(corpus, work)
        hits = same_hits(paths, queries)
        print_table("Same hits as one index (top 10 passages)", hits, list(hits[0]))
        local = in_process(paths, queries)
        print_table("In process (hybrid, k = 10; the ranking alone, then with snippets)", local, list(local[0]))
        http = over_http(paths, queries, args.seconds)
        print_table("Over HTTP", http, ["served", "p50 ms", "p99 ms", "queries/s (4 clients)", "errors"])
        fault = [killed_replica(paths["2 shards"], queries, args.seconds, r, t) for r, t in ((2, 5.0), (1, 1.0))]
        print_table("A replica of shard 0 killed under 4 clients (2 shards)", fault, list(fault[0]))
    anchor = http[0]["p50 ms"]
    overhead = [{"shards": n, "overhead ms": r["p50 ms"] - anchor} for n, r in zip(SHARDS, http[1:])]
    ondisk = json.loads((RESULTS / "ondisk_10m.json").read_text())
    scale, assumptions = model(local, overhead, ondisk)
    print_table("Model: 100M and 1B passages", scale, list(scale[0]))
    for line in assumptions:
        print(f"- {line}")
    write_json(
        args.out,
        {
            "cpu_flags": cpu_flags(),
            "load_average": load,
            "documents": args.documents,
            "queries": len(queries),
            "same_hits": hits,
            "in_process": local,
            "http": http,
            "fan_out_overhead": overhead,
            "killed_replica": fault,
            "model": scale,
            "assumptions": assumptions,
        },
    )


if __name__ == "__main__":
    main()
