r"""The compiled exact projection onto the :math:`\ell_{1,\infty}` ball in the orthant.

:class:`~cvxrank.numerics.sets.L1InfLayout` projects with one of two exact methods (the KKT
conditions of Quattoni et al. 2009, Sect. 4, adapted to the orthant: see
:class:`~cvxrank.numerics.sets.L1InfBall`, Notes):

* **compiled** (:func:`project_blocks`, this module): a Newton root search on each block's
  threshold :math:`\theta_b`, without sorting. Each step is one pass over the block's
  values, :math:`O(m_b)`; the steps observed are 2-7 per block on random inputs, whatever
  its size (10^2 to 10^6 coordinates), at most 14 on structured ones, so the projection is
  :math:`O(m)` in practice. The steps are capped
  at :func:`step_limit` (:math:`O(\log m)`), so it is :math:`O(m \log m)` in the worst
  case, where a call in which a block reaches the cap is redone by the sort-based method.
* **numpy** (:meth:`~cvxrank.numerics.sets.L1InfLayout.project_sorted`): Quattoni et al.'s
  breakpoint algorithm with two ``argsort`` of m numbers and some twenty whole-array passes,
  :math:`O(m \log m)`.

Both are exact to rounding; they add in different orders, so their points differ by
rounding only (at most 1e-17 sigma m on the 1000 inputs of
``tests/test_l1inf_projection.py``, sigma the largest of 1, ``|v|`` and the budgets).

Which one runs (``KERNELS.use_compiled()``)
-------------------------------------------
The kernel whenever ``make install`` compiled it ahead of time (:mod:`cvxrank.compiled.aot`: loaded
in well under a millisecond, without numba). Without that module it is compiled by numba
(``njit(cache=True, nogil=True)``) and cached on disk (``__pycache__``), so a process pays a
fixed cost before its first compiled call: importing
numba and loading the cached machine code, 0.2-0.25 s in a fresh process on the machine of
``benchmarks/README.md`` (0.14 s of it the import; compiling, after a change of this file,
1-2.5 s once); ``benchmarks/bench_l1inf_projection.py`` prints it. As for PRSVM+'s passes
(:mod:`cvxrank.formulations.sorted_kernels`), the rule is ski rental: the numpy method runs
until it has spent :data:`NUMPY_BUDGET` seconds in the process, then it loads
the kernel, which runs from then on (at once if :func:`warm_up` was called before, as
the benchmarks and tests do). A short process (a stochastic fit of the paper's T <= 1000 steps,
about 60-100 microseconds per numpy projection of one query) never imports numba; a long one
pays at most the budget on top. Unlike PRSVM+'s passes, the two methods are different
algorithms, so a point computed before the switch and one computed after it may differ by
rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cvxrank.compiled.kernels import KernelFile

#: Seconds the numpy method may spend in a process before the kernel is loaded (about the
#: kernel's fixed cost, 0.2-0.25 s from a fresh process, more on a slower or loaded machine).
NUMPY_BUDGET = 0.25


def step_limit(m: int) -> int:
    """Most Newton steps per block for a projection of m coordinates: ``8 + 2 log2(m)``.

    The steps observed are at most 7; the cap bounds a call by :math:`O(m \\log m)`.
    """
    return 8 + 2 * int(m).bit_length()


# Plain Python, compiled with numba the first time ``project_blocks`` is looked up in this
# module (importing the module does not import numba).
def _project_blocks(v: np.ndarray, perm: np.ndarray, group_ptr: np.ndarray,
                    block_ptr: np.ndarray, group_label: np.ndarray, budget: np.ndarray,
                    max_steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    r"""The projection of ``v`` onto :math:`\{z \ge 0 : \sum_{g \in b} \max_{j \in g} z_j
    \le R_b\}` for every block b, by Newton steps on the threshold (see
    :class:`~cvxrank.numerics.sets.L1InfBall`, Notes).

    Parameters
    ----------
    v : float64 (m,)
        The point (finite).
    perm : int64 (m,)
        The coordinates in the order of the groups of ``group_label``: group position k
        holds ``perm[group_ptr[k]:group_ptr[k + 1]]``.
    group_ptr : int64 (G + 1,)
        Boundaries of the group positions in ``perm``.
    block_ptr : int64 (B + 1,)
        Boundaries of each block's group positions: block b is the group positions
        ``block_ptr[b]:block_ptr[b + 1]``.
    group_label : int64 (G,)
        The group label at each group position.
    budget : float64 (B,)
        :math:`R_b \ge 0`.
    max_steps : int
        Most Newton steps per block.

    Returns
    -------
    point, cap, threshold, steps
        The projection, the caps :math:`\mu_g` (by group label), the thresholds
        :math:`\theta_b`, and the total number of steps, or -1 (the other outputs then
        unset) if a block did not converge within ``max_steps``.
    """
    n_groups, n_blocks = group_ptr.size - 1, block_ptr.size - 1
    point = np.empty(v.size)
    cap = np.empty(n_groups)
    threshold = np.empty(n_blocks)
    a = np.empty(v.size)  # max(v, 0), in group order
    top = np.empty(n_groups)
    positive_sum = np.empty(n_groups)
    positive_count = np.empty(n_groups, dtype=np.int64)
    # each group's linear piece (S_A - theta) / |A| of M: its set A = {a_j > m} by count
    # and sum; state 1: that piece, 0: the piece 0 (mu = 0 for now), 2: mu = 0 for good
    count = np.empty(n_groups, dtype=np.int64)
    total = np.empty(n_groups)
    state = np.empty(n_groups, dtype=np.int8)
    steps = 0
    for b in range(n_blocks):
        first, last = block_ptr[b], block_ptr[b + 1]
        radius = budget[b]
        norm = 0.0
        for k in range(first, last):
            largest, s, c = 0.0, 0.0, 0
            for p in range(group_ptr[k], group_ptr[k + 1]):
                x = v[perm[p]]
                x = x if x > 0.0 else 0.0
                a[p] = x
                largest = max(largest, x)
                s += x
                c += x > 0.0
            top[k], positive_sum[k], positive_count[k] = largest, s, c
            norm += largest
        theta = 0.0
        if norm > radius and radius > 0.0:
            # start: the root of the sum of the pieces of all positive values, or of the top
            # values, whichever is larger (both are below the root)
            numerator, denominator, live = 0.0, 0.0, 0
            for k in range(first, last):
                if positive_count[k] > 0:
                    numerator += positive_sum[k] / positive_count[k]
                    denominator += 1.0 / positive_count[k]
                    live += 1
            from_all = (numerator - radius) / denominator
            theta = max(from_all, (norm - radius) / live)
            for k in range(first, last):
                state[k] = 1 if positive_count[k] > 0 else 2
                count[k] = positive_count[k] if theta == from_all else 1
                total[k] = positive_sum[k] if theta == from_all else top[k]
            step = 0
            while True:
                step += 1
                if step > max_steps:
                    return point, cap, threshold, -1
                # each group's piece at theta gives m; the piece of {a_j > m} is at least
                # as high at theta
                changed = False
                for k in range(first, last):
                    old = state[k]
                    if old == 2:
                        continue
                    m = (total[k] - theta) / count[k] if old == 1 else 0.0
                    if m <= 0.0:
                        s, c = positive_sum[k], positive_count[k]
                        new = 1 if s > theta else 2
                    else:
                        s, c = 0.0, 0
                        for p in range(group_ptr[k], group_ptr[k + 1]):
                            x = a[p]
                            s += x * (x > m)
                            c += x > m
                        if c == 0:  # m >= top, by rounding only: keep the piece
                            continue
                        new = 1
                    changed = changed or c != count[k] or new != old
                    total[k], count[k], state[k] = s, c, new
                if not changed:
                    break
                numerator, denominator = 0.0, 0.0
                for k in range(first, last):
                    if state[k] == 1:
                        numerator += total[k] / count[k]
                        denominator += 1.0 / count[k]
                following = (numerator - radius) / denominator if denominator > 0.0 else theta
                if not following > theta:  # no progress: converged to rounding
                    break
                theta = following
            steps += step
        elif norm > radius:  # radius 0: every cap 0, theta the largest group sum
            for k in range(first, last):
                theta = max(theta, positive_sum[k])
                state[k] = 2
        threshold[b] = theta
        for k in range(first, last):
            if norm <= radius:
                mu = top[k]
            elif state[k] == 1:
                mu = min(max((total[k] - theta) / count[k], 0.0), top[k])
            else:
                mu = 0.0
            cap[group_label[k]] = mu
            for p in range(group_ptr[k], group_ptr[k + 1]):
                point[perm[p]] = min(a[p], mu)
    return point, cap, threshold, steps


#: The kernel's argument types, for the ahead-of-time module (every array C-contiguous).
_SIGNATURE = ("Tuple((f8[::1], f8[::1], f8[::1], i8))(f8[::1], i8[::1], i8[::1], i8[::1], "
              "i8[::1], f8[::1], i8)")


def _warm(kernels: dict[str, Any]) -> None:
    """Call the kernel once, for the argument types :class:`~cvxrank.numerics.sets.
    L1InfLayout` passes."""
    index = np.array([0, 1], dtype=np.int64)
    kernels["project_blocks"](np.array([1.0, -1.0]), index, np.array([0, 1, 2], dtype=np.int64),
                              np.array([0, 2], dtype=np.int64), index, np.array([0.5]), 1)


#: The kernel file (:class:`~cvxrank.compiled.kernels.KernelFile`): ahead of time, numba or
#: the numpy method, with the process's account of the numpy method's time.
KERNELS = KernelFile(__file__, {"project_blocks": (_project_blocks, _SIGNATURE)}, _warm,
                     numpy_budget=NUMPY_BUDGET)


def __getattr__(name: str) -> Any:
    """``project_blocks``: the compiled kernel."""
    if name == "project_blocks":
        return KERNELS.dispatchers()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel for the argument types
    :class:`~cvxrank.numerics.sets.L1InfLayout` uses; from then on this process uses it.

    The first call costs importing numba and loading the kernel from ``__pycache__``
    (0.2-0.25 s from a fresh process) or, after a change of this file, compiling it;
    benchmarks and tests call this before they time or certify anything.
    """
    KERNELS.warm_up()
