"""``encodr tui``: a Textual app over the same core as the CLI. ``app`` holds the window,
search, compare and workspace; ``train``, ``jobs`` (index, eval) and ``runs`` one pane each.
Presentation only: every action is a call into the functions the CLI calls."""

from .app import EncodrApp, clip, score_bar

__all__ = ["EncodrApp", "clip", "score_bar"]
