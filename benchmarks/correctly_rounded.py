"""What diffkit's eager values would cost if they were (nearly) correctly rounded.

Eager diffkit computes elementary functions with numpy, whose float64 ``exp``, ``tanh``,
``sinh`` … are its own SIMD routines (AVX-512), within an ulp; glibc's (``math``) are
correctly rounded on almost every input; PyTorch's are within a few tenths of an ulp more.
This prints, per function, the largest error in ulps over random points against mpmath at
40 digits for numpy, glibc and numpy in 64-bit long double rounded to double (x86's
extended precision: within 2^-11 ulp of correct rounding), and the time per 10^6 points of
numpy and of the long double route, one run on one core:

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

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})

# name: (numpy ufunc, math function, mpmath function, (low, high) of the random points)
FUNCTIONS = {
    "exp": (np.exp, math.exp, mpmath.exp, (-700.0, 700.0)),
    "expm1": (np.expm1, math.expm1, mpmath.expm1, (-20.0, 20.0)),
    "log": (np.log, math.log, mpmath.log, (1e-3, 1e3)),
    "log1p": (np.log1p, math.log1p, mpmath.log1p, (-0.9, 1e3)),
    "sin": (np.sin, math.sin, mpmath.sin, (-100.0, 100.0)),
    "cos": (np.cos, math.cos, mpmath.cos, (-100.0, 100.0)),
    "tan": (np.tan, math.tan, mpmath.tan, (-1.5, 1.5)),
    "sinh": (np.sinh, math.sinh, mpmath.sinh, (-20.0, 20.0)),
    "cosh": (np.cosh, math.cosh, mpmath.cosh, (-20.0, 20.0)),
    "tanh": (np.tanh, math.tanh, mpmath.tanh, (-5.0, 5.0)),
    "arcsinh": (np.arcsinh, math.asinh, mpmath.asinh, (-1e3, 1e3)),
    "arctan": (np.arctan, math.atan, mpmath.atan, (-10.0, 10.0)),
}


def long_double(f: np.ufunc, x: np.ndarray) -> np.ndarray:
    return f(x.astype(np.longdouble)).astype(np.float64)


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
    print(f"numpy {np.__version__}, long double of {np.finfo(np.longdouble).nmant + 1} bits; "
          f"max ulps over {points:,} points, ms per 10^6")
    print("| function | numpy | glibc | long double | numpy ms | long double ms | ratio |")
    print("|---|---|---|---|---|---|---|")
    with mpmath.workdps(40):
        for name, (f, scalar, exact, (low, high)) in FUNCTIONS.items():
            x = rng.uniform(low, high, points)
            want = np.array([exact(mpmath.mpf(v)) for v in x], dtype=object)
            spacing = np.spacing(np.abs(np.array([float(w) for w in want])))

            def ulps(got: np.ndarray) -> float:
                return max(float(abs(mpmath.mpf(g) - w)) / s for g, w, s in zip(got, want, spacing))

            big = rng.uniform(low, high, 10**6)
            fast, slow = seconds(f, big), seconds(lambda v: long_double(f, v), big)
            print(f"| {name} | {ulps(f(x)):.3f} | {ulps([scalar(v) for v in x]):.3f} | "
                  f"{ulps(long_double(f, x)):.3f} | {fast * 1e3:.1f} | {slow * 1e3:.1f} | "
                  f"{slow / fast:.0f}x |")


if __name__ == "__main__":
    main()
