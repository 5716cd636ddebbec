"""Quiet loading: the libraries' chatter (weight reports, download bars) is not encodr's output."""

from __future__ import annotations


def quiet() -> None:
    """Silence the libraries' loading chatter (weights reports, progress bars)."""
    import logging

    import transformers

    for noisy in ("sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    transformers.utils.logging.disable_progress_bar()
