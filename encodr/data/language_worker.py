"""Language detection in a process of its own, beside a build that encodes in this one.

lingua (:mod:`encodr.data.language`) holds the GIL through each call and reads its models on
first use, so in a build's writer thread it stalls the thread that tokenizes and starts the
forward pass, and its models load only once the first window is read. A
:class:`LanguageWorker` runs the same functions in a child interpreter started with the build:
it reads the detector's models while this process imports and loads the encoder (a core that
is otherwise idle then), and its detection never holds this process's GIL. The answers are
those of the same calls made here (tested); where the child cannot start or dies, the calls
run here instead.

The child is a plain ``python -m encodr.data.language_worker`` fed through two pipes with
:mod:`multiprocessing.connection` (pickled requests and answers), not a
``multiprocessing`` pool: a spawned pool imports the caller's ``__main__`` again (an unguarded
script would build twice) and a forked one copies a threaded process (a server's, a TUI's).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Iterable

from . import language

# inputs of this many bytes or more get a worker: about language.SAMPLE sentences, from where a new index's first pass
# uses the low-accuracy models the worker reads as it starts (fewer texts are labelled in high-accuracy mode)
WORKER_BYTES = 100_000
CALLS = {  # what a worker may be asked to run
    "labelled": language.labelled,
    "detect_languages": language.detect_languages,
    "warm_word_lists": language.warm_word_lists,
    "misread_languages": language.misread_languages,
}


class LanguageWorker:
    """A child process that answers :data:`CALLS` (see the module's docstring).

    Args:
        preload: the languages whose models the child reads as it starts: ISO 639-3 codes
            (high-accuracy models), or ``None`` for every language's low-accuracy models
            (what a new index's first pass uses: :func:`~encodr.data.language.load_models`).
        start: start the child; False runs every call in this process (no worker).
    """

    def __init__(self, preload: Iterable[str] | None = None, start: bool = True):
        self.process: subprocess.Popen | None = None
        self.requests = self.answers = None
        self.lock = threading.Lock()
        if start:
            self._start(None if preload is None else sorted(preload))

    def _start(self, preload: list[str] | None) -> None:
        """Start the child (nothing raised: without one, calls run here). POSIX only: the
        child reads and writes the pipes' descriptors it inherits."""
        if os.name != "posix":
            return
        reads, requests = os.pipe()  # this process writes requests, the child reads them
        answers, writes = os.pipe()  # the child writes answers, this process reads them
        root = str(Path(__file__).resolve().parents[2])  # the folder encodr is imported from, for the child too
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        command = [sys.executable, "-m", __name__, str(reads), str(writes), json.dumps(preload)]
        try:
            self.process = subprocess.Popen(
                command,
                pass_fds=(reads, writes),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, ValueError):  # no process to start here (pass_fds is POSIX's)
            os.close(requests)
            os.close(answers)
            return
        finally:
            os.close(reads)
            os.close(writes)
        self.requests, self.answers = Connection(requests, readable=False), Connection(answers, writable=False)

    def call(self, name: str, *args):
        """``language.<name>(*args)`` (``name`` one of :data:`CALLS`), run in the child; in this
        process where there is none, it died, or the call failed there (so that an error is
        raised here as the function raises it)."""
        with self.lock:
            if self.requests is not None:
                try:
                    self.requests.send((name, args))
                    done, value = self.answers.recv()
                except (OSError, EOFError):  # the child died: every later call runs here
                    self._stop()
                    done = False
                if done:
                    return value
        return CALLS[name](*args)

    def _stop(self) -> None:
        for end in (self.requests, self.answers):
            if end is not None:
                end.close()
        self.requests = self.answers = None
        if self.process is not None:
            self.process.kill()  # nothing of its to keep: its models go with it
            self.process.wait()
            self.process = None

    def close(self) -> None:
        """Stop the child (calls run here from then on)."""
        with self.lock:
            self._stop()

    def __enter__(self) -> "LanguageWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve(reads: int, writes: int, preload: list[str] | None) -> None:
    """The child's loop: read the models ``preload`` names, then answer each request
    ``(name, args)`` with ``(True, result)``, or ``(False, None)`` where the call raised, until
    the requests' pipe closes. Ctrl-C, which the terminal sends the build's whole process group,
    is left to the build: it stops the child as it stops (:meth:`LanguageWorker.close`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests, answers = Connection(reads, writable=False), Connection(writes, readable=False)
    try:
        language.load_models(preload)
    except Exception:  # an unknown code: the call that needs it raises in the parent
        pass
    while True:
        try:
            name, args = requests.recv()
        except (EOFError, OSError):
            return
        try:
            answer = (True, CALLS[name](*args))
        except Exception:
            answer = (False, None)
        answers.send(answer)


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]))
