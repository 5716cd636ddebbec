"""Choosing the device a model runs on (mixed precision is chosen per device by the trainer,
:func:`encodr.training.mixed_precision`)."""

from __future__ import annotations

from ..errors import EncodrError, S


def pick_device(device: str | None = None) -> str:
    """``device`` if given and usable here, else ``cuda`` when a GPU is visible, else ``cpu``.

    Args:
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; ``None`` picks one.

    Raises:
        EncodrError: a device torch does not know, or one this machine does not have.
    """
    import torch

    if not device:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        kind = torch.device(device)
    except RuntimeError:
        raise EncodrError(f"unknown device '{device}'; use cpu, cuda, cuda:N or mps, or leave {S.device} out") from None
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available() and (kind.index or 0) < torch.cuda.device_count(),
        "mps": torch.backends.mps.is_available(),
    }
    if not available.get(kind.type, False):
        raise EncodrError(
            f"device '{device}' is not available on this machine (torch {torch.__version__}); leave {S.device} out to use "
            f"{'cuda' if torch.cuda.is_available() else 'the CPU'}"
        )
    return device
