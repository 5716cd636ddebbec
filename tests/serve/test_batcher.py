"""encodr.serve.batcher: which requests share a forward pass (a gated fake encoder makes the
order of arrivals and passes exact, with no sleeps)."""

from __future__ import annotations

import threading

import numpy as np

from encodr.serve import batcher as batcher_module
from encodr.serve.batcher import DynamicBatcher


class GatedEncoder:
    """Records each pass's texts and holds it until the test opens the gate."""

    max_length = 128

    def __init__(self):
        self.passes: list[list[str]] = []
        self.started = threading.Semaphore(0)
        self.gate = threading.Semaphore(0)

    def encode(self, texts):
        self.passes.append(list(texts))
        self.started.release()
        assert self.gate.acquire(timeout=30), "the test never opened the gate"
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)


def test_a_batch_waits_for_as_many_requests_as_were_live_when_the_last_pass_ended():
    encoder = GatedEncoder()
    batcher = DynamicBatcher(encoder, wait=60.0, workers=1)  # a wait that ends only when the expected requests have come
    try:
        a = batcher.submit(["a"])
        assert encoder.started.acquire(timeout=30)  # a lone request runs at once: nothing was live before it
        b, c = batcher.submit(["bb"]), batcher.submit(["ccc"])  # queued while the first pass runs
        encoder.gate.release()
        assert a.result(timeout=30).tolist() == [[1.0]]
        # three requests were live when that pass ended (its own, whose client comes back, and the two
        # queued): the next pass waits for a third rather than running b and c alone
        d = batcher.submit(["dddd"])
        assert encoder.started.acquire(timeout=30)
        encoder.gate.release()
        assert [r.result(timeout=30).tolist() for r in (b, c, d)] == [[[2.0]], [[3.0]], [[4.0]]]
        assert encoder.passes == [["a"], ["bb", "ccc", "dddd"]]
    finally:
        encoder.gate.release(10)
        batcher.close()


def test_without_batching_each_request_runs_alone():
    encoder = GatedEncoder()
    encoder.gate.release(10)
    batcher = DynamicBatcher(encoder, batching=False, workers=1)
    futures = [batcher.submit([t]) for t in ("x", "yy", "zzz")]
    assert [f.result(timeout=30).tolist() for f in futures] == [[[1.0]], [[2.0]], [[3.0]]]
    batcher.close()
    assert encoder.passes == [["x"], ["yy"], ["zzz"]]


class PassGatedEncoder:
    """A CPU encoder whose i-th pass is held until the test opens gate i; records each pass's
    texts and the CPU threads each worker thread asked for."""

    max_length = 128
    device = "cpu"

    def __init__(self):
        self.passes: list[list[str]] = []
        self.threads: dict[str, list[int]] = {}
        self.started = threading.Semaphore(0)
        self.gates = [threading.Semaphore(0) for _ in range(8)]
        self.lock = threading.Lock()

    def use_threads(self, n):
        self.threads.setdefault(threading.current_thread().name, []).append(n)

    def encode(self, texts):
        with self.lock:
            self.passes.append(list(texts))
            gate = self.gates[len(self.passes) - 1]
        self.started.release()
        assert gate.acquire(timeout=30), "the test never opened the gate"
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)


def test_two_workers_share_the_requests_and_the_cores(monkeypatch):
    monkeypatch.setattr(batcher_module, "usable_cpus", lambda: 4)
    encoder = PassGatedEncoder()
    batcher = DynamicBatcher(encoder, wait=60.0)
    assert batcher.workers == 2  # the default on a CPU with 2 cores or more
    try:
        a = batcher.submit(["a"])
        assert encoder.started.acquire(timeout=30)  # alone: runs at once, on all 4 cores
        rest = [batcher.submit([t]) for t in ("bb", "ccc", "dddd", "eeeee")]
        assert encoder.started.acquire(timeout=30)  # the other worker runs "bb" meanwhile, on its half of the cores
        assert encoder.passes == [["a"], ["bb"]]
        encoder.gates[0].release()
        assert a.result(timeout=30).tolist() == [[1.0]]
        # five requests were live when that pass ended: this worker's share is 3, all queued
        assert encoder.started.acquire(timeout=30)
        assert encoder.passes[2] == ["ccc", "dddd", "eeeee"]
        encoder.gates[1].release()
        encoder.gates[2].release()
        assert [f.result(timeout=30).tolist() for f in rest] == [[[2.0]], [[3.0]], [[4.0]], [[5.0]]]
        assert sorted(encoder.threads.values()) == [[2], [4, 2]]  # all cores while alone, half while the other pass runs
    finally:
        for gate in encoder.gates:
            gate.release(10)
        batcher.close()


def test_a_lone_blocking_request_runs_on_its_own_thread_and_a_busy_one_is_batched():
    encoder = PassGatedEncoder()
    ran_on: list[str] = []
    gated = encoder.encode
    encoder.encode = lambda texts: ran_on.append(threading.current_thread().name) or gated(texts)
    batcher = DynamicBatcher(encoder, workers=1)
    try:
        encoder.gates[0].release()
        assert batcher.encode(["a"]).tolist() == [[1.0]]  # nothing in flight: no hand-off to the batching thread
        assert encoder.started.acquire(timeout=30)
        busy = batcher.submit(["bb"])
        assert encoder.started.acquire(timeout=30)  # its pass runs on the batching thread, held at the gate
        queued, submit = threading.Event(), batcher.submit
        batcher.submit = lambda texts: (submit(texts), queued.set())[0]
        answer: list = []
        caller = threading.Thread(target=lambda: answer.append(batcher.encode(["ccc"])), name="search-worker")
        caller.start()
        assert queued.wait(timeout=30)  # a pass is running: the request went to the queue
        encoder.gates[1].release()
        assert busy.result(timeout=30).tolist() == [[2.0]]
        assert encoder.started.acquire(timeout=30)
        encoder.gates[2].release()
        caller.join(timeout=30)
        assert answer[0].tolist() == [[3.0]]
        assert ran_on == [threading.current_thread().name, "encodr-batcher-0", "encodr-batcher-0"]
        assert (batcher.passes, batcher.texts) == (3, 3)
    finally:
        for gate in encoder.gates:
            gate.release(10)
        batcher.close()
