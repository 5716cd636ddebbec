"""One class for an index's life: build, open, add, sync, delete."""

from encodr.index import BuildOptions, Index, Searcher, SearchOptions


def test_one_index_class_builds_adds_syncs_and_deletes(tmp_path, tiny_model):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Pump\n\nThe pump pressure must stay below 4 bar.\n")
    (docs / "c.md").write_text("# Fan\n\nClean the fan blades.\n")
    index = Index.build([str(docs)], tmp_path / "idx", BuildOptions(model=str(tiny_model), lang="eng"))
    assert isinstance(index, Index) and index.meta.documents == 2
    extra = tmp_path / "b.md"
    extra.write_text("# Valve\n\nGrease the valve stem every month.\n")
    index = index.add([str(extra)])
    assert index.meta.documents == 3
    (docs / "a.md").unlink()
    index = index.sync([str(docs)])
    assert index.meta.documents == 2  # a.md's file is gone; b.md lies under another path and stays
    index = index.delete([str(extra.resolve())])
    assert index.meta.documents == 1
    index.close()
    assert Searcher(tmp_path / "idx").search(["valve"], SearchOptions(mode="keyword")) == [[]]
