"""The benchmark functions, one source each, written over a numpy namespace ``np``
(``diffkit.numpy`` by default) so that a peer runs the very same code on its own arrays
(``np=jax.numpy``, ``np=torch``, ``np=autograd.numpy``). The one operation each library
spells its own way, the CNN's convolution, is looked up by namespace (:func:`conv2d_same`).
The catalog, the race, the reports and ``benchmarks/`` all take them from here.

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
from ..core import DiffkitError
from ..nn.conv import windows


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
    return _cross_entropy(X @ W, Y, np)


def _cross_entropy(Z: Any, Y: Any, np: Any) -> Any:
    """Mean over rows of logsumexp(Z) − Y·Z, logits ``Z`` unshifted (kept small)."""
    return np.mean(np.log(np.sum(np.exp(Z), axis=1)) - np.sum(Y * Z, axis=1))


def cnn_loss(params: tuple, X: Any, Y: Any, np: Any = dnp) -> Any:
    """Mean softmax cross-entropy of a small CNN on images ``X`` (N, 1, H, W), ``Y``
    one-hot, ``params = (K, b, W, c)``: a 3×3 convolution with kernels ``K`` (C, 1, 3, 3)
    keeping H × W, plus ``b``, tanh, 2×2 average pooling, flatten, the linear layer
    ``W``, ``c``. The convolution is each library's own (:func:`conv2d_same`); the rest is
    this one source. Logits stay small (tanh features, ``W`` scaled by its fan-in)."""
    K, b, W, c = params
    n, _, h, w = X.shape
    H = np.tanh(conv2d_same(X, K, np) + np.reshape(b, (-1, 1, 1)))
    H = np.mean(np.reshape(H, (n, K.shape[0], h // 2, 2, w // 2, 2)), axis=(3, 5))
    return _cross_entropy(np.reshape(H, (n, -1)) @ W + c, Y, np)


def cnn_params(rng: numpy.random.Generator, channels: int = 8, size: int = 16,
               classes: int = 10) -> tuple[numpy.ndarray, ...]:
    """Initial ``(K, b, W, c)`` for :func:`cnn_loss` on ``size`` × ``size`` images,
    scaled by fan-in."""
    features = channels * (size // 2) ** 2
    return (rng.standard_normal((channels, 1, 3, 3)) / 3.0, numpy.zeros(channels),
            rng.standard_normal((features, classes)) / numpy.sqrt(features), numpy.zeros(classes))


def conv2d_same(x: Any, kernel: Any, np: Any = dnp) -> Any:
    """The cross-correlation of images ``x`` (N, C, H, W) with ``kernel`` (O, C, kh, kw),
    odd sizes, zero-padded to keep H × W: the convolution layer as namespace ``np``'s
    library spells it (diffkit's ``nn.Conv2d`` windows and contraction,
    ``jax.lax.conv_general_dilated``, ``torch.nn.functional.conv2d``).

    >>> conv2d_same(numpy.ones((1, 1, 3, 3)), numpy.ones((1, 1, 3, 3)))[0, 0].tolist()
    [[4.0, 6.0, 4.0], [6.0, 9.0, 6.0], [4.0, 6.0, 4.0]]
    """
    spell = _CONV2D_SAME.get(np.__name__)
    if spell is None:
        raise DiffkitError(f"conv2d_same: no convolution for namespace {np.__name__!r}; "
                           f"use one of {', '.join(_CONV2D_SAME)}")
    return spell(x, kernel)


def _conv_diffkit(x: Any, kernel: Any) -> Any:
    kh, kw = kernel.shape[2:]
    patches = windows(x, (kh, kw), (1, 1), (kh // 2, kw // 2), (1, 1))
    return dnp.einsum("nchwij,ocij->nohw", patches, kernel)


def _conv_jax(x: Any, kernel: Any) -> Any:
    import jax

    return jax.lax.conv_general_dilated(x, kernel, (1, 1), "SAME")


def _conv_torch(x: Any, kernel: Any) -> Any:
    import torch

    return torch.nn.functional.conv2d(x, kernel, padding="same")


_CONV2D_SAME = {"diffkit.numpy": _conv_diffkit, "numpy": _conv_diffkit, "jax.numpy": _conv_jax,
                "torch": _conv_torch}


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
