"""CLI pictures: a run's loss and dev curves (encodr runs show --plot) and the score
distributions of high- and low-gold pairs (encodr eval --plot, Mirror-BERT Fig. 7)."""

import json

import numpy as np
import pytest

from encodr import registry
from encodr.evaluation import score_distributions
from tests.conftest import run_cli

PNG = b"\x89PNG\r\n\x1a\n"


def _run_with_log(tmp_path) -> int:
    out = tmp_path / "model"
    out.mkdir()
    log = [{"step": s, "loss": 2.0 / s, "loss/cmlm": 1.5 / s, "loss/bitext": 0.5 / s} for s in range(1, 21)]
    (out / "train_log.jsonl").write_text("\n".join(json.dumps(r) for r in log) + "\n")
    curve = [{"step": 0, "epoch": 0, "dev": 50.0}, {"step": 10, "epoch": 0, "dev": 55.5}, {"step": 20, "epoch": 1, "dev": 54.0}]
    return registry.record(
        {
            "kind": "tune",
            "model": "minilm",
            "recipe_name": "multilingual",
            "data": "d.txt",
            "out": str(out),
            "recipe": {"lr": 2e-5},
            "metrics": {"final_loss": 0.1, "dev_metric": "acc@1", "dev_set": "tatoeba-spa", "best": curve[1], "dev_curve": curve},
        }
    )


def test_runs_show_details_and_plot(tmp_path, capsys, monkeypatch):
    run_id = _run_with_log(tmp_path)
    code, out, _ = run_cli(["runs", "show", str(run_id), "--plot", str(tmp_path / "run.png"), "--json"], capsys, monkeypatch)
    shown = json.loads(out)
    assert code == 0 and len(shown["loss_log"]) == 20 and shown["metrics"]["best"]["step"] == 10
    assert (tmp_path / "run.png").read_bytes()[:8] == PNG and not list(tmp_path.glob(".run.png.tmp-*"))
    code, out, _ = run_cli(["runs", "show", str(run_id)], capsys, monkeypatch)
    assert (
        code == 0 and "50.00 (step 0) → 55.50 (step 10) → 54.00 (step 20)" in out and "2.0000 (step 1) → 0.1000 (step 20)" in out
    )
    code, out, _ = run_cli(["runs", "--json"], capsys, monkeypatch)  # the list still works without a subcommand
    assert code == 0 and [r["id"] for r in json.loads(out)] == [run_id]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["runs", "show", "99"], "no run 99 in the registry"),
        (["runs", "show", "1", "--plot", "x.jpg"], "ending in .png"),
        (["eval", "linking", "--plot", "x.png"], "works with eval sts, words and pairs"),
        (["eval", "sts", "--plot", "x.svg"], "ending in .png"),
    ],
)
def test_plot_refusals(args, words, capsys, monkeypatch):
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_eval_plot_splits_pairs_by_gold_and_draws_both_models(tmp_path, tiny_model, capsys, monkeypatch):
    from encodr.models import load_encoder

    rows = [f"{score}\tthe {w} sat here\tthe {w} sat there" for score, w in zip([0, 0, 1, 2, 3, 4, 5, 5], "abcdefgh")]
    f = tmp_path / "sts.tsv"
    f.write_text("\n".join(rows) + "\n")
    panels = score_distributions("sts", load_encoder(str(tiny_model)), [str(f)])
    assert len(panels) == 1 and len(panels[0]["high"]) == 2 and len(panels[0]["low"]) == 2  # gold ≥ 4.25 and ≤ 0.75
    assert np.all(np.abs(panels[0]["high"] + panels[0]["low"]) <= 1.0 + 1e-6)  # cosines
    code, _, _ = run_cli(
        ["eval", "sts", str(f), "--model", str(tiny_model), "--compare", str(tiny_model), "--plot", str(tmp_path / "d.png")],
        capsys,
        monkeypatch,
    )
    assert code == 0 and (tmp_path / "d.png").read_bytes()[:8] == PNG
