"""``encodr tui``: a Textual app over the same core as the CLI. ``app`` holds the window,
search, compare and workspace; ``train``, ``jobs`` (index, eval) and ``runs`` one pane each.
Presentation only: every action is a call into the functions the CLI calls."""

import os

# Textual redraws at most MAX_FPS times a second (the TEXTUAL_FPS variable, 60 by default), so a
# query's hits wait up to a frame for the screen to show them when the query box was drawn less
# than a frame before (16.7 ms at 60, 4.2 ms at 240). Frames are drawn only when something changed,
# so this costs nothing while the screen is still; Textual's animations keep their own 60 frames.
# Set before Textual is first imported; a user's own TEXTUAL_FPS wins.
os.environ.setdefault("TEXTUAL_FPS", "240")

from .app import EncodrApp, clip, score_bar  # noqa: E402 (after TEXTUAL_FPS is set)

__all__ = ["EncodrApp", "clip", "score_bar"]
