"""Clean layers: no import circle between cvxrank's modules, no import from a higher layer.

The test reads, with :mod:`ast`, every ``import`` and ``from ... import`` of a cvxrank
module in every file of the package: at module level, inside functions and under
``if TYPE_CHECKING:`` alike (a deferred import is still a dependency). ``from cvxrank.x
import y`` depends on the module ``cvxrank.x.y`` when there is one, else on ``cvxrank.x``;
relative imports are resolved. (That importing a submodule runs its packages' ``__init__``
is not counted: only what a file itself imports.)

Layers, lowest first; a module may import from its own layer and the layers below, and the
modules of one layer must not import each other in a circle. A module belongs to the layer
of the longest name below that is its own name or a package holding it (``cvxrank`` stands
for the package's ``__init__`` only: a new top-level module must be placed).

The layers follow the folders of the package; a folder's ``__init__`` holds only its
docstring and sits in the foundation, its modules in their layer.

1. **foundation** (no cvxrank import but errors): ``errors``, ``tolerances``, ``methods``
   (the table of methods names its classes by import path and imports them on first use,
   so it sits below what it names), ``losses/`` (the pair-loss type and the built-in
   losses), ``utils/`` (JSON values, BLAS threads, output files),
   ``compiled.aot``, ``numerics.rounding`` and ``numerics.compensated``.
2. **data**: ``data/`` (readers, pairs, normalization, the saved model's format
   ``data.model_file``, the named synthetic instances ``data.instances``) and the package
   ``cvxrank`` itself (its top-level names are data's).
3. **numerics**: ``metrics``, ``numerics/`` (sets and projections, the l1,inf kernel, the
   one-block master's active-set kernel, kernels, cutting planes).
4. **model**: ``formulations/``, ``oracles/``, ``core/`` (the solver contract
   ``core.capabilities`` and the run loop ``core.trace``), ``compiled.precompile`` (builds
   the compiled kernels of the layers up to here).
5. **certificates**: ``certificates/`` (the certified CVXPY optimum ``reference``,
   ``validate``, ``certify``, ``measure_certificate``, ``zero_certificate``); below the
   solvers, which certify against references.
6. **solvers**: ``solvers/`` (with the peers' fits, ``solvers.baselines``).
7. **registry**: ``registry/``.
8. **verification and fitting**: ``verification.sweep``, ``fitting``, ``distributed/`` (one
   fit over data sharded across a Dask cluster, through ``fitting``).
9. **estimators**.
10. **plots** and ``sandbox/``: generic trace figures; an experiment's figures live with
    the experiment.
11. **experiment protocol**: the package ``experiments`` and its shared modules (tasks,
    sources, backends, configurations, grids, selection, the LETOR protocol, reports,
    timing).
12. **reproductions**: ``experiments.chapelle``, ``experiments.agarwal_collins``,
    ``experiments.conerank``, ``experiments.le_smola``, ``experiments.rankmm_convergence``.
13. **cli**.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

import cvxrank

PACKAGE = Path(cvxrank.__file__).parent

#: The layers, lowest first: module names (a package stands for its modules).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cvxrank.errors", "cvxrank.tolerances", "cvxrank.methods", "cvxrank.utils", "cvxrank.losses",
     "cvxrank.compiled", "cvxrank.core", "cvxrank.numerics", "cvxrank.certificates",
     "cvxrank.verification"),
    ("cvxrank", "cvxrank.data"),
    ("cvxrank.metrics", "cvxrank.numerics.sets", "cvxrank.numerics.l1inf_kernels",
     "cvxrank.numerics.simplex_kernels",
     "cvxrank.numerics.kernel", "cvxrank.numerics.cuts"),
    ("cvxrank.formulations", "cvxrank.oracles", "cvxrank.core.capabilities",
     "cvxrank.core.protocols",
     "cvxrank.core.trace", "cvxrank.compiled.precompile"),
    ("cvxrank.certificates.reference", "cvxrank.certificates.validate",
     "cvxrank.certificates.certify", "cvxrank.certificates.zero_certificate",
     "cvxrank.certificates.measure_certificate"),
    ("cvxrank.solvers",),
    ("cvxrank.registry",),
    ("cvxrank.verification.sweep", "cvxrank.fitting", "cvxrank.distributed"),
    ("cvxrank.estimators",),
    ("cvxrank.plots", "cvxrank.sandbox"),
    ("cvxrank.experiments",),
    ("cvxrank.experiments.chapelle", "cvxrank.experiments.agarwal_collins",
     "cvxrank.experiments.conerank", "cvxrank.experiments.le_smola",
     "cvxrank.experiments.rankmm_convergence"),
    ("cvxrank.cli",),
)


def module_name(path: Path) -> str:
    """``cvxrank/experiments/tasks.py`` -> ``cvxrank.experiments.tasks`` (a package's
    ``__init__.py`` is the package)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package by name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _owner(name: str, known: Iterable[str]) -> str | None:
    """The module ``name`` names, or the nearest package holding it (None: not cvxrank)."""
    known = set(known)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imported_modules(source: str, name: str, *, is_package: bool,
                     known: Iterable[str]) -> set[str]:
    """The cvxrank modules the file of module ``name`` imports (module docstring), itself
    left out."""
    known = set(known)
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known
                       else origin for alias in node.names]
        else:
            continue
        found |= {owner for t in targets if (owner := _owner(t, known)) is not None}
    found.discard(name)
    return found


@functools.cache
def graph() -> dict[str, frozenset[str]]:
    """Module -> the cvxrank modules it imports."""
    known = modules()
    return {name: frozenset(imported_modules(path.read_text(encoding="utf-8"), name,
                                             is_package=path.name == "__init__.py",
                                             known=known))
            for name, path in known.items()}


def layer_of(name: str) -> int | None:
    """The position in :data:`LAYERS` of the longest entry that is ``name`` or a package
    holding it (``cvxrank`` holds nothing)."""
    best, where = "", None
    for i, layer in enumerate(LAYERS):
        for entry in layer:
            holds = entry != "cvxrank" and name.startswith(entry + ".")
            if (name == entry or holds) and len(entry) > len(best):
                best, where = entry, i
    return where


def circles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def test_every_module_has_a_layer() -> None:
    unplaced = [name for name in modules() if layer_of(name) is None]
    assert not unplaced, f"place these modules in LAYERS: {unplaced}"


#: Modules directly in ``cvxrank/`` (``__init__`` included): the layers live in folders.
ROOT_MODULES = ("__init__", "errors", "tolerances", "methods", "metrics", "fitting",
                "estimators", "plots")


def test_the_package_root_holds_few_modules() -> None:
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == sorted(ROOT_MODULES)


def test_a_folders_init_is_only_its_docstring() -> None:
    """A layer folder's ``__init__`` imports nothing (it sits in the foundation)."""
    for name in ("utils", "core", "numerics", "compiled", "certificates", "verification"):
        tree = ast.parse((PACKAGE / name / "__init__.py").read_text())
        assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr), name


def test_no_module_imports_from_a_higher_layer() -> None:
    upward = [f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})"
              for name, targets in graph().items() for target in sorted(targets)
              if layer_of(target) > layer_of(name)]  # type: ignore[operator]
    assert not upward, "\n".join(upward)


def test_no_import_circle() -> None:
    found = circles(graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_reader_sees_deferred_relative_and_submodule_imports() -> None:
    """The checks above can fail: function-level, ``TYPE_CHECKING``, relative and
    ``from package import submodule`` imports are all read, and a circle is found."""
    source = '''
from typing import TYPE_CHECKING

from . import sibling
from cvxrank import tolerances
from cvxrank.data import RankingData

if TYPE_CHECKING:
    from cvxrank.core.trace import Run


def later():
    import cvxrank.plots as plots
    from ..cli.common import emit_json
'''
    known = {"cvxrank", "cvxrank.tolerances", "cvxrank.data", "cvxrank.core.trace", "cvxrank.plots",
             "cvxrank.cli", "cvxrank.cli.common", "cvxrank.experiments",
             "cvxrank.experiments.sibling", "cvxrank.experiments.me"}
    assert imported_modules(source, "cvxrank.experiments.me", is_package=False,
                            known=known) == {
        "cvxrank.experiments.sibling", "cvxrank.tolerances", "cvxrank.data", "cvxrank.core.trace",
        "cvxrank.plots", "cvxrank.cli.common"}
    assert layer_of("cvxrank.experiments.conerank.protocol") == layer_of("cvxrank.cli") - 1
    assert layer_of("cvxrank.new_module") is None
    assert circles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}),
                    "d": frozenset({"a"})}) == [["a", "b", "c"]]


def test_no_attribute_probing_in_solvers_or_formulations() -> None:
    """Solvers and formulations dispatch on declared capabilities and typed protocols, never
    on ``hasattr``."""
    probing = [f"{path.relative_to(PACKAGE)}:{node.lineno}"
               for folder in ("solvers", "formulations")
               for path in sorted((PACKAGE / folder).rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
               and node.func.id == "hasattr"]
    assert not probing, probing


#: Most lines of a function of the solvers and of the run loop, its docstring not counted.
MAX_FUNCTION_LINES = 80


def test_solvers_and_the_run_loop_are_small_functions() -> None:
    long = []
    for folder in ("solvers", "core"):
        for path in sorted((PACKAGE / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                first = node.body[0]
                docstring = (first.end_lineno - first.lineno + 1
                             if isinstance(first, ast.Expr)
                             and isinstance(first.value, ast.Constant) else 0)
                lines = node.end_lineno - node.lineno + 1 - docstring
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.name} ({lines} lines)")
    assert not long, long
