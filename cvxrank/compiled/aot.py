"""Kernels compiled ahead of time, at install, and loaded without numba.

cvxrank's loops (the sorted passes of PRSVM+ and the 1-slack, the SVMlight reader of large
files, RankMM-3's l1,inf projection) are plain Python functions that numba compiles. Compiled
just in time, every process pays for importing numba and loading the cached machine code
(0.55-0.6 s of CPU and about 110 MB here) before its first call. ``make install``
(``python -m cvxrank.compiled.precompile``) therefore also compiles them ahead of time with
``numba.pycc``, for the argument types cvxrank passes, into one extension module per kernel
file, written beside it (``_aot_<file>_<digest>.<ext>``). Importing that module costs well
under a millisecond and does not import numba; its functions run the same machine code as the
just-in-time kernels (the same source, compiled by the same LLVM for this CPU): the results
are identical, bit for bit, which ``tests/numerics/test_aot.py`` checks.

The digest is that of the kernel file's bytes and of the instruction sets the CPU reports, so
an edited file never loads a module built from an older version of it, nor a copied
environment one built on another CPU: until ``make install`` runs again, the file's kernels are
compiled just in time, as before. ``CVXRANK_AOT=0`` in the environment does the same
(benchmarks use it to time both).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

#: The modules loaded in this process, by kernel file (None: there is none to load).
_LOADED: dict[str, ModuleType | None] = {}


def module_name(source: str | os.PathLike[str]) -> str:
    """The name of the ahead-of-time module of the kernel file ``source`` on this CPU (the
    digest of the file's bytes and :func:`cpu_tag`)."""
    path = Path(source)
    digest = hashlib.sha256(path.read_bytes() + cpu_tag().encode()).hexdigest()[:16]
    return f"_aot_{path.stem}_{digest}"


@functools.cache
def cpu_tag() -> str:
    """The instruction sets this CPU reports (the ``flags`` of ``/proc/cpuinfo``; the
    machine and processor names where there is no such file), so that a module built on
    another CPU, or with instruction sets a virtual machine has since masked, is not loaded
    (it could stop on an illegal instruction) and the kernels compile just in time."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith(("flags", "Features")):
                    return " ".join(sorted(line.partition(":")[2].split()))
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()}"


def module_path(source: str | os.PathLike[str]) -> Path:
    """Where the ahead-of-time module of the kernel file ``source`` is (or would be)."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return Path(source).with_name(module_name(source) + suffix)


def enabled() -> bool:
    """Whether ahead-of-time modules may be loaded (``CVXRANK_AOT`` is not ``0``)."""
    return os.environ.get("CVXRANK_AOT", "1").strip() != "0"


def load(source: str) -> ModuleType | None:
    """The ahead-of-time module of the kernel file ``source``, or None when it was not built
    for this version of the file (or ``CVXRANK_AOT=0``): the caller then compiles its kernels
    just in time.
    """
    if source not in _LOADED:
        _LOADED[source] = _import(module_path(source)) if enabled() else None
    return _LOADED[source]


def _import(path: Path) -> ModuleType | None:
    """The extension module at ``path``, or None when there is none or it does not load."""
    if not path.is_file():
        return None
    name = path.name.split(".", 1)[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:  # built for another Python or machine: compile just in time
        return None
    return module


@contextlib.contextmanager
def _host_features() -> Iterator[None]:
    """Let ``numba.pycc`` compile with the instruction sets this CPU reports.

    ``numba.pycc`` takes a CPU model (``target_cpu``) but no feature list, and for a model
    it enables every instruction set of that model (``AOTCPUCodegen._customize_tm_features``
    returns none of its own). A virtual machine may report a model without some of them (a
    Zen 4 with AVX-512 masked): a module built so stops on an illegal instruction at its
    first call. The just-in-time kernels pass LLVM's host features; while this context is
    open the ahead-of-time code generator does the same.
    """
    from numba.core import codegen

    class HostAOTCodegen(codegen.AOTCPUCodegen):  # type: ignore[misc, name-defined]
        def _customize_tm_features(self) -> str:
            return self._get_host_cpu_features()

    original = codegen.AOTCPUCodegen
    codegen.AOTCPUCodegen = HostAOTCodegen
    try:
        yield
    finally:
        codegen.AOTCPUCodegen = original


def build(source: str, exports: dict[str, tuple[Callable[..., object], str]]) -> Path:
    """Compile ``exports`` (name: (Python function, numba signature)) into the ahead-of-time
    module of the kernel file ``source``, replacing the modules of its older versions.

    The functions' callees must already be numba functions. The module is compiled for this
    machine's CPU, its model and the instruction sets it reports, as the just-in-time kernels
    are (:func:`_host_features`).

    Returns
    -------
    Path
        The module written.

    Raises
    ------
    Exception
        Whatever ``numba.pycc`` raises when the module cannot be built (an ``OSError`` for a
        read-only install, a ``CompileError`` without a C compiler or Python's headers, a
        numba typing error); ``python -m cvxrank.compiled.precompile`` then fills numba's
        just-in-time cache instead.
    """
    import warnings

    with warnings.catch_warnings():  # numba.pycc is marked for a future deprecation
        warnings.simplefilter("ignore")
        from numba.pycc import CC

        target = module_path(source)
        cc = CC(target.name.split(".", 1)[0])
        cc.target_cpu = "host"
        cc.verbose = False
        for name, (function, signature) in exports.items():
            cc.export(name, signature)(function)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".aot-") as staging, \
                _host_features():
            cc.output_dir = staging
            cc.output_file = target.name
            cc.compile()
            os.replace(Path(staging) / target.name, target)
    for old in target.parent.glob(f"_aot_{Path(source).stem}_*"):
        if old != target:
            old.unlink(missing_ok=True)
    _LOADED.pop(source, None)
    sys.modules.pop(target.name.split(".", 1)[0], None)
    return target
