"""``encodr tune --recipe cross-encoder``: Trans-Encoder self- and mutual distillation
(Liu et al. 2022, §2.2–2.4).

One cycle, for each chain (one chain per ``--model``; several chains = mutual
distillation, run in turn on one device):

1. label: the bi-encoders score every pair (cosine, clipped to [0, 1]); with several
   chains the labels are averaged (§2.4);
2. train cross: a cross-encoder initialised from the chain's base model ("refreshing",
   §5.2) learns the labels with soft BCE (Eq. 2), each pair in both orders;
3. relabel: the cross-encoders score every pair (σ, both orders averaged; averaged over
   chains);
4. train bi: a bi-encoder re-initialised from the chain's starting checkpoint learns those
   labels with MSE on cosine (Eq. 3).

With ``--dev`` each phase keeps its best checkpoint by dev Spearman (every ``eval_steps``
steps and at each epoch end, §4), and the best bi- and cross-encoder over all cycles are
saved; without it, the last cycle's are saved. The training loop, model loading, run
registry and evaluation are the ones Mirror-BERT uses.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np
import yaml

from . import registry
from .models.cross import CrossScorer, new_cross_encoder
from .errors import EncodrError
from .models import Encoder, load_encoder, pick_device, resolve
from .outputs import atomic_dir, check_target
from .data.pairs import PairData, mine_pairs, read_pairs, stsb_pairs
from .recipes import TransEncoderRecipe
from .train import bi_pair_batches, bi_pair_loss, cross_batches, cross_loss, fit


@dataclasses.dataclass
class Chain:
    """One base model's line of bi- and cross-encoders.

    Attributes:
        start: spec of the starting bi-encoder (re-initialised from it in every cycle).
        base: spec the cross-encoders are initialised from (the start model's own base
            when it is an encodr Mirror run, else the start model).
        best: per kind (``bi``/``cross``), ``(dev ρ, cycle)`` of the best saved model.
        history: one row per phase: cycle, phase, dev ρ, seconds, steps.
    """

    start: str
    base: str
    best: dict = dataclasses.field(default_factory=dict)
    history: list = dataclasses.field(default_factory=list)


def cross_base(spec: str) -> str:
    """The model a chain's cross-encoders start from: for an encodr Mirror run, the base model
    it was tuned from (the paper initialises cross-encoders from the original PLM, §2.2);
    otherwise ``spec`` itself."""
    ref = resolve(spec)
    meta = ref.path / "encodr.json"
    if meta.is_file():
        try:
            base = json.loads(meta.read_text()).get("base_model")
        except ValueError:
            base = None
        if base:
            return base
    return spec


def load_pairs(data: str | None, recipe: TransEncoderRecipe) -> PairData:
    """Pairs from ``data`` (see :func:`encodr.pairs.read_pairs`) or the recipe's bundled default."""
    if data:
        return read_pairs(data)
    if recipe.default_data != "stsb-pairs":
        raise EncodrError(f"recipe '{recipe.name}' has no bundled pairs (default_data: {recipe.default_data}); pass a FILE")
    return stsb_pairs()


class _Selector:
    """Keeps the best state of a module by dev Spearman while it trains (paper §4)."""

    def __init__(self, module, score: Callable[[], float]):
        self.module, self.score = module, score
        self.best = -np.inf
        self.state = None
        self.evaluations: list[dict] = []

    def __call__(self, step: int, epoch: int) -> None:
        value = self.score()
        self.evaluations.append({"step": step, "epoch": epoch, "dev": round(value, 4)})
        if value > self.best:
            self.best = value
            self.state = {k: v.detach().to("cpu", copy=True) for k, v in self.module.state_dict().items()}

    def restore(self) -> float:
        """Load the best state back; return its dev ρ × 100."""
        if self.state is not None:
            self.module.load_state_dict(self.state)
        return self.best


def run_trans_encoder(
    data: str | None,
    recipe: TransEncoderRecipe,
    models: list[str],
    out: Path,
    overwrite: bool = False,
    device: str | None = None,
    dev: str | None = None,
    limit: int | None = None,
    progress: bool = True,
    warn: Callable[[str], None] = print,
    report: str | None = None,
) -> dict:
    """Run Trans-Encoder and write ``out/bi`` (SentenceTransformer) and ``out/cross``
    (CrossEncoder); with several models, chain i > 1 goes to ``out/bi-i``, ``out/cross-i``.

    Args:
        data: pairs file, STS file (labels ignored) or plain text (pairs mined); ``None``
            uses the recipe's bundled pairs.
        recipe: a resolved :class:`TransEncoderRecipe`.
        models: starting bi-encoders (alias, directory, Hub id); several = mutual distillation.
        out: output directory, written atomically.
        overwrite: replace an existing ``out``.
        device: ``cpu``/``cuda``; default CUDA when available.
        dev: scored pairs (any STS layout, or a bundled task name such as ``stsb-dev``)
            for model selection.
        limit: use only the first N pairs (after mining).
        progress: show progress bars.
        warn: where one-line warnings go.
        report: scored pairs (file or bundled task, e.g. ``stsb-test``) scored after every
            phase and for the start model, for reporting only: never used for selection.

    Returns:
        The run summary (also in ``out/encodr.json``): per chain and cycle the dev ρ of
        each phase, seconds per phase, and where the models were saved.

    Raises:
        EncodrError: bad input; KeyboardInterrupt passes through with nothing written.
    """
    from .data.readers import read_sts
    from .evaluation.similarity import PairSimilarityEvaluator
    from .evaluation.tasks import tasks_for

    def scored(spec: str | None) -> PairSimilarityEvaluator | None:
        """Spearman ρ on the pairs of a bundled task name or a file (refused where ρ is undefined)."""
        return PairSimilarityEvaluator(spec, read_sts(tasks_for("sts", [spec])[0].file())) if spec else None

    out = Path(out)
    check_target(out, overwrite)
    registry.database()  # an unusable workspace or registry fails now, not after training
    dev_set, report_set = scored(dev), scored(report)

    def rho(evaluator: PairSimilarityEvaluator | None, scorer) -> float | None:
        """ρ × 100 of a bi- or cross-encoder on dev or report pairs; ``None`` without them."""
        return evaluator.evaluate(scorer)[0].value if evaluator else None

    device = pick_device(device)
    chains = [Chain(spec, cross_base(spec)) for spec in models]
    pair_data = load_pairs(data, recipe)
    timings: list[dict] = []

    def timed(phase: str, cycle: int, chain: int | None = None):
        started = time.perf_counter()

        def done(**extra) -> float:
            seconds = round(time.perf_counter() - started, 2)
            timings.append({"cycle": cycle, "phase": phase, "chain": chain, "seconds": seconds, **extra})
            return seconds

        return done

    def bi_encoder(spec: str) -> Encoder:
        return load_encoder(spec, recipe.pooling, recipe.raw_pooling, recipe.bi_max_length, device)

    if pair_data.mined:
        done = timed("mine pairs", 0)
        start = bi_encoder(models[0])
        vectors = start.encode(pair_data.sentences, batch_size=256, progress=progress)
        idx = mine_pairs(vectors, recipe.mine_k, recipe.mine_random, recipe.seed)
        pair_data.pairs = [(pair_data.sentences[i], pair_data.sentences[j]) for i, j in idx]
        done(pairs=len(idx))
        del start
    pairs = pair_data.pairs
    if recipe.max_pairs and len(pairs) > recipe.max_pairs:
        keep = np.sort(np.random.default_rng(recipe.seed).choice(len(pairs), recipe.max_pairs, replace=False))
        pairs = [pairs[i] for i in keep]
    if limit:
        pairs = pairs[:limit]
    if len(pairs) < 2:
        raise EncodrError(f"only {len(pairs)} pair to train on; Trans-Encoder needs at least 2")
    texts1, texts2 = [a for a, _ in pairs], [b for _, b in pairs]

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    def label(kind: str, scorers: list, cycle: int) -> np.ndarray:
        """Average pseudo-labels of several models, clipped to [0, 1]."""
        done = timed(f"label ({kind})", cycle)
        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                       console=Console(stderr=True), disable=not progress)  # fmt: skip
        labels = np.zeros(len(pairs), dtype=np.float64)
        with bar:
            for c, scorer in enumerate(scorers, 1):
                who = f" · chain {c}" if len(scorers) > 1 else ""
                task = bar.add_task(f"cycle {cycle}/{recipe.cycles} · label with {kind}{who}", total=len(pairs))
                if isinstance(scorer, CrossScorer):
                    scores = scorer.pair_scores(texts1, texts2, on_batch=lambda n, t=task: bar.update(t, completed=n))
                else:
                    scores = scorer.pair_scores(texts1, texts2)
                    bar.update(task, completed=len(pairs))
                labels += np.clip(scores, 0.0, 1.0)
        labels /= len(scorers)
        done(pairs=len(pairs))
        return labels

    started = time.time()
    summary_chains: list[dict] = []
    with atomic_dir(out, overwrite) as tmp:
        names = {i: ("bi", "cross") if i == 0 else (f"bi-{i + 1}", f"cross-{i + 1}") for i in range(len(chains))}
        start_scores, start_reports = [], []
        bis: list[Encoder] = []
        for chain in chains:
            encoder = bi_encoder(chain.start)
            bis.append(encoder)
            start_scores.append(rho(dev_set, encoder))
            start_reports.append(rho(report_set, encoder))
        def train(kind: str, c: int, cycle: int, scorer, module, batches, loss, steps: int) -> None:
            """One training phase of one chain: fit, keep the best state on dev, record, save."""
            done = timed(f"train {kind}", cycle, c + 1)
            settings = recipe.phase(kind)
            selector = _Selector(module, lambda: rho(dev_set, scorer)) if dev_set else None
            who = f" · chain {c + 1}" if len(chains) > 1 else ""
            result = fit(module, batches, loss, settings, steps * settings.epochs, device, progress, eval_steps=recipe.eval_steps,
                         on_eval=selector, description=f"cycle {cycle}/{recipe.cycles} · train {kind}{who}")  # fmt: skip
            score = selector.restore() if selector else None
            seconds = done(steps=result.steps, dev=score)
            chains[c].history.append({"cycle": cycle, "phase": kind, "dev": score, "report": rho(report_set, scorer), "seconds": seconds, "steps": result.steps,
                                      "final_loss": round(result.final_loss, 5), "evaluations": selector.evaluations if selector else []})  # fmt: skip
            _keep(chains[c], kind, score, cycle, recipe.cycles, lambda: scorer.save(tmp / names[c][kind == "cross"]))

        labels = label("bi", bis, 1)
        for cycle in range(1, recipe.cycles + 1):
            crosses: list[CrossScorer] = []
            for c, chain in enumerate(chains):
                # each chain its own seed: chains that share a base model must not train identical cross-encoders
                scorer = new_cross_encoder(chain.base, recipe.cross_max_length, device, seed=recipe.seed + cycle + 1000 * c)
                batches = cross_batches(scorer, pairs, labels, recipe.cross_batch_size)
                train("cross", c, cycle, scorer, scorer.ce, batches, cross_loss(), -(-2 * len(pairs) // recipe.cross_batch_size))
                crosses.append(scorer)
            labels = label("cross", crosses, cycle)
            del crosses
            bis = []
            for c, chain in enumerate(chains):
                encoder = bi_encoder(chain.start)
                batches = bi_pair_batches(encoder.st, pairs, labels, recipe.bi_batch_size)
                train("bi", c, cycle, encoder, encoder.st, batches, bi_pair_loss(), -(-len(pairs) // recipe.bi_batch_size))
                bis.append(encoder)
            if cycle < recipe.cycles:
                labels = label("bi", bis, cycle + 1)
        for c, chain in enumerate(chains):
            summary_chains.append({
                "start": chain.start, "cross_init": chain.base, "start_dev": start_scores[c], "start_report": start_reports[c], "report_set": report,
                "bi": str((out / names[c][0]).resolve()), "cross": str((out / names[c][1]).resolve()),
                "best": {k: {"dev": v[0], "cycle": v[1]} for k, v in chain.best.items()},
                "history": chain.history,
            })  # fmt: skip
        summary = {
            "encodr_version": __import__("encodr").__version__,
            "method": "trans_encoder",
            "models": models,
            "mutual": len(models) > 1,
            "recipe": recipe.to_dict(),
            "data": pair_data.source,
            "data_sha256": pair_data.sha256,
            "mined": pair_data.mined,
            "pairs": len(pairs),
            "selection": f"best dev Spearman on {dev}" if dev else "no --dev: the last cycle's models were kept",
            "device": device,
            "duration_s": round(time.time() - started, 2),
            "phases": timings,
            "chains": summary_chains,
        }
        (tmp / "recipe.yaml").write_text(yaml.safe_dump(recipe.to_dict(), sort_keys=False))
        (tmp / "encodr.json").write_text(json.dumps(summary, indent=2, default=float))
    summary["out"] = str(out.resolve())
    run_ids = []
    for c, chain_summary in enumerate(summary_chains):
        for kind in ("bi", "cross"):
            run_ids.append(registry.record({
                "kind": f"tenc-{kind}", "model": chain_summary["start"], "recipe_name": recipe.name, "recipe": recipe.to_dict(),
                "data": pair_data.source, "data_sha256": pair_data.sha256, "strings": len(pairs), "duration_s": summary["duration_s"],
                "out": chain_summary[kind],
                "metrics": {"start_dev": chain_summary["start_dev"], "best": chain_summary["best"].get(kind),
                            "dev_per_cycle": [h["dev"] for h in chain_summary["history"] if h["phase"] == kind], "mutual": len(models) > 1},
            }))  # fmt: skip
    summary["run_ids"] = run_ids
    if not dev:
        warn("no --dev file: kept the last cycle's bi- and cross-encoder (pass --dev stsb-dev or a scored file to select the best)")
    return summary


def _keep(chain: Chain, kind: str, score: float | None, cycle: int, cycles: int, save: Callable[[], None]) -> None:
    """Save this phase's model if it is the best so far by dev ρ (or, without a dev set,
    if it is the last cycle's)."""
    if score is None:
        if cycle == cycles:
            save()
            chain.best[kind] = (None, cycle)
        return
    if kind not in chain.best or score > chain.best[kind][0]:
        save()
        chain.best[kind] = (round(score, 4), cycle)
