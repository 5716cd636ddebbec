"""The CPUs this process may run on: those of its affinity mask (a container's or ``taskset``'s
limit), else every CPU the OS counts."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """How many CPUs this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` where
    the OS has no affinity masks), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
