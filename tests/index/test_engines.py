"""The Ray engine (``encodr index --engine ray``): the same index as a local build, on a local
Ray of one CPU (as CI has), and its input faults in one line."""

from __future__ import annotations

import numpy as np
import pytest

from encodr.data.records import Layout
from encodr.errors import EncodrError
from encodr.index import BuildOptions, Searcher, build
from encodr.index.options import SearchOptions
from encodr.index.reader import IndexReader as Index
from tests.conftest import run_cli

TEXTS = [
    f"note {i} about {topic}, written plainly"
    for i, topic in enumerate(["rivers", "violins", "planets", "gardens", "engines"] * 6)
]


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


def folder_of_files(tmp_path):
    """A folder: lines with a duplicate, a long Markdown document (passages), a PDF that is not one."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("\n".join(TEXTS + TEXTS[:3]) + "\n")
    (docs / "b.md").write_text(
        "# Long\n\n" + " ".join(f"sentence {i} of the long document about {TEXTS[i % 30]}." for i in range(60))
    )
    (docs / "c.pdf").write_bytes(b"not a pdf")
    return docs


def texts_of(path) -> list[tuple]:
    index = Index.open(path)
    try:
        return [
            tuple(row) for row in index.texts.conn.execute("SELECT id, text, source, line, ext_id, start FROM texts ORDER BY id")
        ]
    finally:
        index.close()


def test_a_ray_build_equals_a_local_one_with_two_actors_on_one_cpu(ray_cluster, tiny_model, tmp_path):
    docs = folder_of_files(tmp_path)
    lines = Layout(records=True)  # a.txt one record a line (--records), as windows of lines spread over the actors
    local = build(
        [str(docs)], tmp_path / "local", BuildOptions(model=str(tiny_model), lang="eng", backend="torch", layout=lines)
    )  # what auto is for Ray (its machines are not this one)
    seen = []
    remote = build(
        [str(docs)],
        tmp_path / "ray",
        BuildOptions(model=str(tiny_model), lang="eng", engine="ray", processes=2, window=7, layout=lines),
        progress=lambda e: seen.append(e.completed),
    )
    assert remote["count"] == local["count"] > len(TEXTS) and remote["passages"] == local["passages"] > 1
    assert remote["skipped_duplicates"] == local["skipped_duplicates"] == 3
    assert [s["path"] for s in remote["skipped_files"]] == [s["path"] for s in local["skipped_files"]] == [str(docs / "c.pdf")]
    assert texts_of(tmp_path / "ray") == texts_of(tmp_path / "local")  # the same records, ids, passages and offsets
    np.testing.assert_allclose(vectors(tmp_path / "ray"), vectors(tmp_path / "local"), atol=1e-5)
    assert seen == sorted(seen) and len(set(seen)) > 3  # progress item by item, in order
    assert ray_cluster.is_initialized()  # a Ray this process started is left running
    hit = Searcher(tmp_path / "ray").search(["violins"], SearchOptions(k=1, mode="dense"))[0][0]
    assert hit.text == Searcher(tmp_path / "local").search(["violins"], SearchOptions(k=1, mode="dense"))[0][0].text


@pytest.mark.parametrize(
    "args, words",
    [
        (["--engine", "spark"], "--engine spark: not one of local, ray"),
        (["--address", "ray://head:10001"], "--address names a Ray cluster; pass --engine ray too"),
        (["--engine", "ray", "--address", "127.0.0.1:1"], "--address 127.0.0.1:1: no Ray cluster answers there"),
        (["--engine", "ray", "--address", "head"], "--address head: give HOST:PORT"),
    ],
)
def test_engine_faults_are_one_line(args, words, tiny_model, tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    code, _, err = run_cli(
        ["index", str(corpus), "--model", str(tiny_model), "--out", str(tmp_path / "i"), *args], capsys, monkeypatch
    )
    assert code == 2 and words in err and "Traceback" not in err
    assert not (tmp_path / "i").exists()


def test_ray_missing_is_named(monkeypatch):
    import sys

    from encodr.index.engines import check_engine

    monkeypatch.setitem(sys.modules, "ray.data", None)  # as if Ray Data were not installed
    with pytest.raises(EncodrError, match=r"engine ray needs ray, which is not installed here: pip install 'encodr\[ray\]'"):
        check_engine("ray", None)


def test_a_ray_actor_killed_mid_build_is_restarted_and_the_index_is_the_same(ray_cluster, tiny_model, tmp_path):
    import os
    import signal

    import psutil

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    local = build([str(corpus)], tmp_path / "local", BuildOptions(model=str(tiny_model), lang="eng", backend="torch"))
    killed = []

    def kill_one_actor(event):  # in the driver, once the first chunk is back: SIGKILL one encoding actor's process
        if killed or not event.completed:
            return
        actors = [p for p in psutil.process_iter(["cmdline"]) if any("EncodeRows" in part for part in (p.info["cmdline"] or []))]
        if actors:
            os.kill(actors[0].pid, signal.SIGKILL)
            killed.append(actors[0].pid)

    remote = build(
        [str(corpus)],
        tmp_path / "ray",
        BuildOptions(model=str(tiny_model), lang="eng", engine="ray", processes=2, window=5),
        progress=kill_one_actor,
    )
    assert killed and remote["count"] == local["count"] == len(
        TEXTS
    )  # Ray restarted the actor and reran its item: the build completed
    np.testing.assert_allclose(vectors(tmp_path / "ray"), vectors(tmp_path / "local"), atol=1e-5)


def test_a_crashed_ray_build_reruns_only_the_unfinished_items(ray_cluster, tiny_model, tmp_path, monkeypatch):
    from encodr.index import dataflow
    from encodr.index.shards import shards_folder

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    build([str(corpus)], tmp_path / "local", BuildOptions(model=str(tiny_model), lang="eng", backend="torch"))

    def crash(event):  # the driver dies once three items (15 texts) are stored as shards
        if event.completed >= 15:
            raise RuntimeError("the building process died")

    with pytest.raises(RuntimeError, match="died"):
        build(
            [str(corpus)],
            tmp_path / "ray",
            BuildOptions(model=str(tiny_model), lang="eng", engine="ray", window=5),
            progress=crash,
        )
    assert not (tmp_path / "ray").exists() and len(list(shards_folder(tmp_path / "ray").glob("*.npy"))) == 3
    sorted(shards_folder(tmp_path / "ray").glob("000001-*.json"))[0].write_text(
        "{damaged"
    )  # item 1's records: its vectors alone are not reused
    sent = []
    real = dataflow._pipeline
    monkeypatch.setattr(
        dataflow, "_pipeline", lambda ray, pending, *a: (sent.extend(i.n for i in pending), real(ray, pending, *a))[1]
    )
    again = build([str(corpus)], tmp_path / "ray", BuildOptions(model=str(tiny_model), lang="eng", engine="ray", window=5))
    assert (
        sent == [1, 3, 4, 5] and again["resumed"] == 10 and again["count"] == len(TEXTS)
    )  # only the items not finished went to Ray
    assert texts_of(tmp_path / "ray") == texts_of(tmp_path / "local")
    np.testing.assert_allclose(vectors(tmp_path / "ray"), vectors(tmp_path / "local"), atol=1e-5)
    assert not shards_folder(tmp_path / "ray").exists()


def test_on_disk_blocks_added_in_ray_tasks_equal_blocks_added_here(ray_cluster, tiny_model, tmp_path, monkeypatch):
    import faiss

    from encodr.index import ondisk
    from encodr.index.engines import ray_adding
    from encodr.index.faiss_types import new_faiss, training_sample, write_faiss

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1200, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    trained = new_faiss("ivf", 32, len(x), training_sample(x))
    (tmp_path / "here").mkdir()
    (tmp_path / "ray").mkdir()
    here = ondisk.add_on_disk(faiss.clone_index(trained), x, tmp_path / "here", write_faiss, block=250)
    with ray_adding() as add_blocks:
        remote = ondisk.add_on_disk(
            faiss.clone_index(trained), x, tmp_path / "ray", write_faiss, block=250, add_blocks=add_blocks
        )  # 5 tasks
    assert remote.ntotal == here.ntotal == len(x) and not list((tmp_path / "ray").glob("block*"))
    faiss.extract_index_ivf(here).nprobe = faiss.extract_index_ivf(remote).nprobe = 8
    q = x[:40] + 0.01
    assert [a.tolist() for a in remote.search(q, 10)] == [a.tolist() for a in here.search(q, 10)]  # the same lists, the same hits

    monkeypatch.setattr(ondisk, "BLOCK", 60)  # through encodr index --engine ray --on-disk, then --add: several tasks each
    lines = [f"line {i}: {TEXTS[i % len(TEXTS)]}" for i in range(400)]
    (tmp_path / "a.txt").write_text("\n".join(lines[:300]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(lines[300:]) + "\n")
    build(
        [str(tmp_path / "a.txt")],
        tmp_path / "idx",
        BuildOptions(model=str(tiny_model), lang="eng", index_type="ivf", on_disk=True, engine="ray"),
    )
    meta = build(
        [str(tmp_path / "b.txt")], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng", write="add", engine="ray")
    )
    assert meta["count"] == 400 and meta["on_disk"] is True
    assert Searcher(tmp_path / "idx").search([lines[350]], SearchOptions(k=1, mode="dense"))[0][0].text == lines[350]


@pytest.mark.parametrize(
    "name, content, args, words",
    [
        (
            "d.csv",
            "title,body\nA,first text\nB,second text\n",
            ["--text-column", "text"],
            "no column 'text' in its header (title, body)",
        ),
        ("d.jsonl", '{"_id": "1", "text": "fine"}\nnot json\n', [], "d.jsonl, line 2"),
    ],
)
def test_a_file_the_ray_workers_cannot_read_is_one_line_and_nothing_is_written(
    name, content, args, words, ray_cluster, tiny_model, tmp_path, capsys, monkeypatch
):
    from encodr.index.shards import shards_folder

    data = tmp_path / name
    data.write_text(content)
    out = tmp_path / "i"
    code, _, err = run_cli(
        ["index", str(data), "--model", str(tiny_model), "--out", str(out), "--engine", "ray", "--lang", "eng", *args],
        capsys,
        monkeypatch,
    )
    assert (
        code == 2 and err.count("encodr: error:") == 1 and words in err.strip().splitlines()[-1] and "Traceback" not in err
    )  # after the progress bar
    assert not out.exists() and not list(shards_folder(out).glob("*.npy"))  # read on a worker, raised here: no index, no shard
