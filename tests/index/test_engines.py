"""The Ray engine (``encodr index --engine ray``): the same index as a local build, on a local
Ray of one CPU (as CI has), and its input faults in one line."""

from __future__ import annotations

import numpy as np
import pytest

from encodr.errors import EncodrError
from encodr.index import Searcher, build
from encodr.index.store import Index
from tests.conftest import run_cli

TEXTS = [f"note {i} about {topic}, written plainly" for i, topic in enumerate(["rivers", "violins", "planets", "gardens", "engines"] * 6)]


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def vectors(path) -> np.ndarray:
    index = Index.open(path)
    try:
        return index.faiss.reconstruct_n(0, index.faiss.ntotal)
    finally:
        index.close()


def test_a_ray_build_equals_a_local_one_with_two_actors_on_one_cpu(ray_cluster, tiny_model, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    local = build([str(corpus)], str(tiny_model), tmp_path / "local", lang="eng")
    seen = []
    remote = build([str(corpus)], str(tiny_model), tmp_path / "ray", lang="eng", engine="ray", processes=2, window=7,
                   progress=lambda e: seen.append(e.completed))  # fmt: skip
    assert remote["count"] == local["count"] == len(TEXTS)
    np.testing.assert_allclose(vectors(tmp_path / "ray"), vectors(tmp_path / "local"), atol=1e-5)
    assert seen[-1] == len(TEXTS) and seen == sorted(seen)  # progress from the actors' chunks, in order
    assert ray_cluster.is_initialized()  # a Ray this process started is left running
    hit = Searcher(tmp_path / "ray").search(["violins"], k=1, mode="dense")[0][0]
    assert hit.text == Searcher(tmp_path / "local").search(["violins"], k=1, mode="dense")[0][0].text


@pytest.mark.parametrize("args, words", [
    (["--engine", "spark"], "unknown engine 'spark'; choose one of local, ray"),
    (["--address", "ray://head:10001"], "--address names a Ray cluster; pass --engine ray too"),
    (["--engine", "ray", "--address", "127.0.0.1:1"], "--address 127.0.0.1:1: no Ray cluster answers there"),
    (["--engine", "ray", "--address", "head"], "--address head: give HOST:PORT"),
])  # fmt: skip
def test_engine_faults_are_one_line(args, words, tiny_model, tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    code, _, err = run_cli(["index", str(corpus), "--model", str(tiny_model), "--out", str(tmp_path / "i"), *args], capsys, monkeypatch)
    assert code == 2 and words in err and "Traceback" not in err
    assert not (tmp_path / "i").exists()


def test_ray_missing_is_named(monkeypatch):
    import builtins

    from encodr.index.engines import check_engine

    real = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: (_ for _ in ()).throw(ImportError(name)) if name == "ray" else real(name, *a, **k))
    with pytest.raises(EncodrError, match=r"--engine ray needs Ray; install it with pip install 'encodr\[ray\]'"):
        check_engine("ray", None)


def test_a_ray_actor_killed_mid_build_is_restarted_and_the_index_is_the_same(ray_cluster, tiny_model, tmp_path):
    import os
    import signal

    import psutil

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    local = build([str(corpus)], str(tiny_model), tmp_path / "local", lang="eng")
    killed = []

    def kill_one_actor(event):  # in the driver, once the first chunk is back: SIGKILL one encoding actor's process
        if killed or not event.completed:
            return
        actors = [p for p in psutil.process_iter(["cmdline"]) if any("EncodeActor" in part for part in (p.info["cmdline"] or []))]
        if actors:
            os.kill(actors[0].pid, signal.SIGKILL)
            killed.append(actors[0].pid)

    remote = build([str(corpus)], str(tiny_model), tmp_path / "ray", lang="eng", engine="ray", processes=2, window=5, progress=kill_one_actor)
    assert killed and remote["count"] == local["count"] == len(TEXTS)  # Ray restarted the actor and reran its chunk: the build completed
    np.testing.assert_allclose(vectors(tmp_path / "ray"), vectors(tmp_path / "local"), atol=1e-5)
