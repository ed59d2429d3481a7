"""Named, seeded synthetic instances on which ``cvxrank verify`` checks every solver.

Each :class:`Instance` is a call of :func:`cvxrank.data.synthetic.make_synthetic` with fixed
arguments and seed, plus the hyper-parameters (C) the formulations are built with; the data
are regenerated identically on any machine, so nothing is stored on disk.

Two sets:

* :data:`QUICK` (``cvxrank verify``: every registered pair in well under a minute and a
  half of CPU, references included): two instances of roughly 900 and 4,400 preference
  pairs;
* :data:`DEFAULT` (added by ``cvxrank verify --all``, some minutes; ``cvxrank figures
  --all``): four instances from about 2,300 to 10,000 pairs, with 10 to 50 features, 3 to 5
  grade levels, several noise levels and seeds, and C from 5e-4 to 1e-2.

Names say what an instance is: ``<set or what is special>-<queries>q-<features>f``
(``wide-60q-50f``: 60 queries, 50 features, 5 to 15 documents per query: wide data;
``grades4-25q-20f``: four grade levels; ``noisy-30q-20f``: five grade levels and the most
label noise). They name the figure files (``<formulation>_<instance>.png``) and the rows of
``verify``'s table.

Choice of C. RankSVM's C multiplies a sum over *pairs*, so the natural scale is ``C * p``
(LETOR 3.0 OHSUMED uses C = 1e-4 with 78,983 pairs per fold, C*p ~ 8). The instances use
``C * p`` between about 4 and 25. With C*p in the thousands (e.g. C = 1 on 2,300 pairs) the
hinge dual's box is so large against the step 1/L that plain projected gradient is still at
a relative gap of 2e-4 after 10^5 iterations, as its ``O(L R^2 / k)`` bound predicts; such
instances test patience, not correctness.

Other methods' C. Where a method's loss term sums over other things than RankSVM's pairs,
the instance's C (chosen for RankSVM) is rescaled so that the loss term has the same weight;
each family's registry module states its rescaling (:data:`cvxrank.registry.C_SCALE`,
:meth:`cvxrank.registry.Entry.instance_params`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cvxrank.data.pairs import count_pairs
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.synthetic import SyntheticSpec


@dataclass(frozen=True)
class Instance(SyntheticSpec):
    """A named synthetic data set and the hyper-parameters to build formulations with.

    Attributes
    ----------
    name : str
        Short name used in tables, file names and ``--only``.
    n_queries, docs_per_query, n_features, n_grades, noise, seed
        The data set (:class:`~cvxrank.data.synthetic.SyntheticSpec`).
    params : dict
        Hyper-parameters (e.g. ``{"C": 0.01}``) passed to each registry entry's
        ``make_formulation`` (entry defaults are overridden by these).
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def data(self) -> RankingData:
        """The data set (generated once per process, then cached)."""
        return self.generate()

    def describe(self) -> dict[str, Any]:
        """Summary for tables and JSON."""
        data = self.data()
        return {
            "instance": self.name,
            "n_documents": data.n_documents,
            "n_features": data.n_features,
            "n_queries": self.n_queries,
            "n_pairs": int(count_pairs(data).sum()),
            "seed": self.seed,
            **self.params,
        }


#: ``cvxrank verify`` (and ``cvxrank figures --quick``): one small instance, on which every
#: family and every solver runs in about a minute of CPU.
QUICK: tuple[Instance, ...] = (
    Instance("quick-10q-10f", n_queries=10, docs_per_query=(10, 30), n_features=10, seed=0,
             params={"C": 5e-3}),
)

#: Added by ``cvxrank verify --all`` (and ``cvxrank figures --all``): a second small one with
#: four grades, and four larger ones.
DEFAULT: tuple[Instance, ...] = (
    Instance("quick-15q-15f", n_queries=15, docs_per_query=(20, 40), n_features=15,
             n_grades=4, seed=1, params={"C": 1e-3}),
    Instance("base-20q-10f", n_queries=20, docs_per_query=(10, 30), n_features=10, seed=2,
             params={"C": 1e-2}),
    Instance("wide-60q-50f", n_queries=60, docs_per_query=(5, 15), n_features=50,
             noise=0.25, seed=5, params={"C": 1e-2}),
    Instance("grades4-25q-20f", n_queries=25, docs_per_query=(20, 40), n_features=20,
             n_grades=4, seed=3, params={"C": 2e-3}),
    Instance("noisy-30q-20f", n_queries=30, docs_per_query=(20, 40), n_features=20,
             n_grades=5, noise=1.0, seed=4, params={"C": 5e-4}),
)

#: Every named instance, by name.
ALL: dict[str, Instance] = {inst.name: inst for inst in QUICK + DEFAULT}


def instance_set(quick: bool = False) -> tuple[Instance, ...]:
    """:data:`QUICK` or :data:`DEFAULT` (the instances of ``cvxrank figures --quick`` and
    ``--all``; ``cvxrank verify`` runs :data:`QUICK`, with ``--all`` both)."""
    return QUICK if quick else DEFAULT


def get_instance(name: str) -> Instance:
    """The instance called ``name``; ValueError naming the known ones otherwise."""
    try:
        return ALL[name]
    except KeyError:
        raise ValueError(f"unknown instance {name!r}; known: {', '.join(ALL)}") from None
