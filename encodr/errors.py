"""User-facing errors.

Every problem caused by what the user passed (a missing file, a bad recipe value, an
unreachable model) is raised as :class:`EncodrError`. The CLI prints its message as one
line on stderr and exits with status 2, without a traceback.
"""

MARK = "\x00"  # brackets a setting's name inside a message (S.name); no path or argument holds it


class _Settings:
    """``S.mode`` (or ``S("write", "add")``: a setting and one of its values) names a setting
    inside an error message or a help text, so that each front end words it its own way
    (:func:`render`): the CLI as its flag (``--mode``, ``--add``), HTTP and MCP as the field
    (``mode``, ``write=add``), the TUI as its label. A layer below the front ends names a setting
    only so, never by a flag."""

    def __getattr__(self, name: str) -> str:
        if name.startswith("__"):
            raise AttributeError(name)
        return f"{MARK}{name}{MARK}"

    def __call__(self, name: str, value: str | None = None) -> str:
        return f"{MARK}{name}{'' if value is None else '=' + value}{MARK}"


S = _Settings()


def render(text: str, namer=None) -> str:
    """``text`` with each setting named by :data:`S` written as ``namer(name)`` or, for a
    setting and a value, ``namer("name=value")`` (default: ``name``, ``name=value``; as HTTP and
    MCP name a field)."""
    parts = text.split(MARK)
    return "".join(((namer or str)(part) if i % 2 else part) for i, part in enumerate(parts))


class Said(str):
    """A warning line that names settings with :data:`S`: it reads as :func:`render` writes it
    with field names (a library caller prints it as it is), and keeps ``message``, the line as
    written, for a front end to word (:func:`encodr.core.fields.namer`)."""

    message: str

    def __new__(cls, message: str) -> "Said":
        line = super().__new__(cls, render(message))
        line.message = message
        return line


def written(line: str) -> str:
    """A line as written, its settings still marked (a :class:`Said`'s ``message``; any other str as it is)."""
    return getattr(line, "message", line)


def named(text: str) -> list[str]:
    """The settings ``text`` names with :data:`S`, in order (``name`` or ``name=value``)."""
    return text.split(MARK)[1::2]


class EncodrError(Exception):
    """A problem with the user's input: the message names the problem and the fix.

    The CLI maps it to exit status 2, the HTTP server (:mod:`encodr.serve`) to a 4xx answer
    whose JSON names ``field``; library callers can catch it like any exception.

    Args:
        message: one line: the problem and the fix, naming any setting with :data:`S`.
        field: the request field at fault (a name of a :mod:`encodr.core` request), if one is.
        status: the HTTP status the server answers with (422: a bad value; 404: an unknown
            model or index; 413: over a size limit).
    """

    def __init__(self, message: str, field: str | None = None, status: int = 422):
        super().__init__(render(message))
        self.message = message  # as written, naming settings with S (words)
        self.field = field
        self.status = status

    def words(self, namer=None) -> str:
        """The message with each setting it names (:data:`S`) written as ``namer`` says
        (:func:`render`); ``str(exc)`` names them by their field names."""
        return render(self.message, namer)


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, at most ``limit`` characters; the
    exception's class name when the message is empty (for one-line error messages)."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__


MISSING = type("Missing", (), {"__repr__": lambda self: "MISSING"})()  # an OptionError's value when none was given


class OptionError(EncodrError):
    """A bad value of one option, kept apart so that each front end words it its own way.

    The CLI says ``--mode hybird: not one of dense, keyword, hybrid``; the HTTP API and MCP
    say ``mode: 'hybird' is not one of dense, keyword, hybrid`` (:meth:`flagged`).

    Args:
        field: the option's name (a request field, ``snake_case``).
        value: the value given.
        problem: what is wrong, as a predicate of the value: ``"is not one of a, b"``,
            ``"must be 1 or more"``.
        status: the HTTP status (422 unless said).
    """

    def __init__(self, field: str, value, problem: str, status: int = 422):
        self.value, self.problem = value, problem
        super().__init__(
            f"{field} {problem}" if value is MISSING else f"{field}: {value!r} {problem}", field=field, status=status
        )

    def flagged(self, flag: str | None = None) -> str:
        """The message with the option named as a front end names it: ``flag`` (the CLI's
        ``--mode``), or by default the field's own name (HTTP, MCP)."""
        if flag is None:
            return str(self)
        if self.value is MISSING:
            return f"{flag} {self.problem}"
        problem = self.problem[3:] if self.problem.startswith("is ") else self.problem
        return f"{flag} {self.value}: {problem}"


def one_of(field: str, value, choices) -> None:
    """Raise :class:`OptionError` unless ``value`` is in ``choices`` (a tuple of strings)."""
    if value not in choices:
        raise OptionError(field, value, f"is not one of {', '.join(choices)}")


def at_least(field: str, value, low) -> None:
    """Raise :class:`OptionError` unless ``value`` ≥ ``low`` (``None`` passes)."""
    if value is not None and value < low:
        raise OptionError(field, value, f"must be {low} or more")


def between(field: str, value, low, high) -> None:
    """Raise :class:`OptionError` unless ``low`` ≤ ``value`` ≤ ``high``."""
    if value is not None and not low <= value <= high:
        raise OptionError(field, value, f"must be between {low} and {high}")
