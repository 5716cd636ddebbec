"""Termination signals: SIGTERM (and SIGHUP) end a run the way Ctrl-C does, and a process
started by a launcher (torchrun) ends when its launcher dies.

SIGINT raises ``KeyboardInterrupt``, which every run already turns into "nothing written, a
``cancelled`` row, exit 2". :func:`install` makes the signals a job scheduler, ``timeout``,
systemd or a container stop send raise :class:`Terminated`, a ``KeyboardInterrupt``, so they
take the same path. Under a launcher each worker also asks the kernel for SIGTERM when its
parent (the launcher) dies (Linux ``PR_SET_PDEATHSIG``), and :func:`check_launcher` notices a
changed parent where that is not available; a worker of a dead launcher therefore stops before
it writes anything.
"""

from __future__ import annotations

import os
import signal
import sys

_launcher: int | None = None  # the parent pid seen at install time, under a launcher
_received: int | None = None  # the signal number that ended this run, if one did


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM or SIGHUP arrives, or when the launcher that
    started this process is gone; a ``KeyboardInterrupt``, so it unwinds like Ctrl-C."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _raise(signum: int, _frame) -> None:
    global _received
    _received = signum
    raise Terminated(f"terminated by {signal.Signals(signum).name}")


def under_launcher() -> bool:
    """True in a process started by torchrun / torch.distributed / accelerate launch."""
    return "TORCHELASTIC_RUN_ID" in os.environ or ("LOCAL_RANK" in os.environ and "WORLD_SIZE" in os.environ)


def install() -> None:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` (main thread only), make SIGINT raise
    ``KeyboardInterrupt`` where it was left at the OS default (one line, not a silent exit 130;
    an ignored SIGINT, a background job's, stays ignored); under a launcher, also deliver
    SIGTERM to this process when the launcher dies. Idempotent."""
    global _launcher
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if (
        signal.getsignal(signal.SIGINT) is signal.SIG_DFL
    ):  # reset by a library or the parent: Ctrl-C would kill the process (exit 130) without a word
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if signum is not None:
            signal.signal(signum, _raise)
    if under_launcher() and _launcher is None:
        _launcher = os.getppid()
        if sys.platform.startswith("linux"):
            import ctypes

            PR_SET_PDEATHSIG = 1
            try:
                ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
            except (OSError, AttributeError):
                pass  # check_launcher() still notices, at the next step
        check_launcher()  # the launcher may have died before the request was made


def check_launcher() -> None:
    """Raise :class:`Terminated` when this process was started by a launcher that is gone
    (its parent changed: the orphan was re-parented). Cheap; the trainer calls it every step.

    Raises:
        Terminated: the launcher died.
    """
    global _received
    if _launcher is not None and os.getppid() != _launcher:
        _received = signal.SIGTERM
        raise Terminated(f"its launcher (pid {_launcher}) is gone")


def received() -> bool:
    """True once a termination signal (or a dead launcher) has ended this run: an error that
    follows it (a collective whose peer left) is part of the same cancellation."""
    return _received is not None
