"""The race: diffkit's eager backends against peer libraries, ratios measured in one run.

    diffkit bench                             # markdown table on stdout
    diffkit bench --quick -o race.md
    python -m diffkit.bench.race --quick      # the same, without the command line

Each row times diffkit and its opponent in the same process, calls interleaved round by
round, each sample autoranged to last ``min_time``; the median of ``repeat`` samples is
kept and the ratio diffkit / opponent is compared with its target. Peers run their own
native code (the same source with ``autograd.numpy``, ``torch`` ...); a peer that is
not installed makes its rows "skipped". ``--quick`` shrinks every size for a smoke test
(its ratios are not the targets' sizes).

Threads: by default the race re-runs itself with every library single-threaded
(OpenBLAS/OpenMP/MKL, PyTorch, XLA). On a small shared machine a multi-threaded BLAS
call can wait a whole scheduler slice for its second thread (a 0.1 ms matrix-vector
product measured at 8 ms here), which would time the scheduler, not the method;
``--threads N`` measures with N threads instead.

Memory: by default glibc's malloc as it comes, which returns large freed blocks to the
system, so a fresh array is page-faulted in again on every call; ``--warm-malloc``
re-runs with glibc keeping freed memory (:data:`WARM_MALLOC`, also the setting of
``benchmarks/core_ratios.py``). The header says which.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench import probes
from diffkit.bench.cnn_race import cnn_rows
from diffkit.bench.race_rows import Row, have, interleaved
from diffkit.bench.workloads import (logistic_loss, logistic_map, rosenbrock, rosenbrock_grad,
                                     scalar_loop, sin_product)

PEERS = ("autograd", "jax", "torch", "scipy", "numdifftools", "sympy")
SIZES = {"full": {"rosen": (10**6, 10**5), "logreg": (10**4, 100), "jac": ((10, 1000), (1000, 10),
                  (300, 300)), "points": 10**5, "sines": 50, "cnn": 128, "repeat": 15},
         "quick": {"rosen": (10**4,), "logreg": (500, 20), "jac": ((5, 50), (50, 5)),
                   "points": 10**3, "sines": 6, "cnn": 8, "repeat": 3}}


@dataclass
class Race:
    """All rows plus where and when they were measured."""

    rows: list[Row] = field(default_factory=list)
    header: dict[str, str] = field(default_factory=dict)
    quick: bool = False  # tiny sizes: the targets, set for the full sizes, are not judged


# --------------------------------------------------------------------------- measuring

WARM_MALLOC = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "1073741824",
               "MALLOC_TOP_PAD_": "268435456"}


def peak(fn: Callable[[], Any]) -> int:
    """tracemalloc peak bytes of one call (after a warm-up call)."""
    fn()
    return probes.peak_bytes(fn)


def threads_env(threads: int) -> dict[str, str]:
    """Environment variables that fix the thread count of every library in the race."""
    env = {k: str(threads) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                     "MKL_NUM_THREADS", "DIFFKIT_RACE_THREADS")}
    if threads == 1:
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    return env


# --------------------------------------------------------------------------- sections


def gradient_rows(n: int, repeat: int) -> list[Row]:
    """Rosenbrock at n: reverse vs autograd, vs f, vs the hand-written gradient."""
    x = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    fns = [lambda: rosenbrock(x), lambda: dk.grad(rosenbrock)(x), lambda: rosenbrock_grad(x)]
    if have("autograd"):
        import autograd
        import autograd.numpy as anp

        fns.append(partial(autograd.grad(partial(rosenbrock, np=anp)), x))
    t = interleaved(fns, repeat) + [None]
    tag = f"Rosenbrock grad n={n:.0e}".replace("e+0", "e")
    return [Row(f"{tag}: reverse / autograd", t[1], t[3], 0.5),
            Row(f"{tag}: reverse / f", t[1], t[0], 3.0),
            Row(f"{tag}: reverse / hand-written numpy gradient", t[1], t[2], 2.5)]


def logistic_rows(m: int, k: int, repeat: int) -> list[Row]:
    rng = np.random.default_rng(0)
    X, w = rng.standard_normal((m, k)), 0.1 * rng.standard_normal(k)
    y = np.where(rng.random(m) > 0.5, 1.0, -1.0)
    f = partial(logistic_loss, X=X, y=y)
    fns = [lambda: f(w), lambda: dk.grad(f)(w)]
    if have("autograd"):
        import autograd
        import autograd.numpy as anp

        fns.append(partial(autograd.grad(partial(logistic_loss, X=X, y=y, np=anp)), w))
    t = interleaved(fns, repeat) + [None]
    tag = f"logistic loss X {m:.0e}x{k}".replace("e+0", "e")
    return [Row(f"{tag}: reverse / autograd", t[1], t[2], 1.0),
            Row(f"{tag}: reverse / f", t[1], t[0], 2.0)]


def loop_rows(repeat: int) -> list[Row]:
    fns = [lambda: dk.grad(scalar_loop)(0.5), lambda: dk.grad(scalar_loop, backend="forward")(0.5)]
    if have("autograd"):
        import autograd
        import autograd.numpy as anp

        fns.append(partial(autograd.grad(partial(scalar_loop, np=anp)), 0.5))
    t = interleaved(fns, repeat) + [None]
    us = [None if v is None else v / 2000 * 1e6 for v in t]
    return [Row("scalar loop, 2,000 ops: reverse / autograd (per op)", us[0], us[2], 0.25, "µs"),
            Row("scalar loop, 2,000 ops: forward / autograd (per op)", us[1], us[2], 0.25, "µs")]


def compiled_rows(sizes: tuple[int, ...], m: int, k: int, points: int, repeat: int
                  ) -> list[Row]:
    """The compiled backend (static graph, generated numpy, no fusion) against eager
    reverse on the race's functions; setup = trace + transform + optimize + generate."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((m, k)), np.where(rng.random(m) > 0.5, 1.0, -1.0)
    loss = partial(logistic_loss, X=X, y=y)
    u = rng.uniform(0.1, 0.9, points)
    lmap = lambda x: dnp.sum(logistic_map(x))  # noqa: E731
    cases = [(f"Rosenbrock grad n={n:.0e}".replace("e+0", "e"), rosenbrock,
              rng.uniform(-1.0, 1.0, n), 1.0) for n in sizes]
    cases += [(f"logistic loss X {m:.0e}x{k}".replace("e+0", "e"), loss,
               0.1 * rng.standard_normal(k), 1.0),
              (f"logistic map depth 8 on {points:.0e} points".replace("e+0", "e"), lmap, u, 1.5),
              ("scalar loop, 2,000 ops", scalar_loop, 0.5, 0.1)]
    rows = []
    for tag, f, x, target in cases:
        be = dk.backend("compiled")
        compiled, eager = dk.grad(f, backend=be), dk.grad(f)
        compiled(x)
        setup = be.stats(f, x)["setup_s"]  # (the build alone, not the first call's run)
        t = interleaved([lambda: compiled(x), lambda: eager(x)], repeat)
        rows += [Row(f"{tag}: compiled / reverse", t[0], t[1], target),
                 Row(f"{tag}: compiled setup / {1.0 if 'loop' in tag else 0.1} s", setup,
                     1.0 if "loop" in tag else 0.1, 1.0)]
    return rows


def jacobian_rows(n: int, m: int, repeat: int) -> list[Row]:
    """tanh(A x), A of m x n: dk.jacobian (mode by shape) vs torch.func's better mode."""
    rng = np.random.default_rng(0)
    A, x = rng.standard_normal((m, n)) / np.sqrt(n), rng.standard_normal(n)

    def f(v: Any) -> Any:
        return dnp.tanh(dnp.matmul(A, v))

    fns = [partial(dk.jacobian(f), x)]
    if have("torch"):
        import torch

        At, xt = torch.from_numpy(A), torch.from_numpy(x)

        def ft(v: Any) -> Any:
            return torch.tanh(At @ v)

        fns += [partial(torch.func.jacfwd(ft), xt), partial(torch.func.jacrev(ft), xt)]
    t = interleaved(fns, repeat)
    best = min(t[1:]) if len(t) > 1 else None
    which = "" if best is None else "jacfwd" if t[1] <= t[2] else "jacrev"
    mode = "forward" if n <= m else "reverse"
    return [Row(f"jacobian tanh(Ax), (n, m)=({n}, {m}): dk.jacobian [{mode}] / "
                f"torch.func best [{which}]", t[0], best, 1.0)]


def symbolic_rows(points: int, sines: int, repeat: int) -> list[Row]:
    """Compiled CSE'd symbolic derivatives on a batch of points vs reverse on the batch."""
    from diffkit.interpreters.symbolic import closed_form

    rng = np.random.default_rng(0)
    rows = []
    xs = rng.uniform(0.1, 0.9, points)
    d = closed_form(logistic_map, 0.3, kind="derivative")
    t = interleaved([lambda: d(xs), lambda: dk.grad(lambda v: dnp.sum(logistic_map(v)))(xs)],
                    repeat)
    rows.append(Row(f"symbolic logistic map depth 8, {points:.0e} points: symbolic / reverse"
                    .replace("e+0", "e"), t[0], t[1], 2.0,
                    note=f"derive + compile {d.setup_s:.2f} s"))
    X = rng.uniform(0.3, 1.2, (points, sines))
    d = closed_form(sin_product, X[0], kind="grad")
    cols = list(X.T)
    t = interleaved([lambda: d._compiled(*cols),
                     lambda: dk.grad(lambda v: dnp.sum(dnp.prod(dnp.sin(v), axis=1)))(X)], repeat)
    rows.append(Row(f"symbolic product of {sines} sines, {points:.0e} points: symbolic / reverse"
                    .replace("e+0", "e"), t[0], t[1], 2.0,
                    note=f"derive + compile {d.setup_s:.2f} s"))
    return rows


def peer_rows(tag: str, f: Callable, x: np.ndarray, data: dict[str, np.ndarray],
              repeat: int) -> list[Row]:
    """For information: reverse against the other peers' native gradients of ``f``."""
    fns: dict[str, Callable[[], Any]] = {}
    notes: dict[str, str] = {}
    if have("jax"):
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        jx, jd = jnp.asarray(x), {k: jnp.asarray(v) for k, v in data.items()}
        g = jax.grad(partial(f, np=jnp, **jd))
        fns["jax eager"] = lambda: g(jx).block_until_ready()
        gj, seconds = probes.first_call(lambda: jax.jit(g).lower(jx).compile())
        notes["jax jit"] = f"compile {seconds:.2f} s"
        fns["jax jit"] = lambda: gj(jx).block_until_ready()
    if have("torch"):
        import torch

        tx, td = torch.from_numpy(x), {k: torch.from_numpy(v) for k, v in data.items()}
        ft = partial(f, np=torch, **td)

        def backward() -> Any:
            leaf = tx.detach().requires_grad_()
            ft(leaf).backward()
            return leaf.grad

        fns["torch .backward()"], fns["torch.func.grad"] = backward, partial(torch.func.grad(ft), tx)
    ours = partial(dk.grad(partial(f, **data)), x)
    t = interleaved([ours, *fns.values()], repeat)
    return [Row(f"{tag}: reverse / {name}", t[0], v, None, note=notes.get(name, ""))
            for name, v in zip(fns, t[1:])]


def memory_rows(n: int) -> list[Row]:
    x = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    ours = peak(lambda: dk.grad(rosenbrock)(x))
    theirs = None
    if have("autograd"):
        import autograd
        import autograd.numpy as anp

        theirs = peak(partial(autograd.grad(partial(rosenbrock, np=anp)), x))
    return [Row(f"peak memory, Rosenbrock grad n={n:.0e}: reverse / autograd".replace("e+0", "e"),
                ours, theirs, 1.0, "B")]


# --------------------------------------------------------------------------- report


def header() -> dict[str, str]:
    """Date, machine and versions."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}",
                f"diffkit {dk.__version__}"]
    for name in PEERS:
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{name} not installed")
    tuned = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("MALLOC_"))
    malloc = f"glibc kept warm ({', '.join(tuned)})" if tuned else "default glibc"
    threads = os.environ.get("DIFFKIT_RACE_THREADS", "library defaults")
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="minutes"),
            "machine": f"{platform.platform()}; {cpu}; {os.cpu_count()} cpus; "
                       f"threads per library: {threads}",
            "versions": ", ".join(versions), "malloc": malloc,
            "load": ", ".join(f"{v:.2f}" for v in os.getloadavg())}


Step = tuple[str, Callable[[], list[Row]]]


def plan(quick: bool = False, repeat: int | None = None) -> list[Step]:
    """The steps of a race, each ``(name, step)``; a step returns its rows."""
    size = SIZES["quick" if quick else "full"]
    r = repeat or size["repeat"]
    n, (m, k) = size["rosen"][0], size["logreg"]
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((m, k)), np.where(rng.random(m) > 0.5, 1.0, -1.0)
    return [
        *[(f"rosenbrock {dim:.0e}", partial(gradient_rows, dim, r)) for dim in size["rosen"]],
        ("logistic loss", partial(logistic_rows, m, k, r)),
        ("scalar loop", partial(loop_rows, r)),
        ("compiled", partial(compiled_rows, size["rosen"], m, k, size["points"], r)),
        *[(f"jacobian {a}x{b}", partial(jacobian_rows, a, b, r)) for a, b in size["jac"]],
        ("symbolic", partial(symbolic_rows, size["points"], size["sines"], r)),
        ("cnn", partial(cnn_rows, size["cnn"], r, not quick)),
        ("memory", partial(memory_rows, n)),
        ("other peers, rosenbrock", partial(
            peer_rows, f"Rosenbrock grad n={n:.0e}".replace("e+0", "e"), rosenbrock,
            rng.uniform(-1.0, 1.0, n), {}, r)),
        ("other peers, logistic loss", partial(
            peer_rows, f"logistic loss X {m:.0e}x{k}".replace("e+0", "e"), logistic_loss,
            0.1 * rng.standard_normal(k), {"X": X, "y": y}, r)),
    ]


def run(quick: bool = False, repeat: int | None = None,
        progress: Callable[[str], None] | None = None) -> Race:
    """Measure every row (``quick``: tiny sizes, for a smoke test).

    >>> race = run(quick=True, repeat=1)          # doctest: +SKIP
    >>> print(markdown(race))                      # doctest: +SKIP
    """
    race = Race(header=header(), quick=quick)
    for name, step in plan(quick, repeat):
        if progress:
            progress(name)
        race.rows += step()
    race.header["load"] += f" → {', '.join(f'{v:.2f}' for v in os.getloadavg())}"
    return race


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if unit == "B":
        return f"{v / 2**20:.1f} MB"
    if unit == "µs":
        return f"{v:.2f} µs"
    return f"{v * 1e3:.3g} ms"


def markdown(race: Race) -> str:
    """The race as a markdown document: header lines, then the table."""
    h = race.header
    method = ("- method: calls interleaved round by round, median of repeats; "
              "ratio = diffkit / opponent")
    lines = ["# diffkit race", "",
             f"- date: {h['date']}", f"- machine: {h['machine']}", f"- versions: {h['versions']}",
             f"- malloc: {h['malloc']}; load average (1, 5, 15 min) at start → end: {h['load']}",
             method, "",
             "| measure | diffkit | opponent | ratio | target | result | note |",
             "|---|---|---|---|---|---|---|"]
    for row in race.rows:
        ratio = "—" if row.ratio is None else f"{row.ratio:.2f}"
        target = "—" if row.target is None else f"≤ {row.target:g}"
        met = "not judged (--quick)" if race.quick and row.ratio is not None else row.met
        lines.append(f"| {row.measure} | {_fmt(row.ours, row.unit)} | "
                     f"{_fmt(row.theirs, row.unit)} | {ratio} | {target} | {met} | "
                     f"{row.note} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--repeat", type=int, help="samples per timing (median kept)")
    parser.add_argument("--threads", type=int, default=1, help="threads per library (1)")
    parser.add_argument("--warm-malloc", action="store_true",
                        help="glibc keeps freed memory (see the module docstring)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.add_argument("-o", "--output", help="write the markdown here")
    args = parser.parse_args(argv)
    env = threads_env(args.threads)
    if args.warm_malloc:
        env.update(WARM_MALLOC)
    if any(os.environ.get(k) != v for k, v in env.items()):  # libraries read them at start
        os.execve(sys.executable, [sys.executable, "-m", "diffkit.bench.race", *argv],
                  {**os.environ, **env})
    say = (lambda s: None) if args.quiet else (lambda s: print(f"race: {s}", file=sys.stderr))
    text = markdown(run(args.quick, args.repeat, progress=say))
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
