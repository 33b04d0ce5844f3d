"""Small generated datasets (no downloads), reproducible from a seed.

>>> from diffkit import data
>>> X, y = data.two_moons(1000, noise=0.1, seed=0)
>>> X.shape, y.shape, int(y.sum())
((1000, 2), (1000,), 500)
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .core import DiffkitError


def _check(n: int, noise: float) -> None:
    if n < 1:
        raise DiffkitError(f"the number of points must be >= 1, got {n}")
    if noise < 0:
        raise DiffkitError(f"noise must be >= 0, got {noise}")


def two_moons(n: int = 1000, noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles: ``X`` (n, 2) floats, ``y`` (n,) labels 0/1, shuffled.

    Class 0 lies on the upper arc (cos t, sin t), class 1 on the lower arc
    (1 - cos t, 0.5 - sin t), t in [0, π], plus Gaussian noise of standard deviation
    ``noise``. The classes are not linearly separable.
    """
    _check(n, noise)
    rng = np.random.default_rng(seed)
    n0 = n - n // 2
    t0, t1 = np.linspace(0.0, np.pi, n0), np.linspace(0.0, np.pi, n // 2)
    X = np.concatenate([np.stack([np.cos(t0), np.sin(t0)], 1),
                        np.stack([1.0 - np.cos(t1), 0.5 - np.sin(t1)], 1)])
    y = np.concatenate([np.zeros(n0, dtype=np.int64), np.ones(n // 2, dtype=np.int64)])
    X = X + noise * rng.standard_normal(X.shape)
    order = rng.permutation(n)
    return X[order], y[order]


def spirals(n: int = 900, classes: int = 3, noise: float = 0.2,
            seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``classes`` interleaved spiral arms from the origin: ``X`` (n, 2), ``y`` (n,) in
    0..classes-1, shuffled. Arm c has radius r in [0, 1] and angle 4(c + r) plus
    Gaussian noise ``noise`` (radians).
    """
    _check(n, noise)
    if classes < 1:
        raise DiffkitError(f"classes must be >= 1, got {classes}")
    rng = np.random.default_rng(seed)
    counts = [n // classes + (c < n % classes) for c in range(classes)]
    X, y = [], []
    for c, m in enumerate(counts):
        r = np.linspace(0.0, 1.0, m)
        t = 4.0 * (c + r) + noise * rng.standard_normal(m)
        X.append(np.stack([r * np.sin(t), r * np.cos(t)], 1))
        y.append(np.full(m, c, dtype=np.int64))
    order = rng.permutation(n)
    return np.concatenate(X)[order], np.concatenate(y)[order]


def shapes(n: int = 240, noise: float = 0.3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` single-channel 8x8 images ``(n, 1, 8, 8)`` of three classes, ``y`` (n,): a
    horizontal bar (0), a vertical bar (1) or a diagonal (2), five pixels long at a random
    place, in Gaussian noise of standard deviation ``noise``: a task a small CNN learns.

    >>> X, y = shapes(6, seed=1)
    >>> X.shape, sorted(set(y.tolist())) <= [0, 1, 2]
    ((6, 1, 8, 8), True)
    """
    _check(n, noise)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    images = noise * rng.standard_normal((n, 1, 8, 8))
    k = np.arange(5)
    for i, c in enumerate(labels):
        at, start = rng.integers(1, 7), rng.integers(0, 3)
        rows, cols = ((at, start + k) if c == 0 else (start + k, at) if c == 1
                      else (start + k, (at + k) % 8))
        images[i, 0, rows, cols] += 1.0
    return images, labels


def regression_curve(n: int = 200, noise: float = 0.1,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Noisy samples of ``y = sin(1.5 x) + 0.3 x`` at x uniform in [-3, 3]:
    ``X`` (n, 1), ``y`` (n, 1) (shapes ready for ``MSELoss`` with a 1-output model)."""
    _check(n, noise)
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3.0, 3.0, (n, 1))
    return x, np.sin(1.5 * x) + 0.3 * x + noise * rng.standard_normal((n, 1))


def batches(n: int, batch_size: int, *, shuffle: bool = False,
            seed: int | None = None) -> Iterator[np.ndarray]:
    """Index arrays that split ``range(n)`` into consecutive mini-batches (the last may be
    shorter); use them as ``X[idx], y[idx]``.

    >>> [b.tolist() for b in batches(5, 2)]
    [[0, 1], [2, 3], [4]]
    """
    if batch_size < 1:
        raise DiffkitError(f"batch_size must be >= 1, got {batch_size}")
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    for i in range(0, n, batch_size):
        yield order[i:i + batch_size]


__all__ = ["batches", "regression_curve", "spirals", "two_moons"]
