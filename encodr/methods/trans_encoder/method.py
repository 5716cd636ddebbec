"""Trans-Encoder self- and mutual distillation (Liu et al. 2022, §2.2–2.4).

One cycle, for each chain (one chain per ``--model``; several chains = mutual
distillation, run in turn):

1. label: the bi-encoders score every pair (cosine, clipped to [0, 1]); with several
   chains the labels are averaged (§2.4);
2. train cross: a cross-encoder initialised from the chain's base model ("refreshing",
   §5.2) learns the labels with soft BCE (Eq. 2: sentence-transformers'
   ``BinaryCrossEntropyLoss``), each pair in both orders;
3. relabel: the cross-encoders score every pair (σ, both orders averaged; averaged over
   chains);
4. train bi: a bi-encoder re-initialised from the chain's starting checkpoint learns those
   labels with MSE on cosine (Eq. 3: sentence-transformers' ``CosineSimilarityLoss``).

With ``--dev`` each phase keeps its best checkpoint by dev Spearman (every ``eval_steps``
steps and at each epoch end, §4; the trainer's selection), the best bi- and cross-encoder
over all cycles are saved, and a chain whose starting bi-encoder scores higher than every
trained one saves the starting one and says so. Without ``--dev`` the last cycle's models
are saved.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Callable, Sequence

import numpy as np
import torch

from ...data.pairs import PairData, mine_pairs, read_pairs, stsb_pairs
from ...errors import EncodrError, S
from ...models import CrossScorer, Encoder, load_encoder, new_cross_encoder, resolve
from ...progress import ProgressEvent
from ...training import FitOptions, Outcome, RunContext, Stream, to_device
from .config import TransEncoderRecipe


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
    meta = resolve(spec).path / "encodr.json"
    if meta.is_file():
        try:
            base = json.loads(meta.read_text()).get("base_model")
        except ValueError:
            base = None
        if base:
            return base
    return spec


def load_pairs(data: str | None, recipe: TransEncoderRecipe) -> PairData:
    """Pairs from ``data`` (see :func:`encodr.data.pairs.read_pairs`) or the recipe's bundled default."""
    if data:
        return read_pairs(data)
    if recipe.default_data != "stsb-pairs":
        raise EncodrError(f"recipe '{recipe.name}' has no bundled pairs (default_data: {recipe.default_data}); pass a FILE")
    return stsb_pairs()


def cross_stream(
    scorer: CrossScorer, pairs: Sequence[tuple[str, str]], labels: np.ndarray, batch_size: int, symmetric: bool = True
) -> Stream:
    """Bi → cross (§2.2): every pair in both orders (``symmetric``; else as given) with its
    soft label; loss Eq. 2.

    Args:
        scorer: the cross-encoder being trained.
        pairs: N pairs.
        labels: float array (N,), pseudo-labels in [0, 1].
        batch_size: ordered pairs per step (global).
        symmetric: add each pair's reverse order.

    Returns:
        A :class:`~encodr.training.Stream` of 2N examples (N without ``symmetric``); a batch
        is (first texts, second texts, float32 labels (B,)), the loss sentence-transformers'
        ``BinaryCrossEntropyLoss`` (BCE with logits on soft labels, exactly Eq. 2).
    """
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    examples = [(a, b, float(y)) for (a, b), y in zip(pairs, labels)]
    if symmetric:
        examples += [(b, a, float(y)) for (a, b), y in zip(pairs, labels)]
    bce = BinaryCrossEntropyLoss(scorer.ce)

    def batch(indices: list[int], epoch: int):
        chosen = [examples[i] for i in indices]
        return [a for a, _, _ in chosen], [b for _, b, _ in chosen], torch.tensor([y for _, _, y in chosen], dtype=torch.float32)

    def loss(module: torch.nn.Module, b) -> torch.Tensor:
        first, second, y = b
        return bce([first, second], y.to(scorer.ce.device))

    return Stream("cross", len(examples), batch, loss, batch_size)


def bi_stream(encoder: Encoder, pairs: Sequence[tuple[str, str]], labels: np.ndarray, batch_size: int) -> Stream:
    """Cross → bi (§2.3): both sentences encoded separately; loss Eq. 3.

    Args:
        encoder: the bi-encoder being trained.
        pairs: N pairs.
        labels: float array (N,), the cross-encoders' scores in [0, 1].
        batch_size: pairs per step (global).

    Returns:
        A :class:`~encodr.training.Stream`; a batch is (features of the first sentences,
        of the second, float32 labels (B,)), the loss sentence-transformers'
        ``CosineSimilarityLoss`` (MSE between cosine and label, exactly Eq. 3).
    """
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    mse = CosineSimilarityLoss(encoder.st)

    def batch(indices: list[int], epoch: int):
        a = encoder.st.preprocess([pairs[i][0] for i in indices])
        b = encoder.st.preprocess([pairs[i][1] for i in indices])
        return a, b, torch.tensor(labels[indices], dtype=torch.float32)

    def loss(module: torch.nn.Module, b) -> torch.Tensor:
        device = encoder.st.device
        fa, fb, y = b
        return mse([to_device(fa, device), to_device(fb, device)], y.to(device))

    return Stream("bi", len(pairs), batch, loss, batch_size)


class TransEncoderRun:
    """One Trans-Encoder run: the pairs, the chains, the dev and report sets, the phase timings.

    A subclass that makes its own pairs (the re-ranker recipe) overrides :meth:`read_pairs`
    and :meth:`prepare_pairs`; ``known`` maps a pair's position to a label that every
    labelling keeps (a pair known to be relevant); ``first_labels``, when :meth:`prepare_pairs`
    sets it (float (P,), cosines the starting bi-encoder already computed while mining), is the
    first bi-encoder labelling, so the pairs are not encoded a second time (one chain only)."""

    NO_DEV = (
        f"no {S.dev} file: kept the last cycle's bi- and cross-encoder (pass {S.dev} stsb-dev or a scored file to "
        "select the best)"
    )

    def __init__(self, ctx: RunContext):
        self.ctx, self.recipe, self.request = ctx, ctx.recipe, ctx.request
        from ..base import load_dev

        self.dev = load_dev(ctx, self.request.dev, "spearman")
        self.report = load_dev(ctx, self.request.report, "spearman", role="the report set")
        self.chains = [Chain(spec, cross_base(spec)) for spec in self.request.models]
        multi = len(self.chains) > 1
        self.names = {i: ("bi", "cross") if i == 0 else (f"bi-{i + 1}", f"cross-{i + 1}") for i in range(len(self.chains))}
        self.who = (lambda c: f" · chain {c + 1}") if multi else (lambda c: "")
        self.timings: list[dict] = []
        self.pair_data = self.read_pairs()
        self.pairs: list[tuple[str, str]] = []
        self.known: dict[int, float] = {}
        self.first_labels: np.ndarray | None = None

    def read_pairs(self) -> PairData:
        """The request's pairs (or sentences to mine them from), read before any model loads."""
        return load_pairs(self.request.data, self.recipe)

    def rho(self, which, scorer) -> float | None:
        """ρ × 100 of a bi- or cross-encoder on the dev or report set; ``None`` without it."""
        return which.score(scorer) if which else None

    def timed(self, phase: str, cycle: int, chain: int | None = None) -> Callable[..., float]:
        started = time.perf_counter()

        def done(**extra) -> float:
            seconds = round(time.perf_counter() - started, 2)
            self.timings.append({"cycle": cycle, "phase": phase, "chain": chain, "seconds": seconds, **extra})
            return seconds

        return done

    def bi_encoder(self, spec: str) -> Encoder:
        r = self.recipe
        return load_encoder(spec, r.pooling, r.raw_pooling, r.bi_max_length, self.ctx.trainer.device)

    def prepare_pairs(self) -> None:
        """Mine pairs from plain text, then sample and limit them."""
        r, data = self.recipe, self.pair_data
        if data.mined:
            done = self.timed("mine pairs", 0)
            vectors = self.bi_encoder(self.request.models[0]).encode(data.sentences, batch_size=256)
            idx = mine_pairs(vectors, r.mine_k, r.mine_random, r.seed)
            data.pairs = [(data.sentences[i], data.sentences[j]) for i, j in idx]
            done(pairs=len(idx))
        pairs = data.pairs
        if r.max_pairs and len(pairs) > r.max_pairs:
            keep = np.sort(np.random.default_rng(r.seed).choice(len(pairs), r.max_pairs, replace=False))
            pairs = [pairs[i] for i in keep]
        if self.request.limit:
            pairs = pairs[: self.request.limit]
        if len(pairs) < 2:
            raise EncodrError(f"only {len(pairs)} pair to train on; Trans-Encoder needs at least 2")
        self.pairs = pairs

    def cross_stream(self, scorer: CrossScorer, labels: np.ndarray) -> Stream:
        """The bi → cross phase's stream (:func:`cross_stream`, Eq. 2); a subclass may train the
        cross-encoder on the same labels with another loss."""
        return cross_stream(scorer, self.pairs, labels, self.recipe.cross_batch_size, self.recipe.symmetric)

    def label(self, kind: str, scorers: list, cycle: int) -> np.ndarray:
        """Average pseudo-labels of several models, clipped to [0, 1] (§2.4)."""
        done = self.timed(f"label ({kind})", cycle)
        if kind == "bi" and cycle == 1 and self.first_labels is not None and len(scorers) == 1:
            labels = np.clip(np.asarray(self.first_labels, dtype=np.float64), 0.0, 1.0)
            for i, value in self.known.items():
                labels[i] = value
            done(pairs=len(self.pairs), reused="the mining's cosines")
            return labels
        texts1, texts2 = [a for a, _ in self.pairs], [b for _, b in self.pairs]
        labels = np.zeros(len(self.pairs), dtype=np.float64)
        for c, scorer in enumerate(scorers):
            task = f"cycle {cycle}/{self.recipe.cycles} · label with {kind}{self.who(c) if len(scorers) > 1 else ''}"
            report = lambda n, t=task: self.ctx.progress(ProgressEvent(t, n, len(self.pairs)))  # noqa: E731
            report(0)
            if isinstance(scorer, CrossScorer):
                scores = scorer.pair_scores(texts1, texts2, on_batch=report, symmetric=self.recipe.symmetric)
            else:
                scores = scorer.pair_scores(texts1, texts2)
                report(len(self.pairs))
            labels += np.clip(scores, 0.0, 1.0)
        done(pairs=len(self.pairs))
        labels /= len(scorers)
        for i, value in self.known.items():
            labels[i] = value
        return labels

    def train(self, kind: str, c: int, cycle: int, scorer, module, stream: Stream) -> None:
        """One phase of one chain: fit with dev selection, record, save when best."""
        done = self.timed(f"train {kind}", cycle, c + 1)
        result = self.ctx.trainer.fit(
            module,
            [stream],
            self.recipe.phase(kind),
            FitOptions(
                evaluate=(lambda: self.dev.score(scorer)) if self.dev else None,
                dev_metric=self.dev.metric if self.dev else "dev",
                eval_steps=self.recipe.eval_steps,
                keep_start=False,
                progress=self.ctx.progress,
                on_step=self.request.on_step,
                description=f"cycle {cycle}/{self.recipe.cycles} · train {kind}{self.who(c)}",
            ),
        )
        score = result.best["dev"] if result.best else None
        seconds = done(steps=result.steps, dev=score)
        self.chains[c].history.append(
            {
                "cycle": cycle,
                "phase": kind,
                "dev": score,
                "report": self.rho(self.report, scorer),
                "seconds": seconds,
                "steps": result.steps,
                "final_loss": round(result.final_loss, 5),
                "evaluations": result.dev_curve,
            }
        )
        chain = self.chains[c]
        last = cycle == self.recipe.cycles
        if (score is None and last) or (score is not None and (kind not in chain.best or score > chain.best[kind][0])):
            self.ctx.save(self.names[c][kind == "cross"], scorer.save)
            chain.best[kind] = (None if score is None else round(score, 4), cycle)

    def run(self) -> Outcome:
        r = self.recipe
        self.prepare_pairs()
        bis = [self.bi_encoder(chain.start) for chain in self.chains]
        start_dev = [self.rho(self.dev, e) for e in bis]
        start_report = [self.rho(self.report, e) for e in bis]
        labels = self.label("bi", bis, 1)
        for cycle in range(1, r.cycles + 1):
            crosses = []
            for c, chain in enumerate(self.chains):
                # each chain its own seed: chains that share a base model must not train identical cross-encoders
                scorer = new_cross_encoder(
                    chain.base, r.cross_max_length, self.ctx.trainer.device, seed=r.seed + cycle + 1000 * c
                )
                self.train("cross", c, cycle, scorer, scorer.ce, self.cross_stream(scorer, labels))
                crosses.append(scorer)
            labels = self.label("cross", crosses, cycle)
            del crosses
            bis = []
            for c, chain in enumerate(self.chains):
                encoder = self.bi_encoder(chain.start)
                self.train("bi", c, cycle, encoder, encoder.st, bi_stream(encoder, self.pairs, labels, r.bi_batch_size))
                bis.append(encoder)
            if cycle < r.cycles:
                labels = self.label("bi", bis, cycle + 1)
        for c, chain in enumerate(self.chains):
            if start_dev[c] is not None and start_dev[c] >= chain.best["bi"][0]:
                self.ctx.save(self.names[c][0], self.bi_encoder(chain.start).save)
                chain.best["bi"] = (round(start_dev[c], 4), 0)
                self.ctx.warn(
                    f"chain {c + 1}: no trained bi-encoder beat the starting model on {self.request.dev} "
                    f"(ρ {start_dev[c]:.2f}); saved the starting bi-encoder in {self.names[c][0]}/"
                )
        return self.outcome(start_dev, start_report)

    def outcome(self, start_dev: list, start_report: list) -> Outcome:
        data, ctx, request = self.pair_data, self.ctx, self.request
        chains = [
            {
                "start": chain.start,
                "cross_init": chain.base,
                "start_dev": start_dev[c],
                "start_report": start_report[c],
                "report_set": request.report,
                "bi": ctx.out_path(self.names[c][0]),
                "cross": ctx.out_path(self.names[c][1]),
                "best": {k: {"dev": v[0], "cycle": v[1]} for k, v in chain.best.items()},
                "history": chain.history,
            }
            for c, chain in enumerate(self.chains)
        ]
        summary = {
            "models": request.models,
            "mutual": len(request.models) > 1,
            "data": data.source,
            "data_sha256": data.sha256,
            "mined": data.mined,
            "pairs": len(self.pairs),
            "phases": self.timings,
            "chains": chains,
            "selection": f"best dev Spearman on {request.dev}"
            if request.dev
            else "no dev set: the last cycle's models were kept",
        }
        rows = [
            {
                "kind": f"tenc-{kind}",
                "model": ch["start"],
                "data": data.source,
                "data_sha256": data.sha256,
                "strings": len(self.pairs),
                "out": self.names[c][kind == "cross"],
                "metrics": {
                    "start_dev": ch["start_dev"],
                    "best": ch["best"].get(kind),
                    "mutual": summary["mutual"],
                    "dev_per_cycle": [h["dev"] for h in ch["history"] if h["phase"] == kind],
                },
            }
            for c, ch in enumerate(chains)
            for kind in ("bi", "cross")
        ]
        if not request.dev:
            ctx.warn(self.NO_DEV)
        return Outcome(summary, rows)  # the core lays out its chains (encodr.core.results)


def run(ctx: RunContext) -> Outcome:
    """Run Trans-Encoder and save ``bi/`` (SentenceTransformer) and ``cross/`` (CrossEncoder);
    with several models, chain i > 1 goes to ``bi-i/`` and ``cross-i/``.

    The request's data is a pairs file, an STS file (labels ignored) or plain text (pairs
    mined); ``None`` uses the recipe's bundled pairs. ``dev`` selects, ``report`` is only
    reported (never used for selection).

    Raises:
        EncodrError: bad input, checked before training where possible.
    """
    return TransEncoderRun(ctx).run()
