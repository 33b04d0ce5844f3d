"""The benchmark functions, one source each, written over a numpy namespace ``np``
(``diffkit.numpy`` by default) so that a peer runs the very same code on its own arrays
(``np=jax.numpy``, ``np=torch``, ``np=autograd.numpy``). The catalog, the race, the
reports and ``benchmarks/`` all take them from here.

>>> import numpy
>>> float(rosenbrock(numpy.array([1.0, 1.0, 1.0]))), float(rosenbrock(numpy.zeros(2)))
(0.0, 1.0)
>>> numpy.allclose(rosenbrock_grad(numpy.array([0.5, -0.2])), [89.0, -90.0])
True
"""

from __future__ import annotations

from typing import Any

import numpy

from .. import numpy as dnp


def rosenbrock(x: Any, np: Any = dnp) -> Any:
    """Σ 100 (x[i+1] − x[i]²)² + (1 − x[i])²."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x: numpy.ndarray) -> numpy.ndarray:
    """Rosenbrock's gradient by hand, in numpy: what an expert would write."""
    head, d = x[:-1], x[1:] - x[:-1] ** 2
    g = numpy.zeros_like(x)
    g[:-1] = -400.0 * head * d - 2.0 * (1.0 - head)
    g[1:] += 200.0 * d
    return g


def logistic_loss(w: Any, X: Any, y: Any, np: Any = dnp) -> Any:
    """Mean log(1 + exp(−y · Xw)), labels y in {−1, 1}."""
    return np.mean(np.log1p(np.exp(-y * (X @ w))))


def scalar_loop(x: Any, np: Any = dnp) -> Any:
    """2,000 scalar operations: 500 × (mul, sin, mul, add)."""
    for _ in range(500):
        x = x * 0.999 + np.sin(x) * 0.001
    return x


def logistic_map(x: Any, depth: int = 8) -> Any:
    """x ← 4x(1 − x), ``depth`` times: the classic of expression swell."""
    for _ in range(depth):
        x = 4.0 * x * (1.0 - x)
    return x


def sin_product(x: Any, np: Any = dnp) -> Any:
    """Π sin(x[i])."""
    return np.prod(np.sin(x))
