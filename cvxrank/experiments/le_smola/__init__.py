r"""Le & Smola (DORM), Sect. 6: DORM against RankSVM and SVM MAP on LETOR 3.0 OHSUMED.

The LETOR protocol (:mod:`cvxrank.experiments.letor`'s tasks, backends and selection): per
fold and method, train on ``train.txt`` at every C of a small grid, select C on ``vali.txt``
(validation MAP by default, or NDCG@10), report the selected model's test NDCG@1, NDCG@10
and MAP (letor3) and their five-fold means; and, per method, a Table 2 style account of the
selected fits: support vectors (cuts with a nonzero multiplier at the end), column-generation
iterations and the share of the solver's time spent in the master QP.

Methods (:mod:`cvxrank.methods`, all by cutting planes with a certified gap):

* ``dorm``, loss ``ndcg@10``, one variant per decreasing c of (20) (``power`` with its
  exponent d, ``log``, ``loglog``), n-slack cutting plane;
* ``svmmap`` (loss 1 - AP, relevant: grade >= 1), n-slack cutting plane;
* ``ranksvm``, loss ``hinge``, Joachims' 1-slack cutting plane.

On OHSUMED (about 150 documents a query) DORM's NDCG@10 bound has the optimum w = 0 for
every c and C, exactly: 0 lies inside the subdifferential of the summed loss at w = 0 with a
margin (:mod:`cvxrank.certificates.zero_certificate`, from the cutting plane's own pieces), so w = 0
is optimal for every C > 0, the model radius is 0 and DORM's test measures, the zero model's
(every score tied, letor3's tie rule: file order), are certified.

:mod:`~cvxrank.experiments.le_smola.protocol` runs it (its
:class:`~cvxrank.experiments.le_smola.protocol.LeSmolaConfig` holds every option);
:mod:`~.report` writes the files.
"""

#: DORM's loss in the experiment.
DORM_LOSS = "ndcg@10"

#: DORM's variants: label -> (c_family, d) of the feature map (20).
DORM_VARIANTS = {"power-0.5": ("power", 0.5), "power-1": ("power", 1.0), "log": ("log", 0.5),
                 "loglog": ("loglog", 0.5)}
DEFAULT_DORM_VARIANTS = ("power-0.5", "log", "loglog")

#: C grids (small: 3-4 values per method). DORM's and SVM MAP's C weighs the summed query
#: losses, RankSVM's the summed pair hinges.
DORM_C_GRID = (1.0, 10.0, 100.0)
SVMMAP_C_GRID = (0.1, 1.0, 10.0, 100.0)
RANKSVM_C_GRID = (1e-6, 1e-5, 1e-4, 1e-3)
