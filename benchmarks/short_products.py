"""Matrix products with a short side written out into kernels (compiler/short_products.py)
against the same programs with the library's products (OpenBLAS), one run on one core.

    python benchmarks/short_products.py

Rows: a layer ``tanh(X @ W + b)`` and a weight gradient ``Xᵀ @ G`` (X 512 × K, 64
columns) for a few K, and the MLP step of the compiled race (value and gradient). Both
programs are diffkit's default compiled ones; the second is built with the writing-out
switched off. Times are medians of 15 samples taken in turn
(diffkit.bench.probes.interleaved), the process pinned to one core.
"""

from __future__ import annotations

import os

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit.bench import workloads as wl  # noqa: E402
from diffkit.bench.probes import interleaved  # noqa: E402
from diffkit.compiler import driver  # noqa: E402
from diffkit.pytree import flatten  # noqa: E402


def _both(f: Callable, args: tuple) -> tuple[Callable, Callable]:
    """``f`` compiled with its short products written out, and with library products."""
    written = dk.jit(f)
    written(*args)
    keep, driver.short_products = driver.short_products, lambda g: (g, frozenset())
    try:
        library = dk.jit(f)
        library(*args)
    finally:
        driver.short_products = keep
    assert written.program(*args).fusion != library.program(*args).fusion
    for a, b in zip(flatten(written(*args))[0], flatten(library(*args))[0]):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)
    return lambda: written(*args), lambda: library(*args)


def _rows() -> list[tuple[str, Callable, tuple]]:
    rng = np.random.default_rng(0)
    rows = []
    for k in (4, 20, 32):
        X, W, b = rng.standard_normal((512, k)), rng.standard_normal((k, 64)), np.zeros(64)
        rows.append((f"tanh(X @ W + b), X 512 × {k}, W {k} × 64",
                     lambda X, W, b: dnp.tanh(X @ W + b), (X, W, b)))
        rows.append((f"Xᵀ @ G, X 512 × {k}, G 512 × 64", lambda X, G: X.T @ G,
                     (X, rng.standard_normal((512, 64)))))
    rows.append(("MLP step (value and grad), X 512 × 20, 64 tanh",
                 dk.value_and_grad(wl.mlp_loss),
                 (wl.mlp_params(rng), rng.standard_normal((512, 20)), rng.standard_normal(512))))
    return rows


def main() -> None:
    print("| program | written out | library products | ratio |\n|---|---|---|---|")
    for name, f, args in _rows():
        (a, _), (b, _) = interleaved(list(_both(f, args)), 15)
        print(f"| {name} | {a * 1e6:.3g} µs | {b * 1e6:.3g} µs | {a / b:.2f} |")


if __name__ == "__main__":
    main()
