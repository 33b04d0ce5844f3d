"""``parallel=True`` against one thread: which fused loops two cores speed up, and the rule.

    python benchmarks/threads.py            # the table (about a minute)
    python benchmarks/threads.py --quick    # two sizes only
    python benchmarks/threads.py --always   # threads on every kernel: what the rule saves

Each row is one fused kernel at several sizes: ``dk.jit(f, parallel=True)`` over
``dk.jit(f)`` in the same process, the two timed in turn (median of 9 rounds), BLAS on one
thread. Beside each ratio, the rule's estimate of the one-thread time
(:func:`diffkit.compiler.kernel_threads.seconds`: elements times ~0.25 ns, plus ~0.6 ns per
call of diffkit's vector math and ~5 ns per call of the C library) and its decision:
threads from an estimated 200 µs on (a part handed to a thread and awaited costs ~50-75 µs
on this machine). The table ends with the issue's bars: every compute-bound loop at 10^6
≤ 0.65, Rosenbrock's gradient (memory-bound) at 10^6 ≤ 0.8, and no row the rule threads
above 1.1.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit.bench import workloads as wl  # noqa: E402
from diffkit.bench.probes import interleaved  # noqa: E402
from diffkit.compiler.fusion import fuse  # noqa: E402
from diffkit.compiler.kernel_ir import build  # noqa: E402
from diffkit.compiler import kernel_threads  # noqa: E402
from diffkit.compiler.kernel_threads import cores, seconds, threads_share  # noqa: E402
from diffkit.ir.tracer import trace_graph  # noqa: E402


def damped_sines(x):
    """x ← 0.9 sin(x) + 0.1, ten times (compute-bound: ten C-library calls)."""
    for _ in range(10):
        x = dnp.sin(x) * 0.9 + 0.1
    return dnp.sum(x)


def tanh_layer(x):
    return dnp.sum(dnp.tanh(x) * x)


def softplus(x):
    return dnp.sum(dnp.log1p(dnp.exp(x)))


def affine(x):
    return x * 2.0 + 1.0


ROWS = [  # (name, function, compute-bound)
    ("Rosenbrock grad", dk.grad(wl.rosenbrock), False),
    ("x * 2 + 1", affine, False),
    ("softplus grad (exp, log1p)", dk.grad(softplus), True),
    ("tanh(x)·x grad", dk.grad(tanh_layer), True),
    ("ten nested sines grad", dk.grad(wl.nested_sines), True),
    ("x ← 0.9 sin x + 0.1, ten times, grad", dk.grad(damped_sines), True),
]


def row(f, n: int) -> tuple[float, bool, float]:
    """(the rule's estimate in seconds, whether it threads, parallel / one thread)."""
    x = np.random.default_rng(n).uniform(-1.0, 1.0, n)
    plan = fuse(trace_graph(f, (x,)))
    ir = build(plan, plan.kernels[0])
    one, two = dk.jit(f), dk.jit(f, parallel=True)
    np.testing.assert_allclose(two(x), one(x), rtol=1e-12)
    (t1, _), (t2, _) = interleaved([lambda: one(x), lambda: two(x)], repeat=9, min_time=0.05)
    return seconds(ir), threads_share(ir), t2 / t1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 10^5 and 10^6 only")
    parser.add_argument("--always", action="store_true",
                        help="share every kernel among the cores (the rule off)")
    args = parser.parse_args()
    if args.always:
        kernel_threads.THREADS_MIN_SECONDS = 0.0
    sizes = (10**5, 10**6) if args.quick else (3 * 10**4, 10**5, 3 * 10**5, 10**6)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.2f}, {cores()} cores; "
          "parallel=True / one thread (the rule's estimate of one thread, threads or not)\n")
    print("| kernel | " + " | ".join(f"n = {n:,}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    failed, threaded_over = [], []
    for name, f, compute in ROWS:
        cells = []
        for n in sizes:
            estimate, threads, ratio = row(f, n)
            cells.append(f"{ratio:.2f} ({estimate * 1e6:,.0f} µs, {'threads' if threads else 'one'})")
            if threads and ratio > 1.1:
                threaded_over.append(f"{name} at {n:,}")
            if n == 10**6 and ratio > (0.65 if compute else 0.8 if f is ROWS[0][1] else 9):
                failed.append(f"{name} {ratio:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nBars at 10^6 (compute-bound ≤ 0.65, Rosenbrock ≤ 0.8): "
          f"{'met' if not failed else 'NOT met: ' + ', '.join(failed)}; threaded rows over "
          f"1.1: {', '.join(threaded_over) or 'none'}.")


if __name__ == "__main__":
    main()
