"""numpy's polynomial functions (coefficients highest power first): polyval, polyfit,
polyder, polyint, polyadd, polysub, polymul, and vander, written with products and sums.

``polyval`` is Horner's rule, differentiable in the coefficients and the points.
``polyfit`` is the least-squares solution through ``lstsq`` (the pseudo-inverse of the
Vandermonde matrix: differentiable in ``x``, ``y`` and the weights ``w``).

>>> import diffkit as dk
>>> dk.grad(lambda p: polyval(p, 2.0))(np.array([1.0, 0.0, -1.0]))  # (x^2, x, 1)
array([4., 2., 1.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, ndim, primal, shape
from .base import concatenate, getitem, reshape, stack
from .convolve import convolve as _convolve
from .linalg import lstsq


def polyval(p: Any, x: Any) -> Any:
    """``p[0] x^(n-1) + ... + p[n-1]`` by Horner's rule."""
    if ndim(p) != 1:
        raise DiffkitError(f"polyval: p must be a vector of coefficients, got shape {shape(p)}")
    y = getitem(p, 0) + 0.0 * x
    for k in range(1, shape(p)[0]):
        y = y * x + getitem(p, k)
    return y


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:  # noqa: N803
    """Columns of powers of ``x`` (decreasing unless ``increasing``)."""
    if ndim(x) != 1:
        raise DiffkitError(f"vander: x must be a vector, got shape {shape(x)}")
    n = shape(x)[0] if N is None else int(N)
    columns = [np.ones(shape(x))] + [x] * (n > 1)
    while len(columns) < n:
        columns.append(columns[-1] * x)
    columns = columns[:n]
    return stack(columns if increasing else columns[::-1], axis=1) if n else np.zeros(shape(x) + (0,))


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False,
            w: Any = None, cov: bool = False) -> Any:
    """The least-squares polynomial of degree ``deg`` through ``(x, y)`` (``y`` a vector
    or columns of data sets); ``full`` and ``cov`` are not supported."""
    if full or cov:
        raise DiffkitError("polyfit: full=True and cov=True are not supported")
    a = vander(x, int(deg) + 1)
    if w is not None:
        a = a * reshape(w, (-1, 1))
        y = y * (w if ndim(y) == 1 else reshape(w, (-1, 1)))
    cut = shape(x)[0] * np.finfo(float).eps if rcond is None else rcond
    return lstsq(a, y, rcond=cut)[0]


def _powers(n: int, start: int) -> np.ndarray:
    return np.arange(n - 1 + start, start - 1, -1, dtype=float)


def polyder(p: Any, m: int = 1) -> Any:
    """The ``m``-th derivative's coefficients."""
    for _ in range(int(m)):
        n = shape(p)[0]
        p = getitem(p, slice(0, n - 1)) * _powers(n - 1, 1) if n > 1 else 0.0 * p
    return p


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The ``m``-th antiderivative's coefficients, integration constants ``k`` (default 0)."""
    ks = np.zeros(int(m)) if k is None else np.broadcast_to(np.asarray(k, dtype=float), (int(m),))
    for c in ks:
        n = shape(p)[0]
        p = concatenate([p / _powers(n, 1), np.array([c])])
    return p


def _aligned(a: Any, b: Any) -> tuple[Any, Any]:
    n = max(shape(a)[0], shape(b)[0])
    pad = [concatenate([np.zeros(n - shape(v)[0]), v]) if shape(v)[0] < n else v for v in (a, b)]
    return pad[0], pad[1]


def polyadd(a1: Any, a2: Any) -> Any:
    a, b = _aligned(a1, a2)
    return a + b


def polysub(a1: Any, a2: Any) -> Any:
    a, b = _aligned(a1, a2)
    return a - b


def polymul(a1: Any, a2: Any) -> Any:
    return _convolve(a1, a2)


def poly(seq_of_zeros: Any) -> Any:
    """The monic polynomial with these roots (a square matrix: its eigenvalues' polynomial)."""
    zeros = seq_of_zeros
    if ndim(zeros) == 2 and shape(zeros)[0] == shape(zeros)[1] and shape(zeros)[0] > 0:
        from .linalg import eigvals  # (deferred: linalg builds on the base functions too)

        zeros = eigvals(zeros)
    if ndim(zeros) != 1:
        raise DiffkitError(f"poly: give a vector of roots or a square matrix, got {shape(zeros)}")
    p: Any = np.ones(1)
    for k in range(shape(zeros)[0]):
        p = _convolve(p, concatenate([np.ones(1), reshape(-getitem(zeros, k), (1,))]))
    return p


def polydiv(u: Any, v: Any) -> tuple[Any, Any]:
    """Quotient and remainder of ``u / v`` (long division, as numpy's; the remainder's
    leading zeros, judged on the values, are dropped)."""
    m, n = shape(u)[0] - 1, shape(v)[0] - 1
    r = [getitem(u, k) for k in range(m + 1)]
    q = []
    for k in range(max(m - n + 1, 0)):
        d = r[k] / getitem(v, 0)
        q.append(d)
        for j in range(n + 1):
            r[k + j] = r[k + j] - d * getitem(v, j)
    rest = r[max(m - n + 1, 0):] or [r[-1] * 0.0]
    while len(rest) > 1 and np.allclose(np.asarray(primal(rest[0])), 0, rtol=1e-14):
        rest = rest[1:]
    return (stack(q) if q else np.zeros(1)), stack(rest)


def roots(p: Any) -> Any:
    """The roots of a polynomial: eigenvalues of its companion matrix, as numpy (leading
    zeros dropped, trailing ones give roots at 0). Complex, as JAX's (those of ``linalg.eig``);
    differentiated where they are distinct."""
    from .linalg import eigvals  # (deferred: linalg builds on the base functions too)

    values = np.asarray(primal(p))
    nonzero = np.nonzero(values)[0]
    if nonzero.size == 0:
        return np.zeros(0)
    p = getitem(p, slice(int(nonzero[0]), int(nonzero[-1]) + 1))
    at_zero = np.zeros(shape(values)[0] - int(nonzero[-1]) - 1)
    n = shape(p)[0] - 1
    if n < 1:
        return at_zero
    top = reshape(-getitem(p, slice(1, None)) / getitem(p, 0), (1, n))
    companion = concatenate([top, np.eye(n - 1, n)]) if n > 1 else top
    return concatenate([eigvals(companion), at_zero])


__all__ = ["poly", "polydiv", "roots", "polyval", "polyfit", "polyder", "polyint", "polyadd", "polysub", "polymul", "vander"]
