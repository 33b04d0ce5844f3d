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
import sys
import time
from collections.abc import Callable

import numpy as np

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench.probes import interleaved
from diffkit.bench.race import WARM_MALLOC
from diffkit.bench.workloads import logistic_loss, rosenbrock, scalar_loop

def median_times(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Median CPU seconds per call of each function, calls interleaved (one probe for all)."""
    return [m for m, _ in interleaved(fns, repeat, clock=time.process_time)]


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
        return logistic_loss(w, X, y)

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
