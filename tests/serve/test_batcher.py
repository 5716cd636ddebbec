"""encodr.serve.batcher: which requests share a forward pass (a gated fake encoder makes the
order of arrivals and passes exact, with no sleeps)."""

from __future__ import annotations

import threading

import numpy as np

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
    batcher = DynamicBatcher(encoder, wait=60.0)  # a wait that ends only when the expected requests have come
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
    batcher = DynamicBatcher(encoder, batching=False)
    futures = [batcher.submit([t]) for t in ("x", "yy", "zzz")]
    assert [f.result(timeout=30).tolist() for f in futures] == [[[1.0]], [[2.0]], [[3.0]]]
    batcher.close()
    assert encoder.passes == [["x"], ["yy"], ["zzz"]]
