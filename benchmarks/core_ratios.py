"""Core performance ratios, measured in one run (run on demand, not a test).

    python benchmarks/core_ratios.py            # default malloc
    python benchmarks/core_ratios.py --warm-malloc

Ratios, not absolute times, are the result: the function and its derivative are
timed in the same process, interleaved, median of repeats, as CPU time of this process
(``time.process_time``: steadier than wall time on a shared machine; BLAS is pinned to
one thread so CPU time is the time the work takes). ``--warm-malloc``
re-runs the script with glibc told to keep freed memory (no first-touch page faults
for fresh large arrays); both f and its gradient run under the same setting.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

import diffkit as dk
import diffkit.numpy as dnp

WARM_MALLOC = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "1073741824",
               "MALLOC_TOP_PAD_": "268435456"}


def median_times(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Median CPU seconds per call of each function, calls interleaved after a warm-up."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, s in zip(fns, samples):
            t = time.process_time()
            fn()
            s.append(time.process_time() - t)
    return [statistics.median(s) for s in samples]


def rosenbrock(x):
    return dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def scalar_loop(x):
    """2,000 scalar primitive calls: 500 x (mul, sin, mul, add)."""
    for _ in range(500):
        x = x * 0.999 + dnp.sin(x) * 0.001
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-malloc", action="store_true",
                        help="re-run with glibc keeping freed memory (see module docstring)")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           **(WARM_MALLOC if args.warm_malloc else {})}
    if any(os.environ.get(k) != v for k, v in env.items()):  # before numpy's first use
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **env})
    setting = "warm malloc" if "MALLOC_TOP_PAD_" in os.environ else "default malloc"
    rng = np.random.default_rng(0)
    rows = []

    x = rng.standard_normal(10**6)
    tf, tg = median_times([lambda: rosenbrock(x), lambda: dk.grad(rosenbrock)(x)], args.repeat)
    rows.append(("Rosenbrock n=1e6: reverse grad / f", tg / tf, "<= 3"))

    X = rng.standard_normal((10**4, 100))
    y = np.where(rng.random(10**4) > 0.5, 1.0, -1.0)
    w = 0.1 * rng.standard_normal(100)

    def logreg(w):
        return dnp.mean(dnp.log1p(dnp.exp(-y * (X @ w))))

    tf, tg = median_times([lambda: logreg(w), lambda: dk.grad(logreg)(w)], args.repeat)
    rows.append(("logistic loss X 1e4x100: reverse grad / f", tg / tf, "<= 2"))

    for mode in ("reverse", "forward"):
        (t,) = median_times([lambda: dk.grad(scalar_loop, backend=mode)(0.5)], args.repeat)
        rows.append((f"scalar loop, {mode}: microseconds per op", t / 2000 * 1e6, "<= 3"))

    A = rng.standard_normal((300, 300)) / 10
    x = rng.standard_normal(300)

    def tanh_ax(x):
        return dnp.tanh(A @ x)

    eye = np.eye(300)
    tb, tl = median_times([lambda: dk.jacobian(tanh_ax, backend="forward")(x),
                           lambda: [dk.jvp(tanh_ax, (x,), (e,)) for e in eye]], max(3, args.repeat // 3))
    rows.append(("forward jacobian n=300: per-direction loop / batched", tl / tb, ">= 10"))

    print(f"diffkit core ratios ({setting}, numpy {np.__version__}, "
          f"Python {sys.version.split()[0]}, {os.cpu_count()} cores)")
    print(f"{'measure':58} {'value':>8}  target")
    for name, value, target in rows:
        print(f"{name:58} {value:8.2f}  {target}")


if __name__ == "__main__":
    main()
