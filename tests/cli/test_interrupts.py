"""Ctrl-C in the commands of many fits: one SIGINT stops ``grid``, ``reproduce`` and
``verify`` within seconds, with exit 130 and nothing written (a lone ``fit`` returns its
interrupted run instead: tests/estimators/test_fit.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Seconds the command runs before the SIGINT, and the most it may take to stop after it.
RUNS_FOR, STOPS_WITHIN = 5.0, 3.0


def interrupted(args: list[str], cwd: Path) -> tuple[int, float, str]:
    """Run ``cvxrank ARGS`` as its own process, send SIGINT after :data:`RUNS_FOR` seconds:
    (exit code, seconds from the signal to the exit, stderr)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-m", "cvxrank.cli.main", *args], cwd=cwd,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    try:
        process.wait(timeout=RUNS_FOR)
        pytest.fail(f"{args[0]} ended before the signal (exit {process.returncode})")
    except subprocess.TimeoutExpired:
        pass
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    return process.returncode, time.monotonic() - sent, err


@pytest.mark.parametrize("command", ["grid", "reproduce", "verify"])
def test_one_ctrl_c_stops_a_command_of_many_fits(shared_data, tmp_path, command) -> None:
    ohsumed = shared_data / "letor3_ohsumed" / "QueryLevelNorm"
    out = tmp_path / "out"
    args = {
        # (the hinge up to C = 100: some 45 s; the squared hinge's grid can end within 5 s)
        "grid": ["grid", "--method", "ranksvm", "--loss", "hinge", "--data", str(ohsumed),
                 "--param", "C=1e-2,1e-1,1,10,100", "--select", "map", "--out", str(out)],
        "reproduce": ["reproduce", "chapelle-table3", "--data", str(ohsumed), "--out",
                      str(out)],
        "verify": ["verify", "--figures", str(out)],
    }[command]
    code, seconds, err = interrupted(args, tmp_path)
    assert code == 130, err
    assert seconds <= STOPS_WITHIN, seconds
    assert err.strip().endswith("cvxrank: interrupted")
    assert not out.exists() or not any(out.iterdir())  # nothing written, nothing partial
