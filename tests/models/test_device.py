"""Choosing the device: a machine with no GPU is known as such without importing torch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from encodr.models.device import GPU_NODES, no_gpu_here, pick_device


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="device files are Linux's")
def test_no_gpu_here_reads_the_device_files_and_cuda_visible_devices(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    node = tmp_path / "nvidia0"
    assert no_gpu_here((str(node),))
    node.touch()
    assert not no_gpu_here((str(node),))  # a GPU's device file: torch is asked
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert no_gpu_here((str(node),))  # every GPU hidden


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or any(os.path.exists(n) for n in GPU_NODES), reason="a machine without a GPU"
)
def test_pick_device_on_a_machine_without_a_gpu_imports_no_torch():
    probe = "import sys; from encodr.models.device import pick_device; print(pick_device(), 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["cpu", "False"] and pick_device() == "cpu"
