"""Pictures for the CLI (matplotlib, Agg backend, PNG written atomically): a run's loss and
dev curves, and the cosine distributions of high-gold and low-gold pairs before and after
tuning (the anisotropy pictures of Mirror-BERT §4, Fig. 7).

The functions take plain numbers; the CLI gathers them from the registry, a run's
``train_log.jsonl`` and the evaluators."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .errors import EncodrError
from .extras import need
from .outputs import atomic_file


def _pyplot():
    matplotlib = need("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def check_png(path: str | Path) -> Path:
    """Check a ``--plot`` target before any work: a ``.png`` name in an existing folder.

    Raises:
        EncodrError: naming the problem and the fix.
    """
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise EncodrError(f"--plot {path}: the picture is a PNG; give a file name ending in .png")
    if not path.parent.is_dir():
        raise EncodrError(f"--plot {path}: folder {path.parent} does not exist; create it or choose another file")
    return path


def save_png(fig, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` as PNG, atomically (a temporary file in the same folder,
    then a rename), and close it.

    Raises:
        EncodrError: see :func:`check_png`; the file cannot be written.
    """
    path = check_png(path)
    try:
        with atomic_file(path, suffix=".png") as tmp:
            fig.savefig(tmp, dpi=110, bbox_inches="tight")
    except OSError as exc:
        raise EncodrError(f"--plot {path}: cannot write it ({exc.strerror}); choose another file") from None
    finally:
        _pyplot().close(fig)
    return path


def run_figure(title: str, log: Sequence[dict], dev_curve: Sequence[dict] = (), dev_label: str = "dev"):
    """A run's training loss per step (the total and each stream's ``loss/NAME``) and, when
    it was selected on a dev set, the dev score per evaluated step.

    Args:
        title: figure title (the run id, recipe and model).
        log: ``train_log.jsonl`` records with ``step`` and ``loss`` (and ``loss/NAME``).
        dev_curve: ``{"step", "dev"}`` points (step 0: the starting model).
        dev_label: the dev set and metric, for the axis.

    Returns:
        A matplotlib figure (one panel, or two side by side with a dev curve).
    """
    plt = _pyplot()
    panels = 2 if dev_curve else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 3.8), squeeze=False)
    ax = axes[0][0]
    steps = [r["step"] for r in log]
    ax.plot(steps, [r["loss"] for r in log], label="loss", color="C0")
    for key in sorted({k for r in log for k in r if k.startswith("loss/")}):
        ax.plot([r["step"] for r in log if key in r], [r[key] for r in log if key in r], label=key, alpha=0.7, linewidth=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if dev_curve:
        ax = axes[0][1]
        ax.plot([p["step"] for p in dev_curve], [p["dev"] for p in dev_curve], marker="o", color="C2")
        best = max(dev_curve, key=lambda p: p["dev"])
        ax.scatter([best["step"]], [best["dev"]], s=120, facecolors="none", edgecolors="C3", label=f"kept: step {best['step']}")
        ax.set_xlabel("step")
        ax.set_ylabel(dev_label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def distribution_figure(title: str, panels: Sequence[dict]):
    """Histograms of a model's pair scores, high-gold pairs against low-gold pairs, one
    panel per (dataset, model): the anisotropy picture of Mirror-BERT §4 (Fig. 7).

    Args:
        title: figure title.
        panels: ``{"dataset", "model", "high", "low", "high_label", "low_label"}``; ``high``
            and ``low`` are sequences of scores (cosines, or σ scores of a cross-encoder).

    Returns:
        A matplotlib figure, datasets as rows and models as columns.
    """
    plt = _pyplot()
    datasets = list(dict.fromkeys(p["dataset"] for p in panels))
    models = list(dict.fromkeys(p["model"] for p in panels))
    fig, axes = plt.subplots(
        len(datasets), len(models), figsize=(4.6 * len(models), 3.0 * len(datasets)), squeeze=False, sharex=True
    )
    for p in panels:
        ax = axes[datasets.index(p["dataset"])][models.index(p["model"])]
        lo = min([*p["high"], *p["low"], 0.0])
        bins = [lo + i * (1.0 - lo) / 40 for i in range(41)]
        ax.hist(p["low"], bins=bins, alpha=0.6, color="C1", label=p["low_label"])
        ax.hist(p["high"], bins=bins, alpha=0.6, color="C0", label=p["high_label"])
        ax.set_title(f"{p['dataset']} · {p['model']}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("score")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
