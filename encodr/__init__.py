"""encodr: turn pretrained masked language models into fast, strong encoders.

Data flows one way: text (:mod:`encodr.corpus`) → tokens and views (:mod:`encodr.augment`)
→ model (:mod:`encodr.models`, :mod:`encodr.train`, :mod:`encodr.losses`) → vectors
(:class:`encodr.models.Encoder`) → evaluation (:mod:`encodr.evaluation`).
"""

import os as _os

# Fail fast instead of hanging when the Hugging Face Hub cannot be reached.
_os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "5")
_os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "10")
_os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.1.0"
