"""The fusion race: diffkit's fused compiled gradients against jax.jit, one run.

    python benchmarks/fusion.py            # markdown table on stdout (a few minutes)
    python benchmarks/fusion.py --quick    # small sizes (a smoke test, not the targets)

Rows (issue 13's bar in brackets), every library on one core (the process pins itself to
one), times are medians of 15 samples, diffkit's and jax's interleaved:

* Rosenbrock gradient, n = 10^6 and 10^5: ``dk.jit(grad(f), fuse=True)`` over
  ``jax.jit(jax.grad(f))`` with x64 [<= 2];
* logistic-regression loss gradient, X 10^4 x 100 [<= 1.2];
* a 2,000-op scalar loop: microseconds per op after compilation [<= 0.05], run on the
  tape VM (one cached Numba interpreter; the program is only encoded as arrays);
* compile time (trace + transforms + fusion + kernels through LLVM IR or Numba) over
  jax.jit's (trace + XLA) on each of these [<= 2]; each library's one-off start-up is
  measured apart;
* peak resident memory of the fused Rosenbrock gradient at n = 10^6 over eager
  reverse's [<= 0.5].

Kernels compile into a fresh cache folder (a cold compile); the last row times the same
build in a second process, which loads them from that cache. The tape VM's interpreter is
compiled once per machine, not per program: its first-ever compile and its load from
Numba's cache are timed apart, in fresh processes with a fresh ``NUMBA_CACHE_DIR``. Where
torch is installed, ``torch.compile(torch.func.grad(f))`` (inductor's CPU backend, one
thread, static shapes) runs the same gradients as context figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# One core for this process and its children: XLA's CPU runtime runs large loops on more
# than one thread whatever its flags say (Rosenbrock's gradient at 10^6 took 0.42 ms on the
# two cores here, about 1 ms on one), so only pinning makes every library single-threaded.
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
os.environ.setdefault("DIFFKIT_CACHE", tempfile.mkdtemp(prefix="diffkit-fusion-bench-"))

from functools import partial  # noqa: E402

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit.bench import workloads  # noqa: E402
from diffkit.bench.cluster import cpu_model  # noqa: E402
from diffkit.bench.probes import peak_rss_bytes, timed  # noqa: E402

TORCH_MISSING = ("torch.compile: not measured, torch is not installed (here: pip install "
                 "torch==2.13.0, the CPU build; an unpinned torch is a CUDA build of GBs)")


# after ``start_up()`` in a new process (the benchmarks folder on its path)
START_UP = (f"import sys\nsys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            "from fusion import start_up\nstart_up()\n")


def start_up() -> None:
    """Each library's one-off start-up: a float64 kernel starts llvmlite (the LLVM IR
    route), a float32 one Numba's compiler (the tape VM's and other kernels')."""
    dk.jit(lambda x: dnp.sin(x) * 2.0, fuse=True)(np.ones(3))
    dk.jit(lambda x: dnp.sin(x) * 2.0, fuse=True)(np.ones(3, np.float32))


def rosenbrock(np_):
    return partial(workloads.rosenbrock, np=np_)


def logistic(np_):
    return lambda w, X, y: np_.mean(np_.log(1.0 + np_.exp(-y * (X @ w))))


def scalar_loop(np_):
    def f(x):
        for _ in range(500):  # 4 primitives per step: 2,000 operations
            x = np_.sin(x) * 0.9 + x * 0.1
        return x
    return f


def jax_setup():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    jax.jit(lambda x: x + 1.0)(1.0).block_until_ready()  # jax's own start-up, once
    return jax, jnp


def torch_grad(make, *args) -> tuple[float, float] | None:
    """``torch.compile(torch.func.grad(f))`` on the same inputs: (seconds per call, compile
    seconds: first call less one steady call), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    grad = torch.compile(torch.func.grad(make(torch)), dynamic=False)
    targs = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
    first = first_call(grad, *targs)
    steady = timed(lambda: grad(*targs), repeat=15)[0]
    return steady, first - steady


def paired(ours, theirs, repeat: int = 15) -> tuple[float, float]:
    """Median seconds per call of each, their samples interleaved (ours, theirs, ours, ...)
    so that a change in the shared host's speed during the run falls on both alike."""
    samples: tuple[list, list] = ([], [])
    for _ in range(repeat):
        for fn, out in zip((ours, theirs), samples):
            out.append(timed(fn, repeat=1, min_time=0.02)[0])
    return statistics.median(samples[0]), statistics.median(samples[1])


def first_call(fn, *args) -> float:
    start = time.perf_counter()
    out = fn(*args)
    getattr(out, "block_until_ready", lambda: None)()
    return time.perf_counter() - start


def race(quick: bool) -> tuple[list[tuple], dict]:
    """Rows (measure, diffkit, opponent, ratio, bar, met) and the context figures."""
    jax, jnp = jax_setup()
    start = time.perf_counter()
    start_up()
    context = {"numba + llvmlite start-up (once per process)": time.perf_counter() - start}
    rows = []

    def row(name, ours, theirs, bar, unit="ms", scale=1e3):
        ratio = ours / theirs
        rows.append((name, f"{ours * scale:.3g} {unit}", f"{theirs * scale:.3g} {unit}",
                     f"{ratio:.2f}", f"<= {bar}", "yes" if ratio <= bar else "no"))

    def compile_row(name, ours_s, theirs_s):
        row(f"{name}: compile (setup)", ours_s, theirs_s, 2, "s", 1)

    # Rosenbrock
    for n in ((10**4,) if quick else (10**6, 10**5)):
        x = np.random.default_rng(n).uniform(-1.0, 1.0, n)
        ours = dk.jit(lambda x: dk.grad(rosenbrock(dnp))(x), fuse=True)
        theirs = jax.jit(jax.grad(rosenbrock(jnp)))
        xj = jnp.asarray(x)
        t_setup_j = first_call(theirs, xj)
        ours(x)
        prog = ours.program(x)
        assert np.allclose(ours(x), np.asarray(theirs(xj)), rtol=1e-12, atol=1e-9)
        t_ours, t_jax = paired(lambda: ours(x), lambda: theirs(xj).block_until_ready())
        row(f"Rosenbrock grad, n = {n}", t_ours, t_jax, 2)
        compile_row(f"Rosenbrock n = {n}", prog.setup_s, t_setup_j - t_jax)
        unfused = dk.jit(lambda x: dk.grad(rosenbrock(dnp))(x), fuse=False)
        unfused(x)
        context[f"Rosenbrock n = {n}: compiled unfused, eager reverse"] = (
            timed(lambda: unfused(x))[0], timed(lambda: dk.grad(rosenbrock(dnp))(x))[0])
        context[f"Rosenbrock n = {n}: fusion"] = prog.fusion
        vg = dk.value_and_grad(rosenbrock(dnp), backend=dk.backend("compiled", fuse=True))
        vg(x)
        jvg = jax.jit(jax.value_and_grad(rosenbrock(jnp)))
        jvg(xj)[1].block_until_ready()
        context[f"Rosenbrock n = {n}: torch.compile grad, per call / compile"] = \
            torch_grad(rosenbrock, x)
        context[f"Rosenbrock n = {n}: dk.value_and_grad(compiled) / jax vg"] = \
            paired(lambda: vg(x), lambda: jvg(xj)[1].block_until_ready())

    # logistic regression
    m, d = (10**3, 100) if quick else (10**4, 100)
    rng = np.random.default_rng(7)
    X, y, w = rng.normal(size=(m, d)), np.sign(rng.normal(size=m)), 0.1 * rng.normal(size=d)
    ours = dk.jit(lambda w, X, y: dk.grad(logistic(dnp))(w, X, y), fuse=True)
    theirs = jax.jit(jax.grad(logistic(jnp)))
    Xj, yj, wj = jnp.asarray(X), jnp.asarray(y), jnp.asarray(w)
    t_setup_j = first_call(theirs, wj, Xj, yj)
    ours(w, X, y)
    prog = ours.program(w, X, y)
    assert np.allclose(ours(w, X, y), np.asarray(theirs(wj, Xj, yj)), rtol=1e-12, atol=1e-15)
    t_ours, t_jax = paired(lambda: ours(w, X, y), lambda: theirs(wj, Xj, yj).block_until_ready())
    row(f"logistic regression grad, X {m}x{d}", t_ours, t_jax, 1.2)
    compile_row("logistic regression", prog.setup_s, t_setup_j - t_jax)
    context["logistic regression: fusion"] = prog.fusion
    context["logistic regression: torch.compile grad, per call / compile"] = \
        torch_grad(logistic, w, X, y)

    # scalar loop
    ops = 2000
    ours = dk.jit(lambda x: dk.grad(scalar_loop(dnp))(x), fuse=True)
    theirs = jax.jit(jax.grad(scalar_loop(jnp)))
    t_setup_j = first_call(theirs, 0.3)
    ours(0.3)
    prog = ours.program(0.3)
    assert abs(float(ours(0.3)) - float(theirs(0.3))) <= 1e-12
    t_ours, t_jax = (t / ops for t in paired(lambda: ours(0.3),
                                            lambda: theirs(0.3).block_until_ready()))
    rows.append(("2,000-op scalar loop grad, per op", f"{t_ours * 1e6:.3g} µs",
                 f"{t_jax * 1e6:.3g} µs", f"{t_ours / t_jax:.2f}", "<= 0.05 µs",
                 "yes" if t_ours <= 0.05e-6 else "no"))
    compile_row("scalar loop", prog.setup_s, t_setup_j - t_jax * ops)
    context["scalar loop: fusion"] = prog.fusion
    context["scalar loop: eager reverse, µs per op"] = \
        timed(lambda: dk.grad(scalar_loop(dnp))(0.3), repeat=3)[0] / ops * 1e6

    # peak memory
    n = 10**4 if quick else 10**6
    x = np.random.default_rng(3).uniform(-1.0, 1.0, n)
    fused = dk.jit(lambda x: dk.grad(rosenbrock(dnp))(x), fuse=True)
    eager = dk.grad(rosenbrock(dnp))
    fused(x), eager(x)
    peak_eager = peak_rss_bytes(lambda: eager(x))
    peak_fused = peak_rss_bytes(lambda: fused(x))
    if peak_eager and peak_fused is not None:
        row(f"Rosenbrock grad n = {n}: peak resident memory, fused / eager reverse",
            max(peak_fused, 1), peak_eager, 0.5, "MB", 1e-6)
    context["peak resident growth (VmHWM): fused, eager reverse (bytes)"] = (peak_fused,
                                                                             peak_eager)
    context["second process, kernels from the disk cache: Rosenbrock setup (s)"] = \
        second_process(10**4 if quick else 10**5)
    context["tape VM interpreter: first-ever compile, load from the cache (s)"] = vm_compile()
    return rows, context


def vm_compile() -> str:
    """Seconds to compile the tape VM's interpreter in a fresh process with an empty Numba
    cache, then to load it from that cache in another (each after numba's own start-up)."""
    code = ("import time, numpy as np, diffkit as dk, diffkit.numpy as dnp\n"
            "from diffkit.compiler.scalar_vm import interpreter\n"
            + START_UP +
            "start = time.perf_counter()\ninterpreter()\nprint(time.perf_counter() - start)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="diffkit-vm-bench-")}
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  env=env, check=True).stdout.split()[-1]) for _ in range(2)]
    return f"{times[0]:.3g} / {times[1]:.3g}"


def second_process(n: int) -> float:
    """Setup of the fused Rosenbrock gradient in a new process sharing the kernel cache
    (after that process's own numba start-up)."""
    code = ("import numpy as np, diffkit as dk, diffkit.numpy as dnp, sys\n"
            "sys.path.insert(0, 'benchmarks')\nfrom fusion import rosenbrock\n"
            + START_UP +
            f"x = np.ones({n})\n"
            "f = dk.jit(lambda x: dk.grad(rosenbrock(dnp))(x), fuse=True)\n"
            "print(f.program(x).setup_s)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root, env=os.environ, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    rows, context = race(args.quick)
    print(f"{time.strftime('%Y-%m-%d %H:%M')} on {platform.node()}: {cpu_model()}, "
          f"{os.cpu_count()} cores\n")
    print("| measure | diffkit fused | jax.jit (x64) | ratio | bar | met |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    for k, v in context.items():
        if v is None:
            v = TORCH_MISSING
        elif isinstance(v, tuple):
            v = " / ".join(f"{x * 1e3:.3g} ms" if isinstance(x, float) else str(x) for x in v)
        elif isinstance(v, float):
            v = f"{v:.3g}"
        print(f"- {k}: {v}")


if __name__ == "__main__":
    main()
