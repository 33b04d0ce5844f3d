"""Solver benchmarks, one run each (run on demand, not a test): ratios are the result.

    python benchmarks/solvers.py                     # both parts (the ODE one takes minutes)
    python benchmarks/solvers.py --iterations-only

1. Fixed point (x = √(a + x), 200 entries) and Newton (x³ + 2x − q = 0, 100 entries):
   one gradient at exactly 10, 100 and 1,000 iterations (tol = 0), implicit and unrolled:
   error against the closed form, CPU time (and that of the solve alone, without the
   derivative), peak memory (tracemalloc, in one warmed session). Target: implicit peak at
   100 and 1,000 iterations within 1.2x of 10; the implicit derivative's own time (gradient
   minus solve) flat.
2. Lotka–Volterra over 10^4 RK4 steps: peak memory of one gradient by the continuous
   adjoint against the discrete (unrolled) one. Target: ratio <= 0.05.
CPU time of this process, BLAS on one thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit.bench.iterative import _cubic_exact, _sqrt_exact  # noqa: E402


def peak_and_time(fn: Callable[[], object]) -> tuple[int, float]:
    """Peak bytes above what was live before (tracemalloc already running), then CPU time
    of a second call without the peak reset's bookkeeping."""
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    t = time.process_time()
    fn()
    seconds = time.process_time() - t
    tracemalloc.start()
    return peak, seconds


def iterations() -> None:
    a = np.linspace(0.5, 3.0, 200)
    q = np.linspace(1.0, 5.0, 100)
    problems = {
        "fixed point": (lambda a, k, mode: dnp.sum(dk.fixed_point(
            lambda x, a: dnp.sqrt(a + x), dnp.ones_like(a), a, mode=mode, tol=0.0, max_iter=k)),
            a, _sqrt_exact(a)),
        "Newton": (lambda q, k, mode: dnp.sum(dk.root(
            lambda x, q: x ** 3 + 2.0 * x - q, dnp.zeros_like(q), q, mode=mode, tol=0.0,
            max_iter=k)), q, _cubic_exact(q)),
    }
    tracemalloc.start()
    for name, (loss, x, exact) in problems.items():
        for mode in ("implicit", "unrolled"):
            g = lambda k: dk.grad(lambda x: loss(x, k, mode))(x)  # noqa: E731
            g(1000 if mode == "implicit" else 10)  # warm up (free lists, imports)
            rows = {}
            for k in (10, 100, 1000):
                peak, seconds = peak_and_time(lambda: g(k))
                solve = peak_and_time(lambda: loss(x, k, mode))[1]
                err = float(np.max(np.abs(g(k) - exact)) / np.max(np.abs(exact)))
                rows[k] = peak
                print(f"{name:11s} {mode:9s} {k:5d} iterations: error {err:.1e}  "
                      f"time {seconds * 1e3:8.1f} ms (the solve alone {solve * 1e3:7.1f} ms)  "
                      f"peak {peak / 1e3:9.1f} kB")
            print(f"{name:11s} {mode:9s} peak ratio 100/10 = {rows[100] / rows[10]:.2f}, "
                  f"1000/10 = {rows[1000] / rows[10]:.2f}"
                  + ("   (target <= 1.2)" if mode == "implicit" else ""))
    tracemalloc.stop()


def adjoint_memory(steps: int = 10_000) -> None:
    def loss(p: object, adjoint: str) -> object:
        rhs = lambda y, t, p: dnp.stack([p[0] * y[0] - p[1] * y[0] * y[1],  # noqa: E731
                                         -p[2] * y[1] + p[3] * y[0] * y[1]])
        ys = dk.odeint(rhs, np.array([1.0, 0.5]), np.array([0.0, 10.0]), p, method="rk4",
                       steps=steps, adjoint=adjoint)
        return dnp.sum(ys[-1])

    p = np.array([1.5, 1.0, 3.0, 1.0])
    peaks, grads = {}, {}
    tracemalloc.start()
    for adjoint in ("continuous", "checkpointed", "discrete"):
        peaks[adjoint], seconds = peak_and_time(
            lambda: grads.__setitem__(adjoint, dk.grad(lambda p: loss(p, adjoint))(p)))
        print(f"Lotka–Volterra, {steps} RK4 steps, {adjoint:12s}: peak "
              f"{peaks[adjoint] / 1e6:8.2f} MB, time {seconds:6.2f} s, gradient {grads[adjoint]}")
    tracemalloc.stop()
    print(f"continuous / discrete peak memory = {peaks['continuous'] / peaks['discrete']:.4f}"
          "   (target <= 0.05)")
    print(f"checkpointed / discrete peak memory = {peaks['checkpointed'] / peaks['discrete']:.4f}")
    gap = np.max(np.abs(grads["continuous"] - grads["discrete"]))
    print(f"|continuous - discrete| / |discrete| = {gap / np.max(np.abs(grads['discrete'])):.1e}")


if __name__ == "__main__":
    import sys

    iterations()
    if "--iterations-only" not in sys.argv:
        adjoint_memory()
