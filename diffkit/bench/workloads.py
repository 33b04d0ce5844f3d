"""The benchmark functions, one source each, written over a numpy namespace ``np``
(``diffkit.numpy`` by default) so that a peer runs the very same code on its own arrays
(``np=jax.numpy``, ``np=torch``, ``np=autograd.numpy``). The catalog, the race, the
reports and ``benchmarks/`` all take them from here.

>>> import numpy
>>> float(rosenbrock(numpy.array([1.0, 1.0, 1.0]))), float(rosenbrock(numpy.zeros(2)))
(0.0, 1.0)
>>> float(heat_stencil(numpy.array([1.0, 0.0, 1.0]), np=numpy, steps=1))
2.25
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


def mlp_loss(params: tuple, X: Any, y: Any, np: Any = dnp) -> Any:
    """Mean squared error of a one-hidden-layer tanh network, ``params = (W1, b1, W2, b2)``."""
    W1, b1, W2, b2 = params
    return np.mean((np.tanh(X @ W1 + b1) @ W2 + b2 - y) ** 2)


def mlp_params(rng: numpy.random.Generator, inputs: int = 20, hidden: int = 64
               ) -> tuple[numpy.ndarray, ...]:
    """Initial ``(W1, b1, W2, b2)`` for :func:`mlp_loss`, scaled by fan-in."""
    return (rng.standard_normal((inputs, hidden)) / numpy.sqrt(inputs), numpy.zeros(hidden),
            rng.standard_normal(hidden) / numpy.sqrt(hidden), numpy.zeros(()))


def softmax_cross_entropy(W: Any, X: Any, Y: Any, np: Any = dnp) -> Any:
    """Mean cross-entropy of a linear softmax classifier, ``Y`` one-hot. The logits are
    not shifted by their maximum (the peers' namespaces spell that differently), so the
    inputs keep them small: X standard normal, W of scale 0.1."""
    Z = X @ W
    return np.mean(np.log(np.sum(np.exp(Z), axis=1)) - np.sum(Y * Z, axis=1))


def heat_stencil(u: Any, np: Any = dnp, steps: int = 100, r: float = 0.25) -> Any:
    """Σ u² after ``steps`` explicit steps of the 1-D heat equation, ends held fixed:
    u[i] ← u[i] + r (u[i+1] − 2u[i] + u[i−1])."""
    for _ in range(steps):
        inner = u[1:-1] + r * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u = np.concatenate([u[:1], inner, u[-1:]])
    return np.sum(u * u)


def nested_sines(x: Any, np: Any = dnp, depth: int = 10) -> Any:
    """Σ sin(sin(…sin(x))), ``depth`` deep: a compute-bound elementwise gradient."""
    for _ in range(depth):
        x = np.sin(x)
    return np.sum(x)


def logistic_map(x: Any, depth: int = 8) -> Any:
    """x ← 4x(1 − x), ``depth`` times: the classic of expression swell."""
    for _ in range(depth):
        x = 4.0 * x * (1.0 - x)
    return x


def sin_product(x: Any, np: Any = dnp) -> Any:
    """Π sin(x[i])."""
    return np.prod(np.sin(x))
