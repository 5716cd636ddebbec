"""A new index of source code in two stages: searchable first with a static model distilled from
its model (opened without torch), then with the model itself; a search says which stage answered."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from tests.conftest import run_cli

stages = importlib.import_module("encodr.index.stages")

CODE = '''
def follow_redirects(response, limit):
    """Follow a response's redirects up to limit hops."""
    while response.is_redirect and limit:
        response = response.next()
        limit -= 1
    return response


class ConnectionPool:
    """Keep open connections to each host and hand one out per request."""

    def acquire(self, host):
        return self.free[host].pop()
'''


@pytest.fixture
def repository(tmp_path, monkeypatch):
    """A folder of Python files: a code folder the fast stage takes at any size (threshold 0)."""
    monkeypatch.setattr(stages, "FAST_STAGE_MIN_BYTES", 0)
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "client.py").write_text(CODE)
    (folder / "README.md").write_text("# repo\n\nA client.\n")
    return folder


def test_a_static_model_opens_from_its_table_with_the_same_vectors_and_fingerprint(tmp_path):
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer

    from encodr.models import load_encoder, open_encoder, resolve
    from encodr.models.table import TableEncoder

    torch.manual_seed(0)
    tokenizer = Tokenizer.from_file(str(resolve("minilm").path / "tokenizer.json"))
    SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_dim=16)]).save(str(tmp_path / "static"))
    table, full = open_encoder(str(tmp_path / "static")), load_encoder(str(tmp_path / "static"))
    texts = ["def follow_redirects(response):", "", "x " * 400]
    assert isinstance(table, TableEncoder) and not isinstance(full, TableEncoder)
    assert np.allclose(table.encode(texts), full.encode(texts), atol=1e-6)
    assert table.fingerprint == full.fingerprint and table.dimension == 16 and table.max_length == 256
    assert table.st._full is None  # encoding never loaded the SentenceTransformer


def test_a_code_folder_is_searchable_at_its_fast_stage_and_then_at_its_models(
    repository, tiny_model, tmp_path, capsys, monkeypatch
):
    from encodr.core import commands
    from encodr.core.requests import SearchRequest
    from encodr.index.fusion import FAST_STAGE_ALPHA

    index = tmp_path / "idx"
    between = []
    real = stages.full_spec

    def second_stage(spec, plan):  # the first stage is published: a search now reads it
        ask = SearchRequest(query=["follow redirects"], index=str(index), k=2)
        between.append(commands.search(ask))
        between.append(commands.search(ask.model_copy(update={"fusion_weight": FAST_STAGE_ALPHA})))
        return real(spec, plan)

    monkeypatch.setattr(importlib.import_module("encodr.index.build"), "full_spec", second_stage)
    code, out, err = run_cli(
        ["index", str(repository), "--model", str(tiny_model), "--out", str(index), "--json"], capsys, monkeypatch
    )
    assert code == 0, err
    assert "searchable after" in err and "fast stage" in err and json.loads(out)["model"] == str(tiny_model)
    fast, weighted = between
    assert fast.stage == "fast" and fast.results[0].hits and any("fast stage" in line for line in fast.hints)
    assert [h.score for h in fast.results[0].hits] == [h.score for h in weighted.results[0].hits]  # keywords lead
    done = commands.search(SearchRequest(query=["follow redirects"], index=str(index), k=2))
    assert done.stage == "full" and not any("fast stage" in line for line in done.hints)
    assert json.loads(out)["fast_stage_seconds"] >= 0


def test_the_static_model_is_made_once_and_a_build_without_code_has_one_stage(
    repository, tiny_model, tmp_path, capsys, monkeypatch
):
    args = ["--model", str(tiny_model), "--json"]
    code, _, err = run_cli(["index", str(repository), "--out", str(tmp_path / "a"), *args], capsys, monkeypatch)
    assert code == 0 and "making" in err, err
    code, _, err = run_cli(["index", str(repository), "--out", str(tmp_path / "b"), *args], capsys, monkeypatch)
    assert code == 0 and "making" not in err and "searchable after" in err, err  # cached
    prose = tmp_path / "notes"
    prose.mkdir()
    (prose / "a.md").write_text("# Notes\n\nRedirects are followed up to a limit.\n")
    code, _, err = run_cli(["index", str(prose), "--out", str(tmp_path / "c"), *args], capsys, monkeypatch)
    assert code == 0 and "fast stage" not in err, err
    code, _, err = run_cli(
        ["index", str(repository), "--out", str(tmp_path / "d"), "--no-fast-stage", *args], capsys, monkeypatch
    )
    assert code == 0 and "fast stage" not in err, err


def test_a_sync_of_an_index_left_at_its_fast_stage_makes_the_second_stage(repository, tiny_model, tmp_path, capsys, monkeypatch):
    from encodr.index.meta import IndexMeta
    from encodr.index.reader import locate
    from encodr.outputs import current_generation

    def interrupted(spec, plan):
        raise KeyboardInterrupt

    build = importlib.import_module("encodr.index.build")
    real = build.full_spec
    monkeypatch.setattr(build, "full_spec", interrupted)
    index = tmp_path / "idx"
    with pytest.raises(KeyboardInterrupt):
        build.build([str(repository)], index, build.BuildOptions(model=str(tiny_model)))
    meta = IndexMeta.read(current_generation(locate(index)))
    assert meta.stage == "fast" and meta.full_model == str(tiny_model) and meta.model != str(tiny_model)
    monkeypatch.setattr(build, "full_spec", real)
    extra = repository.parent / "extra.py"
    extra.write_text("def extra():\n    return 1\n")
    code, out, err = run_cli(["index", str(extra), "--out", str(index), "--add", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["documents"] == 3, err  # an add keeps what the fast stage holds, and its stage
    assert IndexMeta.read(current_generation(locate(index))).stage == "fast"
    code, out, err = run_cli(["index", str(repository), "--out", str(index), "--sync", "--json"], capsys, monkeypatch)
    assert code == 0, err
    meta = IndexMeta.read(current_generation(locate(index)))
    assert meta.stage is None and meta.model == str(tiny_model) and json.loads(out)["documents"] == 2
