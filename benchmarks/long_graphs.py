"""Build time of long elementwise programs: linear in the number of equations?

    python benchmarks/long_graphs.py                      # 1,000 to 17,000 steps
    python benchmarks/long_graphs.py --steps 100 1000     # other lengths
    python benchmarks/long_graphs.py --kernel-ops 100000 --steps 400 1000 3000   # uncut

The gradient of ``x <- 0.5 sin x + 0.1`` repeated ``steps`` times over 16 numbers, a
straight-line program of six equations per step once differentiated (10^5 equations at
17,000 steps), built by ``dk.jit(dk.grad(f))`` with an empty kernel cache: trace,
transforms, optimization, fusion, LLVM. Fused kernels are cut at
``diffkit.compiler.fusion.KERNEL_OPS`` operations (LLVM's code generation grows faster
than a kernel's body). Each row: equations, kernels, build seconds, build time per 1,000
equations, one call's time; the gradient checked against the derivative recurrence.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ["DIFFKIT_CACHE"] = tempfile.mkdtemp(prefix="diffkit-long-")

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit.bench.probes import timed  # noqa: E402
from diffkit.compiler import fusion  # noqa: E402


def chain(steps: int):
    def f(x):
        for _ in range(steps):
            x = dnp.sin(x) * 0.5 + 0.1
        return dnp.sum(x)
    return f


def by_hand(x: np.ndarray, steps: int) -> np.ndarray:
    dx = np.ones_like(x)
    for _ in range(steps):
        x, dx = 0.5 * np.sin(x) + 0.1, 0.5 * np.cos(x) * dx
    return dx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[1000, 3000, 10000, 17000])
    parser.add_argument("--kernel-ops", type=int, default=fusion.KERNEL_OPS,
                        help=f"cut kernels past this many operations ({fusion.KERNEL_OPS})")
    args = parser.parse_args()
    fusion.KERNEL_OPS = args.kernel_ops
    x = np.linspace(-2.0, 2.0, 16)
    dk.jit(dk.grad(chain(2)))(x)  # llvmlite's start-up, not a build
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.2f}\n")
    print("| steps | equations | kernels | build | per 1,000 equations | call |")
    print("|---|---|---|---|---|---|")
    for steps in args.steps:
        g = dk.jit(dk.grad(chain(steps)))
        start = time.perf_counter()
        got = g(x)
        build = time.perf_counter() - start
        np.testing.assert_allclose(got, by_hand(x, steps), rtol=1e-10, atol=1e-300)
        prog = g.program(x)
        eqns = len(prog.graph.eqns)
        kernels = prog.fusion.split(" kernel")[0]
        call = timed(lambda: g(x), repeat=5)[0]
        print(f"| {steps:,} | {eqns:,} | {kernels} | {build:.2f} s | "
              f"{build / eqns * 1e3:.3f} s | {call * 1e3:.2f} ms |", flush=True)


if __name__ == "__main__":
    main()
