"""One loader for every kernel file: ahead of time, just in time, or the numpy fallback.

A kernel file (the sorted pair-loss passes, the l1,inf projection, the SVMlight reader)
holds plain Python loops and declares them once as a :class:`KernelFile`: which functions,
their numba signatures, and how long its numpy fallback may run in a process before the
compiled kernels are loaded. The kernels come from the file's ahead-of-time extension
module when ``make install`` built it for this version of the file (:mod:`cvxrank.compiled.aot`:
loaded in well under a millisecond, without numba), else from numba, imported and compiled
(or loaded from numba's cache) on first use. A process that runs only small problems never
imports numba: the kernel file runs its numpy method and charges its time here
(:meth:`KernelFile.charge_numpy`) until :attr:`KernelFile.numpy_budget` is spent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from cvxrank.compiled import aot


def inline_helpers(namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Make the functions ``names`` of a kernel file's ``namespace`` (its ``globals()``) numba
    functions inlined into the kernels that call them (numba imported here; once per
    process): a kernel file's ``prepare``."""
    from numba import njit
    from numba.core.registry import CPUDispatcher

    for name in names:
        if not isinstance(namespace[name], CPUDispatcher):
            namespace[name] = njit(cache=True, nogil=True, inline="always")(namespace[name])


class KernelFile:
    """The compiled kernels of one kernel file and the process's state of them.

    Parameters
    ----------
    source : str or path
        The kernel file (its ``__file__``): the ahead-of-time module is named by its digest.
    kernels : dict of str to (callable, str)
        ``name: (python function, numba signature)``; a name is the ahead-of-time module's
        export and the key of :meth:`dispatchers` (two names may share a function, compiled
        for two signatures).
    warm : callable
        ``warm(dispatchers)`` calls each kernel once on tiny arguments of the types the file
        passes (:meth:`warm_up`).
    numpy_budget : float
        Seconds the file's numpy method may spend in a process before :meth:`use_compiled`
        loads the compiled kernels (0: as soon as it is asked).
    prepare : callable, optional
        Run once before numba compiles the kernels (e.g. making their helpers numba
        functions).

    Attributes
    ----------
    loaded : bool
        Whether the compiled kernels are loaded and warmed up in this process.
    numpy_seconds : float
        Seconds the numpy method has spent in this process.
    """

    def __init__(self, source: str | os.PathLike[str],
                 kernels: dict[str, tuple[Callable[..., Any], str]],
                 warm: Callable[[dict[str, Callable[..., Any]]], None], *,
                 numpy_budget: float = 0.0, prepare: Callable[[], None] | None = None) -> None:
        self.source = os.fspath(source)
        self.kernels = kernels
        self.warm = warm
        self.numpy_budget = numpy_budget
        self.prepare = prepare
        self.loaded = False
        self.numpy_seconds = 0.0
        self._dispatchers: dict[str, Callable[..., Any]] | None = None

    @property
    def ahead(self) -> bool:
        """Whether the ahead-of-time module is built for this version of the file."""
        return aot.load(self.source) is not None

    def dispatchers(self) -> dict[str, Callable[..., Any]]:
        """The compiled kernels by name: the ahead-of-time module's functions, else numba's
        dispatchers (numba imported here, on first use)."""
        if self._dispatchers is None:
            ahead = aot.load(self.source)
            if ahead is not None:
                self._dispatchers = {name: getattr(ahead, name) for name in self.kernels}
                self.loaded = True
            else:
                from numba import njit

                if self.prepare is not None:
                    self.prepare()
                compile_ = njit(cache=True, nogil=True)
                self._dispatchers = {name: compile_(fn) for name, (fn, _) in
                                     self.kernels.items()}
        return self._dispatchers

    def build_ahead(self) -> None:
        """Compile the kernels ahead of time (:func:`cvxrank.compiled.aot.build`; ``make
        install``)."""
        if self.prepare is not None:
            self.prepare()
        aot.build(self.source, dict(self.kernels))

    def warm_up(self) -> None:
        """Load the compiled kernels and call each once (compiling them, or loading them
        from numba's cache, without the ahead-of-time module); from then on this process
        uses them."""
        self.warm(self.dispatchers())
        self.loaded = True

    def use_compiled(self, *, needed: bool = False) -> bool:
        """Whether the next call should be the compiled kernels': True when they are loaded
        or built ahead of time; when the numpy method does not apply (``needed``) or has
        spent :attr:`numpy_budget` in this process, they are loaded here (:meth:`warm_up`)
        and True; else False."""
        if self.loaded or self.ahead:
            return True
        if needed or self.numpy_seconds >= self.numpy_budget:
            self.warm_up()
            return True
        return False

    def charge_numpy(self, seconds: float) -> None:
        """Add ``seconds`` spent in the numpy method to this process's account."""
        self.numpy_seconds += seconds
