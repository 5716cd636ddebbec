"""Training objectives, one per file. A recipe's ``loss`` key names one of :data:`LOSSES`."""

from .mirror_infonce import MirrorInfoNCELoss

LOSSES = {"mirror_infonce": MirrorInfoNCELoss}

__all__ = ["LOSSES", "MirrorInfoNCELoss"]
