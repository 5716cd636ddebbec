"""encodr.serve: the HTTP API over the core — OpenAI-compatible embeddings, search, score —
and its refusals (bad JSON, oversized input, unknown names, keys, paths outside the served set)."""

from __future__ import annotations

import base64
import threading

import numpy as np
import pytest

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from encodr.core import commands  # noqa: E402
from encodr.core.requests import IndexRequest  # noqa: E402
from encodr.serve import Limits, create_app, load  # noqa: E402

TEXTS = [
    "the cat sat on the mat",
    "a dog barked at the mailman",
    "stock prices fell sharply today",
    "the kitten slept on the rug",
    "rain is expected tomorrow",
    "the market rallied after the news",
]


@pytest.fixture
def index_dir(tmp_path, tiny_model):
    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "docs-index"
    commands.index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(out), lang="eng"))
    return out


@pytest.fixture
def served(tiny_model, index_dir):
    s = load([str(tiny_model)], [str(index_dir)], Limits(max_texts=8, max_chars=200))
    yield s
    s.close()


@pytest.fixture
def client(served):
    return TestClient(create_app(served))


def error_of(response, status, param):
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["param"] == param and body["code"] == status and body["message"]
    return body["message"]


def test_an_index_served_alone_serves_its_custom_model_by_its_folders_name_too(index_dir, tiny_model):
    """``serve --index IDX`` of an index built with a model folder answered only to the folder's
    full path; ``minilm``, which the help named, is not served then (the help now says so)."""
    served = load([], [str(index_dir)], Limits())
    try:
        client = TestClient(create_app(served))
        named = client.post("/v1/embeddings", json={"model": tiny_model.name, "input": ["pump"]})
        assert named.status_code == 200, named.text
        assert [m["id"] for m in client.get("/v1/models").json()["data"]] == [str(tiny_model)]
        error_of(client.post("/v1/embeddings", json={"model": "minilm", "input": ["pump"]}), 404, "model")
    finally:
        served.close()


def test_embeddings_equal_sentence_transformers(client, tiny_model):
    from encodr.models import load_encoder

    expected = load_encoder(str(tiny_model)).st.encode(TEXTS[:3], normalize_embeddings=True)
    got = client.post("/v1/embeddings", json={"model": str(tiny_model), "input": TEXTS[:3]}).json()
    assert [d["index"] for d in got["data"]] == [0, 1, 2] and got["object"] == "list" and got["usage"]["prompt_tokens"] > 0
    assert np.allclose(np.array([d["embedding"] for d in got["data"]]), expected, atol=1e-5)
    one = client.post("/v1/embeddings", json={"model": str(tiny_model), "input": TEXTS[0], "encoding_format": "base64"}).json()
    vector = np.frombuffer(base64.b64decode(one["data"][0]["embedding"]), dtype="<f4")
    assert np.allclose(vector, expected[0], atol=1e-5)
    short = client.post("/v1/embeddings", json={"model": str(tiny_model), "input": TEXTS[:3], "dimensions": 8}).json()
    st_short = load_encoder(str(tiny_model)).st.encode(
        TEXTS[:3], normalize_embeddings=True, truncate_dim=8
    )  # sentence-transformers' Matryoshka truncation
    assert np.allclose(np.array([d["embedding"] for d in short["data"]]), st_short, atol=1e-5)


def test_search_has_one_shape_for_one_query_and_many(client, index_dir):
    one = client.post("/v1/search", json={"index": index_dir.name, "query": "a cat on a mat", "k": 2}).json()
    many = client.post("/v1/search", json={"index": index_dir.name, "query": ["a cat on a mat", "shares dropped"], "k": 2}).json()
    assert [r["query"] for r in one["results"]] == ["a cat on a mat"]
    assert [r["query"] for r in many["results"]] == ["a cat on a mat", "shares dropped"]
    ids = lambda r: [h["id"] for h in r["results"][0]["hits"]]  # noqa: E731 (scores differ in the last float bits: padding)
    assert ids(one) == ids(many) and len(ids(one)) == 2
    assert one["results"][0]["lang"] == "eng"
    assert "timings" not in one
    timed = client.post("/v1/search", json={"index": index_dir.name, "query": "a cat on a mat", "k": 2, "timings": True}).json()
    assert {"encode", "dense", "hits", "highlights", "total"} <= set(timed["timings"])  # each phase's milliseconds, on request
    for hit in one["results"][0]["hits"]:  # the query's words in each hit, as character offsets into its text
        marked = {hit["text"][a:b].lower() for a, b in hit["highlights"]}
        assert marked <= {"a", "cat", "on", "mat"} and all(0 <= a < b <= len(hit["text"]) for a, b in hit["highlights"])
    assert any(hit["highlights"] for hit in one["results"][0]["hits"])
    tuned = client.post(
        "/v1/search", json={"index": index_dir.name, "query": "a cat on a mat", "k": 2, "nprobe": 4, "ef_search": 16}
    ).json()
    assert ids(tuned) == ids(one)  # every search option of the CLI is taken (a flat index ignores these two)


def test_score_and_listings(client, tiny_model, index_dir):
    scored = client.post("/v1/score", json={"model": str(tiny_model), "text_a": "a cat", "text_b": "a kitten"}).json()
    assert scored["encoder"] == "bi-encoder" and -1 <= scored["score"] <= 1
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == [str(tiny_model)]
    (row,) = client.get("/v1/indexes").json()
    assert row["name"] == index_dir.name and row["count"] == len(TEXTS)
    assert client.get("/v1/runs").json() == []
    assert client.get("/health").json()["status"] == "ok"


def test_bad_bodies_are_refused_naming_the_field(client, tiny_model, index_dir):
    r = client.post("/v1/embeddings", content=b"{not json", headers={"content-type": "application/json"})
    assert "not valid JSON" in error_of(r, 400, "body")
    error_of(client.post("/v1/embeddings", json={"model": str(tiny_model)}), 422, "input")
    error_of(client.post("/v1/search", json={"index": index_dir.name, "query": "x", "k": 0}), 422, "k")
    error_of(client.post("/v1/search", json={"index": index_dir.name, "query": "x", "colour": "red"}), 422, "colour")
    error_of(client.post("/v1/search", json={"index": index_dir.name, "query": "  "}), 422, "query")
    error_of(
        client.post("/v1/embeddings", json={"model": str(tiny_model), "input": "x", "encoding_format": "int8"}),
        422,
        "encoding_format",
    )
    error_of(client.post("/v1/embeddings", json={"model": str(tiny_model), "input": "x", "dimensions": 4096}), 422, "dimensions")


def test_errors_are_in_the_apis_words_on_every_route(client, tiny_model, index_dir):
    """Field names, never the CLI's flags; the same shape for a bad value, a missing field and an unknown route."""
    wrong = client.post("/v1/search", json={"index": index_dir.name, "query": "x", "mode": "hybird"})
    assert wrong.status_code == 422 and wrong.json() == {
        "error": {
            "message": "mode: 'hybird' is not one of dense, keyword, hybrid",
            "type": "invalid_request_error",
            "param": "mode",
            "code": 422,
        }
    }
    assert (
        error_of(client.post("/v1/search", json={"index": index_dir.name, "query": "x", "k": 0}), 422, "k")
        == "k: 0 must be 1 or more"
    )
    assert error_of(client.post("/v1/embeddings", json={"input": "x"}), 422, "model") == "model is required"
    assert (
        error_of(
            client.post("/v1/search", json={"index": index_dir.name, "query": "x", "keyword_stats": "both"}), 422, "keyword_stats"
        )
        == "keyword_stats: 'both' is not one of shard, global"
    )
    assert error_of(
        client.post("/v1/search", json={"index": index_dir.name, "query": "x", "lang": "English"}), 422, "lang"
    ).startswith("lang: 'English' is not an ISO 639-3")
    missing = client.get("/v1/nowhere")
    assert (
        missing.status_code == 404
        and missing.json()["error"]["type"] == "not_found_error"
        and missing.json()["error"]["param"] == "path"
    )
    for route, body in (
        ("/v1/search", {"index": index_dir.name, "query": "x", "k": 0}),
        ("/v1/search", {"index": index_dir.name, "query": "x", "mode": "x"}),
    ):
        assert "--" not in client.post(route, json=body).json()["error"]["message"]


def test_oversized_input_is_refused_naming_the_limit(client, tiny_model):
    message = error_of(client.post("/v1/embeddings", json={"model": str(tiny_model), "input": ["a"] * 9}), 413, "input")
    assert "limit is 8" in message
    message = error_of(client.post("/v1/embeddings", json={"model": str(tiny_model), "input": "a" * 201}), 413, "input")
    assert "limit is 200" in message


def test_unknown_names_and_paths_outside_the_served_set_get_404_with_the_served_ones(client, tiny_model, index_dir, tmp_path):
    message = error_of(client.post("/v1/embeddings", json={"model": "minilm", "input": "x"}), 404, "model")
    assert str(tiny_model) in message
    message = error_of(client.post("/v1/search", json={"index": "nothing", "query": "x"}), 404, "index")
    assert index_dir.name in message
    for outside in (str(index_dir), str(tmp_path), "/etc", "../docs-index"):  # even the served index's own path: names only
        error_of(client.post("/v1/search", json={"index": outside, "query": "x"}), 404, "index")
    error_of(client.post("/v1/embeddings", json={"model": "/etc/passwd", "input": "x"}), 404, "model")


def test_api_key_is_required_when_set(served, tiny_model):
    served.api_key = "s3cret"
    client = TestClient(create_app(served))
    body = {"model": str(tiny_model), "input": "x"}
    error_of(client.post("/v1/embeddings", json=body), 401, "authorization")
    error_of(client.post("/v1/embeddings", json=body, headers={"Authorization": "Bearer wrong"}), 401, "authorization")
    assert client.post("/v1/embeddings", json=body, headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_concurrent_requests_share_forward_passes_and_get_their_own_vectors(served, tiny_model):
    from encodr.models import load_encoder

    encoder = load_encoder(str(tiny_model))
    _, batcher = served.models[str(tiny_model)]
    barrier, results, texts = threading.Barrier(12), {}, [f"text number {i} about cats" for i in range(12)]

    def one(i):
        barrier.wait()
        results[i] = batcher.submit([texts[i]]).result()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert batcher.passes < 12  # some requests shared a pass
    expected = encoder.encode(texts)
    assert all(np.allclose(results[i][0], expected[i], atol=1e-5) for i in range(12))


def test_rerank_answers_in_cohere_shape_and_search_reranks(tmp_path, tiny_model, tiny_cross, index_dir):
    from sentence_transformers import CrossEncoder

    served = load([str(tiny_model), str(tiny_cross)], [str(index_dir)], Limits())
    try:
        client = TestClient(create_app(served))
        body = {"model": str(tiny_cross), "query": "a cat", "documents": TEXTS[:4], "top_n": 3, "return_documents": True}
        answer = client.post("/v1/rerank", json=body)
        assert answer.status_code == 200, answer.text
        results = answer.json()["results"]
        expected = CrossEncoder(str(tiny_cross), device="cpu").predict([("a cat", t) for t in TEXTS[:4]])
        best = np.argsort(-expected, kind="stable")[:3]
        assert [r["index"] for r in results] == list(best)
        assert [r["relevance_score"] for r in results] == pytest.approx([float(expected[i]) for i in best], abs=1e-5)
        assert [r["document"] for r in results] == [TEXTS[i] for i in best]
        assert (
            "document"
            not in client.post(
                "/v1/rerank", json={**body, "return_documents": False, "documents": None, "texts": TEXTS[:2]}
            ).json()["results"][0]
        )
        error_of(client.post("/v1/rerank", json={**body, "model": str(tiny_model)}), 422, "model")  # a bi-encoder cannot re-rank
        error_of(client.post("/v1/rerank", json={**body, "documents": []}), 422, "documents")
        hits = client.post(
            "/v1/search", json={"query": "a cat", "index": index_dir.name, "k": 3, "rerank": str(tiny_cross), "rerank_depth": 6}
        )
        assert hits.status_code == 200, hits.text
        scores = [h["score"] for h in hits.json()["results"][0]["hits"]]
        all_scores = CrossEncoder(str(tiny_cross), device="cpu").predict([("a cat", t) for t in TEXTS])
        assert scores == pytest.approx(
            sorted(map(float, all_scores), reverse=True)[:3], abs=1e-5
        )  # depth 6 = the whole index, re-scored
        error_of(client.post("/v1/search", json={"query": "a cat", "index": index_dir.name, "rerank": "nothing"}), 404, "rerank")
        error_of(
            client.post(
                "/v1/search", json={"query": "a cat", "index": index_dir.name, "rerank": str(tiny_cross), "rerank_weight": 2}
            ),
            422,
            "rerank_weight",
        )
        kept = client.post(
            "/v1/search", json={"query": "a cat", "index": index_dir.name, "k": 3, "rerank": str(tiny_cross), "rerank_weight": 0}
        )
        plain = client.post("/v1/search", json={"query": "a cat", "index": index_dir.name, "k": 3})
        assert [h["text"] for h in kept.json()["results"][0]["hits"]] == [
            h["text"] for h in plain.json()["results"][0]["hits"]
        ]  # w = 0: first-stage order
    finally:
        served.close()


def test_backend_serves_onnx_with_the_vectors_of_torch_and_unknown_ones_are_refused(tiny_model):
    from encodr.errors import EncodrError
    from encodr.models import load_encoder

    served = load([str(tiny_model)], [], Limits(), backend="onnx")
    try:
        scorer, batcher = served.models[str(tiny_model)]
        assert scorer.backend == "onnx"
        vectors = (
            TestClient(create_app(served)).post("/v1/embeddings", json={"model": str(tiny_model), "input": TEXTS}).json()["data"]
        )
        expected = load_encoder(str(tiny_model), device="cpu").encode(TEXTS)
        np.testing.assert_allclose([row["embedding"] for row in vectors], expected, atol=1e-5)
    finally:
        served.close()
    with pytest.raises(EncodrError, match="backend: 'tensorrt' is not one of"):
        load([str(tiny_model)], [], Limits(), backend="tensorrt")


def test_a_page_elsewhere_cannot_read_the_indexes(served):
    """DNS rebinding and cross-site requests: on 127.0.0.1 without a key, a request whose Host is
    another name is refused, as is one from another site's page; the loopback names, the server's
    own origin and the origins and hosts the user allows are answered."""
    from encodr.serve import served_hosts

    body = {"query": "cat", "index": "docs-index"}
    app = create_app(served, served_hosts("127.0.0.1"))
    local = TestClient(app, base_url="http://127.0.0.1:8000")
    assert local.post("/v1/search", json=body).status_code == 200
    assert TestClient(app, base_url="http://localhost:8000").post("/v1/search", json=body).status_code == 200
    rebound = TestClient(app, base_url="http://evil.example:8000").post("/v1/search", json=body)
    assert rebound.status_code == 400 and "cat" not in rebound.text
    cross = local.post("/v1/search", json=body, headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403 and cross.json()["error"]["param"] == "Origin"
    assert local.post("/v1/search", json=body, headers={"Origin": "http://127.0.0.1:8000"}).status_code == 200  # its own page
    allowed = TestClient(
        create_app(served, served_hosts("127.0.0.1", ["search.lan"]), ["http://app.lan"]), base_url="http://search.lan"
    )
    answer = allowed.post("/v1/search", json=body, headers={"Origin": "http://app.lan"})
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "http://app.lan"


def test_an_index_built_in_torch_is_served_on_the_backend_its_searches_take(tmp_path, tiny_model):
    """A float32 torch index's queries run where ``encodr search`` runs them (ONNX float32 on a
    CPU, :func:`encodr.index.search.query_encoder`), not on torch because the build did."""
    from encodr.index import Searcher
    from encodr.models.encoder import AUTO_BACKEND, choose_backend

    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "torch-index"
    commands.index(IndexRequest(corpus=[str(corpus)], model=str(tiny_model), out=str(out), lang="eng", backend="torch"))
    served = load([], [str(out)], Limits())
    try:
        fast = choose_backend(AUTO_BACKEND, "cpu")  # onnx, or openvino on an AMX CPU
        assert served.searchers["torch-index"].encoder.backend == Searcher(out).encoder.backend == fast != "torch"
    finally:
        served.close()
