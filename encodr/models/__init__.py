"""Models: resolving a spec (alias, folder, Hub id) and loading bi-encoders
(:mod:`.encoder`), cross-encoders (:mod:`.cross`), and principal-component removal
(:mod:`.pcr`)."""

from .aliases import ALIASES, DEFAULT_MODEL, list_models
from .cross import CrossScorer, load_cross, new_cross_encoder
from .device import pick_device
from .encoder import BACKENDS, Encoder, EncodingSpec
from .loading import load_encoder, open_encoder
from .resolution import ModelRef, resolve

__all__ = [
    "ALIASES",
    "BACKENDS",
    "DEFAULT_MODEL",
    "CrossScorer",
    "Encoder",
    "EncodingSpec",
    "ModelRef",
    "list_models",
    "load_cross",
    "load_encoder",
    "open_encoder",
    "new_cross_encoder",
    "pick_device",
    "resolve",
]
