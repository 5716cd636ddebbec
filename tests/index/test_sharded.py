"""A sharded index (``encodr index --shards N``): the same dense hits as one index, writes
that reach the shard owning the document, and refusals of bad shard counts."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from encodr.errors import EncodrError
from encodr.index import BuildOptions, Searcher, build
from encodr.index.delete import delete
from encodr.index.manifest import read_manifest, route, shard_folder
from encodr.index.options import SearchOptions
from encodr.index.reader import IndexReader
from encodr.index.scatter import merged
from tests.conftest import run_cli

SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "data" / "retrieval" / "scifact"


def shard_documents(root: Path, shard: int) -> set[str]:
    with IndexReader.open(shard_folder(root, shard)) as reader:
        return reader.document_ids()


@pytest.fixture
def scifact_sample(tmp_path) -> tuple[Path, list[str]]:
    """The first 150 SciFact abstracts and 12 of its train claims (a shared retrieval set)."""
    if not SCIFACT.is_dir():
        pytest.skip("the shared SciFact set is not here")
    corpus = tmp_path / "corpus.jsonl"
    with open(SCIFACT / "corpus.jsonl") as f:
        corpus.write_text("".join(next(f) for _ in range(150)))
    with open(SCIFACT / "queries.jsonl") as f:
        queries = [json.loads(next(f))["text"] for _ in range(12)]
    return corpus, queries


@pytest.fixture
def ray_local():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.mark.integration
def test_three_shards_built_on_ray_give_one_index_dense_top_10(ray_local, scifact_sample, tmp_path):
    corpus, queries = scifact_sample  # MiniLM: the tiny model's cosines tie at float precision
    corpus.write_text("".join(corpus.read_text().splitlines(keepends=True)[:60]))  # 60 abstracts: 20 a shard
    options = dict(model="minilm", backend="torch", lang="eng", index_type="flat")
    build([str(corpus)], tmp_path / "one", BuildOptions(**options))
    build([str(corpus)], tmp_path / "sharded", BuildOptions(**options, shards=3, engine="ray"))
    manifest = read_manifest(tmp_path / "sharded")
    assert manifest["shards"] == 3 and set(manifest["generations"]) == {"shard-000", "shard-001", "shard-002"}
    held = [shard_documents(tmp_path / "sharded", i) for i in range(3)]
    assert all(held) and sum(map(len, held)) == 60 and not (held[0] & held[1] or held[1] & held[2] or held[0] & held[2])
    assert all(route(doc, 3) == i for i in range(3) for doc in held[i])
    dense = SearchOptions(k=10, mode="dense", passages=True)
    one = Searcher(tmp_path / "one").search(queries, dense)
    sharded = Searcher(tmp_path / "sharded").search(queries, dense)
    for a, b in zip(one, sharded):
        assert [(h.ext_id, h.start) for h in a] == [(h.ext_id, h.start) for h in b]
        assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-5)
    documents = SearchOptions(k=10, mode="dense")  # each document once, at its best passage
    assert [[h.ext_id for h in hits] for hits in Searcher(tmp_path / "one").search(queries, documents)] == [
        [h.ext_id for h in hits] for hits in Searcher(tmp_path / "sharded").search(queries, documents)
    ]
    records = [json.loads(line) for line in corpus.read_text().splitlines()]  # a sync after an edit and a delete
    edited, removed = records[0]["_id"], records[1]["_id"]
    records[0]["text"] = "Harbour cranes lift containers onto ships."
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records[:1] + records[2:]))
    before = read_manifest(tmp_path / "sharded")["generations"]
    result = build([str(corpus)], tmp_path / "sharded", BuildOptions(write="sync"))
    assert (result["updated"], result["removed"], result["documents"]) == (1, 1, 59)
    after = read_manifest(tmp_path / "sharded")["generations"]
    touched = {f"shard-{route(edited, 3):03d}", f"shard-{route(removed, 3):03d}"}
    assert {name for name in after if after[name] != before[name]} == touched
    assert edited in shard_documents(tmp_path / "sharded", route(edited, 3)) and not any(
        removed in shard_documents(tmp_path / "sharded", i) for i in range(3)
    )


def test_global_keyword_statistics_give_one_index_keyword_ranking(scifact_sample, tiny_model, tmp_path):
    corpus, queries = scifact_sample  # BM25 needs no real model
    queries = [*queries, '"vitamin D" deficiency', "the of in"]  # a phrase; words in more than half the texts (idf floor)
    options = dict(model=str(tiny_model), lang="eng")
    build([str(corpus)], tmp_path / "one", BuildOptions(**options))
    build([str(corpus)], tmp_path / "sharded", BuildOptions(**options, shards=3))
    one = Searcher(tmp_path / "one").search(queries, SearchOptions(k=10, mode="keyword", passages=True))
    shard_local, exact = (
        Searcher(tmp_path / "sharded").search(queries, SearchOptions(k=10, mode="keyword", passages=True, keyword_stats=s))
        for s in ("shard", "global")
    )
    ranked = lambda hits: [[(h.ext_id, h.start) for h in row] for row in hits]  # noqa: E731
    assert ranked(exact) == ranked(one)
    for a, b in zip(one, exact):
        assert np.allclose([h.score for h in a], [h.score for h in b], rtol=1e-6)
    assert ranked(shard_local) != ranked(one)  # each shard's own statistics rank otherwise
    filtered = SearchOptions(k=5, mode="keyword", passages=True, keyword_stats="global", hit_lang=("eng",))
    assert ranked(Searcher(tmp_path / "sharded").search(queries, filtered)) == ranked(
        Searcher(tmp_path / "one").search(queries, filtered)
    )


def test_keyword_statistics_add_up_and_one_index_scores_by_its_own_exactly(scifact_sample, tiny_model, tmp_path):
    corpus, queries = scifact_sample
    build([str(corpus)], tmp_path / "one", BuildOptions(model=str(tiny_model), lang="eng"))
    with IndexReader.open(tmp_path / "one") as reader:
        stats = reader.keyword_stats(queries, ["eng"] * len(queries))
        assert stats.rows == len(reader) and stats.tokens > stats.rows
        doubled = stats + stats
        assert (doubled.rows, doubled.tokens) == (2 * stats.rows, 2 * stats.tokens)
        assert doubled.hits[0] == {p: 2 * n for p, n in stats.hits[0].items()}
        fts5 = reader.keyword_search(queries, 10, None, ["eng"] * len(queries))
        ours = reader.keyword_search(queries, 10, None, ["eng"] * len(queries), stats)
    assert (fts5[1] == ours[1]).all() and np.array_equal(fts5[0], ours[0])  # FTS5's bm25(), recomputed bit for bit


@pytest.fixture
def notes(tmp_path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    topics = ["pump pressure", "valve grease", "river levels", "bridge paint", "tram timetable", "bread recipe"]
    for i, topic in enumerate(topics):
        (folder / f"n{i}.md").write_text(f"# Note {i}\nA note about {topic}.\n")
    return folder


def test_sync_after_an_edit_and_a_delete_reaches_the_owning_shard(notes, tiny_model, tmp_path):
    out = tmp_path / "idx"
    build([str(notes)], out, BuildOptions(model=str(tiny_model), lang="eng", shards=3))
    before = {i: (shard_folder(out, i) / "current").readlink() for i in range(3)}
    docs = {doc: route(doc, 3) for i in range(3) for doc in shard_documents(out, i)}
    edited, removed = sorted(docs)[0], sorted(docs)[-1]
    (notes / Path(edited).name).write_text("# Note\nA note about harbour cranes now.\n")
    (notes / Path(removed).name).unlink()
    result = build([str(notes)], out, BuildOptions(write="sync"))
    assert result["updated"] == 1 and result["removed"] == 1 and result["documents"] == 5
    touched = {docs[edited], docs[removed]}
    after = {i: (shard_folder(out, i) / "current").readlink() for i in range(3)}
    assert {i for i in range(3) if after[i] != before[i]} == touched  # an untouched shard keeps its generation
    assert removed not in shard_documents(out, docs[removed])
    hits = Searcher(out).search(["harbour cranes"], SearchOptions(k=1, mode="keyword"))[0]
    assert hits[0].ext_id == edited and "harbour" in hits[0].text
    assert read_manifest(out)["generations"] == {f"shard-{i:03d}": after[i].name for i in range(3)}


def test_delete_goes_to_the_shard_the_id_routes_to(notes, tiny_model, tmp_path):
    out = tmp_path / "idx"
    build([str(notes)], out, BuildOptions(model=str(tiny_model), lang="eng", shards=2))
    doc = sorted(shard_documents(out, 0) | shard_documents(out, 1))[2]
    result = delete(out, [doc, "no-such-doc"])
    assert result["removed"] == 1 and result["not_found"] == ["no-such-doc"]
    assert doc not in shard_documents(out, route(doc, 2))
    assert len(Searcher(out).index) == 5


def one_error(err: str) -> str:
    """The one error line of a refused command (its progress bar may come before it)."""
    errors = [line for line in err.splitlines() if line.startswith("encodr: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_bad_shard_counts_are_one_line_each(notes, tiny_model, tmp_path, capsys, monkeypatch):
    base = ["index", str(notes), "--model", str(tiny_model), "--lang", "eng"]
    code, _, err = run_cli([*base, "--out", str(tmp_path / "a"), "--shards", "0"], capsys, monkeypatch)
    assert code == 2 and "shards" in one_error(err)
    code, _, err = run_cli([*base, "--out", str(tmp_path / "b"), "--shards", "9"], capsys, monkeypatch)
    assert code == 2 and "more shards than documents (6)" in one_error(err)
    assert not (tmp_path / "b").exists()  # nothing half-written
    build([str(notes)], tmp_path / "c", BuildOptions(model=str(tiny_model), lang="eng", shards=2))
    code, _, err = run_cli([*base, "--out", str(tmp_path / "c"), "--add", "--shards", "3"], capsys, monkeypatch)
    assert code == 2 and "has 2 shards" in one_error(err)


def test_a_sharded_index_by_a_newer_encodr_is_refused(notes, tiny_model, tmp_path, capsys, monkeypatch):
    out = tmp_path / "idx"
    build([str(notes)], out, BuildOptions(model=str(tiny_model), lang="eng", shards=2))
    manifest = json.loads((out / "sharded.json").read_text())
    (out / "sharded.json").write_text(json.dumps({**manifest, "format": 99}))
    with pytest.raises(EncodrError, match="newer encodr"):
        Searcher(out)
    code, _, err = run_cli(["search", "pump", "--index", str(out)], capsys, monkeypatch)
    assert code == 2 and "newer encodr" in one_error(err)


def test_a_failed_shard_write_names_the_shard_and_keeps_the_others(notes, tiny_model, tmp_path, monkeypatch):
    out = tmp_path / "idx"
    build([str(notes)], out, BuildOptions(model=str(tiny_model), lang="eng", shards=2))
    before = read_manifest(out)["generations"]
    (notes / "n9.md").write_text("# Note 9\nA note about kites.\n")
    build_module = importlib.import_module("encodr.index.build")  # the module, not the function the package exports
    real = build_module._build_locked

    def failing(spec, progress):
        if spec.options.shard == (1, 2):
            raise EncodrError("disk full (simulated)")
        return real(spec, progress)

    monkeypatch.setattr(build_module, "_build_locked", failing)
    with pytest.raises(EncodrError, match=r"shard 1 \(.*shard-001\): disk full"):
        build([str(notes)], out, BuildOptions(write="add"))
    after = read_manifest(out)["generations"]
    assert after["shard-001"] == before["shard-001"]  # the failed shard at its last good generation
    assert after["shard-000"] == (shard_folder(out, 0) / "current").readlink().name


def test_merging_keeps_the_best_k_over_shards_with_global_ids():
    a = (np.array([[0.9, 0.5]], dtype=np.float32), np.array([[4, 7]]))
    b = (np.array([[0.7, -np.inf]], dtype=np.float32), np.array([[2, -1]]))
    scores, ids = merged([a, b], [0, 1], 2, 3)
    assert ids.tolist() == [[8, 5, 14]] and np.allclose(scores, [[0.9, 0.7, 0.5]])


class Unanswering:
    """A shard whose replica died: every call fails."""

    def __getattr__(self, name):
        def fail(*args):
            raise ConnectionError("replica died")

        return fail


def test_a_shard_that_does_not_answer_makes_the_answer_partial_and_says_which(notes, tiny_model, tmp_path):
    from encodr.core import dispatch
    from encodr.core.requests import SearchRequest
    from encodr.index.manifest import states_on_disk
    from encodr.index.scatter import LocalShard, ShardedIndex

    out = tmp_path / "idx"
    build([str(notes)], out, BuildOptions(model=str(tiny_model), lang="eng", shards=2))
    index = ShardedIndex(out, [LocalShard(shard_folder(out, 0)), Unanswering()], states=states_on_disk(out))
    searcher = Searcher(out, index=index)
    result = dispatch.run(SearchRequest(query=["a note"], index=str(out), k=6, mode="hybrid"), "cli", searcher=searcher)
    assert result.partial and result.missing_shards == [1]
    assert {h.ext_id for h in result.results[0].hits} <= shard_documents(out, 0)
    assert any("partial answer: shard 1 of 2" in line for line in result.hints)
    whole = dispatch.run(SearchRequest(query=["a note"], index=str(out), k=6, mode="hybrid"), "cli")
    assert not whole.partial and len(whole.results[0].hits) == 6


def test_serving_on_ray_refuses_what_it_cannot_serve(notes, tiny_model, tmp_path, capsys, monkeypatch):
    build([str(notes)], tmp_path / "one", BuildOptions(model=str(tiny_model), lang="eng"))
    build([str(notes)], tmp_path / "sharded", BuildOptions(model=str(tiny_model), lang="eng", shards=2))
    serve = ["serve", "--engine", "ray", "--port", "8799"]
    code, _, err = run_cli([*serve, "--index", str(tmp_path / "one")], capsys, monkeypatch)
    assert code == 2 and "is not one" in one_error(err)
    code, _, err = run_cli([*serve, "--index", str(tmp_path / "sharded"), "--writable", "--api-key", "k"], capsys, monkeypatch)
    assert code == 2 and "drop --writable" in one_error(err)
    code, _, err = run_cli([*serve, "--index", str(tmp_path / "sharded"), "--address", "127.0.0.1:1"], capsys, monkeypatch)
    assert code == 2 and "--address 127.0.0.1:1" in one_error(err)


def test_the_cli_lists_shows_searches_and_judges_a_sharded_index(notes, tiny_model, tmp_path, capsys, monkeypatch):
    out = tmp_path / "idx"
    build([str(notes)], out, BuildOptions(model=str(tiny_model), lang="eng", shards=2))
    code, listed, err = run_cli(["indexes", "--path", str(tmp_path), "--json"], capsys, monkeypatch)
    assert code == 0, err
    row = next(r for r in json.loads(listed) if r["name"] == "idx")
    assert row["documents"] == 6 and row["shards"] == 2
    code, shown, err = run_cli(["show", str(notes / "n3.md"), "--index", str(out)], capsys, monkeypatch)
    assert code == 0 and "bridge paint" in shown, err
    code, found, err = run_cli(
        ["search", "bridge paint", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch
    )
    assert code == 0 and json.loads(found)["results"][0]["hits"][0]["path"].endswith("n3.md"), err
    doc = json.loads(found)["results"][0]["hits"][0]["ext_id"]
    other = next(d for d in shard_documents(out, 0) | shard_documents(out, 1) if d != doc)
    code, _, err = run_cli(["judge", "bridge paint", other, "--grade", "2", "--index", str(out)], capsys, monkeypatch)
    assert code == 0, err
    assert (out / "judgments.db").exists()  # kept with the sharded index, as one index keeps them
    code, found, err = run_cli(
        ["search", "bridge paint", "--index", str(out), "--mode", "keyword", "--json"], capsys, monkeypatch
    )
    assert code == 0 and json.loads(found)["results"][0]["hits"][0]["ext_id"] == other, err  # the judged document first
    code, listed, err = run_cli(["judgments", "--index", str(out), "--json"], capsys, monkeypatch)
    assert code == 0 and '"current"' in listed, err
    code, _, err = run_cli(["judge", "bridge paint", "no-such-doc", "--grade", "2", "--index", str(out)], capsys, monkeypatch)
    assert code == 2 and "has no document 'no-such-doc'" in one_error(err)
