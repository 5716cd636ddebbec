"""Code search as people and agents use it: questions about a repository, scored by the files
that answer them.

The set (bench/data/repo_questions.json) holds six repositories in four languages (Go, JavaScript,
Rust, Python), 22 questions each, written for this bench from the repositories' own code: semantic
("redirect the client to another url"), architecture ("how does a group dispatch to its
subcommands") and symbol (``GitignoreBuilder``) questions, each with its relevant files and, for
some, secondary ones. It is encodr's development set for the code-ranking stage's weights.

Each repository is written to a folder as a person has it (a repository's tree from the stored
mirror, ``git archive`` of its newest commit; an installed package's folder), indexed as a person
would, ``encodr index FOLDER --out IDX`` at encodr's defaults (a process of its own, timed:
"index s"), then each question is asked with ``-k 10`` in each mode through
``encodr.core.commands.search`` (the library call every front end makes, snippets included), in a
process of its own. Scoring follows the common repository-search protocol: the top-10 distinct
files, gain 1 for a relevant or secondary file, NDCG@10 per question; the mean over a
repository's questions, then over repositories (and by category). "p50 ms" is the median wall time
of a warm single-question search (each question once, after one warm-up), snippets included.

    python bench/repo_questions.py [--checkout PATH] [--label after] [--repos cobra,express]
        [--modes hybrid,dense,keyword] [--work DIR] [--keep] [--index-args="--model PATH"]
        [--search '{"fusion_weight": 0.5}']

``--index-args`` passes more arguments to ``encodr index`` (``--reuse``: search the indexes a kept
``--work`` holds, as they are); ``--search`` more settings to each search. "first s" is the time
until the index answers a search (its first generation is published: the fast stage of a code
index, :mod:`encodr.index.stages`), "index s" until ``encodr index`` exits.

``--checkout`` runs another encodr checkout (e.g. a worktree of the commit before a change) on the
same folders, so its row sits beside this one's in bench/results/repo_questions.json (rows of
other labels in the file are kept). The CPU's flags and the load average are recorded with each
row's times.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, print_table, write_json  # noqa: E402

SET = Path(__file__).resolve().parent / "data" / "repo_questions.json"
MIRRORS = Path(os.environ.get("ENCODR_MIRRORS", "/work/.mirror"))
ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = ("semantic", "architecture", "symbol")

# run in the checkout's own process: every question of one index, each mode; prints JSON
DRIVER = r"""
import json, sys, time
from encodr.core import commands
from encodr.core.requests import SearchRequest
index, modes, questions = sys.argv[1], sys.argv[2].split(","), json.loads(sys.stdin.read())
settings = json.loads(sys.argv[3])
out = {}
for mode in modes:
    def ask(q):
        request = SearchRequest(query=[q], index=index, k=10, mode=mode, **settings)
        return commands.search(request).results[0].hits
    ask(questions[0])
    files, times = [], []
    for q in questions:
        t = time.perf_counter()
        hits = ask(q)
        times.append(1000 * (time.perf_counter() - t))
        files.append([h.path or h.source for h in hits])
    out[mode] = {"files": files, "ms": times}
print(json.dumps(out))
"""


def cpu_flags() -> list[str]:
    """The CPU's vector flags that decide encodr's kernels (AVX2, AVX-512, VNNI, bf16, AMX)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
    return [f for f in wanted if f in flags]


def materialize(repo: dict, work: Path) -> tuple[Path, str]:
    """The repository's folder under ``work`` and what it was made from (commit or version)."""
    folder = work / repo["name"]
    source = repo["source"]
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    if "mirror" in source:
        git_dir = MIRRORS / source["mirror"].replace("/", "+") / "repo"
        if not git_dir.exists():
            raise SystemExit(f"{source['mirror']}: not in {MIRRORS}; fetch it first (the search tool's fetch)")
        commit = subprocess.run(
            ["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        archive = subprocess.run(
            ["git", "--git-dir", str(git_dir), "archive", "HEAD", *source.get("paths", [])], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
        return folder, commit[:12]
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec(source["package"])
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{source['package']}: not installed here")
    src = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(src, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    return folder, importlib.metadata.version(source["package"])


def ndcg10(files: list[str], wanted: set[str]) -> float:
    """NDCG@10 of a ranking of files, gain 1 for each file in ``wanted`` (each counted once)."""
    seen, dcg = set(), 0.0
    for rank, f in enumerate([f for f in files if not (f in seen or seen.add(f))][:10], 1):
        if f in wanted:
            dcg += 1 / math.log2(rank + 1)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(wanted), 10) + 1))
    return dcg / ideal if ideal else 0.0


def run_checkout(
    checkout: Path, folder: Path, index: Path, questions: list[str], modes: list[str], extra: list[str], search: dict
) -> tuple[float, float, dict]:
    """Index ``folder`` with ``checkout``'s encodr (``extra``: more ``encodr index`` arguments; ``["--reuse"]``: the
    index there as it is), then ask ``questions`` (``search``: more search settings): (seconds until the index
    answers a search, until the command exits, driver JSON)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    if extra == ["--reuse"]:
        return 0.0, 0.0, ask_all(env, folder, index, questions, modes, search)
    if index.exists():
        shutil.rmtree(index)
    t = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "encodr", "index", str(folder), "--out", str(index), *extra],
        env=env,
        cwd=str(folder.parent),  # not this checkout's folder: python -m finds the package in its cwd before PYTHONPATH
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = None
    record = index / "current" / "index.json"
    while process.poll() is None:  # the first generation published: the index answers searches from here
        if first is None and record.exists():
            first = time.perf_counter() - t
        time.sleep(0.02)
    out, err = process.communicate()
    seconds = time.perf_counter() - t
    if process.returncode != 0:
        raise SystemExit(f"encodr index {folder} failed: {(err or out).strip()[-400:]}")
    return first or seconds, seconds, ask_all(env, folder, index, questions, modes, search)


def ask_all(env: dict, folder: Path, index: Path, questions: list[str], modes: list[str], search: dict) -> dict:
    """The driver's answers to ``questions`` on ``index``, in a process of its own."""
    for _ in range(2):  # a process that dies by a signal (seen once in 12 runs, no output) is run again
        asked = subprocess.run(
            [sys.executable, "-c", DRIVER, str(index), ",".join(modes), json.dumps(search)],
            env=env,
            input=json.dumps(questions),
            capture_output=True,
            text=True,
            cwd=str(folder.parent),
        )
        if asked.returncode == 0:
            break
        print(f"searching {index} failed (exit {asked.returncode}): {asked.stderr.strip()[-800:]}", file=sys.stderr)
    else:
        raise SystemExit(f"searching {index} failed twice")
    return json.loads(asked.stdout.strip().splitlines()[-1])


def score(repo: dict, answers: dict, mode: str) -> dict:
    """A repository's NDCG@10 × 100 in ``mode``: overall and by category, and its p50 ms."""
    per = {c: [] for c in CATEGORIES}
    misses = []
    for q, files in zip(repo["questions"], answers[mode]["files"]):
        wanted = set(q["relevant"]) | set(q.get("secondary", []))
        value = ndcg10(files, wanted)
        per[q["category"]].append(value)
        if value < 0.5:
            misses.append({"q": q["q"], "top": files[:3], "ndcg": round(value, 3)})
    every = [v for vs in per.values() for v in vs]
    ms = sorted(answers[mode]["ms"])
    return {
        "nDCG@10": 100 * sum(every) / len(every),
        **{c: 100 * sum(v) / len(v) for c, v in per.items() if v},
        "p50 ms": ms[len(ms) // 2],
        "misses": misses,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the encodr checkout to run (default: this one)")
    parser.add_argument("--label", default="after", help="names this run's rows in the results file")
    parser.add_argument("--repos", default=None, help="comma-separated repository names (default: all)")
    parser.add_argument("--modes", default="hybrid,dense,keyword")
    parser.add_argument("--work", type=Path, default=None, help="where the folders and indexes go (default: a temp dir)")
    parser.add_argument("--index-args", default="", help="more arguments to encodr index, e.g. '--model PATH'")
    parser.add_argument("--search", default="{}", help="more search settings, JSON: '{\"fusion_weight\": 0.5}'")
    parser.add_argument("--keep", action="store_true", help="keep --work's folders and indexes")
    parser.add_argument("--out", type=Path, default=RESULTS / "repo_questions.json")
    parser.add_argument("--dry", action="store_true", help="print the scores only, write no results file")
    args = parser.parse_args()
    data = json.loads(SET.read_text())
    repos = [r for r in data["repos"] if args.repos is None or r["name"] in args.repos.split(",")]
    modes = args.modes.split(",")
    work = args.work or Path(tempfile.mkdtemp(prefix="encodr-repoq-"))
    rows = []
    try:
        for repo in repos:
            reuse = args.index_args.split() == ["--reuse"] and (work / "repos" / repo["name"]).exists()
            folder, version = (work / "repos" / repo["name"], "reused") if reuse else materialize(repo, work / "repos")
            load = os.getloadavg()[0]
            first, seconds, answers = run_checkout(
                args.checkout.resolve(),
                folder,
                work / "idx" / repo["name"],
                [q["q"] for q in repo["questions"]],
                modes,
                args.index_args.split(),
                json.loads(args.search),
            )
            for mode in modes:
                rows.append(
                    {
                        "label": args.label,
                        "repo": repo["name"],
                        "language": repo["language"],
                        "version": version,
                        "mode": mode,
                        "index s": seconds,
                        "first s": first,
                        "MB": sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20,
                        "load": load,
                        **score(repo, answers, mode),
                    }
                )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    means = []
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        means.append(
            {
                "label": args.label,
                "repo": "mean",
                "mode": mode,
                **{
                    k: sum(r[k] for r in mine) / len(mine) for k in ("nDCG@10", *CATEGORIES, "p50 ms", "index s", "first s", "MB")
                },
            }
        )
    columns = ["repo", "mode", "nDCG@10", *CATEGORIES, "p50 ms", "first s", "index s", "MB"]
    print_table(f"repository questions, NDCG@10 × 100 ({args.label}; cpu {' '.join(cpu_flags())})", rows + means, columns)
    if args.dry:
        return
    kept = []
    if args.out.exists():
        kept = [r for r in json.loads(args.out.read_text()).get("rows", []) if r.get("label") != args.label]
    misses = {f"{r['label']}/{r['repo']}/{r['mode']}": r.pop("misses") for r in rows if r.get("misses")}
    for r in rows:
        r.pop("misses", None)
    old_misses = json.loads(args.out.read_text()).get("misses", {}) if args.out.exists() else {}
    old_misses = {key: m for key, m in old_misses.items() if not key.startswith(f"{args.label}/")}
    write_json(
        args.out,
        {
            "bench": "repo_questions",
            "cpu_flags": cpu_flags(),
            "k": 10,
            "rows": kept + rows + means,
            "misses": {**old_misses, **misses},  # the questions each row scored under 0.5, with its top 3 files
        },
    )


if __name__ == "__main__":
    main()
