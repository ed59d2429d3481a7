"""Exceptions with messages a user can act on.

Every error that comes from bad input names where the input came from (file and line when
there is one) and what was expected, so that nothing is silently dropped or ignored.
"""

from __future__ import annotations


class CvxrankError(Exception):
    """Base class of cvxrank's own errors (the CLI turns them into exit code 2)."""


class DataFormatError(CvxrankError, ValueError):
    """A malformed input file: the message names the file, the line and what was expected.

    Parameters
    ----------
    path : str
        The file that could not be read.
    line : int or None
        1-based line number, or None when the problem is not tied to one line.
    message : str
        What was found and what was expected.
    """

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class PairLimitError(CvxrankError, MemoryError):
    """Building the preference pairs would exceed the configured limit."""


class SolverError(CvxrankError, RuntimeError):
    """A solver did not reach a certified optimum (status, gap and solver are in the message)."""


class CapabilityError(CvxrankError, TypeError):
    """A solver was given a formulation that lacks a capability it needs (named in the
    message); raised before the solver runs (:func:`cvxrank.core.capabilities.require`)."""


class UsageError(CvxrankError, ValueError):
    """A command line that the parser refuses (unknown option, bad option value, ...).

    The command line reports it like any bad input: exit code 2 and one line
    ``cvxrank: error: <reason>`` on stderr, without argparse's usage block.
    """


class CacheWarning(UserWarning):
    """A cache entry or directory that could not be used (it is re-solved, or skipped)."""
