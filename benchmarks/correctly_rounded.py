"""What diffkit's eager elementary functions cost for being rounded once.

numpy computes float64 ``exp``, ``tanh``, ``sinh``, ``power`` … with its own SIMD routines
(AVX-512), within an ulp; glibc's (``math``) are correctly rounded on almost every input.
diffkit's eager primitives compute them in 64-bit long double and round once to a double
(x86's extended precision: within 2^-11 ulp of correct rounding;
``diffkit.primitives.extended.rounded``). This prints, per function, the largest error in
ulps over random points against mpmath at 40 digits for numpy, glibc and diffkit's eager
primitive, and the time per 10^6 points of numpy and of diffkit's primitive; then the time
of diffkit's eager gradient of ``sum(f(x))`` (value and first derivative, whose rule is
evaluated in long double too), one run on one core:

    python benchmarks/correctly_rounded.py            # 2,000 points per function
    python benchmarks/correctly_rounded.py --points 500
"""

from __future__ import annotations

import argparse
import math
import os
import time

import mpmath
import numpy as np

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.primitives import table

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})

# name: (diffkit primitive and numpy ufunc, its arguments after x, math function, mpmath
# function, (low, high) of the random points)
FUNCTIONS = {
    "exp": ("exp", (), math.exp, mpmath.exp, (-700.0, 700.0)),
    "expm1": ("expm1", (), math.expm1, mpmath.expm1, (-20.0, 20.0)),
    "log": ("log", (), math.log, mpmath.log, (1e-3, 1e3)),
    "log1p": ("log1p", (), math.log1p, mpmath.log1p, (-0.9, 1e3)),
    "sin": ("sin", (), math.sin, mpmath.sin, (-100.0, 100.0)),
    "cos": ("cos", (), math.cos, mpmath.cos, (-100.0, 100.0)),
    "tan": ("tan", (), math.tan, mpmath.tan, (-1.5, 1.5)),
    "sinh": ("sinh", (), math.sinh, mpmath.sinh, (-20.0, 20.0)),
    "cosh": ("cosh", (), math.cosh, mpmath.cosh, (-20.0, 20.0)),
    "tanh": ("tanh", (), math.tanh, mpmath.tanh, (-5.0, 5.0)),
    "arcsinh": ("arcsinh", (), math.asinh, mpmath.asinh, (-1e3, 1e3)),
    "arctan": ("arctan", (), math.atan, mpmath.atan, (-10.0, 10.0)),
    "power(x, 2.5)": ("power", (2.5,), math.pow, mpmath.power, (1e-3, 1e3)),
    "power(x, 3)": ("power", (3,), math.pow, mpmath.power, (-1e3, 1e3)),
    "arctan2(x, 1.5)": ("arctan2", (1.5,), math.atan2, mpmath.atan2, (-10.0, 10.0)),
    "logaddexp(x, 0)": ("logaddexp", (0.0,),
                        lambda x, y: max(x, y) + math.log1p(math.exp(-abs(x - y))),
                        lambda x, y: mpmath.log(mpmath.exp(x) + mpmath.exp(y)), (-40.0, 40.0)),
}


def seconds(f, x: np.ndarray, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f(x)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=2000, help="random points per function")
    points = parser.parse_args().points
    rng = np.random.default_rng(0)
    prims = table()
    print(f"numpy {np.__version__}, long double of {np.finfo(np.longdouble).nmant + 1} bits; "
          f"max ulps over {points:,} points, ms per 10^6")
    print("| function | numpy | glibc | diffkit eager | numpy ms | diffkit ms | ratio |")
    print("|---|---|---|---|---|---|---|")
    with mpmath.workdps(40):
        for name, (prim, rest, scalar, exact, (low, high)) in FUNCTIONS.items():
            numpy_f, impl = getattr(np, prim), prims[prim].impl

            def fast(v: np.ndarray, f=numpy_f, rest=rest) -> np.ndarray:
                return f(v, *rest)

            def ours(v: np.ndarray, f=impl, rest=rest) -> np.ndarray:
                return f(v, *rest)

            x = rng.uniform(low, high, points)
            want = np.array([exact(mpmath.mpf(v), *rest) for v in x], dtype=object)
            spacing = np.spacing(np.abs(np.array([float(w) for w in want])))

            def ulps(got, want=want, spacing=spacing) -> float:
                return max(float(abs(mpmath.mpf(g) - w)) / s for g, w, s in zip(got, want, spacing))

            big = rng.uniform(low, high, 10**6)
            t_fast, t_ours = seconds(fast, big), seconds(ours, big)
            print(f"| {name} | {ulps(fast(x)):.3f} | {ulps([scalar(v, *rest) for v in x]):.3f} | "
                  f"{ulps(ours(x)):.3f} | {t_fast * 1e3:.1f} | {t_ours * 1e3:.1f} | "
                  f"{t_ours / t_fast:.0f}x |")


def gradients() -> None:
    """The eager reverse-mode gradient of sum(f(x)) at 10^6 random points, per function."""
    rng = np.random.default_rng(1)
    print("\n| function | eager gradient ms |\n|---|---|")
    for name, (prim, rest, _, _, (low, high)) in FUNCTIONS.items():
        f = getattr(dnp, prim)
        grad = dk.grad(lambda v, f=f, rest=rest: dnp.sum(f(v, *rest)))
        print(f"| {name} | {seconds(grad, rng.uniform(low, high, 10**6)) * 1e3:.1f} |")


if __name__ == "__main__":
    main()
    gradients()
