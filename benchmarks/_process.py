"""Whole-process timing for the benchmarks: wall, CPU (user + system) and peak RSS of a child.

:func:`run_process` starts one fresh process and reaps it with ``os.wait4``, so the CPU time
and the peak resident set size are those of that child alone (its own ``rusage``), not
deltas of ``RUSAGE_CHILDREN`` that a concurrent child could blur. Its output goes to
temporary files (no pipe to drain while waiting).

**Peak memory and the launcher.** Linux's ``ru_maxrss`` of a process includes the peak
resident size of the memory image it *replaced* at ``exec`` (``exec_mmap`` keeps the old
image's high-water mark): a child forked (or vforked, as ``subprocess`` does) from a
benchmark process that holds 250 MB of data reports at least 250 MB, whatever it uses. So the
child is started by a tiny C launcher (:data:`LAUNCHER_SOURCE`, compiled once into the
git-ignored ``benchmarks/build/``), a process of about 1 MB that forks the command, waits for
it with ``wait4`` and writes its wall time, CPU times (microseconds) and peak RSS: the
command's image replaces the launcher's, so its peak is its own (plus at most the launcher's
~1 MB). Without a C compiler the child is started directly and the peak RSS is flagged as an
upper bound.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: The ``cvxrank`` console script of the interpreter running the benchmark.
CVXRANK = str(Path(sys.executable).with_name("cvxrank"))

#: The launcher: ``wait4run STATS CMD...`` runs CMD and writes "status wall_us user_us sys_us
#: maxrss_kb" to STATS.
LAUNCHER_SOURCE = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: wait4run STATS CMD...\n"); return 127; }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 127; }
    if (pid == 0) { execvp(argv[2], argv + 2); perror("execvp"); _exit(127); }
    int status; struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) { perror("wait4"); return 127; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    FILE *f = fopen(argv[1], "w");
    if (!f) { perror("fopen"); return 127; }
    long long wall = (t1.tv_sec - t0.tv_sec) * 1000000LL + (t1.tv_nsec - t0.tv_nsec) / 1000;
    fprintf(f, "%d %lld %lld %lld %ld\n", status, wall,
            (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
            (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_maxrss);
    fclose(f);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
"""

_LAUNCHER: list[Path | None] = []


def launcher() -> Path | None:
    """The compiled launcher (compiled on first use), or None without a C compiler."""
    if not _LAUNCHER:
        build = Path(__file__).resolve().parent / "build"
        exe = build / "wait4run"
        src = build / "wait4run.c"
        try:
            if not exe.is_file() or not src.is_file() or src.read_text() != LAUNCHER_SOURCE:
                build.mkdir(parents=True, exist_ok=True)
                src.write_text(LAUNCHER_SOURCE)
                cc = os.environ.get("CC", "cc")
                subprocess.run([cc, "-O2", "-o", str(exe), str(src)], check=True,
                               capture_output=True)
            _LAUNCHER.append(exe)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"no C launcher ({exc}): peak RSS of children includes this process's peak")
            _LAUNCHER.append(None)
    return _LAUNCHER[0]


@dataclass
class Proc:
    """One finished child process."""

    cmd: list[str]
    returncode: int
    wall: float
    user: float
    system: float
    maxrss_mb: float
    stdout: str
    stderr: str

    @property
    def cpu(self) -> float:
        """User + system CPU seconds."""
        return self.user + self.system


def blas_env(threads: int, base: dict[str, str] | None = None, *,
             plain: bool = False) -> dict[str, str]:
    """An environment with ``threads`` BLAS/OpenMP threads (0: none set, so that cvxrank's
    thread policy applies, :mod:`cvxrank.utils.threads`); ``plain``: also without any
    ``CVXRANK_*`` variable, as a user's shell."""
    from cvxrank.utils.threads import START_MARKER, THREAD_VARIABLES

    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in (*THREAD_VARIABLES, START_MARKER)
           and not (plain and k.startswith("CVXRANK_"))}
    if threads > 0:
        env.update(dict.fromkeys(THREAD_VARIABLES, str(threads)))
    return env


def run_process(cmd: list[str], *, env: dict[str, str] | None = None,
                ok: tuple[int, ...] = (0,), cwd: str | None = None) -> Proc:
    """Run ``cmd`` as a fresh process; raise if its exit code is not in ``ok``.

    Through :func:`launcher` when there is one (exact peak RSS, see the module's note).
    """
    cmd = [str(c) for c in cmd]
    exe = launcher()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as stats:
        started = time.perf_counter()
        full = [str(exe), stats.name, *cmd] if exe is not None else cmd
        child = subprocess.Popen(full, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 env=env, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = stats.read().split() if exe is not None else []
        if len(text) == 5:
            wall = int(text[1]) / 1e6
            user, system, rss = int(text[2]) / 1e6, int(text[3]) / 1e6, int(text[4])
        else:
            user, system, rss = usage.ru_utime, usage.ru_stime, usage.ru_maxrss
        proc = Proc(cmd=cmd, returncode=child.returncode, wall=wall, user=user,
                    system=system, maxrss_mb=rss / 1024.0,  # kilobytes on Linux
                    stdout=out.read().decode(errors="replace"),
                    stderr=err.read().decode(errors="replace"))
    if proc.returncode not in ok:
        raise RuntimeError(f"{' '.join(proc.cmd)} exited with {proc.returncode}:\n"
                           f"{proc.stderr[-2000:]}")
    return proc


def warm_page_cache(path: str | os.PathLike[str], block: int = 1 << 24) -> None:
    """Read a file once so that every timed process finds it in the page cache."""
    with open(path, "rb") as fh:
        while fh.read(block):
            pass
