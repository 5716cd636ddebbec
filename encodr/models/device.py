"""Choosing the device a model runs on (mixed precision is chosen per device by the trainer,
:func:`encodr.training.mixed_precision`)."""

from __future__ import annotations

from ..errors import EncodrError, S

GPU_NODES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg")  # CUDA's, ROCm's and WSL2's device files on Linux


def no_gpu_here(nodes: tuple[str, ...] = GPU_NODES) -> bool:
    """True when this machine surely shows torch no GPU, known without importing torch (which a
    build or search on the CPU's ONNX pass never needs): on Linux, no CUDA, ROCm or WSL2 GPU device
    file (``nodes``) exists, or ``CUDA_VISIBLE_DEVICES`` hides every GPU. False (ask torch) anywhere
    else."""
    import os
    import sys

    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return True
    return sys.platform.startswith("linux") and not any(os.path.exists(node) for node in nodes)


def pick_device(device: str | None = None) -> str:
    """``device`` if given and usable here, else ``cuda`` when a GPU is visible, else ``cpu``
    (without importing torch where :func:`no_gpu_here` knows there is none).

    Args:
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; ``None`` picks one.

    Raises:
        EncodrError: a device torch does not know, or one this machine does not have.
    """
    if not device and no_gpu_here():
        return "cpu"
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
