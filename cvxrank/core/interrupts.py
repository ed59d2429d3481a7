"""Ctrl-C during a fit, or during a command of many fits.

The first Ctrl-C (SIGINT) inside :func:`interruptible` does not raise: it sets a flag that
the running solver's recorder (:class:`cvxrank.core.trace.TraceRecorder`) reads at its next
record, or between records (:meth:`~cvxrank.core.trace.TraceRecorder.stop_due`), and the fit
returns its last certified iterate with status ``interrupted``. A command of many fits
(``grid``, ``reproduce``, ``verify``, ``figures``) opens one block around them all, and
:func:`raise_if_stopped` ends it as a whole. A second Ctrl-C raises at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

_STOP = threading.Event()

#: How deep the :func:`interruptible` blocks are nested now (commands of many fits open one
#: around them all, :func:`fit_formulation <cvxrank.fitting.fit_formulation>` one per fit),
#: and whether a solver is running in the innermost.
_SCOPES = {"depth": 0, "fitting": 0}


@contextlib.contextmanager
def interruptible(*, command: bool = False) -> Iterator[None]:
    """Inside the block, the first Ctrl-C (SIGINT) asks the running solver to stop.

    The solver's :class:`~cvxrank.core.trace.TraceRecorder` sees the request at its next
    record and returns the run with status ``interrupted`` and its last certified iterate; a
    second Ctrl-C raises :class:`KeyboardInterrupt` as usual. Outside the main thread (where
    Python delivers no signals) the block runs as it is.

    A block opened with ``command=True`` around many fits (``grid``, ``reproduce``,
    ``verify``, ``figures``) makes the first Ctrl-C stop the whole command: the fit running
    then stops at its next record and :func:`raise_if_stopped` (called as each fit ends)
    raises :class:`KeyboardInterrupt`; between fits (a baseline, a worker process's result
    awaited) it is raised at once. The command then writes nothing and exits 130.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _SCOPES["depth"]:  # inside a command's block: its handler stays
        _SCOPES["depth"] += 1
        _SCOPES["fitting"] += not command
        try:
            yield
        finally:
            _SCOPES["depth"] -= 1
            _SCOPES["fitting"] -= not command
        return
    previous = signal.getsignal(signal.SIGINT)

    def request_stop(signum: int, frame: Any) -> None:
        _STOP.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if command and not _SCOPES["fitting"]:  # no solver to stop first: stop now
            raise KeyboardInterrupt

    _STOP.clear()
    signal.signal(signal.SIGINT, request_stop)
    _SCOPES["depth"], _SCOPES["fitting"] = 1, int(not command)
    try:
        yield
    finally:
        _SCOPES["depth"] = _SCOPES["fitting"] = 0
        signal.signal(signal.SIGINT, previous)
        _STOP.clear()


def raise_if_stopped() -> None:
    """Raise :class:`KeyboardInterrupt` when a Ctrl-C asked a command of many fits to stop
    (:func:`interruptible` with ``command=True``; a lone fit returns its run instead)."""
    if _STOP.is_set() and _SCOPES["depth"] > 1:
        raise KeyboardInterrupt




def stop_requested() -> bool:
    """Whether a Ctrl-C inside an :func:`interruptible` block asked the run to stop."""
    return _STOP.is_set()
