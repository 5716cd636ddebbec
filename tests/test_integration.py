"""A few checks with the real bundled MiniLM (slower: ~1 min)."""

import numpy as np
import pytest

from encodr import evaluation
from encodr.data.text import top_words
from encodr.methods import load_recipe
from encodr.models import load_encoder
from tests.conftest import run_tune

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def minilm():
    return load_encoder("minilm", device="cpu")


def test_bundled_model_simlex_matches_the_reference(minilm):
    report = evaluation.run("words", minilm, ["simlex999"])
    assert report.scores[0].value == pytest.approx(44.6, abs=0.1)


def test_word_recipe_improves_simlex_on_few_words(minilm, tmp_path):
    f = tmp_path / "w.txt"
    f.write_text("\n".join(top_words(600)))
    summary = run_tune(str(f), load_recipe("word"), "minilm", tmp_path / "o", device="cpu", progress=False)
    tuned = load_encoder(summary["out"])
    before = evaluation.run("words", minilm, ["simlex999"]).scores[0].value
    after = evaluation.run("words", tuned, ["simlex999"]).scores[0].value
    assert after > before + 1.0
    from sentence_transformers import SentenceTransformer

    texts = ["a heart attack", "myocardial infarction", "the stock market fell sharply today"]
    assert np.abs(SentenceTransformer(summary["out"]).encode(texts) - tuned.encode(texts)).max() < 1e-5
