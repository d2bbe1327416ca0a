"""The one exception type that reaches the user as a one-line message."""


class LayoutbenchError(Exception):
    """A problem with the user's input or environment.

    The message is one line that names the thing and says what to do; the CLI
    prints it without a traceback and exits non-zero.
    """

    exit_code = 2


class BuildFailed(LayoutbenchError):
    """Compiling a commit failed (the commit may be skipped in a bisection)."""
