"""encodr index / search: build, search, --add, PCR, crash safety, broken indexes."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from encodr.data.records import read_records
from encodr.errors import EncodrError
from encodr.index import BuildOptions, Index, Searcher, build
from encodr.index.options import SearchOptions
from encodr.models.pcr import POOLED
from tests.conftest import run_cli

TEXTS = [f"sentence number {i} about {topic}" for i, topic in enumerate(["cats", "dogs", "stocks", "rain", "music", "chess"] * 5)]


@pytest.fixture
def corpus(tmp_path):
    f = tmp_path / "corpus.txt"
    f.write_text("\n".join(TEXTS[:20]) + "\n\n" + TEXTS[0] + "\n")
    return f


@pytest.fixture
def built(corpus, tiny_model, tmp_path):
    out = tmp_path / "idx"
    build([str(corpus)], out, BuildOptions(model=str(tiny_model)))
    return out


def test_build_dedups_and_finds_each_text_first(built, tiny_model):
    s = Searcher(built)
    assert len(s.index) == 20 and s.index.meta.index_type == "flat"
    hits = s.search(TEXTS[:20], SearchOptions(k=3, mode="dense"))
    assert [h[0].text for h in hits] == TEXTS[:20]
    assert all(abs(h[0].score - 1.0) < 1e-4 for h in hits)
    assert hits[3][0].line == 4 and hits[3][0].source.endswith("corpus.txt")
    assert [h.rank for h in hits[0]] == [1, 2, 3]
    assert hits[0][0].score >= hits[0][1].score >= hits[0][2].score


def test_searching_leaves_the_processs_torch_threads_as_they_were(built, monkeypatch):
    """FAISS searches on one thread, but torch shares its OpenMP count: a search that left it at one
    would run every later training step and encoding of the process on one core."""
    import faiss
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        from encodr.index import reader

        seen = []
        search = reader.IndexReader.search  # the class a Searcher opens (encodr.index.Index adds the writes to it)
        monkeypatch.setattr(
            reader.IndexReader,
            "search",
            lambda self, *a, **kw: seen.append(faiss.omp_get_max_threads()) or search(self, *a, **kw),
        )
        s = Searcher(built)
        s.search(TEXTS[:2], SearchOptions(k=2, mode="dense"))
        s.search(TEXTS[:2], SearchOptions(k=2, mode="hybrid"))
        assert seen == [1, 1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_tsv_corpus_with_id_and_lang(tmp_path, tiny_model):
    f = tmp_path / "c.tsv"
    f.write_text("id\ttext\tlang\na1\thola mundo\tspa\na2\thello world\teng\n")
    recs = list(read_records(f))
    assert [(r.ext_id, r.text, r.lang, r.line) for r in recs] == [("a1", "hola mundo", "spa", 2), ("a2", "hello world", "eng", 3)]
    bad = tmp_path / "bad.tsv"
    bad.write_text("id\tsentence\n1\tx\n")
    with pytest.raises(EncodrError, match=r"no column 'text' in its header \(id, sentence\); pass text_column"):
        list(read_records(bad))


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_index_types(corpus, tiny_model, tmp_path, kind):
    meta = build([str(corpus)], tmp_path / kind, BuildOptions(model=str(tiny_model), index_type=kind))
    assert meta["index_type"] == kind and meta["count"] == 20
    assert Searcher(tmp_path / kind).search([TEXTS[5]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[5]


def test_add_appends_and_stores_a_text_once(built, tiny_model, tmp_path):
    more = tmp_path / "more.txt"
    more.write_text("\n".join(TEXTS[15:30]))
    meta = build([str(more)], built, BuildOptions(write="add"))
    assert meta["encoded"] == 10 and meta["skipped_duplicates"] == 5 and meta["count"] == 30
    assert (
        meta["added"] == 15 and meta["documents"] == 36
    )  # 21 lines of corpus.txt + 15 of more.txt: a document a line, a text stored once
    assert Searcher(built).search([TEXTS[29]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[29]
    assert sorted(p.name for p in built.iterdir()) == ["current", "g000002"]  # the first generation is gone: nobody holds it
    assert sorted(p.name for p in (built / "current").iterdir()) == [
        "index.json",
        "texts.db",
        "vectors.faiss",
    ]  # no raw vectors left behind


def test_other_model_is_refused(built, tmp_path):
    with pytest.raises(EncodrError, match="is not the model index .* was built with"):
        Searcher(built, "minilm")


def test_pcr_removes_a_direction_per_language(tmp_path, tiny_model):
    f = tmp_path / "c.tsv"
    rows = [f"{i}\t{t}\t{'spa' if i % 2 else 'eng'}" for i, t in enumerate(TEXTS)]
    f.write_text("id\ttext\tlang\n" + "\n".join(rows) + "\n")
    build([str(f)], tmp_path / "p", BuildOptions(model=str(tiny_model), pcr=True))
    index = Index.open(tmp_path / "p")
    assert set(index.components) == {"eng", "spa", POOLED} and index.meta.pcr_variant == "uncentred"  # the default (CMLM §5.2)
    u = index.components["eng"]
    stored = index.vectors_of([i for i in range(len(TEXTS)) if i % 2 == 0])
    assert np.abs(stored @ u).max() < 1e-4  # the component is gone from that language's vectors
    s = Searcher(tmp_path / "p")
    assert s.search([TEXTS[2]], SearchOptions(k=1, lang="eng", mode="dense"))[0][0].text == TEXTS[2]
    with pytest.raises(EncodrError, match="no principal component for language 'deu'"):
        s.search(["x"], SearchOptions(lang="deu", mode="dense"))
    # a query in no language (digits, emoji) takes the pooled component instead of an error
    assert s.query_languages(["12345"]) == ["und"] and len(s.search(["12345"], SearchOptions(k=1, mode="dense"))[0]) == 1
    pooled = index.prepare_queries(s.encoder.encode(["🙂🙂"]), ["und"])
    assert abs(float(pooled[0] @ index.components[POOLED])) < 1e-5
    # the query's PCR is the per-language removal --add uses too: one call per language
    from encodr.models.pcr import remove_per_language

    queries = s.encoder.encode([TEXTS[1], TEXTS[2]])
    both = index.prepare_queries(queries, ["spa", "eng"])
    assert np.allclose(both, remove_per_language(queries, ["spa", "eng"], index.components))
    assert abs(float(both[0] @ index.components["spa"])) < 1e-4 and abs(float(both[1] @ u)) < 1e-4


def test_add_to_a_pcr_index_refuses_a_language_without_a_component(tmp_path, tiny_model, capsys, monkeypatch):
    f = tmp_path / "c.tsv"
    f.write_text("text\tlang\n" + "\n".join(f"{t}\t{'spa' if i % 2 else 'eng'}" for i, t in enumerate(TEXTS)) + "\n")
    build([str(f)], tmp_path / "p", BuildOptions(model=str(tiny_model), pcr=True))
    more = tmp_path / "more.txt"
    more.write_text("bonjour tout le monde\n")
    code, _, err = run_cli(["index", str(more), "--out", str(tmp_path / "p"), "--add", "--lang", "fra"], capsys, monkeypatch)
    last = err.strip().splitlines()[-1]  # the progress bar had started: the error is the one line after it
    assert (
        code == 2 and last.startswith("encodr: error:") and "no principal component for language 'fra' (it has eng, spa)" in last
    )
    assert "Traceback" not in err
    assert len(Index.open(tmp_path / "p")) == len(TEXTS)  # the index is as it was


def test_pcr_needs_two_texts_per_language_and_lang_needs_pcr(tmp_path, tiny_model, built):
    f = tmp_path / "c.tsv"
    f.write_text("text\tlang\n" + "\n".join(f"{t}\teng" for t in TEXTS[:5]) + "\nhola mundo\tspa\n")
    with pytest.raises(EncodrError, match="language 'spa' has only 1 distinct text; pcr"):
        build([str(f)], tmp_path / "p", BuildOptions(model=str(tiny_model), pcr=True))
    assert not (tmp_path / "p").exists()
    with pytest.raises(EncodrError, match="built without pcr, so a query language changes nothing in dense search"):
        Searcher(built).search(["x"], SearchOptions(lang="eng", mode="dense"))
    # in keyword and hybrid search it picks the query's stemmer, so it is taken there
    s = Searcher(built)
    for mode in ("keyword", "hybrid"):
        langs, (hits,) = s.query(["cat"], SearchOptions(k=3, lang="eng", mode=mode))
        assert langs == ["eng"] and "cats" in hits[0].text  # "cat" finds "cats" through the English stemmer


def test_broken_indexes_are_named(built):
    (built / "current" / "index.json").write_text(
        json.dumps({**json.loads((built / "current" / "index.json").read_text()), "count": 99})
    )
    with pytest.raises(EncodrError, match="inconsistent: vectors.faiss has 20 vectors, texts.db 20 texts, index.json says 99"):
        Index.open(built)
    (built / "current" / "vectors.faiss").write_bytes(b"garbage")
    with pytest.raises(EncodrError, match="vectors.faiss is corrupted"):
        Index.open(built)
    (built / "current" / "texts.db").unlink()
    with pytest.raises(EncodrError, match="is missing texts.db"):
        Index.open(built)


def test_a_folder_of_documents_given_as_an_index_is_named_a_folder_not_an_index_to_rebuild(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A note\n")
    folder = tmp_path / "notes"
    with pytest.raises(EncodrError) as caught:
        Index.open(folder)
    said = str(caught.value)  # the CLI writes the setting as its flag, --out
    assert said.startswith(f"{folder} is a folder, not an encodr index; index it with: encodr index {folder} ")
    assert said.endswith(f" {folder}-index")


def test_broken_index_cli_message(built, capsys, monkeypatch):
    with sqlite3.connect(built / "current" / "texts.db") as db:
        db.execute("delete from texts where id = 3")
    code, _, err = run_cli(["search", "cats", "--index", str(built)], capsys, monkeypatch)
    assert code == 2 and "inconsistent" in err and "texts.db 19 texts" in err and "Traceback" not in err


def test_search_cli_json_and_stdin(built, capsys, monkeypatch):
    code, out, _ = run_cli(["search", TEXTS[2], "--index", str(built), "-k", "2", "--json"], capsys, monkeypatch)
    data = json.loads(out)
    (result,) = data["results"]  # one query: the same shape as several
    assert code == 0 and result["hits"][0]["text"] == TEXTS[2] and len(result["hits"]) == 2 and data["index"] == str(built)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(f"{TEXTS[1]}\n\n{TEXTS[4]}\n"))
    code, out, _ = run_cli(["search", "--index", str(built), "--json", "-k", "1"], capsys, monkeypatch)
    assert [q["hits"][0]["text"] for q in json.loads(out)["results"]] == [TEXTS[1], TEXTS[4]]


def test_sigkill_during_add_keeps_the_previous_index(built, tiny_model, tmp_path):
    before = [[h.text for h in hits] for hits in Searcher(built).search(TEXTS[:5], SearchOptions(k=5, mode="dense"))]
    big = tmp_path / "big.txt"
    big.write_text("\n".join(f"new text {i} with some words" for i in range(200_000)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "encodr", "index", str(big), "--out", str(built), "--add", "--batch-size", "64"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    # wait until the new generation's store exists, i.e. --add is mid-way, then kill it hard
    while not (built / "g000002" / "texts.db").exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        os.sched_yield()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    after = [[h.text for h in hits] for hits in Searcher(built).search(TEXTS[:5], SearchOptions(k=5, mode="dense"))]
    assert after == before and len(Index.open(built)) == 20
    # the next run sweeps the dead run's temporary directory
    more = tmp_path / "m.txt"
    more.write_text("one more text\n")
    assert build([str(more)], built, BuildOptions(write="add"))["count"] == 21
    assert sorted(p.name for p in built.iterdir()) == ["current", "g000003"]  # the dead run's generation is swept


def test_existing_index_needs_overwrite_and_bad_type_is_named(built, corpus, capsys, monkeypatch):
    code, _, err = run_cli(["index", str(corpus), "--out", str(built)], capsys, monkeypatch)
    assert (
        code == 2
        and "already exists; pass --add to add documents, --sync" in err
        and "--overwrite to rebuild it" in err
        and "Traceback" not in err
    )
    assert err.strip().splitlines() == [err.strip()]  # the error alone: no progress bar before it
    code, _, err = run_cli(["index", str(corpus), "--out", str(built), "--index-type", "lsh", "--overwrite"], capsys, monkeypatch)
    assert code == 2 and "--index-type lsh: not one of auto, flat, hnsw, ivf, ivfpq" in err


def test_empty_corpus_is_refused_before_the_bar(tmp_path, tiny_model, capsys, monkeypatch):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n")
    code, _, err = run_cli(["index", str(blank), "--model", str(tiny_model), "--out", str(tmp_path / "e")], capsys, monkeypatch)
    assert code == 2 and "no text to index (all lines blank)" in err
    assert err.strip().splitlines() == [err.strip()]  # the error alone: no progress bar before it
    assert not (tmp_path / "e").exists()


def test_list_indexes_names_a_corrupted_one(built, tmp_path):
    from encodr.index import list_indexes

    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "index.json").write_text("{")
    found = {Path(r["path"]).name: r for r in list_indexes(tmp_path)}
    assert found["idx"]["count"] == 20 and "error" not in found["idx"]
    assert found["broken"]["error"] == "index.json is corrupted; rebuild the index"


def test_a_workspace_index_is_found_by_name(corpus, tiny_model, workspace, tmp_path, monkeypatch, capsys):
    build([str(corpus)], workspace / "indexes" / "notes", BuildOptions(model=str(tiny_model)))
    monkeypatch.chdir(tmp_path)  # no ./notes here
    assert Searcher("notes").search([TEXTS[3]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[3]
    more = tmp_path / "more.txt"
    more.write_text("one more text\n")
    assert build([str(more)], "notes", BuildOptions(write="add"))["count"] == 21 and not (tmp_path / "notes").exists()
    code, out, _ = run_cli(["indexes", "--json"], capsys, monkeypatch)
    assert code == 0 and [(r["name"], r["count"]) for r in json.loads(out)] == [("notes", 21)]
    with pytest.raises(EncodrError, match="index missing does not exist \\(nor in the workspace"):
        Index.open("missing")
    with pytest.raises(EncodrError, match="more.txt is a file; index takes an index directory"):
        Index.open(more)


@pytest.mark.parametrize("variant", ["centred", "uncentred"])
def test_pcr_variants_remove_their_component(variant):
    import numpy as np

    from encodr.models.pcr import first_component, fit_and_remove

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 8)).astype(np.float32) + np.array(
        [3, 0, 0, 0, 0, 0, 0, 0], dtype=np.float32
    )  # a shared offset
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    original = vectors.copy()
    component = fit_and_remove(vectors, ["spa"] * 50, variant)["spa"]
    assert np.abs(vectors @ component).max() < 1e-5  # the projection is gone
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    if variant == "uncentred":  # the paper's: the first right singular vector of the uncentred matrix
        reference = np.linalg.svd(original, full_matrices=False)[2][0]
    else:  # classic PCA: the same of the centred matrix
        reference = np.linalg.svd(original - original.mean(axis=0), full_matrices=False)[2][0]
    assert abs(float(component @ reference)) > 1 - 1e-5
    mean = original.mean(0) / np.linalg.norm(original.mean(0))
    assert (
        abs(float(first_component(original.T @ original, original.sum(0), 50, "uncentred") @ mean)) > 0.99
    )  # ≈ the mean direction here


def test_pcr_variant_needs_pcr_and_a_known_name(tmp_path, tiny_model, capsys, monkeypatch):
    f = tmp_path / "c.txt"
    f.write_text("a cat\na dog\n")
    code, _, err = run_cli(
        ["index", str(f), "--model", str(tiny_model), "--pcr-variant", "centred", "--out", str(tmp_path / "a")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "pass --pcr too" in err and not (tmp_path / "a").exists()
    code, _, err = run_cli(
        ["index", str(f), "--model", str(tiny_model), "--pcr", "--pcr-variant", "median", "--out", str(tmp_path / "b")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "--pcr-variant median: not one of centred, uncentred" in err and not (tmp_path / "b").exists()
    code, _, err = run_cli(["eval", "sts", "--pcr", "--model", str(tiny_model)], capsys, monkeypatch)
    assert code == 2 and "--pcr applies to 'eval bitext'" in err


def test_eval_bitext_refuses_an_unknown_pcr_variant_before_encoding(tiny_model, capsys, monkeypatch):
    code, _, err = run_cli(
        ["eval", "bitext", "--pcr", "--pcr-variant", "median", "--model", str(tiny_model)], capsys, monkeypatch
    )
    assert code == 2 and "--pcr-variant median: not one of centred, uncentred" in err and "Batches" not in err


def test_queries_and_documents_are_encoded_with_the_models_prompts(tiny_model, tmp_path):
    """An E5-style model: 'query: ' before queries, 'passage: ' before documents (the empty
    'document' entry sentence-transformers adds is not taken); the index records both."""
    from sentence_transformers import SentenceTransformer

    from encodr.index import BuildOptions, Searcher, build
    from encodr.models import load_encoder

    st = SentenceTransformer(str(tiny_model), device="cpu")
    st.prompts = {"query": "query: ", "document": "", "passage": "passage: "}
    st.save(str(tmp_path / "prompted"))
    encoder = load_encoder(str(tmp_path / "prompted"), device="cpu")
    assert (encoder.prompt("query"), encoder.prompt("document")) == ("query: ", "passage: ")
    texts = ["the river runs to the sea", "a violin in the attic", "winter comes early"]
    (tmp_path / "c.txt").write_text("\n".join(texts) + "\n")
    meta = build([str(tmp_path / "c.txt")], tmp_path / "idx", BuildOptions(model=encoder, lang="eng"))
    assert meta["prompts"] == {"query": "query: ", "document": "passage: "}
    searcher = Searcher(tmp_path / "idx", encoder=encoder)
    (hits,) = searcher.query(["river"], SearchOptions(k=3, mode="dense"))[1]
    docs = encoder.encode([f"passage: {t}" for t in texts])
    expected = docs @ encoder.encode(["query: river"])[0]
    assert [h.score for h in hits] == pytest.approx(sorted(expected, reverse=True), abs=1e-5)
    assert not np.allclose(encoder.encode(["river"]), encoder.encode(["query: river"]))  # the prompt changes the vector


def test_a_build_stopped_in_its_only_window_keeps_the_pieces_it_encoded_and_resumes_from_them(tmp_path, tiny_model, monkeypatch):
    """A folder of a few thousand passages is one window: stopped at 1,259 of 3,432 it kept
    nothing. Its pieces of SHARD_TEXTS texts are kept as they are encoded."""
    import importlib

    from encodr.index.shards import Shards, shards_folder
    from encodr.models import load_encoder

    monkeypatch.setattr(importlib.import_module("encodr.index.build"), "SHARD_TEXTS", 8)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")  # 30 texts, one window: pieces of 8, 8, 8, 6
    encoder, calls = load_encoder(str(tiny_model)), []
    real = encoder.encode

    def encode(texts, *args, **kwargs):
        calls.append(len(texts))
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C in the third piece
        return real(texts, *args, **kwargs)

    encoder.encode = encode
    out = tmp_path / "idx"
    with pytest.raises(KeyboardInterrupt):
        build([str(corpus)], out, BuildOptions(model=encoder))
    assert not out.exists() and Shards.finished(shards_folder(out))[0] == 2
    calls.clear()
    meta = build([str(corpus)], out, BuildOptions(model=encoder))
    assert meta["resumed"] == 16 and calls == [8, 6] and meta["count"] == 30


def test_a_build_that_failed_midway_reuses_its_finished_windows_and_gives_the_same_index(tmp_path, tiny_model):
    from encodr.index.shards import Shards, shards_folder
    from encodr.models import load_encoder

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")  # 30 texts: windows of 8, 8, 8, 6
    build(
        [str(corpus)], tmp_path / "clean", BuildOptions(model=str(tiny_model), window=8, backend="torch")
    )  # the encoder below is torch's
    encoder, calls = load_encoder(str(tiny_model)), []
    real = encoder.encode

    def encode(texts, *args, **kwargs):
        calls.append(len(texts))
        if len(calls) == 3:  # the third window: the disk fills up
            raise OSError(28, "No space left on device", "shard")
        return real(texts, *args, **kwargs)

    encoder.encode = encode
    out = tmp_path / "idx"
    with pytest.raises(
        EncodrError,
        match=r"no index was written; 2 encoded piece\(s\) of it, 0\.0 MB, are kept in .*\.idx\.shards, and the same "
        r"command reuses them",
    ):
        build([str(corpus)], out, BuildOptions(model=encoder, window=8))
    assert not out.exists() and Shards.finished(shards_folder(out))[0] == 2
    calls.clear()
    meta = build([str(corpus)], out, BuildOptions(model=encoder, window=8))
    assert meta["resumed"] == 16 and calls == [8, 6]  # only the windows not finished before are encoded
    assert not shards_folder(out).exists()  # the build is complete: nothing left to resume
    with Index.open(tmp_path / "clean") as a, Index.open(out) as b:
        assert np.array_equal(a.vectors_of(list(range(30))), b.vectors_of(list(range(30))))
        assert [r["text"] for r in a.rows(range(30)).values()] == [r["text"] for r in b.rows(range(30)).values()]
    stale = Shards(tmp_path / "s", {"fingerprint": "a"})
    stale.put(0, "d", np.ones((2, 4), dtype=np.float32))
    assert Shards(tmp_path / "s", {"fingerprint": "a"}).get(0, "d").shape == (2, 4)
    assert Shards(tmp_path / "s", {"fingerprint": "b"}).get(0, "d") is None  # another model's shards are never used


def test_on_disk_ivf_lists_find_what_the_in_memory_index_finds(tmp_path, tiny_model, capsys, monkeypatch):
    import faiss

    from encodr.index import ondisk
    from encodr.index.faiss_types import new_faiss, training_sample, write_faiss

    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    memory = new_faiss(
        "ivf", 32, len(x), training_sample(x)
    )  # ivfpq (a Refine wrapper) goes the same way; its PQ training is too slow for CI
    memory.add(x)
    disk = ondisk.add_on_disk(
        faiss.clone_index(new_faiss("ivf", 32, len(x), training_sample(x))), x, tmp_path, write_faiss, block=700
    )  # 5 blocks, merged
    assert disk.ntotal == len(x) and (tmp_path / ondisk.ONDISK_FILE).stat().st_size > 0 and not list(tmp_path.glob("block*"))
    faiss.extract_index_ivf(memory).nprobe = faiss.extract_index_ivf(disk).nprobe = 8
    q = x[:50] + 0.01
    assert np.array_equal(memory.search(q, 10)[1], disk.search(q, 10)[1])  # the same lists, the same hits
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"line {i} about {TEXTS[i % 30]}" for i in range(400)) + "\n")
    meta = build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model), index_type="ivf", on_disk=True, lang="eng"))
    assert meta["on_disk"] is True and meta["count"] == 400
    generation = Index.open(tmp_path / "idx").folder
    assert (generation / ondisk.ONDISK_FILE).is_file()  # found beside vectors.faiss though the folder was renamed into place
    hit = Searcher(tmp_path / "idx").search(["line 7 about " + TEXTS[7]], SearchOptions(k=1, mode="dense"))[0][0]
    assert hit.text == "line 7 about " + TEXTS[7]
    (generation / ondisk.ONDISK_FILE).unlink()
    with pytest.raises(EncodrError, match="is missing lists.ivfdata; rebuild it with encodr index"):
        Index.open(tmp_path / "idx")
    for args, words in [
        (["--on-disk"], "--on-disk keeps an IVF index's lists in a file; pass --index-type ivf or ivfpq"),
        (["--on-disk", "--index-type", "ivf", "--add"], "--add keeps the index's own layout: drop --on-disk"),
    ]:
        code, _, err = run_cli(
            ["index", str(corpus), "--model", str(tiny_model), "--out", str(tmp_path / "x"), *args], capsys, monkeypatch
        )
        assert code == 2 and words in err and not (tmp_path / "x").exists()


def test_an_on_disk_ivfpq_build_streams_its_re_ranking_codes_and_finds_what_the_in_memory_index_finds(tmp_path):
    import faiss

    from encodr.index import ondisk
    from encodr.index.faiss_types import write_faiss

    rng = np.random.default_rng(0)
    x = rng.normal(size=(5000, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    trained = faiss.index_factory(32, "IVF16,PQ4x8,Refine(SQ8)", faiss.METRIC_INNER_PRODUCT)
    trained.train(x[:4000])
    memory = faiss.clone_index(trained)
    memory.add(x)  # the reference: everything in memory
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    built = ondisk.add_on_disk(faiss.clone_index(trained), x[:4000], first, write_faiss, block=900)
    assert built.ntotal == 4000 and faiss.downcast_index(built.index.refine_index).ntotal == 0  # no code was held in memory
    write_faiss(built, first / "vectors.faiss")
    assert not (first / ondisk.REFINE_FILE).exists()  # streamed into vectors.faiss, then removed
    data = (first / "vectors.faiss").read_bytes()
    assert (
        faiss.serialize_index(faiss.read_index(str(first / "vectors.faiss"))).tobytes() == data
    )  # FAISS's own layout, byte for byte
    old = ondisk.read_on_disk(first / "vectors.faiss", faiss.IO_FLAG_MMAP_IFC)
    extended = ondisk.add_on_disk(
        ondisk.extend_trained(first / "vectors.faiss"),
        x[4000:],
        second,
        write_faiss,
        block=600,
        old=old,
        old_file=first / "vectors.faiss",
    )  # --add
    write_faiss(extended, second / "vectors.faiss")
    assert (first / "vectors.faiss").read_bytes() == data  # the old generation is only read
    opened = ondisk.read_on_disk(second / "vectors.faiss", faiss.IO_FLAG_MMAP_IFC)
    read = faiss.read_index(str(second / "vectors.faiss"))
    codes = faiss.vector_to_array(faiss.downcast_index(read.refine_index).codes)
    assert np.array_equal(
        codes.reshape(5000, -1), faiss.downcast_index(memory.refine_index).sa_encode(x)
    )  # the old codes, then the new
    params = faiss.SearchParametersIVF(nprobe=8)
    q = x[::50] + 0.01
    for index in (opened, memory):
        index.k_factor = 4
    expected, got = (
        memory.search(q, 10, params=faiss.IndexRefineSearchParameters(k_factor=4, base_index_params=params)),
        opened.search(q, 10, params=faiss.IndexRefineSearchParameters(k_factor=4, base_index_params=params)),
    )
    assert np.array_equal(expected[1], got[1]) and np.allclose(expected[0], got[0], atol=1e-6)
    with pytest.raises(OSError, match="re-ranking codes of 9 vectors are not at the end of the file"):
        ondisk.RefineCodes(faiss.clone_index(trained), tmp_path / "x.codes", (first / ondisk.ONDISK_FILE, 9))


def test_add_to_an_on_disk_index_finds_what_add_to_the_same_index_in_memory_finds(tmp_path, tiny_model):
    from encodr.index import ondisk

    lines = [f"line {i} about {TEXTS[i % 30]}" for i in range(600)]
    first, more = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("\n".join(lines[:400]) + "\n")
    more.write_text("\n".join(lines[350:]) + "\n")  # 50 already indexed
    for name, on_disk in (("disk", True), ("memory", False)):  # the same sample trains the same quantisers
        build([str(first)], tmp_path / name, BuildOptions(model=str(tiny_model), index_type="ivf", on_disk=on_disk, lang="eng"))
        meta = build([str(more)], tmp_path / name, BuildOptions(model=str(tiny_model), write="add", lang="eng"))
        assert (meta["count"], meta["encoded"], meta["skipped_duplicates"], meta["on_disk"]) == (600, 200, 50, on_disk)
    disk = Index.open(tmp_path / "disk")
    assert (disk.folder / ondisk.ONDISK_FILE).is_file() and not list(disk.folder.glob("block*"))
    disk.close()
    queries = [lines[i] for i in range(0, 600, 30)]
    found = {name: Searcher(tmp_path / name).search(queries, SearchOptions(k=10, mode="dense")) for name in ("disk", "memory")}
    for a, b in zip(found["disk"], found["memory"]):
        assert [h.text for h in a] == [h.text for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-6)
    assert found["disk"][-1][0].text == queries[-1]  # an added line is found


def test_the_training_sample_gives_each_ivf_list_39_vectors_beyond_the_fixed_sample():
    from encodr.index.faiss_types import TRAIN_SAMPLE, ivf_lists, training_sample

    x = np.arange(1_000_000, dtype=np.float32)[:, None]  # d = 1: row i holds i
    assert len(training_sample(x[:50_000])) == 50_000  # all of a small corpus
    assert len(training_sample(x[:200_000])) == TRAIN_SAMPLE
    big = training_sample(x)
    assert len(big) == 39 * ivf_lists(1_000_000) > TRAIN_SAMPLE  # 4·√n lists = 4,000: 156,000 vectors
    assert np.all(np.diff(big[:, 0]) > 0)  # distinct rows, in row order


def test_the_auto_backend_is_chosen_by_the_cpu_recorded_and_kept_by_add(tmp_path, tiny_model, monkeypatch):
    import encodr.models.encoder as encoder_module

    (tmp_path / "a.txt").write_text("\n".join(TEXTS[:10]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(TEXTS[10:20]) + "\n")
    monkeypatch.setattr(encoder_module, "cpu_has_amx", lambda cpuinfo="/proc/cpuinfo": True)
    monkeypatch.setattr(encoder_module, "openvino_available", lambda: True)
    assert build([str(tmp_path / "a.txt")], tmp_path / "ov", BuildOptions(model=str(tiny_model)))["backend"] == "openvino"
    monkeypatch.setattr(encoder_module, "openvino_available", lambda: False)  # AMX without OpenVINO
    assert build([str(tmp_path / "a.txt")], tmp_path / "bf16", BuildOptions(model=str(tiny_model)))["backend"] == "torch-bf16"
    assert (
        build([str(tmp_path / "a.txt")], tmp_path / "named", BuildOptions(model=str(tiny_model), backend="torch"))["backend"]
        == "torch"
    )
    monkeypatch.setattr(encoder_module, "cpu_has_amx", lambda cpuinfo="/proc/cpuinfo": False)
    monkeypatch.setattr(encoder_module, "cpu_has_bf16", lambda cpuinfo="/proc/cpuinfo": False)
    monkeypatch.setattr(encoder_module, "onnx_available", lambda: False)
    assert build([str(tmp_path / "a.txt")], tmp_path / "fp32", BuildOptions(model=str(tiny_model)))["backend"] == "torch"
    monkeypatch.setattr(
        encoder_module, "onnx_available", lambda: True
    )  # without bfloat16, with onnxruntime: its float32, checked against torch
    assert build([str(tmp_path / "a.txt")], tmp_path / "onnx", BuildOptions(model=str(tiny_model)))["backend"] == "onnx"
    assert (
        build([str(tmp_path / "b.txt")], tmp_path / "bf16", BuildOptions(write="add"))["backend"] == "torch-bf16"
    )  # --add keeps the index's
    with Index.open(tmp_path / "bf16") as index:
        assert index.meta.backend == "torch-bf16" and index.meta.count == 20
    searcher = Searcher(tmp_path / "bf16")
    assert searcher.encoder.backend == "onnx" and not searcher.warnings  # queries on auto's ONNX backend here, no warning
    assert searcher.search([TEXTS[12]], SearchOptions(k=1, mode="dense"))[0][0].text == TEXTS[12]


def test_a_shard_the_disk_could_not_hold_leaves_no_partial_file(tmp_path, tiny_model, monkeypatch):
    """A full disk mid-shard: the half-written temporary file goes with the error (it is what
    filled the disk), the whole shards before it stay for a resume and are named with their size."""
    from encodr.index.shards import Shards, shards_folder

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    saved = []
    real = np.save

    def save(handle, array, *args, **kwargs):
        saved.append(len(array))
        if len(saved) == 3:  # the third shard: part of it is written, then the disk is full
            handle.write(b"\x93NUMPY partial")
            raise OSError(28, "No space left on device")
        return real(handle, array, *args, **kwargs)

    monkeypatch.setattr(np, "save", save)
    out = tmp_path / "idx"
    with pytest.raises(EncodrError, match=r"2 encoded piece\(s\) of it, \d+\.\d MB, are kept in"):
        build([str(corpus)], out, BuildOptions(model=str(tiny_model), window=8))
    left = sorted(p.name for p in shards_folder(out).iterdir())
    assert not [name for name in left if name.endswith(".tmp")] and len([n for n in left if n.endswith(".npy")]) == 2
    assert Shards.finished(shards_folder(out))[1] == sum(p.stat().st_size for p in shards_folder(out).glob("*.npy"))
