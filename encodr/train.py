"""The one training loop: AdamW, mixed precision through 🤗 Accelerate, a rich progress
bar, a per-step log. Methods plug in a batch maker and a loss; the loop knows nothing
method-specific.

Mirror-BERT (§2) is wired up in :func:`mirror_batches` + :class:`~encodr.losses.MirrorInfoNCELoss`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np
import torch

from .augment import collate, span_mask
from .errors import EncodrError
from .recipes import Recipe


@dataclass
class TrainResult:
    """What a training run did.

    Attributes:
        steps: optimizer steps taken.
        examples: training examples seen (strings for Mirror-BERT, not views).
        seconds: wall time of the loop, model loading excluded.
        examples_per_s: examples / seconds.
        final_loss: mean loss over the last 10 steps.
        precision: ``fp32``, ``bf16`` or ``fp16``.
        device: ``cpu`` or ``cuda``…
        log: one dict per step: ``step``, ``epoch``, ``loss``, ``lr``, ``examples_per_s``.
    """

    steps: int
    examples: int
    seconds: float
    examples_per_s: float
    final_loss: float
    precision: str
    device: str
    log: list[dict] = field(default_factory=list)


def mixed_precision(amp: str, device: str) -> str:
    """Accelerate's ``mixed_precision`` for a recipe's ``amp`` on a device.

    ``auto`` gives ``bf16`` on GPUs that support it, else ``fp16`` (with a gradient
    scaler, handled by Accelerate); always ``no`` (fp32) on CPU.
    """
    if not device.startswith("cuda") or amp == "no":
        return "no"
    if amp == "auto":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return amp


def tokenize(tokenizer, strings: Sequence[str], max_length: int) -> tuple[list[list[int]], int]:
    """Token ids with special tokens, truncated to ``max_length`` (last special token kept).

    Returns:
        (one id list per string, number of strings that were truncated).
    """
    ids = tokenizer(list(strings), add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    truncated = 0
    for i, seq in enumerate(ids):
        if len(seq) > max_length:
            ids[i] = seq[: max_length - 1] + seq[-1:]
            truncated += 1
    return ids, truncated


def mirror_batches(
    tokenizer, ids: Sequence[Sequence[int]], recipe: Recipe, guide: np.ndarray | None = None
) -> Callable[[np.random.Generator], Iterator[tuple[int, dict]]]:
    """Mirror-BERT batches: each string twice, span-masking the second view (§2).

    Args:
        tokenizer: the model's tokenizer (gives mask, pad and special ids).
        ids: token ids of the N distinct training strings.
        recipe: uses ``batch_size``, ``span_mask`` and ``false_negative_cos``.
        guide: (N, d) float32 L2-normalised embeddings of the strings under the frozen
            base model; required when ``recipe.false_negative_cos > 0``.

    Returns:
        A function of a NumPy generator yielding, for one epoch in shuffled order,
        ``(n, features)`` with features of shape (2n, T): rows 0..n−1 are the plain views,
        rows n..2n−1 the masked views of the same strings. With the false-negative filter
        on, ``features["false_negatives"]`` is an (n, n) bool tensor: base-model cosine
        ≥ ``false_negative_cos`` (diagonal included). A final batch of one string (which
        has no negative) is dropped.

    Raises:
        EncodrError: span masking is on and the tokenizer has no mask token.
    """
    if recipe.span_mask > 0 and tokenizer.mask_token_id is None:
        raise EncodrError("this tokenizer has no mask token, so span masking cannot work; set span_mask: 0")
    threshold = recipe.false_negative_cos
    if threshold > 0 and (guide is None or len(guide) != len(ids)):
        raise ValueError("false_negative_cos > 0 needs one guide embedding per string")
    special = frozenset(tokenizer.all_special_ids)
    with_types = "token_type_ids" in tokenizer.model_input_names
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def epoch(rng: np.random.Generator) -> Iterator[tuple[int, dict]]:
        order = rng.permutation(len(ids))
        for start in range(0, len(order), recipe.batch_size):
            rows = order[start : start + recipe.batch_size]
            chosen = [ids[i] for i in rows]
            if len(chosen) < 2:
                continue
            masked = [span_mask(s, recipe.span_mask, tokenizer.mask_token_id, special, rng) for s in chosen] if recipe.span_mask else chosen
            features = collate(chosen + masked, pad_id, with_types)
            if threshold > 0:
                g = guide[rows]
                features["false_negatives"] = torch.from_numpy(g @ g.T >= threshold)
            yield len(chosen), features

    return epoch


def mirror_loss(recipe: Recipe) -> Callable[[torch.nn.Module, dict], torch.Tensor]:
    """``(model, features) → loss`` for batches from :func:`mirror_batches`: embeds the 2n
    rows and applies the recipe's loss (Mirror-BERT Eq. 1) to (plain views, masked views)."""
    from .losses import LOSSES

    loss_fn = LOSSES[recipe.loss](recipe.temperature)

    def compute(module: torch.nn.Module, features: dict) -> torch.Tensor:
        exclude = features.pop("false_negatives", None)
        emb = module(features)["sentence_embedding"]
        half = emb.shape[0] // 2
        return loss_fn(emb[:half], emb[half:], exclude)

    return compute


def steps_per_epoch(n: int, batch_size: int) -> int:
    """Optimizer steps in one epoch of n strings (a last batch of one is dropped)."""
    full, rest = divmod(n, batch_size)
    return full + (1 if rest >= 2 else 0)


def fit(
    module: torch.nn.Module,
    epoch_batches: Callable[[np.random.Generator], Iterator[tuple[int, dict]]],
    compute_loss: Callable[[torch.nn.Module, dict], torch.Tensor],
    recipe: Recipe,
    total_steps: int,
    device: str,
    progress: bool = True,
    on_step: Callable[[int, float], None] | None = None,
    max_steps: int | None = None,
    eval_steps: int = 0,
    on_eval: Callable[[int, int], None] | None = None,
    description: str = "training",
) -> TrainResult:
    """Train ``module`` in place with AdamW for ``recipe.epochs`` epochs.

    Args:
        module: the model (e.g. a SentenceTransformer); put in train mode here and in
            eval mode on return, also on error or Ctrl-C.
        epoch_batches: yields ``(examples, features)`` for one epoch given a generator.
        compute_loss: ``(module, features on device) → scalar loss``.
        recipe: uses ``lr``, ``weight_decay``, ``max_grad_norm``, ``epochs``, ``seed``, ``amp``
            (a :class:`~encodr.recipes.Recipe` or a phase's :class:`~encodr.recipes.Optim`)
            and ``warmup`` when it has one: the fraction of steps with a linear warm-up,
            then linear decay to 0 (0 or absent: a constant learning rate).
        total_steps: steps over all epochs, for the progress bar.
        device: where to train; mixed precision only on CUDA (see :func:`mixed_precision`).
        progress: show a rich progress bar (loss, examples/s) on stderr.
        on_step: called after every step with (step, loss); may raise to stop.
        max_steps: stop after this many steps (benchmarks).
        eval_steps: call ``on_eval`` every this many steps (0: only at epoch ends).
        on_eval: ``(step, epoch)`` callback, also called at the end of every epoch (model
            selection on a dev set); the module is in eval mode during the call.
        description: label of the progress bar.

    Returns:
        A :class:`TrainResult`.

    Raises:
        KeyboardInterrupt: passed on after the module is back in eval mode.
    """
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    set_seed(recipe.seed)
    rng = np.random.default_rng(recipe.seed)
    precision = mixed_precision(recipe.amp, device)
    accelerator = Accelerator(mixed_precision=precision, cpu=not device.startswith("cuda"))
    # fused AdamW (one kernel for all parameters) on CPU and CUDA alike
    optimizer = torch.optim.AdamW(module.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay, fused=True)
    model, optimizer = accelerator.prepare(module, optimizer)
    total = min(total_steps, max_steps) if max_steps else total_steps
    warmup = getattr(recipe, "warmup", 0.0)
    scheduler = None
    if warmup > 0:
        from transformers import get_linear_schedule_with_warmup

        scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup * total), total)

    def evaluate(epoch: int) -> None:
        model.eval()
        with torch.no_grad():
            on_eval(step, epoch)
        model.train()

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.4f}"),
        TextColumn("{task.fields[rate]:.0f} ex/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not progress,
        transient=False,
    )
    log: list[dict] = []
    step = examples = 0
    model.train()
    started = time.perf_counter()
    try:
        with bar:
            task = bar.add_task(description, total=total, loss=math.nan, rate=0.0)
            for epoch in range(recipe.epochs):
                for n, features in epoch_batches(rng):
                    features = {k: v.to(accelerator.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
                    with accelerator.autocast():
                        loss = compute_loss(model, features)
                    accelerator.backward(loss)
                    if recipe.max_grad_norm > 0:
                        accelerator.clip_grad_norm_(model.parameters(), recipe.max_grad_norm)
                    optimizer.step()
                    lr = optimizer.param_groups[0]["lr"]
                    if scheduler is not None:
                        scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                    step += 1
                    examples += n
                    value = float(loss.detach())
                    elapsed = time.perf_counter() - started
                    log.append({"step": step, "epoch": epoch + 1, "loss": value, "lr": lr, "examples_per_s": examples / elapsed})
                    bar.update(task, advance=1, loss=value, rate=examples / elapsed)
                    if on_step is not None:
                        on_step(step, value)
                    if on_eval is not None and eval_steps and step % eval_steps == 0:
                        evaluate(epoch + 1)
                    if step >= total:
                        break
                if on_eval is not None and not (eval_steps and step % eval_steps == 0):
                    evaluate(epoch + 1)  # epoch end (unless just evaluated at this very step)
                if step >= total:
                    break
    finally:
        model.eval()
        accelerator.unwrap_model(model, keep_fp32_wrapper=False)
        accelerator.free_memory()
    seconds = time.perf_counter() - started
    tail = [r["loss"] for r in log[-10:]]
    return TrainResult(
        steps=step,
        examples=examples,
        seconds=seconds,
        examples_per_s=examples / seconds if seconds else 0.0,
        final_loss=float(np.mean(tail)) if tail else math.nan,
        precision={"no": "fp32"}.get(precision, precision),
        device=device,
        log=log,
    )


def cross_batches(scorer, pairs: Sequence[tuple[str, str]], labels: np.ndarray, batch_size: int) -> Callable[[np.random.Generator], Iterator[tuple[int, dict]]]:
    """Bi → cross batches (Trans-Encoder §2.2): every pair in both orders, shuffled.

    Args:
        scorer: a :class:`~encodr.cross.CrossScorer` (tokenises "[CLS] a [SEP] b [SEP]").
        pairs: N pairs.
        labels: float array (N,), pseudo-labels in [0, 1].
        batch_size: ordered pairs per step.

    Returns:
        A function of a generator yielding ``(B, features)``; ``features["labels"]`` is a
        float32 tensor (B,), the rest are (B, T) token tensors.
    """
    examples = [(a, b, float(y)) for (a, b), y in zip(pairs, labels)] + [(b, a, float(y)) for (a, b), y in zip(pairs, labels)]

    def epoch(rng: np.random.Generator) -> Iterator[tuple[int, dict]]:
        order = rng.permutation(len(examples))
        for start in range(0, len(order), batch_size):
            chosen = [examples[i] for i in order[start : start + batch_size]]
            features = scorer.features([(a, b) for a, b, _ in chosen])
            features["labels"] = torch.tensor([y for _, _, y in chosen], dtype=torch.float32)
            yield len(chosen), features

    return epoch


def cross_loss() -> Callable[[torch.nn.Module, dict], torch.Tensor]:
    """``(cross-encoder module, features) → loss``: soft BCE (Trans-Encoder Eq. 2) of the
    logits of batches from :func:`cross_batches`."""
    from .losses import SoftBCELoss

    bce = SoftBCELoss()

    def compute(module: torch.nn.Module, features: dict) -> torch.Tensor:
        labels = features.pop("labels")
        return bce(module(features)["scores"].view(-1), labels)

    return compute


def bi_pair_batches(st, pairs: Sequence[tuple[str, str]], labels: np.ndarray, batch_size: int) -> Callable[[np.random.Generator], Iterator[tuple[int, dict]]]:
    """Cross → bi batches (Trans-Encoder §2.3): both sentences tokenised separately.

    Args:
        st: the SentenceTransformer (its ``preprocess`` tokenises and truncates).
        pairs: N pairs.
        labels: float array (N,), the cross-encoder's scores in [0, 1].
        batch_size: pairs per step.

    Returns:
        A function of a generator yielding ``(B, features)`` with keys ``a.*`` and ``b.*``
        (token tensors (B, T) of each side) and ``labels`` (float32 (B,)).
    """

    def epoch(rng: np.random.Generator) -> Iterator[tuple[int, dict]]:
        order = rng.permutation(len(pairs))
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            features = {f"a.{k}": v for k, v in st.preprocess([pairs[i][0] for i in chosen]).items()}
            features.update({f"b.{k}": v for k, v in st.preprocess([pairs[i][1] for i in chosen]).items()})
            features["labels"] = torch.tensor(labels[chosen], dtype=torch.float32)
            yield len(chosen), features

    return epoch


def bi_pair_loss() -> Callable[[torch.nn.Module, dict], torch.Tensor]:
    """``(SentenceTransformer, features) → loss``: MSE between the cosine of the two
    embeddings and the label (Trans-Encoder Eq. 3), for :func:`bi_pair_batches`."""
    from .losses import CosineMSELoss

    mse = CosineMSELoss()

    def compute(module: torch.nn.Module, features: dict) -> torch.Tensor:
        side = {p: {k[2:]: v for k, v in features.items() if k.startswith(p + ".")} for p in ("a", "b")}
        u = module(side["a"])["sentence_embedding"]
        v = module(side["b"])["sentence_embedding"]
        return mse(u, v, features["labels"])

    return compute
