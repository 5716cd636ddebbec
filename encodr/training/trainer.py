"""The one trainer every method shares.

A :class:`Trainer` owns the device, the processes and mixed precision of one run: it
creates ONE 🤗 Accelerate ``Accelerator`` before any model is placed, and every phase of
the run (Trans-Encoder has many) trains through it. :meth:`Trainer.fit` optimises a
module on one or more :class:`Stream` s of (data, loss); it knows nothing method-specific.

Several processes (``torchrun``, ``accelerate launch``): every process draws the same
global batch order and takes its own shard of each global batch (:class:`ShardedBatchSampler`
behind a ``DataLoader``). Contrastive losses gather the candidates of all processes
(:mod:`encodr.losses`). After all backward passes of a step the gradients are averaged
across processes once, through Accelerate's ``reduce``. This differs from wrapping the
model in ``DistributedDataParallel`` (what ``accelerator.prepare(model)`` does): there is no
overlap of communication with the backward pass, but any number of forward/backward passes
per step — GradCache chunks, several streams, gradient accumulation — is synchronised
exactly once, and parameters a stream does not use need no ``find_unused_parameters``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from .. import signals
from ..errors import EncodrError, S
from ..progress import ProgressEvent, ProgressFn, silent
from .args import OptimArgs


def mixed_precision(amp: str, device_type: str) -> str:
    """Accelerate's ``mixed_precision`` for a recipe's ``amp`` on a device type.

    Args:
        amp: ``auto``, ``bf16``, ``fp16`` or ``no``.
        device_type: ``cpu``, ``cuda`` or ``mps``.

    Returns:
        ``no``, ``bf16`` or ``fp16``. ``auto`` gives ``bf16`` on a CUDA GPU that supports it
        (``torch.cuda.is_bf16_supported()``), else ``fp16`` (Accelerate adds a gradient
        scaler); on CPU and MPS ``auto`` is fp32 (``no``). ``bf16`` on CPU is honoured.

    Raises:
        EncodrError: ``fp16`` on a CPU, which has no fp16 autocast.
    """
    if amp == "no":
        return "no"
    if amp == "auto":
        if device_type != "cuda":
            return "no"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if amp == "fp16" and device_type == "cpu":
        raise EncodrError(f"amp fp16 needs a CUDA GPU; on the CPU use amp bf16 or no ({S.amp} bf16)")
    return amp


def to_device(features: dict, device) -> dict:
    """``features`` with every tensor moved to ``device`` (other values, e.g. strings, kept)."""
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}


@dataclass
class Stream:
    """One (data, loss) stream of a training step.

    Attributes:
        name: label in the log, e.g. ``mirror``, ``cross``, ``cmlm``, ``bitext``.
        size: number of examples; the stream's data is indexed 0..size−1.
        collate: ``(indices, epoch) → batch``: builds this process's shard of a global
            batch from example indices (whatever the loss takes: a dict of tensors…).
            Randomness in it should depend only on (seed, epoch, index), so a batch is the
            same whatever the number of processes.
        loss: ``(module, batch) → scalar tensor``, the mean over this process's examples.
        batch_size: *global* examples per step (split across processes).
        weight: the stream's weight in the step's loss (Σ weight × loss).
        min_batch: a global batch smaller than this is dropped (2 for in-batch negatives).
    """

    name: str
    size: int
    collate: Callable[[list[int], int], Any]
    loss: Callable[[torch.nn.Module, Any], torch.Tensor]
    batch_size: int
    weight: float = 1.0
    min_batch: int = 1


class ShardedBatchSampler(torch.utils.data.Sampler):
    """Global batches in a seeded order, each cut into equal per-process shards.

    Every process computes the same permutation of ``range(size)`` (seeded by ``seed`` and
    the epoch), walks it in global batches of ``batch_size`` and yields its own contiguous
    shard of each. A short last batch is cut to a multiple of the number of processes (at
    most ``world − 1`` examples dropped) and dropped when smaller than ``min_batch``, so
    every process takes the same number of steps with shards of equal size (what
    ``all_gather`` needs).

    Args:
        size: number of examples.
        batch_size: global batch size; a multiple of ``world``.
        rank, world: this process's index and the number of processes.
        seed: shuffling seed.
        min_batch: smallest global batch kept.
    """

    def __init__(self, size: int, batch_size: int, rank: int = 0, world: int = 1, seed: int = 42, min_batch: int = 1):
        self.size, self.batch_size, self.rank, self.world, self.seed = size, batch_size, rank, world, seed
        self.min_batch = max(min_batch, world)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose order the next iteration yields."""
        self.epoch = epoch

    def _global_batches(self) -> Iterator[np.ndarray]:
        order = np.random.default_rng([self.seed, self.epoch]).permutation(self.size)
        for start in range(0, self.size, self.batch_size):
            batch = order[start : start + self.batch_size]
            batch = batch[: len(batch) - len(batch) % self.world]
            if len(batch) >= self.min_batch:
                yield batch

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self._global_batches():
            shard = len(batch) // self.world
            yield batch[self.rank * shard : (self.rank + 1) * shard].tolist()

    def global_sizes(self) -> list[int]:
        """The size of every global batch of an epoch, in order (the same every epoch)."""
        full, rest = divmod(self.size, self.batch_size)
        rest -= rest % self.world
        return [self.batch_size] * full + ([rest] if rest >= self.min_batch else [])

    def __len__(self) -> int:
        return len(self.global_sizes())


@dataclass
class TrainResult:
    """What :meth:`Trainer.fit` did.

    Attributes:
        steps: optimizer steps taken.
        examples: global training examples seen (first stream; strings for Mirror-BERT).
        seconds: wall time of the loop, evaluation included, model loading excluded.
        examples_per_s: examples per second of training (evaluation time excluded).
        eval_seconds: time spent evaluating on the dev set inside the loop.
        final_loss: mean global loss over the last 10 steps.
        precision: ``fp32``, ``bf16`` or ``fp16``.
        device: the device this process trained on, e.g. ``cpu`` or ``cuda:0``.
        processes: number of processes that trained together.
        log: one dict per step: ``step``, ``epoch``, ``loss`` (and one ``loss/NAME`` per
            stream when there are several), ``lr``, ``examples_per_s``, and ``dev`` at the
            steps that were evaluated.
        dev_curve: one dict per evaluation: ``step``, ``epoch``, ``dev`` (step 0: the
            starting model); empty without an evaluator.
        best: ``{"step", "epoch", "dev"}`` of the weights the module holds on return
            (``None`` without an evaluator).
    """

    steps: int
    examples: int
    seconds: float
    examples_per_s: float
    final_loss: float
    precision: str
    device: str
    processes: int = 1
    eval_seconds: float = 0.0
    log: list[dict] = field(default_factory=list)
    dev_curve: list[dict] = field(default_factory=list)
    best: dict | None = None

    @property
    def kept_start(self) -> bool:
        """True when no evaluated step beat the starting model, which was restored."""
        return self.best is not None and self.best["step"] == 0


class _BestCheckpoint:
    """Keeps a copy (on the CPU) of the module's best weights by a dev score, higher better."""

    def __init__(
        self,
        module: torch.nn.Module,
        evaluate: Callable[[], float],
        trainer: "Trainer",
        report: Callable[[int, float], None] | None = None,
    ):
        self.module, self.evaluate, self.trainer, self.report = module, evaluate, trainer, report
        self.curve: list[dict] = []
        self.best: dict | None = None
        self.state: dict | None = None
        self.seconds = 0.0  # spent evaluating during the loop (the start's evaluation excluded)

    def __call__(self, step: int, epoch: int) -> None:
        started = time.perf_counter()
        was_training = self.module.training
        self.module.eval()
        value = None
        if self.trainer.is_main:
            with torch.no_grad():
                value = float(self.evaluate())
        value = self.trainer.broadcast(value)  # every process takes the same decision
        self.module.train(was_training)
        score = -math.inf if math.isnan(value) else value
        self.curve.append({"step": step, "epoch": epoch, "dev": round(value, 4)})
        if self.report is not None and self.trainer.is_main:
            self.report(step, value)
        if self.best is None or score > self.best["score"]:
            self.best = {"step": step, "epoch": epoch, "dev": round(value, 4), "score": score}
            self.state = {k: v.detach().to("cpu", copy=True) for k, v in self.module.state_dict().items()}
        if step > 0:
            self.seconds += time.perf_counter() - started

    def restore(self) -> dict | None:
        if self.state is not None:
            self.module.load_state_dict(self.state)
        return None if self.best is None else {k: v for k, v in self.best.items() if k != "score"}


@dataclass(frozen=True)
class FitOptions:
    """How :meth:`Trainer.fit` selects, reports and stops (the optimiser's own settings are
    :class:`~encodr.training.args.OptimArgs`).

    Attributes:
        evaluate: dev score of the module as it is now, higher is better (e.g. Spearman ρ × 100).
            With it, the starting model (step 0; unless ``keep_start`` is false), every
            ``eval_steps`` steps and every epoch end are scored, and the best weights are
            restored before returning. It runs in the main process, in eval mode, without gradients.
        dev_metric: what ``evaluate`` returns (``spearman``, ``acc@1``, ``ndcg@10``…), carried by
            every dev progress event so that a front end can label the curve.
        eval_steps: evaluate every this many steps (0: at epoch ends only).
        keep_start: count the starting weights as a candidate.
        progress: receives a :class:`~encodr.progress.ProgressEvent` after every step (fields
            ``loss``, ``ex/s``) and after every dev evaluation (fields ``dev``, step 0 being the
            start, and ``dev_metric``).
        on_step: called after every step with (step, global loss); may raise to stop.
        max_steps: stop after this many steps (benchmarks).
        description: the progress task's label.
    """

    evaluate: Callable[[], float] | None = None
    dev_metric: str = "dev"
    eval_steps: int = 0
    keep_start: bool = True
    progress: ProgressFn = silent
    on_step: Callable[[int, float], None] | None = None
    max_steps: int | None = None
    description: str = "training"


class _Loop:
    """One :meth:`Trainer.fit`: the optimiser, the scheduler, the dev selection and the log."""

    def __init__(self, trainer: "Trainer", module: torch.nn.Module, streams: list[Stream], args: OptimArgs, options: FitOptions):
        from accelerate.utils import set_seed

        self.trainer, self.module, self.streams, self.args, self.options = trainer, module, streams, args, options
        acc = trainer.accelerator
        set_seed(args.seed)
        self.loaders = [trainer._loader(s, args) for s in streams]
        self.params = [p for p in module.parameters() if p.requires_grad]
        # fused AdamW: one kernel for all parameters, on CPU and CUDA (torch >= 2.4)
        adamw = torch.optim.AdamW(self.params, lr=args.lr, weight_decay=args.weight_decay, fused=True)
        self.optimizer = acc.prepare_optimizer(adamw, device_placement=False)
        self.per_epoch = len(self.loaders[0]) // args.grad_accum
        total = self.per_epoch * args.epochs
        self.total = min(total, options.max_steps) if options.max_steps else total
        self.scheduler = None
        if args.warmup > 0:
            from transformers import get_linear_schedule_with_warmup

            self.scheduler = get_linear_schedule_with_warmup(self.optimizer.optimizer, int(args.warmup * self.total), self.total)
        self.selector = (
            _BestCheckpoint(module, options.evaluate, trainer, self._report_dev) if options.evaluate is not None else None
        )
        if self.selector is not None and options.keep_start:
            self.selector(0, 0)
        self.others = [trainer._cycle(loader) for loader in self.loaders[1:]]
        self.log: list[dict] = []
        self.step = self.examples = 0
        self.started = time.perf_counter()

    def _report_dev(self, at: int, dev: float) -> None:
        o = self.options
        o.progress(
            ProgressEvent(o.description, at, self.total, {"dev": dev, "dev_metric": o.dev_metric})
        )  # the dev score, as it comes

    def run(self) -> None:
        """Every epoch's steps, with dev evaluations where asked, until the epochs or ``max_steps`` end."""
        selector, eval_steps = self.selector, self.options.eval_steps
        for epoch in range(1, self.args.epochs + 1):
            self.loaders[0].batch_sampler.set_epoch(epoch)
            first, sizes = iter(self.loaders[0]), iter(self.loaders[0].batch_sampler.global_sizes())
            for _ in range(self.per_epoch):
                row = self._step(epoch, first, sizes)
                if selector is not None and eval_steps and self.step % eval_steps == 0:
                    selector(self.step, epoch)
                    row["dev"] = selector.curve[-1]["dev"]
                if self.step >= self.total:
                    break
            if selector is not None and not (eval_steps and self.step % eval_steps == 0):
                selector(self.step, epoch)  # epoch end, unless just evaluated at this very step
                self.log[-1]["dev"] = selector.curve[-1]["dev"]
            if self.step >= self.total:
                break

    def _step(self, epoch: int, first: Iterator[Any], sizes: Iterator[int]) -> dict:
        """One optimisation step (``grad_accum`` batches of every stream); its log row."""
        from accelerate.utils import reduce

        trainer, args, streams, acc = self.trainer, self.args, self.streams, self.trainer.accelerator
        parts = torch.zeros(len(streams), device=acc.device)
        for _ in range(args.grad_accum):
            batches = [next(first)] + [next(it) for it in self.others]
            self.examples += next(sizes)
            with acc.autocast():
                losses = [s.weight * s.loss(self.module, b) for s, b in zip(streams, batches)]
            acc.backward(sum(losses) / args.grad_accum)
            parts += torch.stack([x.detach().float() for x in losses]) / args.grad_accum
        trainer._sync_gradients(self.params)
        if args.max_grad_norm > 0:
            acc.clip_grad_norm_(self.params, args.max_grad_norm)
        self.optimizer.step()
        lr = self.optimizer.param_groups[0]["lr"]
        if self.scheduler is not None:
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        parts = reduce(parts, "mean") if trainer.world > 1 else parts
        value = float(parts.sum())
        self.step += 1
        rate = self.examples / (time.perf_counter() - self.started - (self.selector.seconds if self.selector else 0.0))
        row = {"step": self.step, "epoch": epoch, "loss": value, "lr": lr, "examples_per_s": rate}
        if len(streams) > 1:
            row.update({f"loss/{s.name}": float(x) for s, x in zip(streams, parts)})
        self.log.append(row)
        if trainer.is_main:
            self.options.progress(ProgressEvent(self.options.description, self.step, self.total, {"loss": value, "ex/s": rate}))
        signals.check_launcher()  # a worker whose launcher died stops here, before it writes
        if self.options.on_step is not None:
            self.options.on_step(self.step, value)
        return row

    def result(self) -> TrainResult:
        """The :class:`TrainResult`, the best dev weights restored first."""
        selector, trainer = self.selector, self.trainer
        best = selector.restore() if selector is not None else None
        seconds = time.perf_counter() - self.started
        eval_seconds = selector.seconds if selector else 0.0
        tail = [r["loss"] for r in self.log[-10:]]
        return TrainResult(
            steps=self.step,
            examples=self.examples,
            seconds=seconds,
            examples_per_s=self.examples / (seconds - eval_seconds) if seconds > eval_seconds else 0.0,
            final_loss=float(np.mean(tail)) if tail else math.nan,
            precision=trainer.precision,
            device=trainer.device,
            processes=trainer.world,
            eval_seconds=round(eval_seconds, 2),
            log=self.log,
            dev_curve=selector.curve if selector else [],
            best=best,
        )


class Trainer:
    """Device, processes and mixed precision for one run; use as a context manager.

    Args:
        device: ``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``None`` (CUDA when available).
            Under a launcher each process takes its own GPU (``cuda:LOCAL_RANK``).
        amp: see :func:`mixed_precision`.

    Raises:
        EncodrError: a device this machine lacks, a device the launcher did not give this
            process (e.g. ``cuda:1`` in a single process, where Accelerate uses ``cuda:0``:
            set ``CUDA_VISIBLE_DEVICES`` instead), or ``fp16`` on a CPU.
    """

    def __init__(self, device: str | None = None, amp: str = "auto"):
        from accelerate import Accelerator

        from ..models import pick_device

        wanted = torch.device(pick_device(device))
        precision = mixed_precision(amp, wanted.type)
        self.accelerator = Accelerator(cpu=wanted.type == "cpu", mixed_precision=precision)
        got = self.accelerator.device
        if got.type != wanted.type or (wanted.index is not None and got.index != wanted.index and self.world == 1):
            self.close()
            raise EncodrError(
                f"{S.device} {device} cannot be honoured: this process would train on {got}; "
                + ("set CUDA_VISIBLE_DEVICES to choose the GPU" if wanted.type == "cuda" else f"leave {S.device} out")
            )
        self.precision = {"no": "fp32"}.get(precision, precision)

    def __enter__(self) -> "Trainer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """End the run's Accelerate state (the process group stays), so the next run in this
        process may choose another precision."""
        from accelerate.state import AcceleratorState

        AcceleratorState._reset_state(reset_partial_state=False)

    @property
    def device(self) -> str:
        """Where this process's models go (``cpu``, ``cuda:0``…)."""
        return str(self.accelerator.device)

    @property
    def is_main(self) -> bool:
        """True in the one process that writes outputs, the registry and progress."""
        return self.accelerator.is_main_process

    @property
    def world(self) -> int:
        """Number of processes training together."""
        return self.accelerator.num_processes

    @property
    def rank(self) -> int:
        """This process's index, 0 … world − 1."""
        return self.accelerator.process_index

    def broadcast(self, value: Any) -> Any:
        """The main process's ``value``, in every process (a picklable object)."""
        if self.world == 1:
            return value
        from accelerate.utils import broadcast_object_list

        return broadcast_object_list([value], from_process=0)[0]

    def wait(self) -> None:
        """Barrier: return when every process got here."""
        self.accelerator.wait_for_everyone()

    def _loader(self, stream: Stream, args: OptimArgs) -> torch.utils.data.DataLoader:
        if stream.batch_size % self.world:
            raise EncodrError(
                f"batch size {stream.batch_size} of stream '{stream.name}' is not a multiple of the {self.world} processes; "
                f"choose a multiple of {self.world}"
            )
        sampler = ShardedBatchSampler(stream.size, stream.batch_size, self.rank, self.world, args.seed, stream.min_batch)
        return torch.utils.data.DataLoader(
            range(stream.size), batch_sampler=sampler, collate_fn=lambda idx: stream.collate(idx, sampler.epoch)
        )

    def _sync_gradients(self, params: Sequence[torch.nn.Parameter]) -> None:
        """Average gradients over processes: one all-reduce of all of them, flattened."""
        if self.world == 1:
            return
        from accelerate.utils import reduce

        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        flat = reduce(torch.cat([p.grad.reshape(-1) for p in params]), "mean")
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset : offset + p.numel()].view_as(p.grad))
            offset += p.numel()

    def fit(
        self, module: torch.nn.Module, streams: Sequence[Stream], args: OptimArgs, options: FitOptions = FitOptions()
    ) -> TrainResult:
        """Train ``module`` in place with AdamW.

        One step draws one batch from every stream (``grad_accum`` times), backpropagates
        Σ weight × loss / grad_accum under the run's autocast, averages gradients across
        processes, clips, and steps. An epoch is one pass over the first stream; the others
        restart whenever they run out.

        Args:
            module: the model, already on :attr:`device`; in train mode during the loop and
                in eval mode on return, also on error or Ctrl-C.
            streams: one or more :class:`Stream` s; the first one sets the epoch length.
            args: :class:`~encodr.training.args.OptimArgs`.
            options: :class:`FitOptions`: dev selection, progress, a step hook, a step limit.

        Returns:
            A :class:`TrainResult`.

        Raises:
            EncodrError: a stream's batch size is not a multiple of the number of processes.
            KeyboardInterrupt: passed on after the module is back in eval mode.
        """
        loop = _Loop(self, module, list(streams), args, options)
        module.train()
        try:
            loop.run()
        finally:
            module.eval()
        return loop.result()

    @staticmethod
    def _cycle(loader: torch.utils.data.DataLoader) -> Iterator[Any]:
        """Batches of a secondary stream without end, a new epoch order each pass."""
        epoch = 0
        while True:
            epoch += 1
            loader.batch_sampler.set_epoch(epoch)
            yield from loader
