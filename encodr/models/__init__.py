"""Models: resolving a spec (alias, folder, Hub id) and loading bi-encoders
(:mod:`.encoder`), cross-encoders (:mod:`.cross`), and principal-component removal
(:mod:`.pcr`)."""

from .cross import CrossScorer, load_cross, new_cross_encoder
from .encoder import ALIASES, BACKENDS, DEFAULT_MODEL, Encoder, ModelRef, list_models, load_encoder, pick_device, resolve

__all__ = ["ALIASES", "BACKENDS", "DEFAULT_MODEL", "CrossScorer", "Encoder", "ModelRef", "list_models", "load_cross", "load_encoder",
           "new_cross_encoder", "pick_device", "resolve"]  # fmt: skip
