"""The measure certificate against one evaluation: ``certify_measures`` / ``evaluate``.

:func:`cvxrank.certificates.measure_certificate.certify_measures` tells, per query, whether NDCG@k,
P@k, MAP and MRR of a model w are the same for every w' with ||w' - w|| <= r (r = sqrt(2 g) from
a certified duality gap g). It ranks each query once, as
:func:`cvxrank.metrics.evaluate` does, computes O(nd) distance bounds and the norms of the
few pairs of documents within r D_q in score; the target is a cost of the order of one
``evaluate`` of the same measures.

On OHSUMED Fold1 (``QueryLevelNorm``): w fitted on train.txt (squared-hinge RankSVM,
C = 1e-4, PRSVM+ to its default certified gap), measured on test.txt (3,383 documents, 22
queries, 45 features, dense), with the measures of ``evaluate(k=10)`` (NDCG@1..10,
P@1..10, MAP, MRR; the ``letor3`` convention) and the same scores given to both. Radii
1e-8 ... 1e-2 times ||w||, and the radius sqrt(2 g) of the fit's own gap. Times are CPU
seconds of the process (``time.process_time``, one BLAS thread), medians of timeit-style
repeats; the CSR column is the same certificate with X as a CSR matrix.

Run: ``.venv/bin/python benchmarks/bench_measure_certificate.py [--fold 1] [--repeat 7]``
(about 20 s; needs ../shared/data).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from _common import OHSUMED, add_common_args, markdown_table, print_machine

from cvxrank.certificates.measure_certificate import certify_measures
from cvxrank.data.letor import read_letor_fold
from cvxrank.formulations.ranksvm import RankSVM
from cvxrank.metrics import evaluate
from cvxrank.solvers.newton import solve_prsvm_plus
from cvxrank.utils.threads import blas_threads

K = 10
MEASURES = [f"ndcg@{k}" for k in range(1, K + 1)] + [f"p@{k}" for k in range(1, K + 1)] + [
    "map", "mrr"]
RELATIVE_RADII = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


def median_cpu_time(fn: Callable[[], Any], *, repeat: int = 7, min_time: float = 0.05) -> float:
    """Median CPU seconds per call of ``fn`` (``time.process_time``), timeit-style: the calls
    per measurement double until one measurement takes ``min_time``."""
    fn()  # warm-up
    number = 1
    while True:
        start = time.process_time()
        for _ in range(number):
            fn()
        elapsed = time.process_time() - start
        if elapsed >= min_time:
            break
        number *= 2
    samples = [elapsed / number]
    for _ in range(repeat - 1):
        start = time.process_time()
        for _ in range(number):
            fn()
        samples.append((time.process_time() - start) / number)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fold", type=int, default=1, help="OHSUMED fold (default 1)")
    parser.add_argument("--repeat", type=int, default=7, help="timing repeats (median)")
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    if not OHSUMED.is_dir():
        print(f"skipped: {OHSUMED} not present")
        return
    with blas_threads(args.blas_threads):
        folds = read_letor_fold(OHSUMED, args.fold, splits=("train", "test"))
        run = solve_prsvm_plus(RankSVM(folds["train"], C=1e-4, loss="squared_hinge"))
        test, w = folds["test"], run.w
        X, y, ptr = test.X, test.y, test.query_ptr
        Xs = sp.csr_matrix(X)
        scores = np.einsum("ij,j->i", X, w)  # what certify_measures computes without scores
        norm_w, r_gap = float(np.linalg.norm(w)), run.w_radius
        print(f"\nOHSUMED Fold{args.fold}: w fitted on train.txt (gap {run.trace.gap[-1]:.2e}, "
              f"sqrt(2 gap) = {r_gap:.3e} = {r_gap / norm_w:.2e} ||w||); test.txt "
              f"{test.n_documents:,} documents, {test.n_queries} queries, d = {X.shape[1]}; "
              f"{len(MEASURES)} measures\n")
        t_eval = median_cpu_time(lambda: evaluate(y, scores, ptr, k=K), repeat=args.repeat)
        rows, ratios = [], []
        for label, radius in [*((f"{rel:.0e}", rel * norm_w) for rel in RELATIVE_RADII),
                              (f"{r_gap / norm_w:.1e} (gap)", r_gap)]:
            cert = certify_measures(X, y, ptr, w, radius, measures=MEASURES, scores=scores)
            sparse = certify_measures(Xs, y, ptr, w, radius, measures=MEASURES, scores=scores)
            assert sparse.as_dict() == cert.as_dict()
            t_dense = median_cpu_time(lambda r=radius: certify_measures(
                X, y, ptr, w, r, measures=MEASURES, scores=scores), repeat=args.repeat)
            t_csr = median_cpu_time(lambda r=radius: certify_measures(
                Xs, y, ptr, w, r, measures=MEASURES, scores=scores), repeat=args.repeat)
            ratios.append(t_dense / t_eval)
            rows.append([label, f"{radius:.2e}",
                         " / ".join(str(cert.uncertified(m)) for m in
                                    ("ndcg@1", "ndcg@10", "p@10", "map", "mrr")),
                         f"{t_dense * 1e3:.2f}", f"{t_csr * 1e3:.2f}", f"{t_eval * 1e3:.2f}",
                         f"**{t_dense / t_eval:.2f}x**", f"{t_csr / t_eval:.2f}x"])
        print(markdown_table(
            ["r / \\|\\|w\\|\\|", "r", "uncertified queries: NDCG@1 / NDCG@10 / P@10 / MAP / MRR",
             "certificate [ms]", "certificate, CSR [ms]", "evaluate [ms]",
             "certificate / evaluate", "CSR / evaluate"], rows))
        print(f"\ncertificate / evaluate: {min(ratios):.2f}x - {max(ratios):.2f}x (target: "
              "about one evaluate)")


if __name__ == "__main__":
    main()
