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

The digest is that of the kernel file's bytes, so an edited file never loads a module built
from an older version of it: until ``make install`` runs again, the file's kernels are
compiled just in time, as before. ``CVXRANK_AOT=0`` in the environment does the same
(benchmarks use it to time both).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

#: The modules loaded in this process, by kernel file (None: there is none to load).
_LOADED: dict[str, ModuleType | None] = {}


def module_name(source: str | os.PathLike[str]) -> str:
    """The name of the ahead-of-time module of the kernel file ``source``."""
    path = Path(source)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return f"_aot_{path.stem}_{digest}"


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


def build(source: str, exports: dict[str, tuple[Callable[..., object], str]]) -> Path:
    """Compile ``exports`` (name: (Python function, numba signature)) into the ahead-of-time
    module of the kernel file ``source``, replacing the modules of its older versions.

    The functions' callees must already be numba functions. The module is compiled for this
    machine's CPU (``target_cpu = "host"``), as the just-in-time kernels are.

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
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".aot-") as staging:
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
