"""User-facing errors.

Every problem caused by what the user passed (a missing file, a bad recipe value, an
unreachable model) is raised as :class:`EncodrError`. The CLI prints its message as one
line on stderr and exits with status 2, without a traceback.
"""


class EncodrError(Exception):
    """A problem with the user's input: the message names the problem and the fix.

    The CLI maps it to exit status 2; library callers can catch it like any exception.
    """
