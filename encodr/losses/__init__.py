"""Training objectives, one per file. A Mirror recipe's ``loss`` key names one of
:data:`LOSSES`; Trans-Encoder uses :class:`SoftBCELoss` (bi → cross) and
:class:`CosineMSELoss` (cross → bi)."""

from .cosine_mse import CosineMSELoss
from .mirror_infonce import MirrorInfoNCELoss
from .soft_bce import SoftBCELoss

LOSSES = {"mirror_infonce": MirrorInfoNCELoss}

__all__ = ["LOSSES", "CosineMSELoss", "MirrorInfoNCELoss", "SoftBCELoss"]
