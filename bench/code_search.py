"""Does a person who describes a function find it in their own code? Function retrieval in
installed Python packages, as CodeSearchNet (Husain et al. 2019) sets it: a docstring's first
sentence is the query, and its function, with the docstring removed, is the answer.

The set: each package's ``.py`` files copied into a folder. Its documented functions and
methods (``ast``; a first sentence of at least 3 words) are split in two halves by a hash of
``package:path:qualified name``; the held-out half has its docstrings removed from the copied
files (a function left with no body gets ``pass``), and each removed docstring's first sentence
is a query. The other half stays documented, as in the repository (issue 63's code recipe
trains on it). The folder is indexed as a person would, ``encodr index FOLDER --out IDX --glob
'*.py'`` (the bundled MiniLM; Typer's test runner, in this process), and each query is asked
of it in the three modes with ``-k 10`` (documents):

- ``located@1``: the top hit is the function's file, and its passage's lines (``line`` to
  ``end_line``) meet the function's lines (its decorators to its last line);
- ``located@5``: one of the first 5 hits is;
- ``nDCG@10``: the function as the one relevant answer, found at the first hit that locates it
  (1 / log2(rank + 1); 0 past rank 10), as issue 63 states its goal.

With ``--tune``, the code recipe (``encodr tune FOLDER --recipe code``) is also trained on each
package's folder, where only the documented half is documented, so its pairs and its dev fold
never hold a query of the set, and the folder is indexed with the tuned model ("tuned on its own
code"); and trained on the other packages' folders only, to ask whether a model tuned on code
helps a repository it never saw ("tuned on the other packages"; with two packages, that is the
other package's own model). Each tuned row carries the tune's wall time and its dev fold's
nDCG@10 before and after (the recipe's selection, on documented functions only).

With ``--prose`` too, each package's own tuned model and the starting one are scored on prose
search: dense nDCG@10 of SciFact's 809 shared train claims over its abstracts (``encodr eval
retrieval``'s pipeline; never its test split), to ask whether a model tuned on code searches prose
worse. ``--set KEY=VALUE`` passes the code recipe's settings to every tune (``general=2000``:
general sentences held in place while it learns code, ``encodr.methods.code.general``).

The folders are written to a temporary folder and removed after the run.

    python bench/code_search.py [--packages rich,sentence_transformers] [--label after] [--tune [--prose] [--set K=V]]

Prints a table and writes bench/results/code_search.json (``--label`` names the row set; rows
of other labels already in the file are kept, so a run of the code before a change sits beside
the run after it).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import inspect
import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "scifact"
PACKAGES = "rich,sentence_transformers"  # shared: issue 63 measured these two; others are held out
MODES = ("dense", "keyword", "hybrid")
QUICK = ["--packages", "rich", "--limit", "20", "--files", "12", "--out", "{tmp}/code_search.json"]


def first_sentence(doc: str) -> str:
    """A docstring's first sentence: its first paragraph up to the first ``. `` (whitespace folded)."""
    paragraph = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())
    return re.split(r"(?<=[.!?])\s", paragraph, maxsplit=1)[0].rstrip(".")


def held_out(key: str) -> bool:
    """Whether a function is in the held-out half (its docstring removed; a query)."""
    return hashlib.sha1(key.encode()).digest()[0] % 2 == 0


def definitions(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """(qualified name, node) of every function, method and class of a module, in order."""
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}" if prefix else child.name
                out.append((name, child))
                if isinstance(child, ast.ClassDef):
                    walk(child, name)

    walk(tree, "")
    return out


def write_package(package: str, folder: Path, files: int | None = None) -> list[dict]:
    """Copy ``package``'s ``.py`` files into ``folder``, the held-out half's docstrings removed;
    returns the queries, each with its file (relative to ``folder``) and the function's lines."""
    spec = importlib.util.find_spec(package)
    root = Path(next(iter(spec.submodule_search_locations)))
    queries = []
    for source in sorted(root.rglob("*.py"))[:files]:
        rel = source.relative_to(root.parent)
        text = source.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.split("\n")
        removed = []
        for name, node in definitions(tree):
            doc = ast.get_docstring(node, clean=False)
            if isinstance(node, ast.ClassDef) or not doc or len(first_sentence(doc).split()) < 3:
                continue
            if held_out(f"{package}:{rel}:{name}"):
                removed.append((name, node, first_sentence(doc)))
        for name, node, _ in sorted(removed, key=lambda r: -r[1].body[0].lineno):
            first, last = node.body[0].lineno, node.body[0].end_lineno
            indent = re.match(r"\s*", lines[first - 1]).group()
            lines[first - 1 : last] = [] if len(node.body) > 1 else [f"{indent}pass"]
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines), encoding="utf-8")
        where = {name: node for name, node in definitions(ast.parse("\n".join(lines)))}
        for name, _, query in removed:
            node = where[name]
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            queries.append({"query": query, "path": str(rel), "lines": [start, node.end_lineno], "name": name})
    return queries


def located(hits, truth: dict, depth: int) -> bool:
    """Whether one of the first ``depth`` hits is the function's file with lines that meet its lines."""
    first, last = truth["lines"]
    for hit in hits[:depth]:
        path = (getattr(hit, "path", None) or hit.source or "").replace("\\", "/")
        end = getattr(hit, "end_line", None) or hit.line
        if path.endswith(truth["path"]) and hit.line <= last and end >= first:
            return True
    return False


def ndcg_at_10(hits, truth: dict) -> float:
    """nDCG@10 with the function as the one relevant answer: 1 / log2(1 + the rank of the first hit
    that locates it), 0 when none of the first 10 does (the ideal ranking puts it first)."""
    for rank in range(1, min(10, len(hits)) + 1):
        if located(hits[rank - 1 : rank], truth, 1):
            return 1 / math.log2(rank + 1)
    return 0.0


def measure(package: str, folder: Path, queries: list[dict], index: Path, model: str | None = None, modes=MODES) -> list[dict]:
    """Index ``folder`` (with ``model``, default the bundled one) and search it; a row per mode."""
    from typer.testing import CliRunner

    from encodr.cli import app
    from encodr.core.commands import open_searcher
    from encodr.core.requests import SearchRequest

    done = CliRunner().invoke(
        app, ["index", str(folder), "--out", str(index), "--glob", "*.py", *(["--model", model] if model else [])]
    )
    if done.exit_code != 0:
        raise SystemExit(f"encodr index failed: {done.output.strip()}")
    rows = []
    for mode in modes:
        request = SearchRequest(query=[q["query"] for q in queries], index=str(index), k=10, mode=mode)
        searcher = open_searcher(request)
        _, results = searcher.query(request.query, request.options())
        at1 = sum(located(hits, q, 1) for hits, q in zip(results, queries))
        at5 = sum(located(hits, q, 5) for hits, q in zip(results, queries))
        rows.append(
            {
                "package": package,
                "mode": mode,
                "queries": len(queries),
                "passages": len(searcher.index),
                "located@1": 100 * at1 / len(queries),
                "located@5": 100 * at5 / len(queries),
                "nDCG@10": 100 * sum(ndcg_at_10(hits, q) for hits, q in zip(results, queries)) / len(queries),
            }
        )
    return rows


def prose(label: str, name: str, model: str | None) -> dict:
    """A row: dense nDCG@10 × 100 of SciFact's shared train claims with ``model`` (default: the
    bundled one), named ``name``."""
    from encodr.data.beir import read_retrieval
    from encodr.evaluation.retrieval import RetrievalEvaluator
    from encodr.models import load_encoder

    evaluator = RetrievalEvaluator("scifact", read_retrieval(SCIFACT), split="train")
    found = next(s.value for s in evaluator.evaluate(load_encoder(model or "minilm")) if s.metric == "ndcg@10")
    print(f"prose: {name} {found:.2f}", file=sys.stderr, flush=True)
    return {
        "label": f"{label}, prose",
        "package": f"scifact train claims: {name}",
        "mode": "dense",
        "queries": len(evaluator.query_ids()),
        "nDCG@10": found,
    }


def tune(folders: list[Path], out: Path, overrides: list[str]) -> tuple[str, dict]:
    """``encodr tune FOLDER --recipe code --out OUT [--set KEY=VALUE…]`` on the folders given (several: copied into one);
    returns the model's path and what its run says of itself: the wall time (s), the pairs, the dev
    fold's nDCG@10 before and after, and the hybrid α it chose there (from its ``encodr.json``)."""
    import shutil

    from typer.testing import CliRunner

    from encodr.cli import app

    source = folders[0]
    if len(folders) > 1:
        source = out.with_suffix(".src")
        for f in folders:
            shutil.copytree(f, source / f.name)
    start = time.perf_counter()
    sets = [part for o in overrides for part in ("--set", o)]
    done = CliRunner().invoke(app, ["tune", str(source), "--recipe", "code", "--out", str(out), *sets])
    if done.exit_code != 0:
        raise SystemExit(f"encodr tune failed: {done.output.strip()[-400:]}")
    seconds = time.perf_counter() - start
    meta = json.loads((out / "encodr.json").read_text()) if (out / "encodr.json").exists() else {}
    summary = meta.get("summary", meta)
    kept = ("pairs", "dev_queries", "dev_before", "dev_after", "fusion_weight", "general")
    info = {"tune_s": round(seconds, 1), **{k: summary.get(k) for k in kept}}
    print(f"tuned {out.name} in {seconds:.0f} s: {info}", file=sys.stderr, flush=True)
    return str(out), info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", default=PACKAGES, help="installed packages, comma-separated")
    parser.add_argument("--files", type=int, default=None, help="only the first N files of each package (a quick run)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries of each package")
    parser.add_argument("--label", default="after", help="the name of this run's rows (before, after…)")
    parser.add_argument(
        "--tune",
        action="store_true",
        help="also tune the code recipe on each package's documented half, and on the other packages",
    )
    parser.add_argument("--prose", action="store_true", help="with --tune: score the tuned models on SciFact's train claims")
    parser.add_argument("--set", nargs="*", default=[], help="with --tune: the code recipe's overrides KEY=VALUE")
    parser.add_argument("--out", type=Path, default=RESULTS / "code_search.json")
    args = parser.parse_args()
    rows = []
    packages = args.packages.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        written = {p: write_package(p, tmp / p, args.files)[: args.limit] for p in packages}
        # its documented half: the held-out functions are undocumented in its folder
        own = {p: tune([tmp / p], tmp / f"{p}.code", args.set) for p in packages} if args.tune else {}
        for package in packages:
            folder, queries = tmp / package, written[package]
            rows.extend({"label": args.label, **row} for row in measure(package, folder, queries, tmp / f"{package}.idx"))
            if not args.tune:
                continue
            rows.extend(
                {"label": f"{args.label}, tuned on its own code", **row, **own[package][1]}
                for row in measure(package, folder, queries, tmp / f"{package}.own.idx", own[package][0], ("dense", "hybrid"))
            )
            others = [p for p in packages if p != package]
            if not others:
                continue
            # one other package: its own model is the model tuned on the other packages
            general, info = (
                own[others[0]] if len(others) == 1 else tune([tmp / p for p in others], tmp / f"{package}.others.code", args.set)
            )
            rows.extend(
                {"label": f"{args.label}, tuned on the other packages", **row, **info}
                for row in measure(package, folder, queries, tmp / f"{package}.others.idx", general, ("dense", "hybrid"))
            )
        if args.prose and own:
            rows.append(prose(args.label, "the starting model", None))
            rows.extend(prose(args.label, f"tuned on {p}", own[p][0]) for p in packages)
    print_table(
        f"Function retrieval ({args.label}): located@1 / @5 and nDCG@10, %",
        rows,
        ["label", "package", "mode", "queries", "located@1", "located@5", "nDCG@10"],
    )
    labels = {r["label"] for r in rows}
    kept = [
        r for r in (json.loads(args.out.read_text()).get("rows", []) if args.out.exists() else []) if r.get("label") not in labels
    ]
    write_json(args.out, {"bench": "code_search", "model": "minilm", "k": 10, "rows": kept + rows})


if __name__ == "__main__":
    main()
