"""ConeRank's prediction: Alg. 2's vote per query against the equivalent linear scorer.

Tran & Pham's Alg. 2 (Sect. 4.3) folds every pair (l, m) of a test query in without
constraints (least squares, :math:`w = U^+ (x_l - x_m)`) and gives a vote to l when the
coefficients sum to more than 0, else to m: :math:`O(n_q^2 (N + K))` per query of
:math:`n_q` documents (:func:`cvxrank.formulations.conerank.vote_scores`). Since
:math:`1^\\top U^+ (x_l - x_m) = v^\\top x_l - v^\\top x_m` with :math:`v = (U^+)^\\top 1`
(:func:`cvxrank.formulations.conerank.linear_direction`), the vote prefers l exactly when the
linear score :math:`v^\\top x` of l is higher, so scoring by :math:`X v`, :math:`O(n_q N)`,
gives the same ranking up to ties.

Timed side by side, per query (medians of timeit-style repeats, ``_common.median_time``):

* ``vote``: ``vote_scores(U, X, [0, n_q])`` (it computes ``pinv(U)`` once per call);
* ``linear``: ``X @ v`` with v computed once at fit time (what ``ConeRankRanker(
  scoring="linear")`` does per query);
* ``linear + pinv``: ``X @ linear_direction(U)``, v recomputed in the call.

on one query of n_q = 10, 50, 100, 200, 500 documents (N = 46 features standard normal, the
width of LETOR 4.0; U of K = 10 random columns of norm :math:`2\\sqrt N`), with the exponents
of time against n_q fitted on log-log scales; then on all of MQ2008 Fold1 test.txt (156
queries of 6-119 documents, each scored on its own) with U fitted on Fold1 train.txt
(features z-scored with the training mean and standard deviation, stochastic EG,
``--passes`` passes, seed 0).

Same ranking: for each query the votes predicted from the linear scores, :math:`A_l =
\\#\\{m : s_m < s_l\\} + \\#\\{m < l : s_m = s_l\\}` (Alg. 2 gives a tie to the later
document), are compared with ``vote_scores``; a pair the two order differently is counted
unless its linear scores are within 1e-9 (relative to the largest score of the query) of each
other (a tie up to rounding, where the sum of the coefficients and the difference of the
scores can round to opposite signs). On MQ2008 both give the same MAP and NDCG up to their
tie rule.

Run: ``.venv/bin/python benchmarks/bench_conerank_predict.py [--passes 3] [--blas-threads 1]``
(about 1-2 minutes; MQ2008 is skipped when ../shared/data is absent).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import add_common_args, markdown_table, median_time, print_machine

from cvxrank.formulations.conerank import linear_direction, vote_scores
from cvxrank.utils.threads import blas_threads

#: LETOR 4.0's MQ2008 (``../shared/data`` beside the project).
MQ2008 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "letor4_mq2008"
SIZES = (10, 50, 100, 200, 500)
N_FEATURES, K = 46, 10
#: Relative score difference below which two documents count as tied.
TIE = 1e-9


def random_basis(n_features: int = N_FEATURES, k: int = K, seed: int = 0) -> np.ndarray:
    """K random columns of norm 2 sqrt(N) (the paper's c = 2 rho, rho = sqrt(N))."""
    U = np.random.default_rng(seed).standard_normal((n_features, k))
    return U * (2.0 * np.sqrt(n_features) / np.linalg.norm(U, axis=0))


def expected_votes(scores: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    """Alg. 2's votes predicted from the linear scores: the number of documents of the query
    with a lower score, plus the earlier ones with an equal score (ties go to the later)."""
    votes = np.zeros(scores.size)
    for q in range(len(query_ptr) - 1):
        lo, hi = int(query_ptr[q]), int(query_ptr[q + 1])
        s = scores[lo:hi]
        lower = (s[None, :] < s[:, None]).sum(axis=1)
        earlier_tie = np.tril(s[None, :] == s[:, None], k=-1).sum(axis=1)
        votes[lo:hi] = lower + earlier_tie
    return votes


def discordant(votes: np.ndarray, scores: np.ndarray, query_ptr: np.ndarray,
               ) -> tuple[int, int, int]:
    """Pairs ordered differently by the votes and the linear scores, not tied (beyond
    :data:`TIE`); pairs tied within :data:`TIE`; all pairs."""
    bad = ties = total = 0
    for q in range(len(query_ptr) - 1):
        lo, hi = int(query_ptr[q]), int(query_ptr[q + 1])
        s, a = scores[lo:hi], votes[lo:hi]
        i, j = np.triu_indices(hi - lo, k=1)
        scale = max(float(np.abs(s).max()), np.finfo(float).tiny)
        tied = np.abs(s[i] - s[j]) <= TIE * scale
        differ = np.sign(s[i] - s[j]) != np.sign(a[i] - a[j])
        bad += int(np.count_nonzero(differ & ~tied))
        ties += int(np.count_nonzero(tied))
        total += i.size
    return bad, ties, total


def compare(U: np.ndarray, X: np.ndarray, query_ptr: np.ndarray, repeat: int,
            ) -> dict[str, float]:
    """Times of the three scorers on (X, query_ptr) and the agreement of their rankings."""
    v = linear_direction(U)
    per_query = [X[int(a):int(b)] for a, b in zip(query_ptr[:-1], query_ptr[1:], strict=True)]

    def linear() -> None:
        for Xq in per_query:
            Xq @ v

    def linear_pinv() -> None:
        for Xq in per_query:
            Xq @ linear_direction(U)

    t_vote = median_time(lambda: vote_scores(U, X, query_ptr), repeat=repeat)
    t_linear = median_time(linear, repeat=repeat)
    t_pinv = median_time(linear_pinv, repeat=repeat)
    votes = vote_scores(U, X, query_ptr)
    scores = X @ v
    exact = int(np.count_nonzero(votes != expected_votes(scores, query_ptr)))
    bad, ties, total = discordant(votes, scores, query_ptr)
    return {"vote": t_vote, "linear": t_linear, "pinv": t_pinv, "votes_differ": exact,
            "discordant": bad, "tied": ties, "pairs": total}


def row(label: str, r: dict[str, float]) -> list[str]:
    return [label, f"{r['pairs']:,}", f"{r['vote'] * 1e6:,.1f}", f"{r['linear'] * 1e6:,.2f}",
            f"{r['pinv'] * 1e6:,.1f}", f"**{r['vote'] / r['linear']:,.0f}x**",
            f"{r['vote'] / r['pinv']:,.1f}x",
            f"{r['discordant']} / {r['tied']}", f"{r['votes_differ']}"]


HEADERS = ["data", "pairs", "vote [us]", "linear [us]", "linear + pinv [us]",
           "vote / linear", "vote / (linear + pinv)", "discordant / tied pairs",
           "docs whose votes differ from the linear prediction"]


def mq2008(passes: int, repeat: int) -> None:
    """Fit on Fold1 train (z-scored, stochastic EG), time and compare on Fold1 test."""
    from cvxrank.data.letor import read_letor_fold
    from cvxrank.fitting import fit_formulation
    from cvxrank.formulations.conerank import ConeRank
    from cvxrank.metrics import evaluate

    folds = read_letor_fold(MQ2008, 1, splits=("train", "test"))
    dense = {k: np.asarray(d.X.toarray() if hasattr(d.X, "toarray") else d.X)
             for k, d in folds.items()}
    mean, std = dense["train"].mean(axis=0), dense["train"].std(axis=0)
    std[std == 0] = 1.0
    train = folds["train"].with_features((dense["train"] - mean) / std)
    test = folds["test"]
    X = (dense["test"] - mean) / std
    started = time.perf_counter()
    f = ConeRank(train)
    run = fit_formulation(f, "stochastic-eg", max_iter=passes, seed=0)
    U, _ = f.split(run.w)
    print(f"MQ2008 Fold1: fitted U on train.txt ({f.pairs.n_pairs:,} pairs, stochastic EG, "
          f"{passes} passes, {time.perf_counter() - started:.1f} s); test.txt "
          f"{test.n_queries} queries, {test.n_documents} documents, "
          f"{int(test.query_sizes.min())}-{int(test.query_sizes.max())} per query\n")
    r = compare(U, X, test.query_ptr, repeat)
    print(markdown_table(HEADERS, [row("MQ2008 Fold1 test (all queries)", r)]))
    votes, scores = vote_scores(U, X, test.query_ptr), X @ linear_direction(U)
    for name, s in (("vote", votes), ("linear", scores)):
        m = evaluate(test.y, s, test.query_ptr, preset="letor4")
        print(f"  {name:6s}: MAP {m['map']:.4f}  MeanNDCG {m['mean_ndcg']:.4f} (letor4)")
    print("  (the vote breaks a tie of the linear scores towards the later document, the "
          "linear scorer leaves it to the metric's tie rule: LETOR 4.0's MQ2008 has "
          "duplicate documents with identical features)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timing repeats (median)")
    parser.add_argument("--passes", type=int, default=3,
                        help="passes of the stochastic EG fit on MQ2008 Fold1 train")
    add_common_args(parser)
    args = parser.parse_args()
    print_machine()
    print(f"BLAS threads: {args.blas_threads or 'library default'}; N = {N_FEATURES}, "
          f"K = {K}\n")
    started = time.perf_counter()
    with blas_threads(args.blas_threads):
        U = random_basis()
        rng = np.random.default_rng(1)
        rows, times = [], []
        for n in SIZES:
            X = rng.standard_normal((n, N_FEATURES))
            r = compare(U, X, np.array([0, n]), args.repeat)
            rows.append(row(f"one query, n_q = {n}", r))
            times.append((r["vote"], r["linear"], r["pinv"]))
        print("One query of n_q documents (random U, X):\n")
        print(markdown_table(HEADERS, rows))
        logn = np.log(SIZES)
        for name, k in (("vote", 0), ("linear", 1), ("linear + pinv", 2)):
            t = np.log([row[k] for row in times])
            slope = np.polyfit(logn, t, 1)[0]
            tail = np.polyfit(logn[2:], t[2:], 1)[0]
            print(f"fitted exponent of {name} over n_q = {SIZES[0]} ... {SIZES[-1]}: "
                  f"{slope:.2f} (n_q >= {SIZES[2]}: {tail:.2f})")
        agree = all(r[-2].startswith("0 ") for r in rows)
        print(f"same ranking (ties aside) on every size: {'yes' if agree else 'NO'}\n")
        if MQ2008.is_dir():
            mq2008(args.passes, args.repeat)
        else:
            print(f"MQ2008 skipped: {MQ2008} not present")
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
