"""User-facing errors.

Every problem caused by what the user passed (a missing file, a bad recipe value, an
unreachable model) is raised as :class:`EncodrError`. The CLI prints its message as one
line on stderr and exits with status 2, without a traceback.
"""


class EncodrError(Exception):
    """A problem with the user's input: the message names the problem and the fix.

    The CLI maps it to exit status 2, the HTTP server (:mod:`encodr.serve`) to a 4xx answer
    whose JSON names ``field``; library callers can catch it like any exception.

    Args:
        message: one line: the problem and the fix.
        field: the request field at fault (a name of a :mod:`encodr.core` request), if one is.
        status: the HTTP status the server answers with (422: a bad value; 404: an unknown
            model or index; 413: over a size limit).
    """

    def __init__(self, message: str, field: str | None = None, status: int = 422):
        super().__init__(message)
        self.field = field
        self.status = status


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, at most ``limit`` characters; the
    exception's class name when the message is empty (for one-line error messages)."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__
