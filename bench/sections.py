"""Should the dense side see a passage's heading path? nDCG@10 × 100 of dense and hybrid search
over Markdown documentation with headings, the passages encoded as stored (what ``encodr index``
does) against the same passages with their heading path (``Title › Section › Subsection``) put
before them, in one run, the keyword side the same in both (it indexes the heading words already).

The set is built here from real Markdown documentation: the Markdown long descriptions (READMEs)
of the Python packages installed beside encodr (``*.dist-info/METADATA`` with
``Description-Content-Type: text/markdown``, at least 3 headings and 3,000 characters), each under
its package's own licence (recorded per document in the JSON). Queries: in each README, up to
``--per-doc`` sections (seeded) whose first paragraph opens with a sentence of 8 to 40 words; that
sentence is the query, and it is deleted from the document, so the document must be found by the
rest of its text; its relevant document is that README (a document ranks by its best passage).

The shared retrieval sets (SciFact, XQuAD) are not rows: their documents are JSONL records with
no headings, so every passage's heading path is empty and both encodings are the same text.

    python bench/sections.py [--model minilm] [--per-doc 4]

Prints a table and writes bench/results/sections.json.
"""

from __future__ import annotations

import argparse
import email
import json
import random
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, print_table, write_json  # noqa: E402

HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
SENTENCE = re.compile(r"^([A-Z][^\n]*?[.!?])(?=\s|$)")

# python -m bench run sections --quick: a small run that checks the benchmark still runs (its JSON to a temporary folder)
QUICK = ["--documents", "6", "--per-doc", "2", "--out", "{tmp}/sections.json"]


def readmes(limit: int | None = None) -> list[tuple[str, str, str]]:
    """(package, licence, Markdown) of each installed package's Markdown README with at least 3
    headings and 3,000 characters, sorted by package name (the first ``limit``)."""
    found = []
    for meta in sorted(Path(sysconfig.get_paths()["purelib"]).glob("*.dist-info/METADATA")):
        message = email.message_from_string(meta.read_text(encoding="utf-8", errors="replace"))
        body = message.get_payload()
        if "markdown" not in (message.get("Description-Content-Type") or "") or not isinstance(body, str):
            continue
        if len(HEADING.findall(body)) >= 3 and len(body) >= 3000:
            licence = (
                message.get("License-Expression")
                or message.get("License")
                or next(
                    (c.split("::")[-1].strip() for c in message.get_all("Classifier") or [] if c.startswith("License ::")),
                    "unknown",
                )
            )
            found.append((str(message.get("Name")), str(licence).splitlines()[0][:60], body))
    return found[:limit]


def queries_of(text: str, per_doc: int, rng: random.Random) -> tuple[str, list[str]]:
    """``text`` without the chosen sections' first sentences, and those sentences (the queries)."""
    heads = list(HEADING.finditer(text))
    candidates = []
    for head, following in zip(heads, heads[1:] + [None]):
        body = text[head.end() : following.start() if following else len(text)].lstrip("\n")
        first = SENTENCE.match(body)
        if first and 8 <= len(first.group(1).split()) <= 40 and "`" not in first.group(1) and "](" not in first.group(1):
            candidates.append(first.group(1))
    chosen = rng.sample(candidates, min(per_doc, len(candidates)))
    for sentence in chosen:
        text = text.replace(sentence, "", 1)
    return text, chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--per-doc", type=int, default=4)
    parser.add_argument("--documents", type=int, default=None, help="only the first N READMEs")
    parser.add_argument("--out", type=Path, default=RESULTS / "sections.json")
    args = parser.parse_args()

    from encodr.evaluation.retrieval import IndexRetrievalEvaluator
    from encodr.index import BuildOptions, SearchOptions, build

    build_module = sys.modules["encodr.index.build"]  # the module (the package's name `build` is the function)
    from encodr.models import load_encoder

    rng = random.Random(0)
    encoder = load_encoder(args.model)
    searches = (SearchOptions(mode="dense"), SearchOptions(mode="hybrid", fusion="rrf"))
    rows, documents = [], []
    plain = build_module.dense_text
    variants = {
        "text (as stored)": plain,
        "heading path + text": lambda r: (
            f"{' › '.join(p for p in (r.title, r.section) if p)}\n{r.text}" if (r.title or r.section) else r.text
        ),
    }
    with tempfile.TemporaryDirectory(prefix="encodr-bench-sections-") as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        queries, qrels = {}, []
        for package, licence, text in readmes(args.documents):
            text, asked = queries_of(text, args.per_doc, rng)
            path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', package)}.md"
            path.write_text(text, encoding="utf-8")
            documents.append({"package": package, "licence": licence, "queries": len(asked)})
            for sentence in asked:
                qid = f"q{len(queries)}"
                queries[qid] = sentence
                qrels.append((qid, path))
        (Path(tmp) / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
        for label, dense_text in variants.items():
            where = Path(tmp) / f"index-{len(rows)}"
            build_module.dense_text = dense_text  # what _read_here encodes for each passage
            try:
                meta = build(
                    [str(folder)], where, BuildOptions(model=encoder, index_type="flat", backend=encoder.backend, lang="eng")
                )
            finally:
                build_module.dense_text = plain
            ids = {Path(d).name: d for d in _document_ids(where)}
            (Path(tmp) / "qrels.tsv").write_text(
                "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{ids[p.name]}\t1\n" for q, p in qrels)
            )
            evaluator = IndexRetrievalEvaluator(where, Path(tmp) / "queries.jsonl", Path(tmp) / "qrels.tsv", searches=searches)
            try:
                ranked = evaluator.ranked()
                row = {
                    "dense encodes": label,
                    "model": args.model,
                    "documents": len(documents),
                    "passages": meta["count"],
                    "queries": len(queries),
                }
                for options in searches:
                    row[options.mode] = next(s.value for s in evaluator.scores(ranked[options.label]) if s.metric == "ndcg@10")
            finally:
                evaluator.close()
            rows.append(row)
            print(row, flush=True)
    print_table(
        "Markdown READMEs: nDCG@10 × 100, passages encoded with and without their heading path (one run)",
        rows,
        ["dense encodes", "documents", "passages", "queries", "dense", "hybrid"],
    )
    write_json(
        args.out, {"machine": machine(), "model": args.model, "per_doc": args.per_doc, "rows": rows, "documents": documents}
    )
    print(f"wrote {args.out}")


def _document_ids(index: Path) -> list[str]:
    """The document ids (file paths) the index at ``index`` stores."""
    from encodr.index import Index

    with Index.open(index) as opened:
        return list(opened.document_ids())


if __name__ == "__main__":
    main()
