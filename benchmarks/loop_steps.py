"""Build and run time against the number of steps: a loop unrolled (a Python loop, traced
step by step) beside the same loop as one ``scan`` equation (``dk.scan``, ``dk.fori_loop``),
and jax.jit of that program, where the loop is JAX's ``lax.scan`` / ``lax.fori_loop``
(``diffkit.gradbench.lstm.objective_scanned``, ``diffkit.gradbench.ode.primal_looped``: one
program, each library's own loop). One process pinned to one core, BLAS on one thread,
diffkit's kernel cache empty; each gradient checked against the eval's hand-derived one
before it is timed.

    python benchmarks/loop_steps.py               # GradBench's LSTM (2 layers) and ODE (n = 1000)
    python benchmarks/loop_steps.py --unrolled 64 # unroll up to 64 steps (default 256)
    python benchmarks/loop_steps.py --unrolled 64 --figure docs/loop_steps.png

Rows: the LSTM's gradient over c characters (c − 1 steps), the ODE's gradient over s RK4
steps. "build" is the first call less a steady one (trace, compile, first run); "run" the
median steady call (``diffkit.bench.probes.interleaved``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("DIFFKIT_CACHE", tempfile.mkdtemp(prefix="diffkit-loops-"))


def measure(grad, args, exact) -> tuple[float, float]:
    """(build seconds, steady run seconds) of ``grad(*args)``, checked against ``exact``."""
    import numpy as np

    from diffkit.bench.probes import first_call, interleaved

    got, first = first_call(lambda: grad(*args))
    flat = np.concatenate([np.ravel(np.asarray(g, float)) for g in
                           (got if isinstance(got, tuple) else (got,))])
    want = np.concatenate([np.ravel(w) for w in (exact if isinstance(exact, tuple) else (exact,))])
    if not np.allclose(flat, want, rtol=1e-8, atol=1e-10 * max(1.0, np.max(np.abs(want)))):
        raise AssertionError("a gradient disagrees with the hand-derived one")
    run = interleaved([lambda: grad(*args)], repeat=5, min_time=0.05)[0][0]
    return max(first - run, 0.0), run


def rows(unrolled_limit: int) -> list[list[str]]:
    import numpy as np

    import diffkit as dk
    import diffkit.numpy as dnp
    from diffkit.gradbench import lstm, ode

    jax = dk.backend("jax", jit=True)
    for warm in ("compiled", jax):  # each library's one-off start-up, not a compile
        dk.grad(lambda v: dnp.sum(v * v), backend=warm)(np.ones(3))
    _, ((main, extra), state, sequence) = lstm.prepare(lstm.inputs("l=2,c=1024"))
    out = []
    for c in (16, 64, 256, 1024):
        seq = sequence[:c]
        exact = lstm.jacobian_by_hand(main, extra, state, seq)
        loss = lambda f: (lambda p: f(p[0], p[1], state, seq))
        cells = [measure(dk.grad(loss(f), backend=b), ((main, extra),), exact)
                 if f is not lstm.objective or c - 1 <= unrolled_limit else None
                 for f, b in ((lstm.objective, "compiled"), (lstm.objective_scanned, "compiled"),
                              (lstm.objective_scanned, jax))]
        out.append([f"LSTM, {c - 1} steps", *_cells(cells)])
        print(f"  LSTM c={c} done", file=sys.stderr, flush=True)
    x = np.random.RandomState(31337).random_sample(1000)
    for s in (10, 30, 100):
        exact = ode.gradient_by_hand(x, s)
        cells = [measure(dk.grad(lambda v: f(v, s)[-1], backend=b), (x,), exact)
                 if f is not ode.primal or s <= unrolled_limit else None
                 for f, b in ((ode.primal, "compiled"), (ode.primal_looped, "compiled"),
                              (ode.primal_looped, jax))]
        out.append([f"ODE n = 1000, {s} steps", *_cells(cells)])
        print(f"  ODE s={s} done", file=sys.stderr, flush=True)
    return out


def figure(path: str, unrolled_limit: int) -> None:
    """Build time against the number of LSTM steps, each way, on log axes: ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import diffkit as dk
    from diffkit.gradbench import lstm

    jax = dk.backend("jax", jit=True)
    _, ((main, extra), state, sequence) = lstm.prepare(lstm.inputs("l=2,c=1024"))
    ways = {"diffkit, unrolled (a Python loop)": (lstm.objective, "compiled"),
            "diffkit, one scan": (lstm.objective_scanned, "compiled"),
            "jax.jit, lax.scan": (lstm.objective_scanned, jax)}
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, (f, backend) in ways.items():
        steps = [c - 1 for c in (9, 17, 33, 65, 129, 257, 513, 1025)
                 if f is not lstm.objective or c - 1 <= unrolled_limit]
        builds = []
        for t in steps:
            seq = sequence[:t + 1]
            exact = lstm.jacobian_by_hand(main, extra, state, seq)
            grad = dk.grad(lambda p, seq=seq: f(p[0], p[1], state, seq), backend=backend)
            builds.append(measure(grad, ((main, extra),), exact)[0])
            print(f"  {label}, {t} steps: {builds[-1]:.2f} s", file=sys.stderr, flush=True)
        ax.plot(steps, builds, "o-", label=label)
    ax.set(xscale="log", yscale="log", xlabel="LSTM steps (2 layers)",
           ylabel="build: first call less a steady one (s)",
           title="Build time of the LSTM's gradient against its steps")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def _cells(cells: list) -> list[str]:
    text = [("—" if c is None else f"{c[0]:.2f} s / {c[1] * 1e3:.2f} ms") for c in cells]
    scan, jax_ = cells[1], cells[2]
    return text + [f"{scan[0] / max(jax_[0], 1e-9):.2f} / {scan[1] / jax_[1]:.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unrolled", type=int, default=256,
                        help="unroll loops of at most this many steps (256)")
    parser.add_argument("--figure", metavar="PNG",
                        help="draw build time against steps (LSTM) to this file instead")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    if args.figure:
        figure(args.figure, args.unrolled)
        return
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.2f}; one core, "
          "build / run per cell\n")
    print("| gradient | diffkit, unrolled | diffkit, one scan | jax.jit, lax loop | "
          "scan / jax: build / run |")
    print("|---|---|---|---|---|")
    for row in rows(args.unrolled):
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
