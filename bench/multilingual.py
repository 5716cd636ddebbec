"""The multilingual recipe on MiniLM, against sentence-transformers' multilingual distillation.

Data, from ``../shared/data/bible`` (verse-aligned, public-domain translations; not shipped):
English with spa, fra, deu, ita, rus, ara, vie. Genesis' first 1,000 verses are left out.
- bitext: ``--pairs`` verses per language (source English, target the other language);
- documents (CMLM): in every language, consecutive verses of a chapter form a document; as
  many adjacent pairs as give the bitext stream's number of steps.

Rows, every trained one for the same number of steps on the same data:
- ``base``: the model as shipped;
- ``cmlm``, ``br``, ``cmlm+br``: ``encodr tune --recipe multilingual`` with the bitext weight 0,
  with no documents, and with both (L = L_CMLM + 0.2 · L_BR);
- ``st-distill``: sentence-transformers' multilingual knowledge distillation (Reimers &
  Gurevych 2020): ``MSELoss``, the student maps English and the translation onto the frozen
  teacher's (the same MiniLM) English vector; same pairs, batch, steps, learning rate;
- ``infonce``: the plain baseline (:func:`infonce_baseline`): the same loss, batch and pairs in a
  bare loop at a constant ``--infonce-lr`` (2e-5), as many steps as the ``br`` row (list it after ``br``).

Each row: Tatoeba spa/fra/deu acc@1 (both directions, mean; the dev set), with ``--pcr``, STS-B
test Spearman (English quality kept), wall time and examples/s.

    python bench/multilingual.py [--pairs 1000] [--rows base br cmlm cmlm+br st-distill infonce]

Prints a table and writes bench/results/multilingual.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine, parse_overrides, print_table, run_tune, write_json  # noqa: E402

from encodr import evaluation  # noqa: E402
from encodr.methods import load_recipe  # noqa: E402
from encodr.models import load_encoder  # noqa: E402

LANGS = ("spa", "fra", "deu", "ita", "rus", "ara", "vie")
BIBLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "bible"


def load(lang: str, bible: Path) -> dict[tuple[str, str, str], str]:
    """(book, chapter, verse) → text of one translation."""
    out = {}
    with open(bible / f"{lang}.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4 and parts[3].strip():
                out[tuple(parts[:3])] = parts[3].strip()
    return out


def build_data(
    bible: Path, pairs: int, cmlm_pairs_per_lang: int, work: Path, langs=LANGS, max_words: int = 0
) -> tuple[Path, Path]:
    """Write the bitext TSV and the documents file; return their paths. ``max_words`` > 0
    keeps only bitext verses whose English has at most that many words."""
    eng = load("eng", bible)
    keys = list(eng)[1000:]
    short = [k for k in keys if not max_words or len(eng[k].split()) <= max_words]
    bitext, docs = [], []
    for lang in ("eng", *langs):
        text = eng if lang == "eng" else load(lang, bible)
        if lang != "eng":
            bitext += [f"{eng[k]}\t{text[k]}\teng\t{lang}" for k in [k for k in short if k in text][:pairs]]
        chapters: dict[tuple[str, str], list[str]] = {}
        taken = 0
        for k in keys:
            if k in text and taken < cmlm_pairs_per_lang + 50:
                chapters.setdefault(k[:2], []).append(text[k])
                taken += 1
        count = 0
        for verses in chapters.values():
            verses = verses[: max(0, cmlm_pairs_per_lang - count) + 1]
            if len(verses) >= 2:
                docs.append("\n".join(verses))
                count += len(verses) - 1
    (work / "bitext.tsv").write_text("\n".join(bitext) + "\n", encoding="utf-8")
    (work / "docs.txt").write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return work / "docs.txt", work / "bitext.tsv"


def st_distill(bitext: Path, out: Path, steps: int, batch: int, lr: float, model: str = "minilm") -> float:
    """sentence-transformers' multilingual distillation; returns the training seconds."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MSELoss

    from encodr.models import resolve

    rows = [line.split("\t") for line in bitext.read_text(encoding="utf-8").splitlines() if line]
    teacher = SentenceTransformer(str(resolve(model).path), device="cpu")
    student = SentenceTransformer(str(resolve(model).path), device="cpu")
    english, other = [r[0] for r in rows], [r[1] for r in rows]
    labels = teacher.encode(english, batch_size=128, convert_to_numpy=True)
    data = Dataset.from_dict({"english": english, "non_english": other, "label": [v.tolist() for v in labels]})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(out.parent / f"{out.name}-trainer"),
        per_device_train_batch_size=batch,
        max_steps=steps,
        learning_rate=lr,
        warmup_steps=0.1,
        save_strategy="no",
        logging_steps=50,
        report_to=[],
        seed=42,
        use_cpu=True,
    )
    started = time.perf_counter()
    SentenceTransformerTrainer(model=student, args=args, train_dataset=data, loss=MSELoss(student)).train()
    seconds = time.perf_counter() - started
    student.save(str(out))
    return seconds


def infonce_baseline(
    bitext: Path,
    out: Path,
    steps: int,
    batch: int,
    lr: float,
    margin: float,
    scale: float,
    max_length: int,
    model: str = "minilm",
    seed: int = 42,
) -> float:
    """The simplest baseline: bidirectional additive-margin InfoNCE over in-batch translations
    (:class:`encodr.losses.AdditiveMarginLoss`, the recipe's loss), written as a bare loop: the
    pairs shuffled once, ``steps`` batches of ``batch`` pairs, torch's AdamW at a constant
    ``lr`` (its default weight decay 0.01), no warm-up, decay, clipping or dev selection.
    Returns the training seconds."""
    import random

    import torch
    from sentence_transformers import SentenceTransformer

    from encodr.losses import AdditiveMarginLoss
    from encodr.models import resolve

    rows = [line.split("\t")[:2] for line in bitext.read_text(encoding="utf-8").splitlines() if line]
    random.Random(seed).shuffle(rows)
    torch.manual_seed(seed)
    st = SentenceTransformer(str(resolve(model).path), device="cpu")
    st.max_seq_length = max_length
    st.train()
    loss_fn, optimizer = AdditiveMarginLoss(margin, scale), torch.optim.AdamW(st.parameters(), lr=lr)
    started = time.perf_counter()
    for step in range(steps):
        chunk = rows[step * batch : (step + 1) * batch]
        features = st.tokenize([r[0] for r in chunk] + [r[1] for r in chunk])
        vectors = st(features)["sentence_embedding"]
        loss = loss_fn(vectors[: len(chunk)], vectors[len(chunk) :])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    seconds = time.perf_counter() - started
    st.eval()
    st.save(str(out))
    return seconds


def score(model: str) -> dict:
    encoder = load_encoder(model)
    tatoeba = evaluation.run("bitext", encoder)
    with_pcr = evaluation.run("bitext", encoder, pcr="uncentred")
    sts = evaluation.run("sts", encoder)
    row = {s.dataset: round(s.value, 2) for s in tatoeba.scores if s.metric == "acc@1"}
    row.update(
        {"tatoeba mean": round(tatoeba.mean, 2), "with pcr": round(with_pcr.mean, 2), "stsb-test": round(sts.scores[0].value, 2)}
    )
    return row


QUICK = ["--pairs", "64", "--langs", "spa", "--rows", "base", "br", "--out", "{tmp}/multilingual.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bible", type=Path, default=BIBLE)
    parser.add_argument("--pairs", type=int, default=1000, help="bitext pairs per language")
    parser.add_argument("--rows", nargs="+", default=["base", "br", "cmlm", "cmlm+br", "st-distill"])
    parser.add_argument("--model", default="minilm", help="base model of every row (an alias, hub id or path)")
    parser.add_argument("--langs", nargs="+", default=list(LANGS), help="bitext languages (each paired with English)")
    parser.add_argument("--max-words", type=int, default=0, help="keep bitext verses of at most this many English words (0: all)")
    parser.add_argument("--lr", type=float, default=None, help="learning rate of every trained row (default: the recipe's)")
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="recipe fields of every recipe row (e.g. lr=2e-5 bitext_dev=0: the defaults before the sweep)",
    )
    parser.add_argument(
        "--infonce-lr", type=float, default=2e-5, help="constant learning rate of the infonce baseline (0: the recipe's)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "multilingual.json")
    args = parser.parse_args()
    overrides = {**parse_overrides(args.set), **({"lr": args.lr} if args.lr else {})}
    recipe = load_recipe("multilingual", overrides)
    work = Path(tempfile.mkdtemp(prefix="encodr-multilingual-"))
    docs, bitext = build_data(args.bible, args.pairs, 0, work, tuple(args.langs), args.max_words)
    n_bitext = sum(1 for line in bitext.open(encoding="utf-8") if line.strip())
    steps = n_bitext // recipe.bitext_batch_size
    per_lang = steps * recipe.batch_size // (len(args.langs) + 1)  # CMLM pairs: the same number of steps
    docs, bitext = build_data(args.bible, args.pairs, per_lang, work, tuple(args.langs), args.max_words)
    rows = []
    for name in args.rows:
        started, out, trained = time.perf_counter(), work / name, None
        if name == "base":
            model = args.model
        elif name == "st-distill":
            trained = st_distill(bitext, out, steps, recipe.bitext_batch_size, recipe.lr, args.model)
            model = str(out)
        elif (
            name == "infonce"
        ):  # as many steps as the recipe's bitext row took (a dev split held out of the bitext makes it fewer)
            steps_done = next((r["steps"] for r in rows if r["row"] == "br"), steps)
            trained = infonce_baseline(
                bitext,
                out,
                steps_done,
                recipe.bitext_batch_size,
                args.infonce_lr or recipe.lr,
                recipe.margin,
                recipe.scale,
                recipe.max_length,
                args.model,
            )
            model = str(out)
        else:
            weights = {"cmlm": {"bitext_weight": 0.0}, "br": {}, "cmlm+br": {}}[name]
            summary = run_tune(
                str(docs) if "cmlm" in name else None,
                load_recipe("multilingual", {**overrides, **weights}),
                args.model,
                out,
                bitext=[] if name == "cmlm" else [str(bitext)],
                warn=lambda m: None,
            )
            trained, model = summary["train_seconds"], str(out)
            steps_done = summary["steps"]
        row = {"row": name, "steps": 0 if name == "base" else (steps if name == "st-distill" else steps_done)}
        row["train s"] = round(trained, 1) if trained else 0.0
        row["examples/s"] = (
            round(row["steps"] * recipe.bitext_batch_size / trained, 1)
            if trained and name != "cmlm"
            else (round(row["steps"] * recipe.batch_size / trained, 1) if trained else 0.0)
        )
        row.update(score(model))
        row["wall s"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        print(row, flush=True)
    columns = [
        "row",
        "steps",
        "tatoeba-spa",
        "tatoeba-fra",
        "tatoeba-deu",
        "tatoeba mean",
        "with pcr",
        "stsb-test",
        "train s",
        "examples/s",
        "wall s",
    ]
    print_table(
        f"{args.model} + the multilingual recipe on Bible pairs (Tatoeba acc@1 both directions; STS-B test ρ × 100)",
        rows,
        columns,
    )
    settings = {
        "model": args.model,
        "pairs_per_language": args.pairs,
        "langs": args.langs,
        "max_words": args.max_words,
        "bitext_pairs": n_bitext,
        "lr": recipe.lr,
        "warmup": recipe.warmup,
        "max_grad_norm": recipe.max_grad_norm,
        "bitext_weight": recipe.bitext_weight,
        "bitext_dev": recipe.bitext_dev,
        "bitext_batch": recipe.bitext_batch_size,
        "steps": steps,
        "infonce_lr": args.infonce_lr,
    }
    write_json(args.out, {"machine": machine(), **settings, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
