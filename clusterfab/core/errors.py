"""Exceptions that end a command cleanly, each with its exit code (architecture §4).

Exit codes: 0 success, 1 findings at error level or a gate refused, 2 usage error, 3 internal error.
Only the CLI's error boundary turns these into output; library code raises them.
"""

from __future__ import annotations


class ClusterfabError(Exception):
    """An expected failure with a one-line explanation and an exit code."""

    exit_code = 3


class UsageError(ClusterfabError):
    """The command line is wrong: a missing file, a bad flag value, a tool that is not installed."""

    exit_code = 2


class RefusedError(ClusterfabError):
    """A gate refused to go on (promotion checks, budget); the reason is the message."""

    exit_code = 1
