"""encodr: turn pretrained masked language models into fast, strong encoders.

Data flows one way: text (:mod:`encodr.data`) → tokens and views (a method in
:mod:`encodr.methods`) → model (:mod:`encodr.models`, trained by :mod:`encodr.training` with
:mod:`encodr.losses`) → vectors (:class:`encodr.models.Encoder`) → index
(:mod:`encodr.index`) and evaluation (:mod:`encodr.evaluation`). The CLI and the TUI sit on top.
"""

import os as _os

# Fail fast instead of hanging when the Hugging Face Hub cannot be reached.
_os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "5")
_os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "10")
_os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.2.0"
