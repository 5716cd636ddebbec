"""User-facing errors.

Every problem caused by what the user passed (a missing file, a bad recipe value, an
unreachable model) is raised as :class:`EncodrError`. The CLI prints its message as one
line on stderr and exits with status 2, without a traceback.
"""


class EncodrError(Exception):
    """A problem with the user's input: the message names the problem and the fix.

    The CLI maps it to exit status 2; library callers can catch it like any exception.
    """


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, at most ``limit`` characters; the
    exception's class name when the message is empty (for one-line error messages)."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__
