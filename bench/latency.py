"""Whole-query latency: what a person waits for, from each front end, with each phase's share.

Corpora: the first N texts of ``bench/search.py``'s corpus (Wikipedia sentences, MeSH names, the
Bible in 8 languages; each text's language given, so none is detected at build), for each
``--sizes`` N (default 1,000, 20,000 and all 336,198), indexed by ``encodr index`` with the
bundled MiniLM (default index type: flat, then HNSW above 250,000 vectors). Above
``--random-above`` texts (default 50,000) the **dense side is random vectors** (unit-norm, seeded;
the keyword index and every text are real): encoding 336k texts takes half an hour on 2 cores,
and a vector search costs the same whatever the vectors hold, so only the time means anything
there, not the hits.

Queries: ``--queries`` (200) held-out ones, as ``bench/search.py`` draws them (Wikipedia
sentences, MeSH names and Bible verses in their own languages, every fourth word dropped, none
in the corpus), sent one at a time after 5 warm-up queries; k = 10.

Rows, each with p50, p95 and p99 in ms and the mean of each phase (``encodr search --timings``:
language detection, the query's forward pass, dense search, keyword search, fusion,
re-ranking, hits, highlights; ``render``: the rest of what the front end does):

- ``library``: ``encodr.core.dispatch.call(SearchRequest, …)`` as a program calls it (the
  process keeps the searcher and the re-ranker), then the result's JSON payload; every corpus,
  modes dense, keyword and hybrid, without and with a re-ranker (depth 50 on ``--rerank-queries``
  queries). The re-ranker is a cross-encoder made from MiniLM's transformer with an untrained
  head (no cross-encoder ships offline): its time is a real one, its order is not.
- ``http``: ``POST /v1/search`` to ``encodr serve --index`` (a subprocess; one keep-alive
  connection), ``mcp``: the ``search`` tool of ``encodr mcp --index`` over stdio (the official
  MCP client), ``tui``: the Search tab through Textual's pilot, from setting the query to the
  table drawn. At ``--front-size`` (20,000), hybrid (the default mode). Each row opens a
  searcher of its own, as a new process would (one row does not start with the keyword postings
  an earlier row's same queries fetched).
- ``cold CLI``: ``encodr search QUERY --index IDX --json --timings`` as a new process, 5 times,
  split into start-up (``encodr --help``), model load (loading MiniLM in a fresh interpreter,
  its imports included), the query (its timings' total) and the rest (opening the index).
- the anchor: txtai's ``Embeddings(hybrid=True, content=True)`` over the same ``--front-size``
  texts with the same MiniLM, ``search(query, 10)`` in this process.

With ``--corpus scifact`` the corpus is SciFact's 5,183 abstracts instead (``../shared/data/retrieval``;
a passage of several sentences each, as a person's documents have, where the short texts above
are mostly one sentence) and the queries its first ``--queries`` *train* claims, in English;
give ``--sizes 5183 --front-size 5183``.

    python bench/latency.py                           # ≈ 30 min on 2 CPU cores
    python bench/latency.py --sizes 20000 --fronts http --no-rerank   # one corpus, the library and HTTP rows

Prints the tables and writes bench/results/latency.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as `encodr search` and `encodr tui` do

import argparse
import asyncio
import http.client
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402
from cpu_precision import cpu_flags  # noqa: E402
from search import DATA, corpus_texts, held_out  # noqa: E402

QUICK = [
    "--sizes",
    "1000",
    "--queries",
    "20",
    "--rerank-queries",
    "3",
    "--front-size",
    "1000",
    "--cold",
    "1",
    "--out",
    "{tmp}/latency.json",
]
PHASES = ("language", "encode", "dense", "keyword", "fusion", "rerank", "hits", "snippets", "highlights")
WARM = 5


def percentiles(ms: list[float]) -> dict:
    return {
        "p50 ms": round(float(np.percentile(ms, 50)), 1),
        "p95 ms": round(float(np.percentile(ms, 95)), 1),
        "p99 ms": round(float(np.percentile(ms, 99)), 1),
    }


def row(corpus: int, front: str, mode: str, rerank: bool, ms: list[float], phases: list[dict]) -> dict:
    """One table row: the percentiles of ``ms`` and each phase's mean (``render``: the wall time the phases do not account
    for)."""
    out = {
        "corpus": corpus,
        "front end": front,
        "mode": mode,
        "re-ranker": "yes" if rerank else "",
        "queries": len(ms),
        **percentiles(ms),
    }
    if phases:
        for name in PHASES:
            out[name] = round(float(np.mean([p.get(name, 0.0) for p in phases])), 2)
        out["render"] = round(float(np.mean([max(0.0, w - p.get("total", 0.0)) for w, p in zip(ms, phases)])), 2)
    print(out, flush=True)
    return out


def scifact(queries: int) -> tuple[list[tuple[str, str]], list[str]]:
    """SciFact's abstracts as (text, language) and its first ``queries`` distinct train claims
    (``../shared/data/retrieval/scifact``; some claims are there twice, and the TUI row cannot set
    its box to the text it already holds); tabs and line breaks become spaces (the TSV)."""
    from encodr.data.beir import read_queries

    data = DATA / "retrieval" / "scifact"
    flat = lambda text: " ".join(text.split())  # noqa: E731
    with (data / "corpus.jsonl").open(encoding="utf-8") as f:
        texts = [(flat(json.loads(line)["text"]), "eng") for line in f if line.strip()]
    claims = list(dict.fromkeys(flat(text) for text in read_queries(data / "queries.jsonl").values()))
    return texts, claims[:queries]


def build_index(texts: list[tuple[str, str]], out: Path, random_dense: bool, backend: str = "torch") -> dict:
    """``encodr index`` of ``texts`` (a TSV with each text's language) at ``out`` (kept when there): its
    ``index.json``, and the build's seconds. With ``random_dense`` the encoder's vectors are random.
    ``backend``: the index's (and so its queries') forward pass; ``auto`` as ``encodr index`` chooses it."""
    from encodr.index import build
    from encodr.models import load_encoder

    try:
        from encodr.index import BuildOptions
    except ImportError:
        BuildOptions = None
    if (out / "current").exists():
        return {"seconds": None, "random_dense": random_dense}
    corpus = out.with_suffix(".tsv")
    corpus.write_text("text\tlang\n" + "".join(f"{t}\t{lang}\n" for t, lang in texts), encoding="utf-8")
    encoder = load_encoder("minilm")
    if random_dense:
        rng = np.random.default_rng(0)

        def encode(batch, batch_size=None, on_batch=None, prompt=None, **_):  # unit-norm random rows, in the encoder's shape
            rows = rng.standard_normal((len(batch), encoder.dimension)).astype(np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            if on_batch is not None:
                on_batch(len(batch))
            return rows

        encoder.encode = encode
    started = time.perf_counter()
    if BuildOptions is None:  # a checkout from before BuildOptions: build(files, model, out)
        build([str(corpus)], encoder, out)
    elif (
        backend != "torch" and not random_dense
    ):  # the model by name, so the build chooses and loads its backend as encodr index does
        build([str(corpus)], out, BuildOptions(model="minilm", backend=backend))
    else:
        build([str(corpus)], out, BuildOptions(model=encoder))
    return {"seconds": round(time.perf_counter() - started, 1), "random_dense": random_dense, "backend": backend}


def make_cross(folder: Path) -> str:
    """A CrossEncoder from MiniLM's transformer with a new (untrained) one-logit head, saved at ``folder``."""
    from sentence_transformers import CrossEncoder

    from encodr.models.resolution import resolve

    if not folder.exists():
        CrossEncoder(str(resolve("minilm").path), num_labels=1).save(str(folder))
    return str(folder)


def timed_search() -> bool:
    """Whether the encodr measured reports each phase (``--timings``): the bench also runs on a
    checkout from before it (the "before" rows), where it does not, and the phases stay blank."""
    from encodr.core.requests import SearchRequest

    return "timings" in SearchRequest.model_fields


def search_call():
    """``values → payload`` of one search as a program runs it: ``encodr.core.dispatch.call``, or
    on a checkout from before the dispatcher, ``encodr.core.commands.search`` of a request."""
    from encodr.core.requests import SearchRequest

    try:
        from encodr.core import dispatch
    except ImportError:
        from encodr.core import commands

        return lambda values: commands.search(SearchRequest(**values)).payload()
    return lambda values: dispatch.call(SearchRequest, values, "cli").payload()


def fresh_searchers() -> None:
    """Let go of the searchers this process keeps (the CLI's and TUI's session), so that the next
    row opens its own, as a new process would: a searcher keeps what its queries fetched (the
    keyword postings of their words), and a row must not start with what an earlier row's same
    queries left there."""
    try:
        from encodr.core.session import SESSION
    except ImportError:  # an older encodr (a "before" tree)
        return
    SESSION.searchers.clear()


def library_rows(
    index: Path, size: int, queries: list[str], cross: str, rerank_queries: int, modes: list[str], rerank: bool
) -> list[dict]:
    """The ``library`` rows of one corpus: each mode, without and (``rerank``) with the re-ranker,
    each on a searcher of its own (:func:`fresh_searchers`)."""
    call, timings = search_call(), timed_search()
    rows = []
    for mode in modes:
        for reranked in (False, True) if rerank else (False,):
            fresh_searchers()
            asked = queries[: rerank_queries if reranked else None]
            values = {
                "index": str(index),
                "mode": mode,
                "k": 10,
                **({"timings": True} if timings else {}),
                **({"rerank": cross} if reranked else {}),
            }
            ms, phases = [], []
            warm = asked[:WARM]
            for i, q in enumerate(warm + asked):
                started = time.perf_counter()
                payload = call({**values, "query": [q]})
                json.dumps(payload)
                if i >= len(warm):
                    ms.append((time.perf_counter() - started) * 1000)
                    if timings:
                        phases.append(payload["timings"])
            rows.append(row(size, "library", mode, reranked, ms, phases))
    return rows


class Serve:
    """``encodr serve`` (or ``encodr mcp --port``) in a subprocess, until :meth:`stop`."""

    def __init__(self, args: list[str]):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "encodr", *args, "--port", str(self.port)], stderr=subprocess.PIPE, text=True
        )
        for line in self.proc.stderr:
            if "listening on" in line:
                break
        else:
            raise RuntimeError(f"encodr {' '.join(args)} did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def http_row(index: Path, size: int, queries: list[str], mode: str = "hybrid") -> dict:
    server, timings = Serve(["serve", "--index", str(index)]), timed_search()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port)
        ms, phases = [], []
        for i, q in enumerate(queries[:WARM] + queries):
            body = json.dumps({"index": index.name, "query": q, "k": 10, "mode": mode, **({"timings": True} if timings else {})})
            started = time.perf_counter()
            conn.request("POST", "/v1/search", body, {"Content-Type": "application/json"})
            answer = json.loads(conn.getresponse().read())
            if i >= WARM:
                ms.append((time.perf_counter() - started) * 1000)
                if timings:
                    phases.append(answer["timings"])
        conn.close()
    finally:
        server.stop()
    return row(size, "http", mode, False, ms, phases)


def mcp_row(index: Path, size: int, queries: list[str], mode: str = "hybrid") -> dict:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    timings = timed_search()

    async def go() -> tuple[list[float], list[dict]]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "encodr", "mcp", "--index", str(index)], env=dict(os.environ)
        )
        ms, phases = [], []
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for i, q in enumerate(queries[:WARM] + queries):
                    started = time.perf_counter()
                    found = await session.call_tool(
                        "search",
                        {"index": index.name, "query": q, "k": 10, "mode": mode, **({"timings": True} if timings else {})},
                    )
                    if found.is_error:
                        raise RuntimeError(found.content[0].text)
                    if i >= WARM:
                        ms.append((time.perf_counter() - started) * 1000)
                        if timings:
                            phases.append(found.structured_content["timings"])
        return ms, phases

    ms, phases = asyncio.run(go())
    return row(size, "mcp", mode, False, ms, phases)


def tui_row(index: Path, size: int, queries: list[str]) -> dict:
    """The Search tab: from the query set in its box (no debounce) to the screen refreshed with its
    hits (a callback after the refresh that follows the table's update). The pilot waits on an
    event that callback sets, so nothing polls the app's loop while the query runs. The phases are
    the search's own (the app's ``last_timings``, where it keeps them); ``render`` is then what the
    TUI adds: handing the query to its search thread and back, building the hits' cells, the repaint."""
    from encodr.tui.app import EncodrApp

    fresh_searchers()  # the app opens and warms its own, as `encodr tui` does

    async def go() -> tuple[list[float], list[dict]]:
        app = EncodrApp(index_dir=index, debounce=0.0)
        drawn: list[float] = []
        searched: list[dict] = []
        ready = asyncio.Event()
        show_hits = app.show_hits

        def stamp() -> None:
            drawn.append(time.perf_counter())
            ready.set()

        def shown(*args, **kwargs):  # the app's own method, then a stamp once the screen is refreshed with its table
            searched.append(dict(getattr(app, "last_timings", None) or {}))
            show_hits(*args, **kwargs)
            app.call_after_refresh(stamp)

        app.show_hits = shown
        ms = []
        async with app.run_test(size=(160, 50)) as pilot:
            while app.searcher is None:  # the index opens and warms in a worker
                await pilot.pause()
            box = app.query_one("#query")
            for i, q in enumerate(queries[:WARM] + queries):
                ready.clear()
                started = time.perf_counter()
                box.value = q
                try:  # a query that shows no hits (an error in the status line) would leave the pilot waiting
                    await asyncio.wait_for(ready.wait(), 60)
                except TimeoutError:
                    raise RuntimeError(f"the TUI showed no hits for {q!r}: {app.query_one('#status').render()}") from None
                if i >= WARM:
                    ms.append((drawn[-1] - started) * 1000)
        return ms, searched[-len(ms) :] if all(searched[-len(ms) :]) else []

    ms, phases = asyncio.run(go())
    return row(size, "tui", "hybrid", False, ms, phases)


def cold_rows(index: Path, size: int, queries: list[str], runs: int) -> list[dict]:
    """A new ``encodr search`` process per query, split into its parts (medians over ``runs``)."""

    def wall(cmd: list[str]) -> tuple[float, str]:
        started = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        return (time.perf_counter() - started) * 1000, done.stdout

    encodr = [sys.executable, "-m", "encodr"]
    startup = [wall([*encodr, "--help"])[0] for _ in range(runs)]  # --help: what every encodr has (--version came later)
    from encodr.index.meta import IndexMeta

    backend = IndexMeta.read(index / "current").backend  # the index's, which its queries load
    load = [
        float(
            wall(
                [
                    sys.executable,
                    "-c",
                    "import time; t = time.perf_counter(); from encodr.models import load_encoder; "
                    f"load_encoder('minilm', backend='{backend}'); print((time.perf_counter() - t) * 1000)",
                ]
            )[1]
        )
        for _ in range(runs)
    ]
    total, query, timings = [], [], timed_search()
    for q in queries[:runs]:
        ms, out = wall([*encodr, "search", q, "--index", str(index), "--json", *(["--timings"] if timings else [])])
        total.append(ms)
        if timings:
            query.append(json.loads(out)["timings"]["total"])
    parts = {"start-up ms": np.median(startup), "model load ms": np.median(load)}
    if query:  # a checkout without --timings: the query and the rest are one figure
        parts["query ms"] = np.median(query)
    parts["rest ms"] = max(0.0, float(np.median(total)) - sum(parts.values()))
    out = {
        "corpus": size,
        "front end": "cold CLI",
        "mode": "hybrid",
        "runs": runs,
        "wall ms": round(float(np.median(total)), 1),
        **{k: round(float(v), 1) for k, v in parts.items()},
    }
    print(out, flush=True)
    return [out]


def txtai_row(texts: list[tuple[str, str]], queries: list[str]) -> dict:
    """The anchor: txtai hybrid search (its own BM25 + the same MiniLM) over the same texts, in this process."""
    from txtai import Embeddings

    from encodr.models.resolution import resolve

    embeddings = Embeddings(path=str(resolve("minilm").path), hybrid=True, content=True)
    started = time.perf_counter()
    embeddings.index([(i, t, None) for i, (t, _) in enumerate(texts)])
    built = time.perf_counter() - started
    ms = []
    for i, q in enumerate(queries[:WARM] + queries):
        started = time.perf_counter()
        embeddings.search(q, 10)
        if i >= WARM:
            ms.append((time.perf_counter() - started) * 1000)
    out = row(len(texts), "anchor: txtai (library)", "hybrid", False, ms, [])
    out["build s"] = round(built, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 20000, 336198], help="corpus sizes (the first N texts)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--rerank-queries", type=int, default=50, help="queries of the re-ranked rows (depth 50: 50 pairs a query)"
    )
    parser.add_argument(
        "--front-size", type=int, default=20000, help="the corpus the front ends, the cold CLI and the anchor are measured on"
    )
    parser.add_argument("--fronts", nargs="*", default=["http", "mcp", "tui"], choices=["http", "mcp", "tui"])
    parser.add_argument("--random-above", type=int, default=50000, help="larger corpora get random vectors for the dense side")
    parser.add_argument("--cold", type=int, default=5, help="cold encodr search processes (0: none)")
    parser.add_argument("--no-anchor", action="store_true", help="skip txtai")
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["dense", "keyword", "hybrid"],
        choices=["dense", "keyword", "hybrid"],
        help="the library rows' modes",
    )
    parser.add_argument("--no-rerank", action="store_true", help="no re-ranked rows")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the built indexes in this folder")
    parser.add_argument(
        "--backend",
        default="torch",
        choices=["torch", "auto", "torch-bf16", "onnx"],
        help="the indexes' forward pass, which encodes their queries (auto: encodr index's default on this CPU)",
    )
    parser.add_argument(
        "--corpus", default="mixed", choices=["mixed", "scifact"], help="bench/search.py's short texts, or SciFact's abstracts"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "latency.json")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="encodr-latency-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["ENCODR_HOME"] = str(work / "home")  # the servers' workspace: nothing of the user's is served
    sizes = sorted(set(args.sizes) | {args.front_size})
    if args.corpus == "scifact":
        texts_all, queries = scifact(args.queries)
    else:
        texts_all, pools = corpus_texts(max(sizes))
        queries = held_out(pools, args.queries, {t for t, _ in texts_all}, random.Random(0))
    cross = make_cross(work / "cross")
    rows, cold, builds = [], [], {}
    try:
        for size in sizes:
            index = work / f"idx{size}"
            builds[size] = build_index(texts_all[:size], index, size > args.random_above, args.backend)
            print(f"index of {size:,} texts: {builds[size]}", flush=True)
            rows += library_rows(index, size, queries, cross, args.rerank_queries, args.modes, not args.no_rerank)
            if size == args.front_size:
                for front in args.fronts:
                    rows.append({"http": http_row, "mcp": mcp_row, "tui": tui_row}[front](index, size, queries))
                cold = cold_rows(index, size, queries, args.cold) if args.cold else []
        if not args.no_anchor:
            rows.append(txtai_row(texts_all[: args.front_size], queries))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    columns = ["corpus", "front end", "mode", "re-ranker", "queries", "p50 ms", "p95 ms", "p99 ms", *PHASES, "render"]
    print_table(f"one query at a time, k = 10, {len(queries)} held-out queries (phases: mean ms)", rows, columns)
    print_table("a cold encodr search process (medians)", cold, list(cold[0]) if cold else [])
    flags = cpu_flags()
    write_json(
        args.out,
        {
            "cpu_flags": flags,
            "corpus": args.corpus,
            "backend": args.backend,
            "queries": len(queries),
            "rerank_queries": args.rerank_queries,
            "front_size": args.front_size,
            "random_above": args.random_above,
            "builds": {str(k): v for k, v in builds.items()},
            "rows": rows,
            "cold": cold,
        },
    )
    print(f"CPU flags: {flags}; wrote {args.out}")


if __name__ == "__main__":
    main()
