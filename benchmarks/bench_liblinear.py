"""Squared-hinge RankSVM: ``cvxrank fit`` (PRSVM+) against LIBLINEAR ranksvm, same precision.

The peer is Lee & Lin's LIBLINEAR ranksvm extension 2.11, ``train -s 8``: L2-regularized
squared-hinge RankSVM by trust-region Newton with selection trees (Lee & Lin, "Large-scale
linear RankSVM", 2014), built from its published source by :mod:`build_peers` (never
committed; without a source the script says so and stops). Its objective is cvxrank's
``ranksvm`` squared hinge with the same C: ``(1/2)||w||^2 + C sum_pairs max(0, 1 - w.(x_i -
x_j))^2`` over the pairs of different grades within a query (``ranksvm.cpp``,
``l2r_l2_ranksvm_fun::fun``); the script checks it on every case (below).

**Processes.** Both sides are timed as fresh processes, alternating, ``--rounds`` rounds
(default 3), medians; CPU is user + system of the child (``os.wait4``), peak memory its
maximum resident set size:

* cvxrank: ``cvxrank fit --train FILE --method ranksvm --loss squared_hinge --C c --tol t
  --model-radius 0 --json`` (stops at its tolerance, as the peer does; interpreter start,
  imports, parsing, set-up, solve); its **solver clock** is the
  ``time`` of the JSON (``Run.time``: set-up of the sorted blocks and the Newton iterations
  with their certificate; wall clock, not reading);
* the peer: ``train -s 8 -c c -e eps -q FILE MODEL``, and its **read-only process** ``train
  -s 8 -c 0 FILE MODEL``: ``train.c`` calls ``read_problem`` and then ``check_parameter``,
  which refuses ``C <= 0`` (exit 1, no training, no model), so that process is start-up plus
  reading. The peer's **training time is whole minus read** (medians of CPU).

**Same precision.** Both to a relative gap of at most ``--rel-gap`` (1e-9):

* cvxrank's ``--tol`` is a certified relative duality gap (``gap <= tol * P(w)``): ``--tol
  1e-9``;
* the peer stops on ``||grad f(w)|| <= eps ||grad f(0)||`` (``tron.cpp``), which bounds no gap.
  Before timing, the script reads the peer's ``w`` from its model file (the lines after
  ``w``, one weight per feature), evaluates cvxrank's primal ``P(w_peer)`` on the same data
  and compares it with a certified lower bound ``D`` on p* (the dual value at cvxrank's
  tight solution, tol 1e-13, and at the peer's own w: weak duality); it picks the largest
  ``-e`` of 1e-2, 1e-3, ..., 1e-12 with ``(P(w_peer) - D) / P(w_peer) <= 1e-9`` and prints
  it. The same evaluation checks the objectives agree: ``P(w_peer)`` at the tightest ``-e``
  must equal cvxrank's optimum to ~1e-12 relative (two solvers minimizing different
  objectives would not meet at one w).
* Secondary table: the peer at its default ``-e 1e-3``, cvxrank at ``--tol`` equal to the
  peer's relative gap there (the same guarantee on the objective error).

**Targets** (per case): whole-process CPU ratio cvxrank / peer <= 1.0 at >= 10^5 documents
and <= 0.7 at >= 10^6; cvxrank's solver clock <= 0.8x the peer's training CPU everywhere;
cvxrank's peak memory <= 2x the peer's at >= 10^5 documents.

**The default fit as a user runs it** (``--user-sizes``, default 10^5 and 10^6 x 46, at
``--user-C``, default 1e-4; ``--no-user-default`` skips it): ``cvxrank fit --train FILE
--method ranksvm --loss squared_hinge --C c --json`` with no ``--tol`` (the default certified
precision: the tolerance, then the certified model radius), in the environment of a user's
shell (no thread variables, no ``CVXRANK_*`` variable), reading the text file. Two reads:
the *first* (an empty parsed-file cache: ``XDG_CACHE_HOME`` at a fresh empty folder each
round, as on a user's first run) and the *second* (that cache filled by the first). Beside
it the same first read with ``--model-radius 0`` (the *tolerance-only* fit: stop at the
tolerance), and the peer at ``-e 1e-5`` in the same environment. Targets: cvxrank's first
read at most 0.8x the peer's CPU at 10^5 documents and 0.6x at 10^6, peak memory at most 2x;
the default certified precision at most 1.2x the tolerance-only fit's CPU.

**Data**: the five OHSUMED folds (LETOR 3.0 QueryLevelNorm ``train.txt``) and the five MQ2008
folds (LETOR 4.0) at C = 5e-5, 1, 100 (``--C``), and synthetic dense files of 10^4, 10^5,
10^6 documents x 46 features and 10^5 x 136 (``--sizes``; ~100 documents per query, grades
0-4 from a hidden linear model plus noise; written once into ``benchmarks/data/`` by
:mod:`_synthetic_files`) at ``--synthetic-C`` (default the same C values).

Usage::

    .venv/bin/python benchmarks/bench_liblinear.py [--rounds 3] [--cases 'ohsumed-*']
        [--sizes 1e4x46 1e5x46 1e6x46 1e5x136] [--C 5e-5 1 100] [--quick]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _common import OHSUMED, add_common_args, markdown_table, print_machine, verdict
from _process import CVXRANK, blas_env, run_process, warm_page_cache
from _synthetic_files import ensure_file
from build_peers import liblinear_ranksvm

MQ2008 = OHSUMED.parents[1] / "letor4_mq2008"

#: The peer's -e values tried, largest first.
EPS_LADDER = [10.0 ** -k for k in range(2, 13)]


@dataclass
class Case:
    """One data file at one C."""

    name: str
    path: Path
    C: float
    n_docs: int = 0
    info: dict[str, Any] = field(default_factory=dict)


def parse_size(text: str) -> tuple[int, int]:
    """``1e5x46`` -> (100000, 46)."""
    n, d = text.lower().split("x")
    return int(float(n)), int(d)


def build_cases(args: argparse.Namespace) -> list[Case]:
    cases: list[Case] = []
    folds = [1] if args.quick else [1, 2, 3, 4, 5]
    for k in folds:
        for C in args.C:
            cases.append(Case(f"ohsumed-F{k}-C{C:g}", OHSUMED / f"Fold{k}" / "train.txt", C))
    if not args.quick:
        for k in folds:
            for C in args.C:
                cases.append(Case(f"mq2008-F{k}-C{C:g}", MQ2008 / f"Fold{k}" / "train.txt", C))
    sizes = ["1e4x46"] if args.quick else args.sizes
    for size in sizes:
        n, d = parse_size(size)
        for C in args.synthetic_C or args.C:
            cases.append(Case(f"synthetic-{size}-C{C:g}", Path(f"synthetic:{n}:{d}"), C))
    if args.cases:
        cases = [c for c in cases if any(fnmatch.fnmatch(c.name, pat) for pat in args.cases)]
    return cases


def resolve(case: Case) -> bool:
    """Write a synthetic file if needed; False when a real data file is missing."""
    text = str(case.path)
    if text.startswith("synthetic:"):
        _, n, d = text.split(":")
        case.path = ensure_file(int(n), int(d))
    return case.path.is_file()


def read_peer_w(model: Path, d: int) -> np.ndarray:
    """The weights of a LIBLINEAR model file (after the ``w`` line; zero-padded to d)."""
    lines = model.read_text().splitlines()
    start = lines.index("w") + 1
    w = np.array([float(x.split()[0]) for x in lines[start:] if x.strip()])
    if w.size < d:  # trailing features never seen by the peer
        w = np.concatenate([w, np.zeros(d - w.size)])
    return w[:d]


def peer_train_cmd(train: Path, case: Case, eps: float, model: Path) -> list[str]:
    return [str(train), "-s", "8", "-c", repr(case.C), "-e", repr(eps), "-q", str(case.path),
            str(model)]


def peer_read_cmd(train: Path, case: Case, model: Path) -> list[str]:
    return [str(train), "-s", "8", "-c", "0", "-q", str(case.path), str(model)]


def cvxrank_cmd(case: Case, tol: float) -> list[str]:
    return [CVXRANK, "fit", "--train", str(case.path), "--method", "ranksvm", "--loss",
            "squared_hinge", "--C", repr(case.C), "--tol", repr(tol), "--model-radius", "0",
            "--json", "--quiet"]


def user_env(cache: Path) -> dict[str, str]:
    """A user's shell environment (:func:`_process.blas_env`, plain), the parsed-file cache in
    ``cache`` (``XDG_CACHE_HOME``)."""
    return {**blas_env(0, plain=True), "XDG_CACHE_HOME": str(cache)}


def user_default_fit(path: Path, C: float, train: Path, tmp: Path, rounds: int) -> dict:
    """Medians over alternating rounds: cvxrank's default fit (first and second read), its
    tolerance-only fit (first read) and the peer at -e 1e-5, in a user's environment."""
    fit = [CVXRANK, "fit", "--train", str(path), "--method", "ranksvm", "--loss",
           "squared_hinge", "--C", repr(C), "--json", "--quiet"]
    peer_cmd = peer_train_cmd(train, Case("user", path, C), 1e-5, tmp / "user.model")
    runs: dict[str, list] = {"first": [], "second": [], "tolerance": [], "peer": []}
    for r in range(rounds):
        order = ("cvx", "tol", "peer") if r % 2 == 0 else ("peer", "tol", "cvx")
        for who in order:
            with tempfile.TemporaryDirectory(dir=tmp) as cache_name:
                env = user_env(Path(cache_name))
                if who == "cvx":
                    runs["first"].append(run_process(fit, env=env))
                    runs["second"].append(run_process(fit, env=env))
                elif who == "tol":
                    runs["tolerance"].append(run_process([*fit, "--model-radius", "0"],
                                                         env=env))
                else:
                    runs["peer"].append(run_process(peer_cmd, env=env))
    out: dict[str, Any] = {}
    for name, procs in runs.items():
        out[name] = {"cpu": statistics.median(p.cpu for p in procs),
                     "wall": statistics.median(p.wall for p in procs),
                     "rss": statistics.median(p.maxrss_mb for p in procs)}
        if name != "peer":
            fitted = json.loads(procs[-1].stdout)
            out[name].update(clock=fitted["time"], read=fitted["read_time"],
                             iterations=fitted["iterations"], gap=fitted["relative_gap"])
    return out


def user_default_table(n: int, res: dict) -> tuple[str, list[str]]:
    """The section's table and its verdict lines."""
    peer = res["peer"]
    rows = []
    for name, label in (("first", "cvxrank fit, default, first read"),
                        ("second", "cvxrank fit, default, second read (cache filled)"),
                        ("tolerance", "cvxrank fit --model-radius 0, first read"),
                        ("peer", "LIBLINEAR ranksvm -e 1e-5")):
        r = res[name]
        rows.append([label, fmt(r["cpu"]), fmt(r["wall"]), fmt(r["rss"], 0),
                     fmt(ratio(r["cpu"], peer["cpu"]), 2), fmt(ratio(r["rss"], peer["rss"]), 2),
                     fmt(r.get("read", float("nan"))), fmt(r.get("clock", float("nan"))),
                     str(r.get("iterations", "-")),
                     f"{r['gap']:.1e}" if "gap" in r else "-"])
    table = markdown_table(["process", "CPU [s]", "wall [s]", "peak RSS [MB]", "CPU / peer",
                            "RSS / peer", "read [s]", "solver clock [s]", "iterations",
                            "relative gap"], rows)
    target = 0.6 if n >= 10 ** 6 else 0.8
    first = ratio(res["first"]["cpu"], peer["cpu"])
    mem = ratio(res["first"]["rss"], peer["rss"])
    certified = ratio(res["first"]["cpu"], res["tolerance"]["cpu"])
    return table, [f"first read {first:.2f}x the peer's CPU <= {target:g}: "
                   f"{verdict(first <= target)}",
                   f"peak memory {mem:.2f}x <= 2: {verdict(mem <= 2.0)}",
                   f"default certified precision {certified:.2f}x the tolerance-only fit "
                   f"<= 1.2: {verdict(certified <= 1.2)}"]


def calibrate(case: Case, train: Path, tmp: Path, rel_gap: float, threads: int) -> dict:
    """Certified lower bound on p*, the peer's -e for ``rel_gap``, and its gap at -e 1e-3."""
    from cvxrank.data import read_svmlight
    from cvxrank.fitting import fit_formulation
    from cvxrank.formulations.ranksvm import RankSVM
    from cvxrank.utils.threads import blas_threads

    data = read_svmlight(case.path)
    case.n_docs = data.n_documents
    f = RankSVM(data, C=case.C, loss="squared_hinge")
    with blas_threads(threads):
        started = time.perf_counter()
        tight = fit_formulation(f, "prsvm+", tol=1e-13, max_iter=10_000, model_radius=None)
        tight_time = time.perf_counter() - started
        lower = f.dual_value_at(tight.w)
        p_tight = f.primal_value(tight.w)
        model = tmp / "calibrate.model"
        tried: dict[float, float] = {}
        chosen = None
        for eps in EPS_LADDER:
            run_process(peer_train_cmd(train, case, eps, model))
            w = read_peer_w(model, data.n_features)
            tried[eps] = f.primal_value(w)
            lower = max(lower, f.dual_value_at(w))
            if (tried[eps] - lower) / tried[eps] <= rel_gap:
                chosen = eps
                break
        if 1e-3 not in tried:
            run_process(peer_train_cmd(train, case, 1e-3, model))
            tried[1e-3] = f.primal_value(read_peer_w(model, data.n_features))
    gaps = {eps: (P - lower) / P for eps, P in tried.items()}
    return {"n": data.n_documents, "d": data.n_features, "queries": data.n_queries,
            "pairs": f.n_dual, "lower": lower, "p_tight": p_tight, "tight_time": tight_time,
            "tight_iters": tight.n_iter, "tight_status": str(tight.status),
            "eps": chosen if chosen is not None else EPS_LADDER[-1], "reached": chosen is not None,
            "gaps": gaps, "gap_default": gaps[1e-3],
            "objective_check": (min(tried.values()) - p_tight) / p_tight}


def time_case(case: Case, train: Path, tmp: Path, *, eps: float, tol: float, rounds: int,
              env: dict[str, str], lower: float) -> dict:
    """Medians over alternating rounds of cvxrank fit, the peer's train and its read."""
    model = tmp / "timed.model"
    cvx, peer, read = [], [], []
    for r in range(rounds):
        order = ("cvx", "peer", "read") if r % 2 == 0 else ("peer", "read", "cvx")
        for who in order:
            if who == "cvx":
                proc = run_process(cvxrank_cmd(case, tol), env=env, ok=(0, 2, 3))
                cvx.append((proc, json.loads(proc.stdout)))
            elif who == "peer":
                peer.append(run_process(peer_train_cmd(train, case, eps, model), env=env))
            else:
                proc = run_process(peer_read_cmd(train, case, model), env=env, ok=(1,))
                if "C <= 0" not in proc.stderr:
                    raise RuntimeError(f"the peer's read-only run did not stop at C <= 0: "
                                       f"{proc.stderr[-500:]}")
                read.append(proc)

    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    out = cvx[-1][1]
    res = {
        "cvx_cpu": med([p.cpu for p, _ in cvx]), "cvx_wall": med([p.wall for p, _ in cvx]),
        "cvx_rss": med([p.maxrss_mb for p, _ in cvx]),
        "cvx_clock": med([o["time"] for _, o in cvx]),
        "cvx_setup": med([o.get("setup_time", float("nan")) for _, o in cvx]),
        "cvx_iters": out.get("iterations"), "cvx_status": out.get("status"),
        "cvx_objective": out.get("objective"), "cvx_peak_json": out.get("peak_memory_mb"),
        "peer_cpu": med([p.cpu for p in peer]), "peer_wall": med([p.wall for p in peer]),
        "peer_rss": med([p.maxrss_mb for p in peer]),
        "read_cpu": med([p.cpu for p in read]), "read_wall": med([p.wall for p in read]),
        "read_rss": med([p.maxrss_mb for p in read]),
    }
    res["peer_train"] = res["peer_cpu"] - res["read_cpu"]
    obj = res["cvx_objective"]
    res["cvx_rel_err"] = (obj - lower) / obj if obj else float("nan")
    return res


def fmt(x: float, digits: int = 3) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def targets(n: int, r: dict) -> dict[str, str]:
    whole = ratio(r["cvx_cpu"], r["peer_cpu"])
    train = ratio(r["cvx_clock"], r["peer_train"])
    mem = ratio(r["cvx_rss"], r["peer_rss"])
    out = {"train": f"{train:.2f}x <= 0.8: {verdict(train <= 0.8)}"}
    if n >= 10 ** 6:
        out["whole"] = f"{whole:.2f}x <= 0.7: {verdict(whole <= 0.7)}"
    elif n >= 10 ** 5:
        out["whole"] = f"{whole:.2f}x <= 1.0: {verdict(whole <= 1.0)}"
    else:
        out["whole"] = f"{whole:.2f}x (no target below 10^5 documents)"
    out["memory"] = (f"{mem:.2f}x <= 2: {verdict(mem <= 2.0)}" if n >= 10 ** 5
                     else f"{mem:.2f}x (no target below 10^5 documents)")
    return out


def case_table(r: dict) -> str:
    headers = ["", "cvxrank", "LIBLINEAR ranksvm", "ratio"]
    rows = [
        ["whole process, CPU [s]", fmt(r["cvx_cpu"]), fmt(r["peer_cpu"]),
         fmt(ratio(r["cvx_cpu"], r["peer_cpu"]), 2)],
        ["whole process, wall [s]", fmt(r["cvx_wall"]), fmt(r["peer_wall"]),
         fmt(ratio(r["cvx_wall"], r["peer_wall"]), 2)],
        ["training: cvxrank's solver clock / the peer's whole - read CPU [s]",
         fmt(r["cvx_clock"]), f"{fmt(r['peer_train'])} ({fmt(r['peer_cpu'])} - "
         f"{fmt(r['read_cpu'])})", fmt(ratio(r["cvx_clock"], r["peer_train"]), 2)],
        ["  cvxrank's set-up within its solver clock [s]", fmt(r["cvx_setup"]), "-", "-"],
        ["peak RSS [MB]", fmt(r["cvx_rss"], 0), f"{fmt(r['peer_rss'], 0)} (read only: "
         f"{fmt(r['read_rss'], 0)})", fmt(ratio(r["cvx_rss"], r["peer_rss"]), 2)],
        ["Newton iterations (status)", f"{r['cvx_iters']} ({r['cvx_status']})", "-", "-"],
    ]
    return markdown_table(headers, rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=[],
                        help="glob patterns over the case names (e.g. 'ohsumed-F1-*' "
                        "'synthetic-1e5x46-*'); default all")
    parser.add_argument("--C", type=float, nargs="+", default=[5e-5, 1.0, 100.0])
    parser.add_argument("--synthetic-C", type=float, nargs="*", default=None,
                        dest="synthetic_C", help="C of the synthetic files (default --C)")
    parser.add_argument("--sizes", nargs="+", default=["1e4x46", "1e5x46", "1e6x46",
                                                        "1e5x136"],
                        help="synthetic sizes NxD")
    parser.add_argument("--rel-gap", type=float, default=1e-9, dest="rel_gap")
    parser.add_argument("--no-default-precision", action="store_true",
                        help="skip the secondary table (peer -e 1e-3)")
    parser.add_argument("--quick", action="store_true",
                        help="OHSUMED Fold1 and the 10^4 x 46 file only (smoke test)")
    parser.add_argument("--list", action="store_true", help="print the case names and stop")
    parser.add_argument("--user-sizes", nargs="*", default=["1e5x46", "1e6x46"],
                        dest="user_sizes", help="synthetic sizes of the user's default fit")
    parser.add_argument("--user-C", type=float, default=1e-4, dest="user_C")
    parser.add_argument("--no-user-default", action="store_true", dest="no_user_default",
                        help="skip the user's default fit")
    add_common_args(parser)
    args = parser.parse_args()
    cases = build_cases(args)
    if args.list:
        print("\n".join(c.name for c in cases))
        return 0
    print_machine()
    peer, message = liblinear_ranksvm()
    print(message)
    if peer is None:
        return 0
    train = peer["train"]
    env = blas_env(args.blas_threads)
    print(f"BLAS threads of the children: {args.blas_threads or 'library default'}; "
          f"{args.rounds} rounds, medians; relative gap {args.rel_gap:g}\n")
    summary, summary_default = [], []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for size in [] if args.no_user_default else args.user_sizes:
            n, d = parse_size(size)
            path = ensure_file(n, d)
            warm_page_cache(path)
            load = os.getloadavg()[0]
            res = user_default_fit(path, args.user_C, train, tmp, args.rounds)
            table, lines = user_default_table(n, res)
            print(f"## The default fit as a user runs it: synthetic {size}, C = "
                  f"{args.user_C:g} (load {load:.2f} -> {os.getloadavg()[0]:.2f}; "
                  f"{args.rounds} rounds, medians)\n")
            print(table)
            print("\n" + "; ".join(lines) + "\n", flush=True)
        for case in cases:
            if not resolve(case):
                print(f"{case.name}: {case.path} not found, skipped\n")
                continue
            warm_page_cache(case.path)
            load = os.getloadavg()[0]
            cal = calibrate(case, train, tmp, args.rel_gap, args.blas_threads)
            case.info = cal
            gaps = ", ".join(f"{eps:g}: {g:.1e}" for eps, g in cal["gaps"].items())
            print(f"## {case.name}: {case.path.name}, n = {cal['n']:,}, d = {cal['d']}, "
                  f"{cal['queries']:,} queries, {cal['pairs']:,} pairs, C = {case.C:g} "
                  f"(load {load:.2f})")
            print(f"certified lower bound on p*: {cal['lower']:.12g} (cvxrank tol 1e-13: "
                  f"{cal['tight_iters']} iterations, {cal['tight_time']:.2f} s, "
                  f"{cal['tight_status']})")
            print(f"peer's relative gap (P(w_peer) - D) / P(w_peer) by -e: {gaps}")
            print(f"objective check: best P(w_peer) vs cvxrank's tight P: "
                  f"{cal['objective_check']:+.1e} relative")
            eps = cal["eps"]
            print(f"peer -e {eps:g} for relative gap <= {args.rel_gap:g}"
                  + ("" if cal["reached"] else " (NOT reached even at -e 1e-12: timed there)"))
            res = time_case(case, train, tmp, eps=eps, tol=args.rel_gap, rounds=args.rounds,
                            env=env, lower=cal["lower"])
            print(f"\nsame precision (cvxrank --tol {args.rel_gap:g}, its relative error "
                  f"{res['cvx_rel_err']:.1e}; peer -e {eps:g}, its relative gap "
                  f"{cal['gaps'][eps]:.1e}); load {os.getloadavg()[0]:.2f}\n")
            print(case_table(res))
            t = targets(cal["n"], res)
            print(f"\ntargets: whole process {t['whole']}; solver clock / peer's train "
                  f"{t['train']}; peak memory {t['memory']}\n", flush=True)
            summary.append((case, cal, res, t))
            if not args.no_default_precision:
                tol2 = float(f"{max(cal['gap_default'], 1e-12):.2g}")
                res2 = time_case(case, train, tmp, eps=1e-3, tol=tol2, rounds=args.rounds,
                                 env=env, lower=cal["lower"])
                print(f"peer's default precision (-e 1e-3, relative gap "
                      f"{cal['gap_default']:.1e}); cvxrank --tol {tol2:g} (its relative error "
                      f"{res2['cvx_rel_err']:.1e})\n")
                print(case_table(res2))
                print(flush=True)
                summary_default.append((case, cal, res2, targets(cal["n"], res2), tol2))
    headers = ["case", "n", "pairs", "peer -e", "whole CPU cvxrank / peer [s]", "ratio",
               "solver clock / peer train [s]", "ratio", "peak RSS [MB]", "ratio",
               "Newton it.", "whole target", "train target", "memory target"]
    rows = []
    for case, cal, r, t in summary:
        rows.append([case.name, f"{cal['n']:,}", f"{cal['pairs']:,}",
                     f"{cal['eps']:g}" + ("" if cal["reached"] else " (!)"),
                     f"{fmt(r['cvx_cpu'])} / {fmt(r['peer_cpu'])}",
                     fmt(ratio(r["cvx_cpu"], r["peer_cpu"]), 2),
                     f"{fmt(r['cvx_clock'])} / {fmt(r['peer_train'])}",
                     fmt(ratio(r["cvx_clock"], r["peer_train"]), 2),
                     f"{fmt(r['cvx_rss'], 0)} / {fmt(r['peer_rss'], 0)}",
                     fmt(ratio(r["cvx_rss"], r["peer_rss"]), 2), r["cvx_iters"],
                     t["whole"].split(": ")[-1] if ":" in t["whole"] else "-",
                     t["train"].split(": ")[-1],
                     t["memory"].split(": ")[-1] if ":" in t["memory"] else "-"])
    print(f"\n# Summary: same precision (relative gap <= {args.rel_gap:g}; (!) = the peer "
          "did not reach it)\n")
    print(markdown_table(headers, rows))
    if summary_default:
        rows = []
        for case, cal, r, _, tol2 in summary_default:
            rows.append([case.name, f"{cal['gap_default']:.1e}", f"{tol2:g}",
                         f"{fmt(r['cvx_cpu'])} / {fmt(r['peer_cpu'])}",
                         fmt(ratio(r["cvx_cpu"], r["peer_cpu"]), 2),
                         f"{fmt(r['cvx_clock'])} / {fmt(r['peer_train'])}",
                         fmt(ratio(r["cvx_clock"], r["peer_train"]), 2),
                         fmt(ratio(r["cvx_rss"], r["peer_rss"]), 2)])
        print("\n# Secondary: the peer's default -e 1e-3, cvxrank at its relative gap\n")
        print(markdown_table(["case", "peer's rel. gap at -e 1e-3", "cvxrank --tol",
                              "whole CPU cvxrank / peer [s]", "ratio",
                              "solver clock / peer train [s]", "ratio", "peak RSS ratio"],
                             rows))
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("CPU = user + system of each child (os.wait4); the peer's training = its whole "
          "process minus its read-only process (-c 0), medians; cvxrank's solver clock is the "
          "fit's wall-clock `time` (set-up + Newton iterations, not reading)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
