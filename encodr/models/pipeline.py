"""Encoding on a GPU: tokenizer processes run ahead of the forward pass, and the forward pass
never waits for the host.

text-embeddings-inference's design, in Python: the texts are cut into chunks of
:data:`CHUNK_TEXTS`, each tokenized in one of several worker processes (their own
interpreters, so converting token lists never holds the GIL the thread driving the GPU needs); as results
come back in order, each window of texts (:meth:`TokenizerPool.batches`) is sorted by length, cut into
batches of at most :data:`TOKEN_BUDGET` padded tokens and padded in pinned host memory. The
calling thread copies each batch to the GPU asynchronously, launches the model's modules and
queues the vectors' copy back, so the next window is tokenized while the GPU works. Sorting
within a window leaves little padding (``bench/gpu.py`` reports the share), which is what
padding-free (varlen) attention would save on top.

Where it differs from sentence-transformers' ``encode``: that sorts all texts by characters
and tokenizes each batch on the calling thread, between forward passes, and waits for each
batch's vectors before tokenizing the next; its batches are a count of texts, not of tokens.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..cpus import usable_cpus

TOKEN_BUDGET = 65_536  # padded tokens per forward pass on a GPU (bench/gpu.py --budgets)
MOST_TEXTS = 2_048  # texts per forward pass at most, however short
CHUNK_TEXTS = 256  # texts per tokenizer task
FIRST_WINDOW, LAST_WINDOW = (
    2,
    32,
)  # token budgets' worth of texts sorted together into batches: the first window, and the most (TokenizerPool.batches)
AHEAD = 4  # chunks queued per worker process
BAND, BAND_FILL = 0.75, 0.25  # a batch a quarter full stops at a text shorter than 3/4 of its longest (token_batches)


def tokenizer_workers(cpus: int | None = None) -> int:
    """Tokenizer processes: this process's share of the CPUs it may run on (those of its
    affinity mask, divided among torchrun's ``LOCAL_WORLD_SIZE`` processes on the node) less
    one for the thread that drives the GPU, at least 1 (text-embeddings-inference's default is
    the CPU count)."""
    if cpus is None:
        mine = usable_cpus()
        cpus = mine // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1))
    return max(1, cpus - 1)


def token_batches(lengths: np.ndarray, budget: int = TOKEN_BUDGET, most: int = MOST_TEXTS) -> list[np.ndarray]:
    """Batches of positions into ``lengths``, longest first: a batch takes the next text while
    its padded size (its count × its longest text's tokens) stays within ``budget`` and it
    holds fewer than ``most`` texts; once it fills :data:`BAND_FILL` of the budget it also
    stops where a text is shorter than :data:`BAND` of its longest (a narrower band of lengths,
    less padding). Every batch holds at least one text.

    Args:
        lengths: int (N,): tokens of each text.
        budget: padded tokens per batch.
        most: texts per batch at most.

    Returns:
        int64 arrays of positions; together each position once, ordered by length descending.
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    ordered = np.maximum(np.asarray(lengths)[order], 1)
    batches, start = [], 0
    while start < len(order):
        longest = int(ordered[start])
        end = min(len(order), start + max(1, min(most, budget // longest)))
        narrow = np.flatnonzero(
            ordered[start:end] < BAND * longest
        )  # the first text outside the band, where the batch is full enough
        floor = int(np.ceil(BAND_FILL * budget / longest))
        cut = next((int(i) for i in narrow if i >= floor), None)
        end = start + cut if cut is not None else end
        batches.append(order[start:end])
        start = end
    return batches


@dataclass
class Prepared:
    """One padded batch in (pinned) host memory, ready to be copied to the device.

    Attributes:
        rows: int64 (B,): the positions of its texts in the input.
        names: the model's inputs (``input_ids``, ``attention_mask``, ``token_type_ids`` where
            it takes them), in the order they are stacked.
        stacked: int64 (len(names), B, L) CPU tensor: those inputs, one copy to the device.
        tokens: real (non-padding) tokens in it.
    """

    rows: np.ndarray
    names: list
    stacked: object
    tokens: int

    def on(self, device, non_blocking: bool = False) -> dict:
        """name → int64 (B, L) tensor on ``device``: the inputs, copied in one transfer."""
        moved = self.stacked.to(device, non_blocking=non_blocking)
        return {name: moved[i] for i, name in enumerate(self.names)}


_WORKER_TOKENIZER = None  # a worker process's tokenizer (_start_worker)


def _start_worker(tokenizer_json: str, window: int) -> None:
    """A worker process's initializer: its own Rust tokenizer, truncating at ``window``."""
    global _WORKER_TOKENIZER
    _WORKER_TOKENIZER = _rust(tokenizer_json, window)


def _rust(tokenizer_json: str, window: int):
    """A Rust ``tokenizers.Tokenizer`` from its JSON, truncating at ``window``, never padding."""
    from tokenizers import Tokenizer

    rust = Tokenizer.from_str(tokenizer_json)
    rust.enable_truncation(int(window))
    rust.no_padding()
    return rust


def _tokenize(texts: list[str], rust=None) -> tuple[np.ndarray, np.ndarray]:
    """int32 token ids of ``texts`` laid end to end, and int64 (len(texts),) their lengths
    (``rust``: a tokenizer; None: this worker process's)."""
    rust = rust or _WORKER_TOKENIZER
    encodings = getattr(rust, "encode_batch_fast", rust.encode_batch)(
        texts
    )  # _fast: no character offsets (tokenizers ≥ 0.20), the same ids
    lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))
    flat = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int32, count=int(lengths.sum()))
    return flat, lengths


class TokenizerPool:
    """Tokenizes texts in worker processes into :class:`Prepared` batches, ahead of their use.

    Each worker holds its own copy of the model's Rust tokenizer, truncating at ``window`` and
    never padding (padding is done here, per batch), so no other caller's settings change; for
    one text it gives the token ids the model's own tokenizer gives
    (``tokenizer(text, truncation=True, max_length=window)``: tested). The workers start on
    first use (:meth:`_workers`) and are kept until :meth:`close`; fewer than two chunks of
    texts are tokenized in the calling thread instead.

    Args:
        tokenizer: a Hugging Face fast tokenizer (``backend_tokenizer``, ``model_input_names``,
            ``pad_token_id``).
        window: tokens a text is cut to.
        workers: worker processes (default :func:`tokenizer_workers`; 0: none, all in the
            calling thread).
        pin: put each batch in pinned (page-locked) memory, for asynchronous copies to a GPU.
    """

    def __init__(self, tokenizer, window: int, workers: int | None = None, pin: bool = False):
        self.json = tokenizer.backend_tokenizer.to_str()
        self.window = int(window)
        self.rust = _rust(self.json, self.window)
        self.names = [n for n in tokenizer.model_input_names if n in ("input_ids", "attention_mask", "token_type_ids")]
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.workers = tokenizer_workers() if workers is None else int(workers)
        self.pin = pin
        self._pool = None

    def close(self) -> None:
        """Stop the worker processes (started again on next use)."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __del__(self):
        self.close()

    def _chunks(self, texts: Sequence[str]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(start, flat ids, lengths) of each chunk of :data:`CHUNK_TEXTS` texts, in order:
        from the worker processes, or in the calling thread where there are fewer than two
        chunks, no workers, or the workers died (then the rest here, and from then on)."""
        starts = range(0, len(texts), CHUNK_TEXTS)
        pool = self._workers() if len(texts) >= 2 * CHUNK_TEXTS else None
        if pool is None:
            yield from ((s, *_tokenize(list(texts[s : s + CHUNK_TEXTS]), self.rust)) for s in starts)
            return
        from concurrent.futures.process import BrokenProcessPool

        pending: deque = deque()
        done = 0  # texts yielded
        try:
            for s in starts:
                pending.append((s, pool.submit(_tokenize, list(texts[s : s + CHUNK_TEXTS]))))
                while len(pending) >= self.workers * AHEAD or (s == starts[-1] and pending):
                    start, future = pending.popleft()
                    flat, lengths = future.result()
                    done = start + len(lengths)
                    yield start, flat, lengths
        except BrokenProcessPool:
            self.close()
            self.workers = 0
            yield from (
                (s, *_tokenize(list(texts[s : s + CHUNK_TEXTS]), self.rust)) for s in range(done, len(texts), CHUNK_TEXTS)
            )

    def _workers(self):
        """The worker processes (started on first use), or None where none are asked for.

        They are forked, as PyTorch's ``DataLoader`` forks its workers from a process that
        already drives a GPU: a worker only tokenizes (no CUDA, no torch), and a forked worker
        does not import the caller's ``__main__`` again, which a spawned one would (running an
        unguarded script's encoding once per worker). Where ``fork`` does not exist, ``spawn``."""
        if self.workers == 0:
            return None
        if self._pool is None:
            import multiprocessing
            import warnings
            from concurrent.futures import ProcessPoolExecutor

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            with (
                warnings.catch_warnings()
            ):  # Python 3.12's warning that forking a threaded process may deadlock a child that takes a lock: these take none
                warnings.simplefilter("ignore", DeprecationWarning)
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context(method),
                    initializer=_start_worker,
                    initargs=(self.json, self.window),
                )
        return self._pool

    def batches(self, texts: Sequence[str], budget: int = TOKEN_BUDGET, most: int = MOST_TEXTS) -> Iterator[Prepared]:
        """The texts' batches, window by window in input order, each window's longest first.
        A window closes at a number of tokens that starts at :data:`FIRST_WINDOW` budgets (so
        the device starts soon) and doubles up to :data:`LAST_WINDOW` budgets (a batch is then
        a narrow band of lengths, so little of it is padding).

        Raises:
            whatever the tokenizer raises, in the calling thread.
        """
        window, tokens, target = [], 0, FIRST_WINDOW * budget
        for piece in self._chunks(texts):
            window.append(piece)
            tokens += len(piece[1])
            if tokens >= target:
                yield from self._padded(window, budget, most)
                window, tokens, target = [], 0, min(2 * target, LAST_WINDOW * budget)
        if window:
            yield from self._padded(window, budget, most)

    def _padded(self, pieces: list, budget: int, most: int) -> Iterator[Prepared]:
        """The padded batches of some tokenized chunks ((start, flat ids, lengths) each)."""
        import torch

        lengths = np.concatenate([p[2] for p in pieces])
        flat = np.concatenate([p[1] for p in pieces])
        rows = np.concatenate([start + np.arange(len(n)) for start, _, n in pieces])
        offsets = np.cumsum(lengths) - lengths
        for batch in token_batches(lengths, budget, most):
            n = lengths[batch]
            positions = np.arange(int(n.max()))[None, :]
            mask = positions < n[:, None]  # (B, L)
            stacked = np.zeros((len(self.names), *mask.shape), dtype=np.int64)  # token_type_ids: 0 for one text
            for i, name in enumerate(self.names):
                if name == "input_ids":
                    stacked[i] = self.pad_id
                    stacked[i][mask] = flat[(offsets[batch][:, None] + positions)[mask]]
                elif name == "attention_mask":
                    stacked[i] = mask
            tensor = torch.from_numpy(stacked)
            yield Prepared(rows[batch], self.names, tensor.pin_memory() if self.pin else tensor, int(n.sum()))


def encode_pipelined(
    forward,
    pool: TokenizerPool,
    texts: Sequence[str],
    out: np.ndarray,
    on_batch: Callable[[int], None] | None = None,
    budget: int = TOKEN_BUDGET,
    stats: dict | None = None,
) -> None:
    """Fill float32 ``out`` (N, d) with the unit vectors of N ``texts``: batches from
    ``pool`` copied to ``forward``'s device, run by ``forward.on_device``, their vectors
    copied back. On CUDA every copy is asynchronous (pinned memory, then a CUDA event per
    batch): a batch's rows are written, and ``on_batch`` called with its size, once its copy has
    landed, so the host never waits for the GPU while the GPU has work queued. On a CPU (the
    tests) the same steps run one after another.

    Args:
        forward: a :class:`~.encoder.TorchForward` (``on_device_mode``, ``on_device``).
        pool: the tokenizer processes (their window is the encoder's).
        texts: N strings (prompts already put before them).
        out: float32 (N, d) array, written in place (d: the model's full dimension).
        on_batch: called with the number of texts of each finished batch.
        budget: padded tokens per forward pass.
        stats: where given, seconds added under ``waiting`` (for the next batch from the
            tokenizer), ``launching`` (copies and the modules' launches) and ``landing``
            (vectors written back), and ``batches``, ``tokens`` and ``padded`` counted.
    """
    import time

    import torch

    device = forward.st.device
    cuda = device.type == "cuda"
    pending: deque = deque()
    clock = dict.fromkeys(("waiting", "launching", "landing", "batches", "tokens", "padded"), 0.0) if stats is None else stats

    def land(wait: bool) -> None:
        begin = time.perf_counter()
        while pending and (wait or pending[0][2] is None or pending[0][2].query()):
            rows, host, event = pending.popleft()
            if event is not None:
                event.synchronize()
            out[rows] = host.numpy()
            if on_batch is not None:
                on_batch(len(rows))
        clock["landing"] = clock.get("landing", 0.0) + time.perf_counter() - begin

    with forward.on_device_mode():
        batches = iter(pool.batches(texts, budget))
        while True:
            begin = time.perf_counter()
            batch = next(batches, None)
            launched = time.perf_counter()
            clock["waiting"] = clock.get("waiting", 0.0) + launched - begin
            if batch is None:
                break
            vectors = forward.on_device(batch.on(device, non_blocking=cuda))
            event = None
            if cuda:
                host = torch.empty(vectors.shape, dtype=torch.float32, pin_memory=True)
                host.copy_(vectors, non_blocking=True)
                event = torch.cuda.Event()
                event.record()
            else:
                host = vectors
            pending.append((batch.rows, host, event))
            clock["launching"] = clock.get("launching", 0.0) + time.perf_counter() - launched
            for key, value in (("batches", 1), ("tokens", batch.tokens), ("padded", batch.stacked[0].numel())):
                clock[key] = clock.get(key, 0) + value
            land(wait=False)
        land(wait=True)
