r"""Tran & Pham (ConeRank), Sect. 6: Table 1 (MQ2008 row), Fig. 3 and Fig. 4 on LETOR 4.0 MQ2008.

The paper trains ConeRank (:class:`~cvxrank.formulations.conerank.ConeRank`, formulation
(18)) with its stochastic Alg. 1 (:func:`~cvxrank.solvers.conerank.solve_stochastic`, SG and
EG folding-in) at K = 10 basis vectors, :math:`\mu` = 0.001 (SG) and 0.005 (EG),
:math:`\alpha = 1`, :math:`\rho = \sqrt N`, :math:`c = 2\rho`, on features "normalized so that
they are roughly distributed as Gaussian with zero means and unit standard deviations"
(Sect. 6.1), and reports MAP and NDCG from LETOR 4.0's evaluation script beside LETOR 4.0's
published baselines (Table 1). Fig. 3 is performance against K and Fig. 4 the eigenvalues of
the non-centred ordered pair differences, both on MQ2007, which is not available here: the
analogues below are on MQ2008.

* :mod:`~cvxrank.experiments.conerank.standardize`: the z-scored folds (the training set's
  mean and standard deviation applied to all three splits), a data source tasks can name.
* :mod:`~cvxrank.experiments.conerank.protocol`: the tasks (one stochastic run per fold,
  variant, K and seed, evaluated after every pass; the RankSVM grid; the spectrum), their
  parallel run, the selection of the number of passes by validation MAP, and
  :func:`~cvxrank.experiments.conerank.protocol.run_table1`.
* :mod:`~cvxrank.experiments.conerank.report`: markdown, CSV, JSON and the figures.

The paper does not say how many passes Alg. 1 makes; here the number of passes is selected
per fold by validation MAP, like every hyper-parameter of LETOR's baselines.

References
----------
.. [1] T. T. Tran and D.-S. Pham, "ConeRANK: Ranking as Learning Generalized Inequalities",
   Sects. 4 and 6, Table 1, Figs. 3 and 4.
.. [2] T. Qin and T.-Y. Liu, "Introducing LETOR 4.0 Datasets", arXiv:1306.2597, 2013.
"""

#: The ConeRank variants (folding-in step of Alg. 1) and their labels in Table 1.
LABELS = {"sg": "ConeRank-SG", "eg": "ConeRank-EG"}

#: The label of the RankSVM baseline.
RANKSVM = "RankSVM"

#: The paper's settings (Sect. 6.1).
PAPER_K = 10
PAPER_MU = {"sg": 0.001, "eg": 0.005}
PAPER_ALPHA = 1.0

#: The most passes of Alg. 1 over the training queries per run; the number of passes is
#: selected in 1..PASSES by validation MAP (one run, evaluated after every pass).
PASSES = 40

#: Fig. 3's axis: numbers of basis vectors (N = 46 on LETOR 4.0).
K_GRID = (2, 5, 10, 15, 20, 30, 46)

#: The variants run at every K of Fig. 3 (the paper does not say which it plotted).
SWEEP_VARIANTS = ("sg",)

#: C of the RankSVM baseline: (1/2)||w||^2 + C sum over pairs of the hinge
#: max(0, 1 - w.(x_i - x_j)) (LETOR 4.0's RankSVM-struct is the hinge RankSVM), selected by
#: validation MAP like the other baselines.
RANKSVM_C_GRID = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
RANKSVM_LOSS = "hinge"

#: Certified relative duality gap of the RankSVM fits.
RANKSVM_TOL = 1e-6

#: Table 1's MQ2008 columns as published (Tran & Pham, Table 1, "Results on LETOR 4.0"; the
#: baselines are LETOR 4.0's published ones, footnote 2). Its "NDCG" has no cut-off; LETOR 4.0's
#: baseline page reports MeanNDCG (the mean of NDCG@i over all positions of a query), which is
#: what it is compared with here.
PAPER_TABLE1_MQ2008 = {
    "AdaRank-MAP": {"map": 0.463, "ndcg": 0.480},
    "AdaRank-NDCG": {"map": 0.464, "ndcg": 0.477},
    "ListNet": {"map": 0.450, "ndcg": 0.469},
    "RankBoost": {"map": 0.467, "ndcg": 0.480},
    "RankSVM-struct": {"map": 0.450, "ndcg": 0.458},
    "ConeRank-EG": {"map": 0.444, "ndcg": 0.456},
    "ConeRank-SG": {"map": 0.454, "ndcg": 0.464},
}

#: Which published row each method here is compared with.
PAPER_ROW = {"ConeRank-SG": "ConeRank-SG", "ConeRank-EG": "ConeRank-EG",
             RANKSVM: "RankSVM-struct"}

#: Where the published numbers come from.
PAPER_SOURCE = ("Tran & Pham, \"ConeRANK: Ranking as Learning Generalized Inequalities\", "
                "Table 1 (LETOR 4.0, MQ2008 columns); the baselines there are LETOR 4.0's "
                "published baselines")

#: Cumulative energy levels reported for Fig. 4.
ENERGY_LEVELS = (0.8, 0.9, 0.95, 0.99)
