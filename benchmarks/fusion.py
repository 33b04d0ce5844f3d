"""The compiled race: diffkit's default compiled gradients against jax.jit and
torch.compile, ratios measured in one run.

    python benchmarks/fusion.py            # two markdown tables on stdout (several minutes)
    python benchmarks/fusion.py --quick    # small sizes (a smoke test, not the bar's sizes)
    python benchmarks/fusion.py --cores 1  # only the one-core table

Every gradient is taken with no options: ``dk.grad(f, backend="compiled")`` (fused
kernels, the default wherever the ``jit`` extra is installed), ``jax.jit(jax.grad(f))``
with x64 and ``torch.compile(torch.func.grad(f))`` (inductor's CPU backend, static
shapes), all three in one process on the same float64 inputs, the same source function
(:mod:`diffkit.bench.workloads`, written over a numpy namespace; the CNN's convolution is
each library's own). Run time is the median
of 15 samples taken in turn (:func:`diffkit.bench.probes.interleaved`); compile time is
each library's first call less one steady call, after its one-off start-up.

Two tables, each measured in a fresh process:

* **one core**: the process is pinned to one core (``sched_setaffinity``) and every
  library told to use one thread; XLA's runtime uses a second core whatever its flags
  say, so only pinning makes the three comparable. The issue's bar is judged here.
* **two cores**: every library may use both; diffkit's row is ``compiled[parallel=true]``
  and a second ratio puts it over diffkit's one-thread time in the same process, the two
  timed in turn with each other only (torch's OpenMP threads spin on after a call and
  slowed whichever call came next): threads must never cost more than 10 %, and must pay
  on compute-bound loops (ten nested sines: ≤ 0.65) and on Rosenbrock's memory-bound
  gradient at 10⁶, where a second core adds bandwidth (≤ 0.8); ``benchmarks/threads.py``
  has more loops and sizes, with the rule's estimates.

The last rows of the one-core table are memory: peak resident growth of the default
compiled Rosenbrock gradient at n = 10⁶ over eager reverse's.
"""

from __future__ import annotations

import os
import sys
import tempfile

# kernels compile into a fresh cache folder (a cold compile), shared with the children
os.environ.setdefault("DIFFKIT_CACHE", tempfile.mkdtemp(prefix="diffkit-race-"))
CORES = int(os.environ.get("DIFFKIT_RACE_CORES", "0"))  # set by main() for its children
if CORES:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ[_var] = str(CORES)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[-CORES:])

import argparse  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from functools import partial  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit.bench import workloads as wl  # noqa: E402
from diffkit.bench.cluster import cpu_model  # noqa: E402
from diffkit.bench.probes import interleaved, peak_rss_bytes  # noqa: E402

REPEAT = 15


@dataclass
class Workload:
    """One gradient to race: ``fun(*args, np=…)`` differentiated in its first argument."""

    name: str
    fun: Callable[..., Any]
    args: Callable[[bool], tuple]  # quick → the inputs, numpy arrays (or a float)
    value: bool = False            # value_and_grad (a training step) rather than grad
    bar: float | None = None       # diffkit / jax.jit run time, one core
    ops: int | None = None         # report time per operation (the scalar loop)
    torch: bool = True             # torch.compile on 2,000 unrolled scalar ops takes minutes


def _rosenbrock_x(n: int, quick: bool) -> tuple:
    return (np.random.default_rng(n).uniform(-1.0, 1.0, 10**4 if quick else n),)


def _logistic(quick: bool) -> tuple:
    rng = np.random.default_rng(7)
    m, d = (10**3, 100) if quick else (10**4, 100)
    return 0.1 * rng.standard_normal(d), rng.standard_normal((m, d)), np.sign(rng.standard_normal(m))


def _mlp(quick: bool) -> tuple:
    rng = np.random.default_rng(3)
    m = 64 if quick else 512
    return wl.mlp_params(rng), rng.standard_normal((m, 20)), rng.standard_normal(m)


def _softmax(quick: bool) -> tuple:
    rng = np.random.default_rng(5)
    m = 200 if quick else 2000
    return (0.1 * rng.standard_normal((100, 10)), rng.standard_normal((m, 100)),
            np.eye(10)[rng.integers(0, 10, m)])


def _cnn(quick: bool) -> tuple:
    rng = np.random.default_rng(11)
    m, size = (16, 8) if quick else (64, 16)
    return (wl.cnn_params(rng, size=size), rng.standard_normal((m, 1, size, size)),
            np.eye(10)[rng.integers(0, 10, m)])


WORKLOADS = [
    Workload("Rosenbrock grad, n = 10⁶", wl.rosenbrock, partial(_rosenbrock_x, 10**6), bar=0.5),
    Workload("Rosenbrock grad, n = 10⁵", wl.rosenbrock, partial(_rosenbrock_x, 10**5)),
    Workload("logistic loss grad, X 10⁴ × 100", wl.logistic_loss, _logistic, bar=1.0),
    Workload("MLP step (value and grad), X 512 × 20, 64 tanh", wl.mlp_loss, _mlp, value=True,
             bar=1.2),
    Workload("softmax cross-entropy grad, X 2000 × 100, 10 classes",
             wl.softmax_cross_entropy, _softmax),
    Workload("2,000-op scalar loop grad, per op", wl.scalar_loop, lambda quick: (0.5,),
             ops=2000, torch=False),
    Workload("heat stencil, 100 steps, n = 10⁴", wl.heat_stencil,
             lambda quick: (np.sin(np.linspace(0.0, 3.0, 10**3 if quick else 10**4)),)),
    Workload("ten nested sines grad, n = 10⁶", wl.nested_sines,
             lambda quick: (np.random.default_rng(2).uniform(-1, 1, 10**4 if quick else 10**6),)),
    Workload("CNN grad, 64 images 16 × 16, conv 3 × 3 × 8, tanh, pool, 512 → 10", wl.cnn_loss,
             _cnn),
]
COMPILE_BARS = {"Rosenbrock grad, n = 10⁶", "Rosenbrock grad, n = 10⁵",
                "logistic loss grad, X 10⁴ × 100", "MLP step (value and grad), X 512 × 20, 64 tanh"}


def first_call(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _ready(out: Any) -> Any:
    """Wait for jax's asynchronous result (every leaf)."""
    import jax

    return jax.block_until_ready(out)


def contenders(w: Workload, args: tuple, parallel: bool) -> dict[str, Callable[[], Any]]:
    """Name → a call of that library's compiled gradient on ``args`` (not yet called)."""
    out: dict[str, Callable[[], Any]] = {}
    transform = dk.value_and_grad if w.value else dk.grad
    spec = "compiled[parallel=true]" if parallel else "compiled"
    out["diffkit"] = partial(transform(w.fun, backend=spec), *args)
    import jax
    import jax.numpy as jnp

    jfun = jax.jit((jax.value_and_grad if w.value else jax.grad)(partial(w.fun, np=jnp)))
    jargs = jax.tree_util.tree_map(jnp.asarray, args)
    out["jax.jit"] = lambda: _ready(jfun(*jargs))
    if w.torch:
        try:
            import torch
        except ImportError:
            return out
        torch.set_num_threads(max(CORES, 1))
        tgrad = (torch.func.grad_and_value if w.value else torch.func.grad)(
            partial(w.fun, np=torch))
        tfun = torch.compile(tgrad, dynamic=False)
        targs = jax.tree_util.tree_map(
            lambda a: torch.from_numpy(a) if isinstance(a, np.ndarray) else a, args)
        out["torch.compile"] = partial(tfun, *targs)
    return out


def _leaves(tree: Any) -> np.ndarray:
    import jax

    return np.concatenate([np.ravel(np.asarray(getattr(v, "numpy", lambda: v)()))
                           for v in jax.tree_util.tree_leaves(tree)])


def measure(w: Workload, quick: bool, parallel: bool) -> dict[str, tuple[float, float]]:
    """Name → (seconds per call, compile seconds); every result checked against jax's."""
    args = w.args(quick)
    calls = contenders(w, args, parallel)
    if parallel:
        calls["diffkit, one thread"] = partial(
            (dk.value_and_grad if w.value else dk.grad)(w.fun, backend="compiled"), *args)
    firsts = {name: first_call(call) for name, call in calls.items()}
    reference = _leaves(calls["jax.jit"]())
    for name, call in calls.items():
        out = call()
        if name.startswith("torch"):  # grad_and_value returns (grad, value)
            out = (out[1], out[0]) if w.value else out
        if not np.allclose(_leaves(out), reference, rtol=1e-10, atol=1e-12):
            raise AssertionError(f"{w.name}: {name} disagrees with jax.jit")
    one = calls.pop("diffkit, one thread", None)
    steady = [t for t, _ in interleaved(list(calls.values()), REPEAT)]
    got = {name: (t, firsts[name] - t) for name, t in zip(calls, steady)}
    if one is not None:  # the two diffkit programs in turn with each other only: a library
        # whose threads spin on after a call (torch's OpenMP) slows the call that follows it
        (threaded, _), (single, _) = interleaved([calls["diffkit"], one], REPEAT)
        got["threads"] = (threaded / single, 0.0)
    return got


def _time(seconds: float | None, ops: int | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds / ops * 1e6:.3g} µs" if ops else f"{seconds * 1e3:.3g} ms"


def _judge(ratio: float, bar: float | None) -> str:
    return "–" if bar is None else f"≤ {bar:g}: {'met' if ratio <= bar else 'NOT met'}"


def start_up() -> None:
    """Each library's one-off start-up (llvmlite and Numba for diffkit, XLA for jax),
    so that no first call below pays it."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.jit(lambda x: x + 1.0)(1.0).block_until_ready()
    dk.grad(lambda x: dnp.sum(dnp.sin(x) * 2.0), backend="compiled")(np.ones(3))
    dk.grad(lambda x: dnp.sin(x) * 2.0, backend="compiled")(0.5)


def table(quick: bool) -> list[str]:
    """This process's table (one core or two, by ``CORES``)."""
    start_up()
    parallel = CORES > 1
    lines = ["| gradient | diffkit | jax.jit | torch.compile | diffkit / jax (bar) | "
             + ("parallel / one thread (bar) |" if parallel else "compile: diffkit / jax (bar) |"),
             "|---|---|---|---|---|---|"]
    for w in WORKLOADS:
        got = measure(w, quick, parallel)
        ours, jax_t = got["diffkit"], got["jax.jit"]
        torch_t = got.get("torch.compile")
        ratio = ours[0] / jax_t[0]
        if parallel:
            threads = got["threads"][0]
            bar = 0.65 if w.fun is wl.nested_sines else \
                0.8 if w.name == "Rosenbrock grad, n = 10⁶" else 1.1
            last = f"{threads:.2f} ({_judge(threads, bar)})"
            run_bar = None
        else:
            compile_ratio = ours[1] / jax_t[1]
            bar = 2 if w.name in COMPILE_BARS else None
            last = (f"{ours[1]:.3g} s / {jax_t[1]:.3g} s = {compile_ratio:.2f} "
                    f"({_judge(compile_ratio, bar)})")
            run_bar = w.bar
        torch_cell = "–" if torch_t is None else f"{_time(torch_t[0], w.ops)} (compile {torch_t[1]:.3g} s)"
        lines.append(f"| {w.name} | {_time(ours[0], w.ops)} | {_time(jax_t[0], w.ops)} | "
                     f"{torch_cell} | {ratio:.2f} ({_judge(ratio, run_bar)}) | {last} |")
    if not parallel:
        lines += ["", memory_row(quick), "", cache_row(quick)]
    return lines


def memory_row(quick: bool) -> str:
    """Peak resident growth of one default compiled Rosenbrock gradient over eager's."""
    (x,) = _rosenbrock_x(10**6, quick)
    compiled, eager = dk.grad(wl.rosenbrock, backend="compiled"), dk.grad(wl.rosenbrock)
    compiled(x), eager(x)
    ours, theirs = peak_rss_bytes(lambda: compiled(x)), peak_rss_bytes(lambda: eager(x))
    if not ours or not theirs:
        return "peak resident memory: not measurable on this system (Linux's VmHWM)"
    ratio = max(ours, 1) / theirs
    return (f"Peak resident growth of one gradient, Rosenbrock n = {x.size}: compiled "
            f"{ours / 1e6:.1f} MB, eager reverse {theirs / 1e6:.1f} MB, ratio {ratio:.2f} "
            f"({_judge(ratio, 0.5)}).")


def _child_seconds(code: str, env: dict[str, str], warm: str = "start_up()") -> float:
    """The last number a fresh Python process prints running ``code`` after ``warm``."""
    prelude = (f"import sys\nsys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})"
               "\nimport time, numpy as np, diffkit as dk, diffkit.numpy as dnp\n"
               f"from fusion import start_up, wl\n{warm}\nstart = time.perf_counter()\n")
    out = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                         text=True, env={**os.environ, **env}, check=True)
    return float(out.stdout.split()[-1])


def cache_row(quick: bool) -> str:
    """What the disk caches save a later process: the fused Rosenbrock gradient's build
    with its kernels on disk, and the tape VM's interpreter (compiled once per machine),
    its first-ever compile in a fresh Numba cache against its load from that cache."""
    n = 10**4 if quick else 10**5
    kernels = _child_seconds(
        f"g = dk.grad(wl.rosenbrock, backend='compiled')\ng(np.ones({n}))\n"
        "print(time.perf_counter() - start)", {})
    vm = {"NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="diffkit-vm-race-")}
    code = ("from diffkit.compiler.scalar_vm import interpreter\ninterpreter()\n"
            "print(time.perf_counter() - start)")
    numba_up = ("dk.grad(lambda x: dnp.sum(dnp.sin(x)), backend='compiled')"
                "(np.ones(3, np.float32))")  # (a float32 kernel: Numba's own start-up)
    first, cached = _child_seconds(code, vm, numba_up), _child_seconds(code, vm, numba_up)
    return (f"Disk caches, in a new process: Rosenbrock n = {n} gradient, build and first "
            f"call with its kernels cached {kernels:.3g} s; the tape VM's interpreter, "
            f"first-ever compile {first:.3g} s, load from the cache {cached:.3g} s.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--cores", type=int, choices=(1, 2), action="append",
                        help="measure only this table (repeatable; default both)")
    args = parser.parse_args()
    if not _installed("jax"):
        sys.exit("benchmarks/fusion.py races against jax.jit: pip install jax (and torch "
                 "for torch.compile's column)")
    if CORES:  # a child: print this table
        print("\n".join(table(args.quick)))
        return
    import importlib.metadata as meta

    versions = ", ".join(f"{name} {meta.version(name)}" for name in
                         ("numpy", "jax", "torch", "numba", "llvmlite") if _installed(name))
    print(f"{time.strftime('%Y-%m-%d %H:%M')} on {platform.node()}: {cpu_model()}, "
          f"{os.cpu_count()} cores; {versions}; load {os.getloadavg()[0]:.2f}")
    for cores in args.cores or (1, 2):
        print(f"\n### {'one core' if cores == 1 else 'two cores'}\n", flush=True)
        child = [sys.executable, os.path.abspath(__file__)] + (["--quick"] if args.quick else [])
        subprocess.run(child, check=True, env={**os.environ, "DIFFKIT_RACE_CORES": str(cores)})


def _installed(name: str) -> bool:
    import importlib.metadata as meta

    try:
        meta.version(name)
        return True
    except meta.PackageNotFoundError:
        return False


if __name__ == "__main__":
    main()
