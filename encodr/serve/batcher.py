"""Dynamic batching: concurrent requests to one model share forward passes.

Guarantee: every text submitted gets its own vector back, in its request's order, computed by
the same :meth:`encodr.models.Encoder.encode` an offline caller runs; batching changes which
texts share a forward pass, never a vector (up to the floating-point effect of padding a text
with others, as offline batching has too).

How: one worker thread per model takes the first waiting request, then gathers the requests
already queued (as they are while a forward pass runs) and those that arrive within ``wait``
seconds, up to ``budget`` tokens, encodes them as one batch, and hands each request its rows.
It waits only until it holds as many requests as were live when the last pass ended (that
pass's, whose clients come back, and those queued meanwhile): concurrent clients are served in
one pass rather than splitting into groups that alternate, and a lone client never waits.
This is the scheme of text-embeddings-inference and infinity; unlike them, the token count is
estimated from characters (no tokenizer call on the event loop), and a request larger than the
budget runs alone rather than being split across passes. Encoding runs on the worker threads,
never on the event loop; a lone blocking request (:meth:`DynamicBatcher.encode`, a search's
query on its worker thread) runs on its own thread, as nothing could share its pass.

On a CPU, ``workers`` threads (default 2) take turns gathering, each up to its share of the
requests live at the end of the last pass, and each runs its passes on its share of the cores
(:meth:`encodr.models.Encoder.use_threads`), or on all of them when no other pass is running:
while one computes, the other's clients are answered and send again, and a small pass on one
core wastes less than on two. Sixteen clients then form two alternating passes of about eight
rather than one of sixteen, and a lone client still gets every core.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from ..cpus import usable_cpus
from ..models.encoder import estimated_tokens


@dataclass
class _Job:
    texts: list[str]
    future: Future
    tokens: int


class DynamicBatcher:
    """Encodes submitted texts in shared batches on one worker thread.

    Args:
        encoder: an :class:`encodr.models.Encoder` (anything with ``encode(texts) → float32
            (n, d)`` and ``max_length``); a gathered batch is encoded in the encoder's own
            forward-pass size (:attr:`~encodr.models.Encoder.batch_size`), longest first.
        wait: seconds the first request of a batch waits for others at most (0: only those
            already queued); it stops waiting once as many requests as were live at the end
            of the last pass are gathered, so a lone client's request runs at once.
        budget: estimated tokens per forward pass at most (texts × their estimated length).
        batching: False runs each request alone (the unbatched baseline of ``bench/serve_load.py``).
        workers: passes run at once, each on its own thread with ``cores // workers`` CPU
            threads (:func:`default_workers`: 2 on a CPU with 2 cores or more, 1 on a GPU).

    Attributes:
        passes, texts: forward passes run and texts encoded so far (for ``/health``).
    """

    def __init__(self, encoder, wait: float = 0.002, budget: int = 8192, batching: bool = True, workers: int | None = None):
        self.encoder, self.wait, self.budget, self.batching = encoder, wait, budget, batching
        self.workers = default_workers(encoder) if workers is None else max(1, int(workers))
        self.passes = self.texts = 0
        self._inflight = 0  # requests submitted and not yet answered
        self._running = 0  # passes running now
        # a worker's share of the requests live at the end of the last pass: a batch waits (at most ``wait``) until as
        # many are gathered
        self._expect = 1
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._carry: _Job | None = None
        self._gathering = threading.Lock()  # one worker gathers at a time
        self._counting = threading.Lock()
        self._threads = [
            threading.Thread(target=self._loop, name=f"encodr-batcher-{i}", daemon=True) for i in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    def tokens(self, texts: list[str]) -> int:
        """Estimated tokens of ``texts`` (:func:`~encodr.models.encoder.estimated_tokens` each, capped at the model's maximum)."""
        cap = int(getattr(self.encoder, "max_length", 512))
        return sum(min(cap, estimated_tokens(len(t))) for t in texts)

    def submit(self, texts: list[str]) -> Future:
        """Queue ``texts``; the future gives float32 (len(texts), d) unit vectors, or the encoder's exception."""
        future: Future = Future()
        with self._counting:
            self._inflight += 1
        self._queue.put(_Job(list(texts), future, self.tokens(texts)))
        return future

    def encode(self, texts: list[str], **_) -> np.ndarray:
        """Blocking :meth:`submit` (for worker threads, e.g. a search's queries). When no other
        request is in flight and no pass is running, the pass runs on the calling thread at once
        (on every core, as a lone request would on a batching thread): there is no one to batch
        with, and the hand-off to a batching thread and back would be the query's only wait.
        A request that comes meanwhile is batched as usual, its pass running beside this one."""
        with self._counting:
            alone = self._inflight == 0 and self._running == 0
            if alone:
                self._running += 1
        if not alone:
            return self.submit(texts).result()
        try:
            vectors = self.encoder.encode(list(texts))
        finally:
            with self._counting:
                self._running -= 1
        with self._counting:
            self.passes += 1
            self.texts += len(texts)
        return vectors

    def close(self) -> None:
        """Finish the queued requests, then stop the workers."""
        self._queue.put(None)
        for thread in self._threads:
            thread.join()

    def _next(self, timeout: float | None) -> _Job | None:
        if self._carry is not None:
            job, self._carry = self._carry, None
            return job
        return self._queue.get(timeout=timeout) if timeout is None or timeout > 0 else self._queue.get_nowait()

    def _loop(self) -> None:
        split = (
            self.workers > 1
            and hasattr(self.encoder, "use_threads")
            and str(getattr(self.encoder, "device", "cpu")).startswith("cpu")
        )
        cores = usable_cpus()
        threads = None
        while True:
            with self._gathering:
                batch = self._gather()
            if batch is None:
                return
            with self._counting:
                alone = self._running == 0
                self._running += 1
            if split and threads != (
                want := cores if alone else max(1, cores // self.workers)
            ):  # no other pass running: all the cores
                self.encoder.use_threads(want)
                threads = want
            try:
                self._run(batch)
            finally:
                with self._counting:
                    self._running -= 1

    def _gather(self) -> list[_Job] | None:
        """The next batch (None: close() was called and nothing is left)."""
        first = self._next(None)
        if first is None:
            self._queue.put(None)  # for the other workers
            return None
        batch, tokens = [first], first.tokens
        deadline = time.monotonic() + self.wait
        expect = self._expect
        most = expect if self.workers > 1 else float("inf")  # several workers: leave the rest to the others, which run meanwhile
        while self.batching and tokens < self.budget and len(batch) < most:
            try:  # wait for company only until this worker's share of the requests the last pass saw have come
                job = self._next(deadline - time.monotonic() if len(batch) < expect else 0)
            except queue.Empty:
                break
            if job is None:  # close(): finish this batch, then stop
                self._queue.put(None)
                break
            if tokens + job.tokens > self.budget:
                self._carry = job
                break
            batch.append(job)
            tokens += job.tokens
        return batch

    def _run(self, batch: list[_Job]) -> None:
        live = [job for job in batch if job.future.set_running_or_notify_cancel()]  # a cancelled request (client gone) is skipped
        if not live:
            with self._counting:
                self._inflight -= len(batch)
            return
        texts = [t for job in live for t in job.texts]
        try:
            vectors = self.encoder.encode(
                texts
            )  # in the encoder's own batches, longest first: a pass of 128 texts is slower per text on a CPU than 4 of 32
        except BaseException as exc:  # every waiting request gets the error, and the worker goes on
            vectors = exc
        # requests live as the pass ends (its own, whose clients come back, other workers', those queued), shared among
        # the workers
        with self._counting:
            self._expect = -(-self._inflight // self.workers)
            self._inflight -= len(batch)
            if not isinstance(vectors, BaseException):
                self.passes += 1
                self.texts += len(texts)
        if isinstance(vectors, BaseException):
            for job in live:
                job.future.set_exception(vectors)
            return
        start = 0
        for job in live:
            job.future.set_result(vectors[start : start + len(job.texts)])
            start += len(job.texts)


def default_workers(encoder) -> int:
    """Passes a batcher runs at once by default: 2 for an encoder on a CPU with at least 2 cores
    (each pass on half of them while the other runs), else 1 (one GPU runs one pass at a time)."""
    cpu = str(getattr(encoder, "device", "")).startswith("cpu") and hasattr(encoder, "use_threads")
    return 2 if cpu and usable_cpus() >= 2 else 1


class BatchedEncoder:
    """An :class:`encodr.models.Encoder` whose ``encode`` goes through a :class:`DynamicBatcher`
    (what the server's searchers and scorers use); every other attribute is the encoder's."""

    def __init__(self, encoder, batcher: DynamicBatcher):
        self._encoder, self._batcher = encoder, batcher

    def __getattr__(self, name):
        return getattr(self._encoder, name)

    @property
    def unbatched(self):
        """The encoder itself, for work kept off the batcher (:func:`encodr.models.onnx.quantised_twin`)."""
        return self._encoder

    def encode(
        self, texts, batch_size: int | None = None, progress: bool = False, on_batch=None, prompt: str | None = None
    ) -> np.ndarray:
        """float32 (n, d) unit vectors of ``texts`` (each after ``prompt``: a search's query
        prompt), batched with other requests' texts."""
        return self._batcher.encode([prompt + t for t in texts] if prompt else list(texts))

    def pair_scores(self, texts1, texts2, batch_size: int = 128, progress: bool = False) -> np.ndarray:
        """Cosine of each pair (:meth:`encodr.models.Encoder.pair_scores`, batched)."""
        texts1, texts2 = list(texts1), list(texts2)
        vectors = self.encode(texts1 + texts2)  # one request to the batcher for both sides
        a, b = vectors[: len(texts1)], vectors[len(texts1) :]
        return np.sum(a * b, axis=1).astype(np.float32)
