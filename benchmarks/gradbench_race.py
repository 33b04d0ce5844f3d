"""GradBench's evals as the compiler's race: diffkit's compiled gradient against jax.jit's,
and torch.compile's beside them, on the same program (each eval's function written once
with diffkit.numpy; JAX and PyTorch run it on their own arrays), one core each, results
awaited. One run, ratios measured in it.

    python benchmarks/gradbench_race.py                  # every eval, its two smallest sizes
    python benchmarks/gradbench_race.py --eval ode --eval det --sizes 3
    python benchmarks/gradbench_race.py --eval ode --size n=1000,s=100
    python benchmarks/gradbench_race.py --timeout 60      # seconds per cell (compile + run)

Each cell (an eval at a size) runs in a fresh process pinned to one core, BLAS on one
thread, with an empty kernel cache (as jax.jit, which keeps none on disk): the first call of each library (trace, compile and run: the compile time is that
less a steady call), then both steady calls timed in turn (``diffkit.bench.probes.
interleaved``, median of 7 rounds). Both gradients are checked against the eval's
hand-derived one before they are timed (a disagreeing cell is marked ``wrong``). A cell past
``--timeout`` runs again, each library alone in its own process with the same time, so the
row says which one did not finish and what the other took (without a ratio).

torch.compile's column is ``torch.compile(torch.func.grad(f))`` of that same function on
tensors: dynamo traces diffkit.numpy's dispatch along with the arithmetic, so it measures
this program, not GradBench's hand-written PyTorch tool; no ratio is taken to it.

particle and saddle, whose functions are whole descents over nested derivatives (not one
gradient), race as whole evaluations, one row per function (rr, ff, fr, rf): GradBench's
input, the result checked against the hand-derived one. Their loops are ``dk.fori_loop``,
so the same program is one loop of diffkit's graph and ``lax.fori_loop`` in JAX, the inner
derivative nested in the outer one either way.

    python benchmarks/gradbench_race.py --eval particle --eval saddle

The table ends with the issue's bar: the median of diffkit / jax over the valid cells
(≤ 1.0), the largest (≤ 2.0), and compile ≤ 2× jax's on each cell.
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

CHILD = "DIFFKIT_GRADBENCH_CELL"
LIBRARIES = ("diffkit", "jax.jit", "torch.compile")


NESTED = ("particle", "saddle")  # whole evaluations, one row per function


def cell(name: str, size: str, libs: tuple[str, ...] = LIBRARIES) -> dict:
    """One eval at one size (a nested eval: one function), measured in this (one-core)
    process, for ``libs``: each library's result checked, then timed."""
    import numpy as np

    import diffkit as dk
    import diffkit.numpy as dnp
    from diffkit.gradbench import EVALS
    from diffkit.gradbench.workloads import instance

    backends = {"diffkit": dk.backend("compiled"), "jax.jit": dk.backend("jax", jit=True)}
    warm = lambda x: dnp.sum(dnp.sin(x) * 2.0)  # noqa: E731
    for b in backends.values():  # each library's one-off start-up, not a compile
        dk.grad(warm, backend=b)(np.ones(3))
    if "torch.compile" in libs and name not in NESTED:
        torch_gradient(warm)(np.ones(3))
    calls, out = {}, {"eval": name, "size": size}
    if name in NESTED:  # (no torch row: the jax backend is the one that nests in a loop)
        ev = EVALS[name]
        static, arrays = ev.prepare(ev.input(ev.sizes[0]))
        exact = np.asarray(ev.reference(size, ev.input(ev.sizes[0])), float)
        for lib in (lib for lib in libs if lib in backends):
            run = ev.build(size, backends[lib])
            calls[lib] = lambda run=run: np.asarray(ev.output(size, run(static, *arrays)), float)
    else:
        p = instance(name, size)
        exact = p.exact(p.x)
        for lib in libs:
            g = torch_gradient(p.f) if lib == "torch.compile" else \
                dk.grad(p.f, backend=backends[lib])
            calls[lib] = lambda g=g: g(p.x)
    return {**out, **timed(calls, exact)}


def torch_gradient(f):
    """``torch.compile(torch.func.grad(f))`` of a diffkit.numpy function ``f`` (it runs on
    tensors through ``array_api_compat.torch``), float64, one thread; numpy in and out."""
    import array_api_compat.torch as xt
    import torch

    from diffkit.core import using

    torch.set_num_threads(1)

    def on_tensors(x):
        with using(xt):
            return f(x)

    g = torch.compile(torch.func.grad(on_tensors))
    return lambda x: g(torch.from_numpy(x)).numpy()


def timed(calls: dict, exact) -> dict:
    """Each library's first call (checked against ``exact``), then steady calls in turn."""
    import numpy as np

    from diffkit.bench.probes import first_call, interleaved

    out, valid = {}, {}
    scale = max(1.0, float(np.max(np.abs(exact))))
    for lib, call in calls.items():
        try:
            got, first = first_call(call)
        except Exception as exc:  # (one library's failure is that cell's, not the run's)
            out[lib] = f"error: {type(exc).__name__}"
            continue
        if not np.allclose(np.asarray(got, float), exact, rtol=1e-8, atol=1e-8 * scale):
            out[lib] = "wrong"
            continue
        out[f"{lib} first"], valid[lib] = first, call
    steady = interleaved(list(valid.values()), repeat=7, min_time=0.05) if valid else []
    for lib, (seconds, _) in zip(valid, steady):
        out[f"{lib} run"] = seconds
        out[f"{lib} compile"] = max(out[f"{lib} first"] - seconds, 0.0)
    return out


def run_cell(name: str, size: str, timeout: float) -> dict:
    """:func:`cell` in a child process pinned to one core, or its timeout; a cell past it
    runs again per library, to say which one did not finish and what the other took."""
    out = _child(name, size, timeout, LIBRARIES)
    if "status" not in out:
        return out
    out = {"eval": name, "size": size, "status": out["status"]}
    for lib in LIBRARIES:
        alone = _child(name, size, timeout, (lib,))
        out[lib] = alone.get("status") or alone
    return out


def _child(name: str, size: str, timeout: float, libs: tuple[str, ...]) -> dict:
    """:func:`cell` for ``libs`` in a fresh process (its environment: one thread, one core,
    an empty kernel cache), or why it gave nothing."""
    env = {**os.environ, CHILD: json.dumps([name, size, list(libs)]), "OPENBLAS_NUM_THREADS": "1",
           "DIFFKIT_CACHE": tempfile.mkdtemp(prefix="diffkit-gradbench-race-"),
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
           "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"eval": name, "size": size, "status": f"timeout ({timeout:g} s)"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"eval": name, "size": size, "status": f"error: {last[:120]}"}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["wall"] = time.perf_counter() - start
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def _alone(r: dict, lib: str) -> str:
    """A library's cell of a row without a ratio: its times measured alone, or why not."""
    if f"{lib} run" in r:
        return f"{_ms(r[f'{lib} run'])} (compile {_ms(r[f'{lib} compile'])})"
    got = r.get(lib, r.get("status", ""))
    if isinstance(got, dict) and f"{lib} run" in got:
        return f"{_ms(got[f'{lib} run'])} (compile {_ms(got[f'{lib} compile'])})"
    if isinstance(got, dict):
        return str(got.get(lib, "–"))
    return str(got or "–")


def table(rows: list[dict]) -> list[str]:
    """The markdown table and the bar's summary lines."""
    lines = ["| eval | size | diffkit | jax.jit | torch.compile | diffkit / jax | "
             "compile: diffkit / jax |", "|---|---|---|---|---|---|---|"]
    ratios, compile_over = [], []
    for r in rows:
        if "status" in r or "diffkit run" not in r or "jax.jit run" not in r:
            lines.append(f"| {r['eval']} | {r['size']} | {_alone(r, 'diffkit')} | "
                         f"{_alone(r, 'jax.jit')} | {_alone(r, 'torch.compile')} | | |")
            continue
        ratio = r["diffkit run"] / r["jax.jit run"]
        comp = r["diffkit compile"] / max(r["jax.jit compile"], 1e-9)
        ratios.append(ratio)
        compile_over += [f"{r['eval']} {r['size']}"] if comp > 2 else []
        lines.append(f"| {r['eval']} | {r['size']} | {_ms(r['diffkit run'])} | "
                     f"{_ms(r['jax.jit run'])} | {_alone(r, 'torch.compile')} | {ratio:.2f} | "
                     f"{_ms(r['diffkit compile'])} / {_ms(r['jax.jit compile'])} = {comp:.2f} |")
    if ratios:
        lines += ["", f"Valid cells: {len(ratios)} of {len(rows)}. diffkit / jax.jit: median "
                  f"{statistics.median(ratios):.2f} (bar ≤ 1.0), largest {max(ratios):.2f} "
                  f"(bar ≤ 2.0); compile over 2× jax's on {len(compile_over)} cell(s)"
                  + (f": {', '.join(compile_over)}" if compile_over else "") + "."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", action="append", help="only this eval (repeatable)")
    parser.add_argument("--sizes", type=int, default=2, help="the smallest N sizes (2)")
    parser.add_argument("--size", action="append",
                        help="this size of each chosen eval instead (repeatable; GradBench's "
                             "name, e.g. n=1000,s=100)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds per cell, both libraries (120)")
    args = parser.parse_args()
    from diffkit.gradbench import particle
    from diffkit.gradbench.workloads import names, workload

    chosen = args.eval or [n for n in names() if n != "hello"] + list(NESTED)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.2f}; one core per "
          "cell (a fresh process each)\n", flush=True)
    rows = []
    for name in chosen:
        sizes = workload(name).eval.sizes if name not in NESTED else particle.FUNCTIONS
        smallest = sizes[:args.sizes] if name not in NESTED else sizes  # (every function)
        for size in ([z for z in args.size if z in sizes] if args.size else smallest):
            rows.append(run_cell(name, size, args.timeout))
            print(f"  {name} {size}: done in {rows[-1].get('wall', args.timeout):.1f} s",
                  file=sys.stderr, flush=True)
    print("\n".join(table(rows)))


if __name__ == "__main__":
    if CHILD in os.environ:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
        name, size, libs = json.loads(os.environ[CHILD])
        print(json.dumps(cell(name, size, tuple(libs))))
    else:
        main()
