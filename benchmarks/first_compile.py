"""The first compile in a fresh process: what a user waits for once per session, before
any cache helps. Rosenbrock's gradient at n = 10⁶, diffkit's compiled backend (an empty
kernel cache) against jax.jit, each library in its own new process pinned to one core,
timed from before the first call to its result (imports and each library's start-up, a
tiny program's first call, are timed apart: they are paid once whatever the program).

    python benchmarks/first_compile.py            # 3 fresh processes per library
    python benchmarks/first_compile.py --runs 5

Prints, per library, the median over the runs of: the import, the start-up (a first tiny
gradient) and the first call of the Rosenbrock gradient (trace, compile, run), and the
ratio diffkit / jax.jit of that first call (issue 42's bar: ≤ 2).
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

CHILD = r"""
import json, os, sys, time
os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
lib = sys.argv[1]
t0 = time.perf_counter()
import numpy as np
if lib == "diffkit":
    import diffkit as dk, diffkit.numpy as dnp
    t1 = time.perf_counter()
    dk.grad(lambda v: dnp.sum(v * v), backend="compiled")(np.ones(3))
    t2 = time.perf_counter()
    f = lambda x: dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    g = dk.grad(f, backend="compiled")
    x = np.linspace(-1.0, 1.0, 10**6)
    t3 = time.perf_counter()
    got = g(x)
else:
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    t1 = time.perf_counter()
    jax.jit(jax.grad(lambda v: jnp.sum(v * v)))(np.ones(3)).block_until_ready()
    t2 = time.perf_counter()
    f = lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    g = jax.jit(jax.grad(f))
    x = np.linspace(-1.0, 1.0, 10**6)
    t3 = time.perf_counter()
    got = np.asarray(g(x).block_until_ready())
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "start": t2 - t1, "first": t4 - t3,
                  "check": float(got[1])}))
"""


def one(lib: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               DIFFKIT_CACHE=tempfile.mkdtemp(prefix="diffkit-first-"))
    out = subprocess.run([sys.executable, "-c", CHILD, lib], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per library (3)")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.2f}; Rosenbrock "
          f"gradient, n = 10^6, median of {args.runs} fresh processes each\n")
    print("| library | import | start-up | first call |")
    print("|---|---|---|---|")
    firsts, checks = {}, []
    for lib in ("diffkit", "jax.jit"):
        runs = [one("diffkit" if lib == "diffkit" else "jax") for _ in range(args.runs)]
        checks += [r["check"] for r in runs]
        med = {k: statistics.median(r[k] for r in runs) for k in ("import", "start", "first")}
        firsts[lib] = med["first"]
        print(f"| {lib} | {med['import']:.2f} s | {med['start']:.2f} s | {med['first']:.3f} s |")
    if max(checks) - min(checks) > 1e-9 * max(1.0, abs(checks[0])):
        raise AssertionError(f"the gradients' entry 1 differs between runs: {checks}")
    ratio = firsts["diffkit"] / firsts["jax.jit"]
    print(f"\nfirst call, diffkit / jax.jit: {ratio:.2f} (bar ≤ 2: "
          f"{'met' if ratio <= 2 else 'not met'})")


if __name__ == "__main__":
    main()
