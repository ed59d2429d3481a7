"""The table of methods: the one place that says which ranking methods cvxrank fits.

Each row names a method as ``cvxrank fit --method``, ``cvxrank grid --method`` and the
estimators know it, its formulation class, its losses, its scikit-learn style estimator and
the solvers ``"auto"`` tries, in order of preference (the first registered one whose needs
the formulation meets, :func:`cvxrank.fitting.default_solver`). Classes are named by import
path and loaded on first use, so reading the table (``cvxrank --help``) imports nothing
heavy.

Adding a method family is its formulation module, its solver module(s), its registry module
(:mod:`cvxrank.registry`) and one row here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

#: The pair losses of the RankSVM family (hinge, squared hinge, Huber).
PAIR_LOSSES = ("hinge", "squared_hinge", "huber")

#: DORM's losses (17), named by their measure (``cvxrank.formulations.dorm.parse_measure``
#: takes any cut-off; these are the ones the command line offers).
DORM_LOSSES = ("ndcg@10", "mrr", "wta", "p@10", "eru", "dcg@10", "normalized_eru", "mwta")


def load(path: str) -> Any:
    """The object named ``"package.module:Name"``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


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

    @property
    def default_loss(self) -> str:
        """The first loss of :attr:`losses`."""
        return self.losses[0]

    def check_loss(self, loss: str | None) -> str:
        """``loss`` (default :attr:`default_loss`); ValueError if the method lacks it."""
        loss = self.default_loss if loss is None else loss
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

    def build(self, data: Any, *, loss: str | None = None, **params: Any) -> Any:
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
    Method("rankmm", "cvxrank.formulations.rankmm:RankMM", ("average", "max", "max_average"),
           ("cutting-plane", "apg", "sgp", "seg"),
           "RankMM-1/2/3: query-level relevance-weighted hinge (Agarwal & Collins 2010)",
           "cvxrank.estimators:RankMMRanker"),
    Method("conerank", "cvxrank.formulations.conerank:ConeRank", ("squared_distance",),
           ("sg", "eg"),
           "ConeRank: a K-vector cone basis for the pair differences, (18), Alg. 1, voting "
           "Alg. 2 (Tran & Pham); fit by ConeRankRanker or cvxrank fit, not grid",
           "cvxrank.estimators:ConeRankRanker"),
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
