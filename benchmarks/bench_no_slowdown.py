"""No slowdown: ``cvxrank verify`` and the Chapelle reproduction, old tree against this one.

Targets: ``make verify`` (``cvxrank verify --no-figures``) and ``cvxrank reproduce
chapelle-table3`` within ``--target`` (default 1.05: issue 33's 5 %; issue 10 asked 10 %) of
the times of the code before the change, measured in the same run. Run it with
``CVXRANK_AOT=0`` to time both trees' kernels compiled just in time (an exported old tree has
no ahead-of-time modules).

The old code is the tree of ``--revision`` (default ``38e45cc``, the commit before the
issue-10 work), exported with ``git archive`` into a temporary folder (read-only for the
repository: no worktree, no checkout). Each command runs as a whole process
(``python -m cvxrank.cli.main ...`` with ``PYTHONPATH`` pointing at one tree, in a scratch
folder), old and new alternately, ``--rounds`` times; the wall-clock of each process is
timed (interpreter start and imports included) and the medians' ratio new / old printed.
Each tree first loads (or compiles into its own ``__pycache__``) PRSVM+'s numba kernels in
an untimed run. The last round's JSON outputs are compared: Table 3's NDCG@10, objectives,
Newton/CG/LIBLINEAR iteration counts, and every verify pair's verdict, p*, iterations and
final gap.

Run: ``CVXRANK_AOT=0 .venv/bin/python benchmarks/bench_no_slowdown.py [--revision 38e45cc]
[--rounds 2] [--only verify table3] [--target 1.05]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import OHSUMED, export_tree, markdown_table, print_machine, verdict

#: The commit before the issue-10 work.
DEFAULT_REVISION = "38e45cc"
TARGET = 1.05
REPO = Path(__file__).resolve().parents[1]

COMMANDS = {
    "verify": ["verify", "--no-figures", "--json"],
    "table3": ["reproduce", "chapelle-table3", "--data", str(OHSUMED), "--json"],
}


def run(tree: Path, args: list[str], scratch: Path) -> tuple[float, dict[str, Any]]:
    """One ``cvxrank`` process on ``tree``: its wall-clock seconds and its JSON output."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "cvxrank.cli.main", *args]
    if args[0] == "reproduce":
        cmd += ["--out", str(scratch / "out")]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=scratch,
                          check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # verify exits 1 when a pair fails
        raise SystemExit(f"{' '.join(args)} on {tree}: exit {done.returncode}: "
                         f"{done.stderr.strip()[-2000:]}")
    return elapsed, json.loads(done.stdout)


def warm_up(tree: Path, scratch: Path) -> None:
    """Load or compile the tree's numba kernels (untimed)."""
    code = "from cvxrank.formulations.sorted_kernels import warm_up; warm_up()"
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(tree)},
                   cwd=scratch, check=True)


def table3_differences(old: dict, new: dict) -> list[str]:
    """What differs between two Table 3 outputs (times aside)."""
    out = []
    if old["mean_ndcg@10"] != new["mean_ndcg@10"]:
        out.append(f"mean NDCG@10 {old['mean_ndcg@10']} vs {new['mean_ndcg@10']}")
    for fo, fn in zip(old["folds"], new["folds"], strict=True):
        for method, ro in fo["runs"].items():
            rn = fn["runs"][method]
            for key in ("ndcg@10", "n_iter", "cg_iterations", "converged"):
                if ro[key] != rn[key]:
                    out.append(f"fold {fo['fold']} {method} {key}: {ro[key]} vs {rn[key]}")
            rel = abs(ro["objective"] - rn["objective"]) / max(1.0, abs(ro["objective"]))
            if rel > 1e-12:
                out.append(f"fold {fo['fold']} {method} objective differs by {rel:.1e}")
    return out


def verify_differences(old: dict, new: dict) -> list[str]:
    """What differs between two verify outputs (times aside), pair by pair."""
    out = []
    by_name = {p["name"]: p for p in new["pairs"]}
    for p in old["pairs"]:
        q = by_name.get(p["name"])
        if q is None:
            out.append(f"{p['name']}: not in the new output")
            continue
        for key in ("passed", "n_iter"):
            if p.get(key) != q.get(key):
                out.append(f"{p['name']} {key}: {p.get(key)} vs {q.get(key)}")
        for key in ("p_star", "rel_gap"):
            a, b = p.get(key), q.get(key)
            if a is not None and b is not None and abs(a - b) > 1e-9 * max(1.0, abs(a)):
                out.append(f"{p['name']} {key}: {a:.10g} vs {b:.10g}")
    out += [f"{name}: new pair" for name in by_name.keys() - {p["name"] for p in old["pairs"]}]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revision", default=DEFAULT_REVISION,
                        help=f"the old code's commit (default {DEFAULT_REVISION})")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="+", choices=list(COMMANDS), default=list(COMMANDS))
    parser.add_argument("--target", type=float, default=TARGET,
                        help=f"largest new / old ratio that passes (default {TARGET})")
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory(prefix="cvxrank-no-slowdown-") as tmp:
        root = Path(tmp)
        trees = {"old": export_tree(args.revision, root / "old"), "new": REPO}
        print(f"old: {args.revision} exported to {trees['old']}; new: {REPO} (working tree)\n")
        scratch = {name: root / f"run-{name}" for name in trees}
        for name, tree in trees.items():
            scratch[name].mkdir()
            warm_up(tree, scratch[name])
        times: dict[tuple[str, str], list[float]] = {}
        last: dict[tuple[str, str], dict] = {}
        for r in range(args.rounds):
            for command in args.only:
                for name, tree in trees.items():
                    seconds, doc = run(tree, COMMANDS[command], scratch[name])
                    times.setdefault((command, name), []).append(seconds)
                    last[(command, name)] = doc
                    print(f"round {r + 1} {command:7s} {name}: {seconds:7.2f} s", flush=True)
    rows, ratios = [], {}
    for command in args.only:
        old, new = (statistics.median(times[(command, n)]) for n in ("old", "new"))
        ratios[command] = new / old
        rows.append([command, f"{old:.1f}", f"{new:.1f}", f"{new / old:.3f}"])
    print()
    print(markdown_table(["command", "old [s] (median)", "new [s] (median)", "new / old"],
                         rows))
    for command in args.only:
        check = table3_differences if command == "table3" else verify_differences
        diffs = check(last[(command, "old")], last[(command, "new")])
        print(f"\n{command}: {'same numbers' if not diffs else f'{len(diffs)} differences'}")
        for line in diffs[:40]:
            print(f"  {line}")
    for command, ratio in ratios.items():
        print(f"target: {command} within {args.target:.2f}x of the old code: {ratio:.3f}x: "
              f"{verdict(ratio <= args.target)}")
    print("load average now: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
