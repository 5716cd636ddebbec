"""The query adapter: fitted on judged pairs it moves held-out queries toward their relevant
passages when the judgments share a structure, folds are a hash of the query, and a searcher
applies the adapter stored with its index (for its model only)."""

from __future__ import annotations

import numpy as np

from encodr.index.adapter import QueryAdapter, read_adapter, write_adapter
from encodr.methods.judged.adapter import NEGATIVES, Pairs, document_folds, fit, fold_of


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def structured_pairs(n: int, d: int = 32, seed: int = 0) -> Pairs:
    """Queries whose relevant passage is the query moved by one fixed rank-2 map, and random negatives."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(d, 2)), rng.normal(size=(d, 2))
    q = unit(rng.normal(size=(n, d)))
    p = unit(q + 1.5 * (q @ a) @ b.T)
    neg = unit(rng.normal(size=(n, NEGATIVES, d)))
    return Pairs(q, p, neg, np.ones((n, NEGATIVES), bool))


def test_an_untrained_adapter_changes_nothing_and_one_fitted_moves_unseen_queries_toward_their_passages():
    pairs = structured_pairs(400)
    untrained = QueryAdapter(np.ones((32, 4), np.float32), np.zeros((32, 4), np.float32), "fp", {})
    assert np.allclose(untrained.apply(pairs.queries), pairs.queries, atol=1e-6)
    seen, unseen = np.arange(300), np.arange(300, 400)
    u, v = fit(Pairs(*(x[seen] for x in (pairs.queries, pairs.positives, pairs.negatives, pairs.mask))), rank=4, scale=20.0)
    moved = QueryAdapter(u, v, "fp", {}).apply(pairs.queries[unseen])
    before = (pairs.queries[unseen] * pairs.positives[unseen]).sum(-1).mean()
    after = (moved * pairs.positives[unseen]).sum(-1).mean()
    assert after > before + 0.02  # the held-out queries come closer to their passages (cosine)
    assert np.allclose(np.linalg.norm(moved, axis=1), 1, atol=1e-5)


def test_folds_are_a_stable_hash_of_the_query_and_queries_sharing_a_document_share_a_fold():
    folds = [fold_of(f"query {i}", 5) for i in range(200)]
    assert folds == [fold_of(f"query {i}", 5) for i in range(200)] and set(folds) == set(range(5))
    queries = [f"query {i}" for i in range(200)]
    relevant = [{f"d{i // 3}"} for i in range(199)] + [{"d0", "d60"}]  # the last joins d0's group and d60's
    grouped = document_folds(queries, relevant, 5)
    for i in range(200):
        for j in range(200):
            if relevant[i] & relevant[j]:
                assert grouped[i] == grouped[j]
    assert len(set(grouped)) == 5


def test_a_searcher_applies_the_adapter_stored_for_its_model(tmp_path, tiny_model):
    from encodr.core import commands
    from encodr.core.requests import IndexRequest
    from encodr.index import Searcher
    from encodr.index.options import DENSE, SearchOptions

    corpus = tmp_path / "c.txt"
    corpus.write_text("the pump pressure\nvalve grease\nboiler water\nsteam turbine blades\n")
    commands.index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(tmp_path / "idx"), lang="eng"))
    plain = Searcher(tmp_path / "idx")
    assert plain.adapter is None
    order = [h.text for h in plain.query(["pump pressure"], SearchOptions(mode=DENSE, k=4))[1][0]]
    d = plain.index.meta.dimension
    eye = np.eye(d, dtype=np.float32)
    write_adapter(tmp_path / "idx", QueryAdapter(eye, -2 * eye, "another model", {}))  # q' = -q, for other weights
    assert read_adapter(tmp_path / "idx", plain.fingerprint) is None
    assert Searcher(tmp_path / "idx").adapter is None
    write_adapter(tmp_path / "idx", QueryAdapter(eye, -2 * eye, plain.fingerprint, {"kept": True}))  # for this model
    adapted = Searcher(tmp_path / "idx")
    assert adapted.adapter is not None and adapted.adapter.report == {"kept": True}
    reversed_order = [h.text for h in adapted.query(["pump pressure"], SearchOptions(mode=DENSE, k=4))[1][0]]
    assert reversed_order == order[::-1]  # the map reverses every query: the dense ranking turns over


def test_an_adapter_that_cannot_be_written_is_one_line_and_leaves_the_index_as_it_was(tmp_path, monkeypatch):
    import errno

    import pytest

    from encodr.errors import EncodrError

    root = tmp_path / "idx"
    root.mkdir()
    eye = np.eye(4, dtype=np.float32)
    write_adapter(root, QueryAdapter(eye, 0 * eye, "fp", {}))

    def full(file, **arrays):  # the disk fills while the file is written (runs without root)
        file.write(b"PK")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full)
    with pytest.raises(EncodrError, match="query_adapter.npz") as raised:
        write_adapter(root, QueryAdapter(eye, -2 * eye, "fp", {}))
    assert "\n" not in str(raised.value)
    monkeypatch.undo()
    kept = read_adapter(root, "fp")
    assert kept is not None and np.allclose(kept.v, 0)  # the adapter stored before is whole and unchanged
    assert sorted(p.name for p in root.iterdir()) == ["query_adapter.npz"]  # no temporary file left behind
