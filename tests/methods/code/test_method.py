"""The code recipe: a source folder's documented definitions as (documentation → code) pairs,
a dev fold of its own, mined negatives, a SentenceTransformer saved with its dev figures."""

import json

from encodr.data.code import definitions, summary
from encodr.methods import load_recipe
from encodr.methods.code.pairs import comment_blocks, comment_pairs, in_dev, mine_negatives, read_units
from tests.conftest import run_cli

TOPICS = [
    "river",
    "mountain",
    "kitchen",
    "violin",
    "planet",
    "garden",
    "winter",
    "harbour",
    "engine",
    "forest",
    "castle",
    "desert",
]


def source(folder, n=24):
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(3):
        parts = []
        for i in range(f, n, 3):
            topic = TOPICS[i % 12]
            parts.append(
                f'def measure_{topic}_{i}(value):\n    """Measure the {topic} number {i} in metres.\n\n    More words.\n    """\n'
                f"    # scale the {topic} by its number\n    {topic} = value * {i}\n    return {topic}\n"
            )
        parts.append("def helper(x):\n    return x\n")  # undocumented: in the corpus, not a pair
        parts.append(
            'def helper(x, y):\n    """Add two numbers together."""\n    return x + y\n'
        )  # a name defined again: its own key
        (folder / f"mod{f}.py").write_text("\n\n".join(parts))
    return folder


def test_definitions_carry_their_documentation_and_their_code_without_it():
    text = (
        'class Pump:\n    """A pump."""\n\n    def bleed(self):\n        """Open the valve. Then close it."""\n        return 1\n'
    )
    found = {d.name: d for d in definitions(text, "python")}
    assert found["Pump.bleed"].doc == "Open the valve. Then close it." and summary(found["Pump.bleed"].doc) == "Open the valve."
    assert found["Pump.bleed"].code == "def bleed(self):\n        return 1"  # the docstring's line is gone
    js = "// Adds two numbers.\nfunction add(a, b) { return a + b; }\n"
    (add,) = definitions(js, "javascript")
    assert add.doc == "Adds two numbers." and add.code == "function add(a, b) { return a + b; }"


def test_comment_blocks_pair_a_comment_with_the_lines_it_stands_above():
    code = (
        "def f(rows):\n"
        "    # drop the rows nobody asked for\n"
        "    # (the filter keeps order)\n"
        "    rows = [r for r in rows if r]\n"
        "    total = sum(rows)\n"
        "\n"
        "    # x = old(y)\n"  # commented-out code: not prose
        "    # noqa: the linter is wrong about this line\n"  # a pragma
        "    y = 2\n"
        "    # a comment with no code after it\n"
        "\n"
        "    # sum each part\n"
        "    for r in rows:\n"
        "        total += r\n"
        "    return total\n"
    )
    assert comment_blocks(code, "python", 3) == [
        ("drop the rows nobody asked for (the filter keeps order)", "rows = [r for r in rows if r]\ntotal = sum(rows)"),
        ("sum each part", "for r in rows:\n    total += r\nreturn total"),
    ]
    js = "function g(a) {\n  // clamp the value into range\n  a = Math.max(0, a);\n  return a;\n}\n"
    assert comment_blocks(js, "javascript", 3) == [("clamp the value into range", "a = Math.max(0, a);\nreturn a;")]


def test_units_the_dev_fold_and_negatives_from_the_same_repository(tmp_path, tiny_model):
    from encodr.models import load_encoder

    recipe = load_recipe("code", {})
    units = read_units(str(source(tmp_path / "src")), recipe)
    documented = [u for u in units if u.query]
    assert (
        len(units) == 30
        and len(documented) == 27
        and len({u.key for u in units}) == 30
        and documented[0].query == "Measure the river number 0 in metres."
    )
    assert "Measure the" not in documented[0].bare and "river = value * 0" in documented[0].bare
    pairs = comment_pairs(units, load_recipe("code", {"comments": 5}))
    assert len(pairs) == 5 and all(c.startswith("scale the ") and "= value *" in block for c, block in pairs)
    dev = {u.key for u in documented if in_dev(u, 0.2)}
    assert 0 < len(dev) < 27 and dev == {u.key for u in documented if in_dev(u, 0.2)}  # a hash: the same fold every time
    train = [u for u in documented if u.key not in dev]
    negatives = mine_negatives(load_encoder(str(tiny_model)), train, units, dev)
    bare = {u.key: (u.bare if u.query else u.text) for u in units}
    for u, negative in zip(train, negatives):
        assert negative != u.bare and negative not in {bare[k] for k in dev}  # not itself, never the dev fold's code


def test_tune_code_saves_a_sentence_transformer_with_its_dev_figures(tiny_model, tmp_path, capsys, monkeypatch):
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "run"
    code, _, err = run_cli(
        [
            "tune",
            str(source(tmp_path / "src")),
            "--recipe",
            "code",
            "--model",
            str(tiny_model),
            "--out",
            str(out),
            "--set",
            "batch_size=8",
            "--set",
            "epochs=1",
            "--set",
            "lr=1e-3",
            "--set",
            "min_documented=10",
            "--set",
            "general=16",
            "--set",
            "comments=12",
            "--json",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    summary = json.loads((out / "encodr.json").read_text())
    assert (
        summary["definitions"] == 30
        and summary["pairs"] + summary["dev_queries"] == 27
        and summary["dev_after"] >= summary["dev_before"]
    )
    assert summary["dev_curve"][0]["step"] == 0  # the starting model is a candidate
    assert summary["general"] == 16 and summary["comment_pairs"] == 12
    assert summary["fusion_weight"].startswith("dev hybrid nDCG@10") and set(summary["search"]) <= {"fusion_weight"}
    assert SentenceTransformer(str(out), device="cpu").encode(["measure a river"]).shape == (1, 32)
    code, _, err = run_cli(
        ["index", str(tmp_path / "src"), "--model", str(out), "--out", str(tmp_path / "idx")], capsys, monkeypatch
    )
    assert code == 0, err


def test_a_folder_without_source_code_is_one_line(tmp_path, tiny_model, capsys, monkeypatch):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\ntext\n")
    code, _, err = run_cli(
        ["tune", str(tmp_path / "notes"), "--recipe", "code", "--model", str(tiny_model), "--out", str(tmp_path / "o")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "no source file in it" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_too_few_documented_definitions_keep_the_start_unless_no_dev(tiny_model, tmp_path, capsys, monkeypatch):
    src = source(tmp_path / "src")  # 27 documented definitions, fewer than min_documented (30)
    code, _, err = run_cli(
        ["tune", str(src), "--recipe", "code", "--model", str(tiny_model), "--out", str(tmp_path / "a")], capsys, monkeypatch
    )
    assert code == 0 and "only 27 documented definitions" in err and "--no-dev" in err
    assert json.loads((tmp_path / "a" / "encodr.json").read_text())["kept"] == "start"
    code, _, err = run_cli(
        [
            "tune",
            str(src),
            "--recipe",
            "code",
            "--model",
            str(tiny_model),
            "--out",
            str(tmp_path / "b"),
            "--no-dev",
            "--set",
            "batch_size=8",
            "--set",
            "epochs=1",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    summary = json.loads((tmp_path / "b" / "encodr.json").read_text())
    assert summary["pairs"] == 27 and summary["dev_queries"] == 0 and summary["steps"] >= 1


def test_general_sentences_cost_nothing_where_the_start_puts_them_and_something_once_the_model_moves(tiny_model):
    import torch

    from encodr.methods.code.general import general_sentences, general_stream
    from encodr.models import load_encoder

    recipe = load_recipe("code", {"general": 8, "general_weight": 0.5, "batch_size": 4})
    encoder = load_encoder(str(tiny_model), "auto", "mean", 32)
    sentences = general_sentences(recipe.general, recipe.seed)
    assert len(sentences) == 8 and len(set(sentences)) == 8
    stream = general_stream(encoder, sentences, recipe)
    assert stream.name == "general" and stream.weight == 0.5 and stream.batch_size == 4
    module = encoder.st.eval()  # no dropout: the model is still the teacher
    with torch.no_grad():
        assert float(stream.loss(module, stream.collate([0, 1, 2, 3], 0))) < 1e-5
        for p in module.parameters():
            p.add_(0.05 * torch.randn_like(p))
        assert float(stream.loss(module, stream.collate([0, 1, 2, 3], 0))) > 1e-3
