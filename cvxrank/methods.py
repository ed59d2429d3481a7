"""The table of methods: the one place that says which ranking methods cvxrank fits.

Each row names a method as ``cvxrank fit --method``, ``cvxrank grid --method`` and the
estimators know it, its formulation class, its losses (the one list of each family), its
parameters (:class:`Param`: what ``fit`` takes on the command line, with their checks), its
scikit-learn style estimator and the solvers ``"auto"`` tries, in order of preference (the
first whose needs the formulation meets, :func:`cvxrank.fitting.default_solver`). Classes
are named by import path and loaded on first use, so reading the table (``cvxrank --help``)
imports nothing heavy.

Adding a method family is its formulation module, its solver module(s), its registry module
(:mod:`cvxrank.registry`) and one row here (``docs/adding-a-method.md``).
"""

from __future__ import annotations

import importlib
import math
import numbers
from dataclasses import dataclass
from typing import Any

from cvxrank.tolerances import C_RANGE

#: The pair losses of the RankSVM family (hinge, squared hinge, Huber).
PAIR_LOSSES = ("hinge", "squared_hinge", "huber")

#: RankMM's query-level losses, in the paper's order (RankMM-1, -2, -3).
RANKMM_LOSSES = ("average", "max", "max_average")

#: DORM's losses (17), named by their measure (``cvxrank.formulations.dorm.parse_measure``
#: takes any cut-off; these are the ones the command line offers).
DORM_LOSSES = ("ndcg@10", "mrr", "wta", "p@10", "eru", "dcg@10", "normalized_eru", "mwta")


def load(path: str) -> Any:
    """The object named ``"package.module:Name"``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def is_reference(text: str) -> bool:
    """Whether ``text`` has the form ``"package.module:name"`` (:func:`load`)."""
    module, colon, name = text.partition(":")
    return bool(colon and name.isidentifier()
                and all(part.isidentifier() for part in module.split(".")))


@dataclass(frozen=True)
class Interval:
    """Numbers within bounds, the constraint of a numeric parameter (scikit-learn's
    ``Interval`` of ``_parameter_constraints``).

    Attributes
    ----------
    integer : bool
        Integers only (else any finite real number).
    low : float
        The lower bound.
    high : float or None
        The upper bound (None: none).
    open_low : bool
        Whether ``low`` itself is excluded.
    note : str
        Said after the bounds in a refusal (where they come from).
    """

    integer: bool
    low: float
    high: float | None = None
    open_low: bool = False
    note: str = ""

    def describe(self) -> str:
        """The accepted values in words (``"a finite number > 0"``, ``"in [1e-12, 1e+12]"``)."""
        if self.high is not None:
            return f"in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"
        what = "an integer" if self.integer else "a finite number"
        return f"{what} {'>' if self.open_low else '>='} {self.low:g}"

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` (a Python or JSON number, not a boolean) is within the bounds."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.integer and not isinstance(value, numbers.Integral):
            return False
        try:
            x = float(value)
        except OverflowError:
            return False
        above = x > self.low if self.open_low else x >= self.low
        return math.isfinite(x) and above and (self.high is None or x <= self.high)

    def check(self, name: str, value: Any) -> Any:
        """``value`` (a float, or an int for an integer parameter), or ValueError naming
        ``name``, the bounds and the value."""
        if self.integer:
            if not self.accepts(value):
                raise ValueError(f"{name} must be {self.describe()}{self.note}, got {value!r}")
            return int(value)
        number = float(value)
        if not self.accepts(number):
            raise ValueError(f"{name} must be {self.describe()}{self.note}, got {number:g}")
        return number


@dataclass(frozen=True)
class Options:
    """One of a few names, the constraint of a choice (scikit-learn's ``StrOptions``)."""

    values: tuple[str, ...]

    def describe(self) -> str:
        """The accepted values in words."""
        return f"one of {', '.join(self.values)}"

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is one of :attr:`values`."""
        return isinstance(value, str) and value in self.values

    def check(self, name: str, value: Any) -> str:
        """``value``, or ValueError naming ``name`` and the choices."""
        if not self.accepts(value):
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}")
        return value


#: A finite number > 0 (a step size).
POSITIVE = Interval(integer=False, low=0.0, open_low=True)

#: An integer >= 1 (a count).
COUNT = Interval(integer=True, low=1)


@dataclass(frozen=True)
class Param:
    """A parameter a method takes beyond its loss, declared once: ``cvxrank fit --NAME``
    parses it, the estimators and the formulations check it, model files and shards read it
    by its :attr:`constraint`.

    Attributes
    ----------
    name : str
        The keyword (``"C"``, ``"K"``, ``"mu"``) and the option ``--NAME``.
    constraint : Interval or Options
        The values it accepts.
    target : {"formulation", "solver"}
        Passed to the formulation's constructor, or to the solver as its own option.
    help : str
        One line for ``--help``.
    default : object
        The command line's default (None: the formulation's or solver's own).
    """

    name: str
    constraint: Interval | Options
    target: str
    help: str
    default: Any = None

    def __post_init__(self) -> None:
        if self.target not in ("formulation", "solver"):
            raise ValueError(f"{self.name}: unknown target {self.target!r}")

    @property
    def choices(self) -> tuple[str, ...]:
        """The names of a choice (empty for a number)."""
        return self.constraint.values if isinstance(self.constraint, Options) else ()

    def check(self, value: Any) -> Any:
        """``value`` checked (:meth:`Interval.check`, :meth:`Options.check`)."""
        return self.constraint.check(self.name, value)


#: The loss weight C of every max-margin family (Chapelle & Keerthi eq. (1); Agarwal &
#: Collins' C/m per query; Le & Smola's C), in :data:`cvxrank.tolerances.C_RANGE`.
C_PARAM = Param("C", Interval(integer=False, low=C_RANGE[0], high=C_RANGE[1],
                              note=" (cvxrank.tolerances.C_RANGE: the range over which the "
                                   "solvers are tested)"),
                "formulation", "weight of the loss term: for ranksvm, irsvm "
                "and ocsvm (1/2)||w||^2 + C sum loss (Chapelle & Keerthi's eq. (1); their "
                "Matlab code's C is twice this); for rankmm, dorm and svmmap (1/2)||w||^2 + "
                "(C/m) sum_i L_i with m the number of training queries, Agarwal & Collins' C "
                "(default 1); the objective reported is this primal at the fitted w",
                default=1.0)


#: ConeRank's number of basis vectors (Tran & Pham, Sect. 4).
K_PARAM = Param("K", COUNT, "formulation", "number of basis vectors (default 10, the paper's)")

#: How a ConeRank model scores documents (Alg. 2's vote, or the linear scorer).
SCORING_PARAM = Param("scoring", Options(("vote", "linear")), "formulation", "how the model "
                      "scores documents: Alg. 2's vote per query (default) or the equivalent "
                      "linear scorer pinv(U)^T 1")

#: The step of ConeRank's stochastic solvers.
MU_PARAM = Param("mu", POSITIVE, "solver", "step of the stochastic solvers (default the "
                 "paper's: 0.001 for stochastic-sg, 0.005 for stochastic-eg)")


@dataclass(frozen=True)
class Method:
    """One row of the methods table.

    Attributes
    ----------
    name : str
        The method's name (``"ranksvm"``).
    formulation : str
        Import path of its :class:`~cvxrank.formulations.base.Formulation` class; it is
        called as ``cls(data, loss=loss, **params)`` (``loss`` only when the method has more
        than one).
    losses : tuple of str
        The losses it accepts; the first is the default.
    solvers : tuple of str
        Hand-written solvers ``"auto"`` tries, in order.
    description : str
        One line for listings and help.
    params : tuple of Param
        The parameters ``fit`` takes for it besides the loss.
    estimator : str
        Import path of its scikit-learn style estimator (default: the generic
        :class:`~cvxrank.estimators.MethodRanker`, which takes the method's name).
    """

    name: str
    formulation: str
    losses: tuple[str, ...]
    solvers: tuple[str, ...]
    description: str
    estimator: str = "cvxrank.estimators:MethodRanker"
    params: tuple[Param, ...] = (C_PARAM,)

    @property
    def default_loss(self) -> str:
        """The first loss of :attr:`losses`."""
        return self.losses[0]

    @property
    def takes_pair_losses(self) -> bool:
        """Whether the method's losses are pair losses (:mod:`cvxrank.losses`): it then also
        takes a loss object, or a loss named ``"module:object"``."""
        return set(self.losses) == set(PAIR_LOSSES)

    def check_loss(self, loss: Any) -> Any:
        """``loss`` (default :attr:`default_loss`); ValueError if the method lacks it. A loss
        object (not a name: any pair loss, or one of the method's own such as RankMM's
        :data:`cvxrank.formulations.query_losses.maximum`), or the one a ``"module:object"``
        name imports, is passed on to the formulation, which checks it."""
        loss = self.default_loss if loss is None else loss
        if isinstance(loss, str) and self.takes_pair_losses and is_reference(loss):
            try:
                loss = load(loss)
            except (ImportError, AttributeError) as exc:
                raise ValueError(f"loss {loss!r}: cannot import it ({exc})") from None
        if not isinstance(loss, str):
            if not (self.takes_pair_losses or getattr(loss, "name", None) in self.losses):
                raise ValueError(f"method {self.name} takes one of its losses "
                                 f"{', '.join(self.losses)}, by name or as the object; "
                                 f"got {loss!r}")
            return loss
        if loss not in self.losses:
            raise ValueError(f"method {self.name} has the losses {', '.join(self.losses)}; "
                             f"got {loss!r}")
        return loss

    def formulation_class(self) -> type:
        """The formulation class (imported on first use)."""
        return load(self.formulation)

    def estimator_class(self) -> type:
        """The estimator class (imported on first use)."""
        return load(self.estimator)

    def make_estimator(self, **params: Any) -> Any:
        """The method's estimator with those of ``params`` it takes (C, loss, solver, ...)."""
        estimator = self.estimator_class()()
        accepted = estimator.get_params()
        if "method" in accepted:
            params["method"] = self.name
        return estimator.set_params(**{k: v for k, v in params.items() if k in accepted})

    def build(self, data: Any, *, loss: Any = None, **params: Any) -> Any:
        """The method's formulation on ``data`` with ``loss`` and hyper-parameters.

        ValueError naming the formulation's parameters (and the method's estimator) for a
        parameter it does not take (``C`` for ConeRank, say, from ``MethodRanker``).
        """
        import inspect

        loss = self.check_loss(loss)
        if len(self.losses) > 1:
            params["loss"] = loss
        cls = self.formulation_class()
        taken = inspect.signature(cls).parameters
        unknown = [k for k in params if k not in taken]
        if unknown and not any(p.kind is p.VAR_KEYWORD for p in taken.values()):
            names = [k for k, p in taken.items() if p.kind is p.KEYWORD_ONLY]
            raise ValueError(f"method {self.name} takes no {', '.join(unknown)} (its "
                             f"parameters: {', '.join(names)}); its estimator is "
                             f"{self.estimator}")
        return cls(data, **params)


#: Every method, in the order listings show them.
METHODS: dict[str, Method] = {m.name: m for m in (
    Method("ranksvm", "cvxrank.formulations.ranksvm:RankSVM", ("squared_hinge", "hinge", "huber"),
           ("prsvm+", "prsvm", "1-slack", "apg"),
           "RankSVM on all preference pairs (Herbrich/Joachims; Chapelle & Keerthi eq. (1))",
           "cvxrank.estimators:RankSVMRanker"),
    Method("irsvm", "cvxrank.formulations.irsvm:IRSVM", ("squared_hinge", "hinge", "huber"),
           ("prsvm+", "prsvm", "1-slack", "apg"),
           "IR SVM: pair weights tau_k mu_q (Li 2011, Sect. 4.2)",
           "cvxrank.estimators:IRSVMRanker"),
    Method("ocsvm", "cvxrank.formulations.ocsvm:OrdinalSVM", ("hinge",), ("apg",),
           "fixed-margin ordinal SVM, thresholds between grades (Li 2011, Sect. 3.1)",
           "cvxrank.estimators:OrdinalSVMRanker"),
    Method("rankmm", "cvxrank.formulations.rankmm:RankMM", RANKMM_LOSSES,
           ("cutting-plane", "apg", "sgp", "seg"),
           "RankMM-1/2/3: query-level relevance-weighted hinge (Agarwal & Collins 2010)",
           "cvxrank.estimators:RankMMRanker"),
    Method("conerank", "cvxrank.formulations.conerank:ConeRank", ("squared_distance",),
           ("stochastic-sg", "stochastic-eg", "alternation-sg", "alternation-eg"),
           "ConeRank: a K-vector cone basis for the pair differences, (18), Alg. 1, voting "
           "Alg. 2 (Tran & Pham)",
           "cvxrank.estimators:ConeRankRanker", params=(K_PARAM, SCORING_PARAM, MU_PARAM)),
    Method("dorm", "cvxrank.formulations.dorm:DORM", DORM_LOSSES, ("cutting-plane",),
           "DORM: structured max-margin ranking over permutations (Le & Smola (27))"),
    Method("svmmap", "cvxrank.formulations.svmmap:SVMMAP", ("map",), ("cutting-plane",),
           "SVM MAP: structural SVM with the loss 1 - AP (Yue et al. 2007; Li Sect. 5.1)"),
)}


def get(name: str) -> Method:
    """The method called ``name``; ValueError listing the known ones."""
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}") from None
