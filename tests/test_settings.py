"""A setting is declared once (:func:`encodr.settings.setting`) and named in messages with
:data:`encodr.errors.S`, so each front end words it: a flag on the CLI, the field over HTTP and MCP."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import encodr
from encodr.core import requests as rq
from encodr.core.fields import help_words, namer, rendering, words
from encodr.errors import EncodrError, OptionError, S, named, render
from encodr.settings import check, declared, field_rules, setting


@dataclass(frozen=True)
class Knobs:
    size: int = setting(4, "Texts a batch.", ge=1, le=64)
    kind: str = setting("fast", f"How it runs; see {S.size}.", choices=("fast", "slow"))
    note: str | None = setting(None, "Free text.")

    def __post_init__(self):
        check(self)


@dataclass(frozen=True)
class MoreKnobs(Knobs):
    size: int = 8  # a new default keeps the meaning and the range


def test_a_declaration_checks_its_range_and_choices_naming_the_field():
    assert Knobs(size=64, kind="slow").size == 64
    with pytest.raises(OptionError, match=r"^size: 0 must be between 1 and 64$"):
        Knobs(size=0)
    with pytest.raises(OptionError, match=r"^kind: 'quick' is not one of fast, slow$"):
        Knobs(kind="quick")
    assert Knobs(note=None).note is None  # unset passes


def test_a_subclass_changing_a_default_keeps_the_meaning_range_and_rule():
    d = declared(MoreKnobs, "size")
    assert (d.default, d.help, d.ge, d.le) == (8, "Texts a batch.", 1, 64)
    accepts, allowed = field_rules(Knobs)["kind"]  # choices are a rule too (--set, a recipe file)
    assert accepts("slow") and not accepts("quick") and allowed == "fast | slow"


def test_a_setting_named_in_a_message_is_worded_by_each_front_end():
    text = f"drop {S.fusion_weight}, or pass {S('write', 'add')} with {S.index_type} flat"
    assert named(text) == ["fusion_weight", "write=add", "index_type"]
    assert render(text) == "drop fusion_weight, or pass write=add with index_type flat"
    assert render(text, namer("cli")) == "drop --fusion-weight, or pass --add with --index-type flat"
    assert render(text, namer("http")) == render(text)
    error = EncodrError(f"{S.k} is too large; lower {S.k}", field="k")
    assert str(error) == "k is too large; lower k"
    assert words(error, "cli", rq.SearchRequest) == "-k is too large; lower -k"  # the request's own flag
    assert words(error, "mcp") == "k is too large; lower k"


def test_the_requests_take_their_search_and_build_settings_from_the_declarations():
    from encodr.data.records import Layout
    from encodr.index.options import BuildOptions, SearchOptions

    for request, owner, names in (
        (rq.SearchRequest, SearchOptions, rq.SEARCH_SETTINGS),
        (rq.IndexRequest, BuildOptions, rq.BUILD_SETTINGS),
        (rq.IndexRequest, Layout, rq.LAYOUT_SETTINGS),
    ):
        for name in names:
            d, field = declared(owner, name), request.model_fields[name]
            assert field.description == render(d.help), name
            assert tuple(rendering(request, name).choices) == tuple(d.choices), name
            limits = {type(m).__name__: m for m in field.metadata}
            assert getattr(limits.get("Ge"), "ge", None) == d.ge and getattr(limits.get("Le"), "le", None) == d.le, name
    offered = set(SearchOptions.__dataclass_fields__)
    assert offered == set(rq.SEARCH_SETTINGS)  # a search setting declared without a request field fails here
    cli = help_words(rq.SearchRequest, "filter", "cli")
    assert "--meta-columns" in cli and '{"year": ">=2020", "lang": "eng"}' in cli
    assert "meta_columns" in rq.SearchRequest.model_fields["filter"].description


def test_a_search_request_builds_its_options_once_by_the_same_names():
    request = rq.SearchRequest(index="kb", query=["pump"], hit_lang="spa,fra", filter=["year>=2020"], k=3)
    options = request.options()
    assert options is request.options()
    assert (options.k, options.hit_lang, [str(f) for f in options.filter]) == (3, ("spa", "fra"), ["year>=2020"])
    assert request.model_copy(update={"k": 7}).options().k == 7 and request.options().k == 3  # a copy builds its own


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
COMMAND = re.compile(r"(encodr [a-z]|pip install|ray start)[^;,()]*$")
LOWER = ("index", "models", "data", "methods", "evaluation", "training", "losses")


def flags_in_errors(root: Path) -> list[str]:
    """``path:line`` of each error raised below the core whose message names a flag outside a
    command line to run (``encodr index … --overwrite``, ``pip install --no-deps``)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("EncodrError", "OptionError")):
                continue
            for text in (c.value for arg in node.args for c in ast.walk(arg) if isinstance(c, ast.Constant)):
                if isinstance(text, str) and any(not COMMAND.search(text[: m.start()]) for m in FLAG.finditer(text)):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_no_layer_below_the_core_names_a_flag_in_an_error(tmp_path):
    package = Path(encodr.__file__).parent
    assert [hit for layer in LOWER for hit in flags_in_errors(package / layer)] == []
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "m.py").write_text('raise EncodrError("drop --dim, or rebuild with: encodr index DOCS --overwrite")\n')
    assert flags_in_errors(probe) == ["probe/m.py:1"]  # the check finds one


def test_a_recipe_value_out_of_its_declared_range_is_one_line_from_the_declaration_alone():
    """A range is declared once (``ge``/``le``) and is the rule a recipe file, ``--set`` and the
    requests all check: no hand-written ``(lambda v: v >= 3, "an integer ≥ 3")`` beside it."""
    from encodr.methods import load_recipe
    from encodr.methods.trans_encoder.config import TransEncoderRecipe
    from encodr.settings import declared

    assert declared(TransEncoderRecipe, "cross_max_length").ge == 3
    assert declared(TransEncoderRecipe, "cross_max_length").rule[1] == "3 or more"
    with pytest.raises(EncodrError) as caught:
        load_recipe("sentence", {"max_length": 2})
    assert str(caught.value) == "recipe key 'max_length' must be 3 or more, got 2"
