"""Sparse Jacobians by colouring against dense ``dk.jacobian``: the issue's bar, measured.

    python benchmarks/sparse.py [--n 10000] [--repeats 3]

Broyden's tridiagonal residual (the catalog's ``broyden``) at n = 10^4: the coloured
Jacobian (3 forward passes, pattern and colouring made once and kept, as a jit cache
keeps its program) against ``dk.jacobian`` (one batched forward pass over all n
directions), both timed in this run, best of ``--repeats``. Prints the colours, the first
call (pattern + colouring + passes), a warm call, the dense call and their ratio
(bar: >= 100), and checks the two agree. Also the chained Rosenbrock Hessian's colours.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import diffkit as dk
from diffkit.bench import catalog
from diffkit.bench.structured import chained_rosenbrock


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    f, x = catalog.get("broyden").fn, np.linspace(-1.0, 1.0, args.n)
    jac = dk.sparse_jacobian(f)
    start = time.perf_counter()
    coloured = jac(x)
    first = time.perf_counter() - start
    warm = best(lambda: jac(x), args.repeats)
    dense_jacobian = dk.jacobian(f)
    dense_s = best(lambda: dense_jacobian(x), max(1, args.repeats // 3))
    dense = dense_jacobian(x)
    plan = jac.plan(x)
    print(f"tridiagonal n={args.n}: {plan.colors} colours ({plan.mode}), {plan.passes} passes")
    print(f"  sparse_jacobian: first call {first * 1e3:.1f} ms (pattern + colouring), "
          f"warm {warm * 1e3:.2f} ms")
    print(f"  dk.jacobian (dense): {dense_s * 1e3:.0f} ms")
    print(f"  ratio dense / coloured (warm): {dense_s / warm:.0f}x; first call: {dense_s / first:.0f}x")
    print(f"  max |coloured - dense| = {np.max(np.abs(coloured.toarray() - dense)):.1e}")
    hess = dk.sparse_hessian(chained_rosenbrock)
    print(f"chained Rosenbrock Hessian n={args.n}: {hess.plan(x).colors} colours (star)")


if __name__ == "__main__":
    main()
