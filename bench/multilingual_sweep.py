"""Choose the multilingual recipe's bitext-only defaults on dev, at a CPU budget.

Training data (as ``bench/multilingual.py`` builds it): 2,000 Bible verse pairs per language,
English with spa, fra, deu, ita and rus (10,000 pairs), verses after Genesis' first 1,000.
Every point is ``encodr tune --recipe multilingual --bitext pairs.tsv`` (no TEXT, so no CMLM)
with some recipe fields overridden, and ``--dev`` left out.

Dev, never a test split:
- Tatoeba spa/fra/deu ↔ eng, acc@1 in both directions, mean (the bundled ``tatoeba-*`` dev sets);
  the points are ranked on it;
- the held-out Bible: Genesis' first 1,000 verses (never trained on), the first ``--bible-dev``
  of them, English ↔ each of the 5 training languages and ↔ ara and vie (never trained on),
  acc@1 in both directions, mean over the 5 and over the 2.

Points: a base row, then one axis changed at a time from the starting defaults (``--points``
names them); ``--set KEY=VALUE`` changes what every point starts from. Results are written
after every point, and a rerun with the same ``--out`` skips the points already there.

    python bench/multilingual_sweep.py [--points base lr=5e-5 warmup=0 ...] [--set KEY=VALUE]

Prints a table and writes bench/results/multilingual_sweep.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, parse_overrides, print_table, run_tune, write_json  # noqa: E402
from multilingual import BIBLE, build_data, load  # noqa: E402

from encodr import evaluation  # noqa: E402
from encodr.data.bitext import Translation  # noqa: E402
from encodr.evaluation.bitext import BitextEvaluator  # noqa: E402
from encodr.methods import load_recipe  # noqa: E402
from encodr.models import load_encoder  # noqa: E402

TRAINED = ("spa", "fra", "deu", "ita", "rus")
UNSEEN = ("ara", "vie")
# one axis at a time from the recipe as it was shipped (warm-up 0.1 then decay, clip 1.0, lr 2e-5,
# batch 64, 1 epoch, bitext_weight 0.2); "base" is the untuned model
POINTS = [
    "base",
    "shipped",
    "warmup=0",
    "warmup=0,max_grad_norm=0",
    "lr=5e-5",
    "lr=5e-5,warmup=0",
    "lr=1e-4,warmup=0",
    "bitext_weight=1.0",
    "bitext_batch_size=32,warmup=0",
    "bitext_batch_size=128,warmup=0",
    "epochs=2,warmup=0",
]


def bible_dev(bible: Path, n: int) -> dict[str, list[Translation]]:
    """English ↔ each language on the first ``n`` verses of Genesis (held out from training)."""
    eng = load("eng", bible)
    keys = list(eng)[:n]
    out = {}
    for lang in (*TRAINED, *UNSEEN):
        other = load(lang, bible)
        out[lang] = [Translation(eng[k], other[k], "eng", lang) for k in keys if k in other]
    return out


def score(model: str, bible: dict[str, list[Translation]]) -> dict:
    encoder = load_encoder(model)
    tatoeba = evaluation.run("bitext", encoder)
    row = {s.dataset.replace("tatoeba-", "tatoeba "): round(s.value, 2) for s in tatoeba.scores if s.metric == "acc@1"}
    row["tatoeba mean"] = round(tatoeba.mean, 2)
    acc = {lang: BitextEvaluator(lang, pairs).evaluate(encoder)[0].value for lang, pairs in bible.items()}
    row["bible 5 trained"] = round(sum(acc[lang] for lang in TRAINED) / len(TRAINED), 2)
    row["bible ara+vie"] = round(sum(acc[lang] for lang in UNSEEN) / len(UNSEEN), 2)
    return row


QUICK = ["--pairs", "64", "--bible-dev", "50", "--points", "base", "shipped", "--out", "{tmp}/multilingual_sweep.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bible", type=Path, default=BIBLE)
    parser.add_argument("--pairs", type=int, default=2000, help="bitext pairs per language")
    parser.add_argument("--bible-dev", type=int, default=500, help="held-out Genesis verses per language")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--points", nargs="+", default=POINTS, help="'base', 'shipped', or comma-separated KEY=VALUE overrides")
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=VALUE", help="what every point starts from (default: the recipe file)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "multilingual_sweep.json")
    args = parser.parse_args()
    start = parse_overrides(args.set)
    # as shipped before the sweep; no dev set held out of the bitext, so every point trains on the same 10,000 pairs
    shipped = {
        "lr": 2e-5,
        "warmup": 0.1,
        "max_grad_norm": 1.0,
        "bitext_batch_size": 64,
        "epochs": 1,
        "bitext_weight": 0.2,
        "bitext_dev": 0,
    }
    done = {r["point"]: r for r in json.loads(args.out.read_text())["rows"]} if args.out.is_file() else {}
    work = Path(tempfile.mkdtemp(prefix="encodr-ml-sweep-"))
    _, bitext = build_data(args.bible, args.pairs, 0, work, TRAINED)
    dev = bible_dev(args.bible, args.bible_dev)
    rows = []
    for point in args.points:
        if point in done:
            rows.append(done[point])
            continue
        started = time.perf_counter()
        row = {"point": point, "steps": 0, "train s": 0.0}
        if point == "base":
            model = args.model
        else:
            changes = {} if point == "shipped" else parse_overrides(point.split(","))
            base = shipped if point == "shipped" or not start else start
            recipe = load_recipe("multilingual", {**shipped, **base, **changes})
            out = work / point.replace("=", "_").replace(",", "+")
            summary = run_tune(None, recipe, args.model, out, bitext=[str(bitext)], warn=lambda m: None)
            row.update(
                {
                    "steps": summary["steps"],
                    "train s": round(summary["train_seconds"], 1),
                    "settings": {k: getattr(recipe, k) for k in shipped},
                }
            )
            model = str(out)
        row.update(score(model, dev))
        row["wall s"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        print(row, flush=True)
        write_json(
            args.out,
            {
                "machine": machine(),
                "model": args.model,
                "pairs_per_language": args.pairs,
                "languages": TRAINED,
                "bible_dev_verses": args.bible_dev,
                "start": start or shipped,
                "rows": rows,
            },
        )
    columns = [
        "point",
        "steps",
        "tatoeba spa",
        "tatoeba fra",
        "tatoeba deu",
        "tatoeba mean",
        "bible 5 trained",
        "bible ara+vie",
        "train s",
        "wall s",
    ]
    print_table(f"{args.model}, multilingual recipe on bitext only: dev sweep (acc@1 both directions)", rows, columns)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
