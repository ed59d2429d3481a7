"""Certificates: the certified CVXPY optimum and what is proved against it.

* :mod:`~cvxrank.certificates.reference`: the CVXPY reference (primal and dual agree);
* :mod:`~cvxrank.certificates.validate`: a run judged against a reference and its rate;
* :mod:`~cvxrank.certificates.certify`: evaluation measures certified from a model radius;
* :mod:`~cvxrank.certificates.measure_certificate`: the measures that hold in a ball of models;
* :mod:`~cvxrank.certificates.zero_certificate`: when ``w = 0`` is the optimum.
"""
