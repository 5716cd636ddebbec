import pytest

from encodr.errors import EncodrError
from encodr.methods import load_recipe


@pytest.mark.parametrize(
    "name, tau, k, max_len, epochs",
    [("word", 0.2, 0, 25, 2), ("phrase", 0.04, 2, 25, 2), ("sentence", 0.04, 5, 50, 1)],
)
def test_bundled_recipes_follow_the_paper(name, tau, k, max_len, epochs):
    r = load_recipe(name)
    assert (r.temperature, r.span_mask, r.max_length, r.epochs) == (tau, k, max_len, epochs)
    assert (r.batch_size, r.lr, r.dropout, r.drophead) == (200, 2e-5, 0.1, 0.0)
    assert r.name == name and r.loss == "mirror_infonce"


def test_overrides_apply_and_none_is_ignored():
    r = load_recipe("word", {"temperature": "0.05", "epochs": 3, "pooling": None})
    assert r.temperature == 0.05 and r.epochs == 3 and r.pooling == load_recipe("word").pooling


def test_boolean_keys_are_booleans_from_yaml_and_from_set():
    assert load_recipe("reranker").symmetric is False and load_recipe("cross-encoder").symmetric is True
    assert load_recipe("cross-encoder", {"symmetric": "no"}).symmetric is False  # --set symmetric=no
    assert load_recipe("reranker", {"symmetric": "True"}).symmetric is True
    with pytest.raises(EncodrError, match="recipe key 'symmetric' must be true or false, got 'maybe'"):
        load_recipe("reranker", {"symmetric": "maybe"})


def test_user_file(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("temperature: 0.1\nspan_mask: 3\n")
    r = load_recipe(str(f))
    assert (r.name, r.temperature, r.span_mask) == ("mine", 0.1, 3)


@pytest.mark.parametrize(
    "text, words",
    [
        ("temprature: 0.1\n", "unknown recipe key 'temprature'"),
        ("temperature: -1\n", "recipe key 'temperature' must be"),
        ("span_mask: 2.5\n", "recipe key 'span_mask' must be an int"),
        ("pooling: max\n", "recipe key 'pooling' must be auto | cls | mean"),
        ("false_negative_cos: 1.5\n", "recipe key 'false_negative_cos' must be a number in"),
        ("max_grad_norm: .nan\n", "recipe key 'max_grad_norm' must be a number ≥ 0"),
        ("method: trans_encoder\nbi_batch_size: 1\n", "recipe key 'bi_batch_size' must be 2 or more, got 1"),
        ("temperature: [0.1\n", "is not valid YAML at line"),
        ("- a\n- b\n", "must be a YAML mapping"),
    ],
)
def test_bad_recipe_files_name_the_problem(tmp_path, text, words):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(EncodrError, match=words):
        load_recipe(str(f))


def test_unknown_recipe_lists_the_bundled_ones():
    with pytest.raises(EncodrError, match="unknown recipe 'wrod'.*phrase, reranker, retrieval, sentence, static, word"):
        load_recipe("wrod")


def test_an_override_cannot_change_the_method():
    with pytest.raises(EncodrError, match="recipe key 'method' is 'mirror' in this recipe and cannot be changed"):
        load_recipe("word", {"method": "trans_encoder"})
    assert load_recipe("word", {"method": "mirror"}).method == "mirror"


@pytest.mark.parametrize("name", ["word", "cross-encoder", "multilingual", "retrieval", "reranker", "judged"])
def test_every_field_is_declared_once_with_its_meaning(name):
    """A field's meaning and rule come from its one declaration (setting()); a field declared
    without a meaning anywhere in its class's bases fails here, as the recipes reference and the
    TUI's tooltip would show it blank."""
    from encodr.settings import described

    recipe = load_recipe(name)
    blank = [key for key in recipe.to_dict() if not described(type(recipe), key)[0]]
    assert blank == []
    # a re-declared default keeps its base's rule: the reranker's cross_max_length (320) keeps
    # Trans-Encoder's range (3 or more), its batch sizes OptimArgs' (2 or more)
    rules = type(recipe).rules()
    if name == "reranker":
        assert rules["cross_max_length"][1] == "3 or more" and rules["bi_batch_size"][1] == "2 or more"
        with pytest.raises(EncodrError, match="cross_max_length' must be 3 or more"):
            load_recipe(name, {"cross_max_length": 2})
