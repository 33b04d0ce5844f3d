"""diffkit's exp, log, log1p and tanh (compiler/vector_math.py) against the C library's in
the same compiled loop, numpy's ufunc and jax.jit, one run on one core; and how far each
is from the correctly rounded value (mpmath at 40 digits) on 2,000 of the points.

    python benchmarks/vector_math.py          # n = 10^6
    python benchmarks/vector_math.py --n 32768   # the MLP step's hidden layer, 512 x 64

A loop calling the C library makes one opaque call per element; diffkit's functions are
straight-line IR, so the loop around them vectorizes. Times are medians of 15 samples
taken in turn (diffkit.bench.probes.interleaved), the process pinned to one core.
"""

from __future__ import annotations

import argparse
import os
import sys

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import numpy as np  # noqa: E402

from diffkit.bench.probes import interleaved  # noqa: E402
from llvm_loops import elementwise, ulps  # noqa: E402  (tests/: the compiled test loops)

DOMAIN = {"exp": (-20.0, 20.0), "log": (1e-3, 1e3), "log1p": (-0.9, 1e3), "tanh": (-5.0, 5.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e6, help="points per call (10^6)")
    n = int(parser.parse_args().n)
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
    except ImportError:
        jax = None
    print(f"| function, n = {n} | diffkit loop | C library loop | numpy | jax.jit | "
          "C library / diffkit | max ULP from exact: diffkit, numpy, jax |\n"
          "|---|---|---|---|---|---|---|")
    for name, (lo, hi) in DOMAIN.items():
        x = np.random.default_rng(0).uniform(lo, hi, n)
        calls = [lambda: elementwise(name, True)(x), lambda: elementwise(name, False)(x),
                 lambda: getattr(np, name)(x)]
        if jax is not None:
            jf, xj = jax.jit(getattr(jnp, name)), jnp.asarray(x)
            calls.append(lambda: jf(xj).block_until_ready())
        t = [seconds for seconds, _ in interleaved(calls, 15)] + [None]
        cells = [f"{v * 1e3:.3g} ms" if v else "–" for v in t[:4]]
        sample = x[:2000]
        exact = _exact(name, sample)
        apart = [ulps(value, exact).max()
                 for value in _values(name, sample, jax)]
        print(f"| {name} | {' | '.join(cells)} | {t[1] / t[0]:.1f} | "
              f"{', '.join(str(int(a)) for a in apart)} |")


def _exact(name: str, x: np.ndarray) -> np.ndarray:
    import mpmath

    mpmath.mp.dps = 40
    return np.array([float(getattr(mpmath, name)(mpmath.mpf(float(v)))) for v in x])


def _values(name: str, x: np.ndarray, jax: object) -> list[np.ndarray]:
    """diffkit's, numpy's and (if installed) jax.jit's values at ``x``."""
    out = [elementwise(name, True)(x), getattr(np, name)(x)]
    if jax is not None:
        out.append(np.asarray(jax.jit(getattr(jax.numpy, name))(x)))
    return out


if __name__ == "__main__":
    main()
