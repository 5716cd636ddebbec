"""Shared fixtures: a tiny BERT (2 layers, hidden 32) with the MiniLM vocabulary, and an
isolated encodr workspace per test."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64}  # both tiny models


@pytest.fixture(autouse=True)
def workspace(tmp_path, monkeypatch, request):
    """Every test gets its own ENCODR_HOME and runs offline. A test that uses :func:`tiny_model`
    finds its ONNX exports already in that workspace (:func:`tiny_exports`), as a person's
    workspace holds them after a first index, rather than exporting them again in every test."""
    home = tmp_path / "home"
    if "tiny_model" in request.fixturenames:
        shutil.copytree(request.getfixturevalue("tiny_exports"), home / "onnx", copy_function=os.link)
    monkeypatch.setenv("ENCODR_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


@pytest.fixture(scope="session")
def tiny_exports(tmp_path_factory, tiny_model) -> Path:
    """The ``onnx`` folder of a workspace holding :func:`tiny_model`'s float32 and int8 exports,
    made once a session. Tests get hard links to its files: encodr replaces an export's files
    by renaming new ones into place, never by writing into them, so no test changes another's;
    a test that damages an export on purpose must write a new file, not into a linked one."""
    from encodr.models import load_encoder

    home = tmp_path_factory.mktemp("exports-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENCODR_HOME", str(home))
        for backend in ("onnx", "onnx-int8"):
            load_encoder(str(tiny_model), backend=backend)
    return home / "onnx"


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A raw (non-sentence-transformers) BERT checkpoint: 2 layers, hidden 32, 4 heads."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from encodr.models import resolve

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-bert")
    vocab = resolve("minilm").path
    tokenizer = AutoTokenizer.from_pretrained(str(vocab))
    config = BertConfig(vocab_size=tokenizer.vocab_size, max_position_embeddings=128, **TINY)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_cross(tmp_path_factory, tiny_model) -> Path:
    """A CrossEncoder folder made from :func:`tiny_model` (an untrained one-logit head)."""
    from encodr.models.cross import new_cross_encoder

    path = tmp_path_factory.mktemp("cross") / "cross"
    new_cross_encoder(str(tiny_model), max_length=64, device="cpu").save(path)
    return path


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    """A raw RoBERTa checkpoint (2 layers, hidden 32) with a byte-level BPE tokenizer trained
    here on 2,000 words: ``<s>``/``</s>``/``<mask>`` specials and no token types, unlike BERT."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    from encodr.data.text import top_words

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-roberta")
    bpe = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(top_words(2000), vocab_size=400, min_frequency=1, special_tokens=specials, show_progress=False)
    bpe.post_processor = RobertaProcessing(("</s>", 2), ("<s>", 0))
    tokenizer = RobertaTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
    )
    config = RobertaConfig(vocab_size=len(tokenizer), max_position_embeddings=130, type_vocab_size=1, pad_token_id=1, **TINY)
    RobertaModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture
def words_file(tmp_path) -> Path:
    """A small training file: 40 distinct words, with a blank line and a duplicate."""
    from encodr.data.text import top_words

    path = tmp_path / "words.txt"
    path.write_text("\n".join(top_words(40)) + "\n\n" + "the\n", encoding="utf-8")
    return path


def run_cli(args: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    """Run ``encodr ARGS`` in-process through the console-script entry point."""
    from encodr.cli import main

    monkeypatch.setattr(sys, "argv", ["encodr", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def run_tune(data, recipe, model, out, **options):
    """``encodr.methods.tune`` for one base model, as the CLI calls it (progress is silent)."""
    from encodr.methods import TuneJob, tune

    options.pop("progress", None)
    return tune(recipe, TuneJob(out=out, data=str(data) if data else None, models=[model or "minilm"], **options))


def run_trans_encoder(data, recipe, models, out, **options):
    """``encodr.methods.tune`` with several base models (Trans-Encoder chains)."""
    from encodr.methods import TuneJob, tune

    options.pop("progress", None)
    return tune(recipe, TuneJob(out=out, data=str(data) if data else None, models=list(models), **options))


TOY_KEYS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "gato",
    "perro",
    "chien",
    "maison",
    "casa",
    "hund",
    "katze",
    "river",
    "stone",
    "luna",
    "sol",
    "mer",
    "berg",
    "fleur",
    "libro",
    "noche",
]


@pytest.fixture(scope="session")
def tiny_multilingual(tmp_path_factory) -> Path:
    """A raw RoBERTa-style checkpoint (2 layers, hidden 32) with a byte-level BPE tokenizer
    trained here on a few words of English, Spanish, French and German."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-multilingual")
    bpe = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    corpus = (
        [f"{k} one" for k in TOY_KEYS] + [f"{k} two" for k in TOY_KEYS] + ["el gato duerme", "le chien mange", "der Hund läuft"]
    )
    bpe.train_from_iterator(
        corpus * 5, vocab_size=1000, min_frequency=1, special_tokens=specials, show_progress=False
    )  # whole words
    bpe.post_processor = RobertaProcessing(("</s>", 2), ("<s>", 0))
    tokenizer = RobertaTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
    )
    # std 0.2 (not 0.02): mean-pooled vectors of different inputs differ from the start, so the
    # conditioning vector carries a signal the MLM can learn to read
    config = RobertaConfig(
        vocab_size=len(tokenizer), max_position_embeddings=130, type_vocab_size=1, pad_token_id=1, initializer_range=0.2, **TINY
    )
    RobertaModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


async def settle(app, pilot) -> None:
    """Wait for the app's workers to finish, then for the screen to catch up. Textual's
    DirectoryTree (the Train pane's file picker) keeps a loader worker alive for good, so it
    is left out."""
    others = [w for w in app.workers if w.group != "_loader"]
    if others:  # an empty list would mean "all of them" to Textual
        await app.workers.wait_for_complete(others)
    await pilot.pause()


async def search_with(app, pilot, box: str, value: str, query: str):
    """In the TUI's Search tab: set the box ``box`` (``#search-hit-lang``, ``#search-filter``) to
    ``value``, search ``query``, wait for the answer; returns the results table."""
    app.query_one(box).value = value
    await pilot.click("#query")
    await pilot.press(*query, "enter")
    await settle(app, pilot)
    return app.query_one("#results")


def hit_fields(row) -> tuple[str, str, str]:
    """A TUI results row's first cell read back: the hit's rank, its score as shown, its language."""
    first, bar, lang = (str(line) for line in row[0])
    rank, score = first.split()
    return rank, score, lang
