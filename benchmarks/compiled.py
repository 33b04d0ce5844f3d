"""The compiled backend against eager reverse mode: sizes and speed ratios, one run.

    python benchmarks/compiled.py            # markdown table on stdout
    python benchmarks/compiled.py --quick    # smaller sizes (a smoke test, not the targets)

Rows (the issue's bar in brackets):

* logistic map, depth 8 and 10: equations of the optimized gradient graph over those of
  f's own graph [<= 4], SymPy's derivative tree for contrast (it grows exponentially),
  and the compiled gradient of sum(f) on 10^5 points against eager reverse [<= 1.5x];
* a 2,000-op scalar loop (500 x ``x = sin(x)*0.9 + x*0.1``): microseconds per op of the
  gradient, eager reverse over compiled [>= 10x], and trace + transform + optimize +
  generate [< 1 s];
* Rosenbrock at n = 10^6 (and 10^5): gradient time, compiled over eager reverse [<= 1],
  setup [< 0.1 s].

Times are medians (``diffkit.bench.measure.timed``), BLAS pinned to one thread.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit.bench.probes import timed  # noqa: E402
from diffkit.bench.workloads import rosenbrock  # noqa: E402


def logistic(depth: int):
    def f(x):
        for _ in range(depth):
            x = 4.0 * x * (1.0 - x)
        return x
    return f


def scalar_loop(x):
    for _ in range(500):
        x = dnp.sin(x) * 0.9 + x * 0.1
    return x


def compiled_grad(f):
    be = dk.backend("compiled")
    g = dk.grad(f, backend=be)
    return g, be


def rows(quick: bool) -> list[tuple[str, str, str]]:
    out = []
    points = 10**3 if quick else 10**5
    for depth in (8, 10):
        f = logistic(depth)
        f_eqns = len(dk.make_graph(f)(0.3))
        g, be = compiled_grad(f)
        g(0.3)
        ratio = be.stats(None, None)["graph_eqns"] / f_eqns
        try:
            from diffkit.interpreters.symbolic import closed_form

            tree = closed_form(f, np.float64(0.3), "derivative").sizes["expr_nodes"]
        except Exception as exc:  # noqa: BLE001
            tree = f"({type(exc).__name__})"
        out.append((f"logistic map depth {depth}: gradient graph / f graph",
                    f"{be.stats(None, None)['graph_eqns']} / {f_eqns} = {ratio:.2f}  (SymPy tree {tree} nodes)",
                    "<= 4"))
        F = lambda x, f=f: dnp.sum(f(x))  # noqa: E731
        x = np.random.default_rng(0).uniform(0.1, 0.9, points)
        gc, _ = compiled_grad(F)
        gr = dk.grad(F, backend="reverse")
        assert np.allclose(gc(x), gr(x), rtol=1e-12)
        tc, tr = timed(lambda: gc(x))[0], timed(lambda: gr(x))[0]
        out.append((f"logistic map depth {depth}, grad on {points} points: compiled / reverse",
                    f"{tc * 1e3:.3g} ms / {tr * 1e3:.3g} ms = {tc / tr:.2f}", "<= 1.5"))

    g, be = compiled_grad(scalar_loop)
    cpu = time.process_time()
    g(0.3)
    cpu = time.process_time() - cpu  # (the machine may be shared: wall time counts others)
    setup = be.stats(None, None)["setup_s"]
    gr = dk.grad(scalar_loop, backend="reverse")
    assert abs(g(0.3) - gr(0.3)) <= 1e-12
    ops = 2000
    tc, tr = timed(lambda: g(0.3))[0], timed(lambda: gr(0.3), repeat=3)[0]
    out.append(("2,000-op scalar loop: µs per op, reverse / compiled",
                f"{tr / ops * 1e6:.3g} / {tc / ops * 1e6:.3g} = {tr / tc:.1f}", ">= 10"))
    out.append(("2,000-op scalar loop: trace + transform + optimize + generate",
                f"{setup:.3f} s (CPU {cpu:.3f} s; {be.stats(None, None)['graph_passes']})",
                "< 1 s"))

    for n in ((10**4,) if quick else (10**6, 10**5)):
        x = np.random.default_rng(1).uniform(-1, 1, n)
        g, be = compiled_grad(rosenbrock)
        cpu = time.process_time()
        g(x)
        cpu = time.process_time() - cpu  # (setup and one call)
        setup = be.stats(None, None)["setup_s"]  # trace + transform + optimize + generate
        gr = dk.grad(rosenbrock, backend="reverse")
        assert np.allclose(g(x), gr(x), rtol=1e-12)
        tc, tr = timed(lambda: g(x))[0], timed(lambda: gr(x))[0]
        out.append((f"Rosenbrock n={n}: grad compiled / reverse",
                    f"{tc * 1e3:.3g} ms / {tr * 1e3:.3g} ms = {tc / tr:.2f}", "<= 1"))
        out.append((f"Rosenbrock n={n}: setup",
                    f"{setup * 1e3:.1f} ms (CPU with one call {cpu * 1e3:.1f} ms; "
                    f"{be.stats(None, None)['graph_passes']})", "< 100 ms"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    print("| measure | figure | target |\n|---|---|---|")
    for measure, figure, target in rows(args.quick):
        print(f"| {measure} | {figure} | {target} |")


if __name__ == "__main__":
    main()
