"""Functions of sampled data: interp, trapezoid, gradient, cov and corrcoef, written with
indexing, sums and products (their derivatives are the compositions').

* ``interp(x, xp, fp)``: piecewise linear, differentiable in ``x`` (the slope of the
  segment; at a breakpoint, the segment to its right, as JAX), ``xp`` and ``fp``.
* ``gradient``: numpy's second-order central differences inside, first or second order
  one-sided at the edges, for unit, scalar or coordinate spacings (coordinates constant).
* ``corrcoef`` does not clip to [-1, 1] (numpy does, to hide rounding): the derivative of
  the diagonal stays its true zero.

>>> import diffkit as dk
>>> dk.grad(lambda y: trapezoid(y, dx=0.5))(np.ones(3))
array([0.25, 0.5 , 0.25])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Box, DiffkitError, ndim, primal, shape
from .base import concatenate, getitem, matmul, reshape, sqrt, sum, where  # noqa: A004
from .shaping import atleast_2d, diagonal, moveaxis
from .stats import diff, mean


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """Piecewise linear interpolation of the points ``(xp, fp)`` at ``x`` (``xp`` increasing)."""
    if period is not None:
        raise DiffkitError("interp: period= is not supported; reduce x modulo the period first")
    xp, fp = (v if isinstance(v, Box) else np.asarray(v, dtype=float) for v in (xp, fp))
    if ndim(xp) != 1 or shape(xp) != shape(fp):
        raise DiffkitError(f"interp: xp and fp must be vectors of one length, got {shape(xp)} "
                           f"and {shape(fp)}")
    grid = np.asarray(primal(xp), dtype=float)
    j = np.clip(np.searchsorted(grid, np.asarray(primal(x)), side="right"), 1, len(grid) - 1)
    x0, x1 = getitem(xp, j - 1), getitem(xp, j)
    f0, f1 = getitem(fp, j - 1), getitem(fp, j)
    y = f0 + (x - x0) * ((f1 - f0) / (x1 - x0))
    below, above = np.asarray(primal(x)) < grid[0], np.asarray(primal(x)) > grid[-1]
    y = where(below, getitem(fp, 0) if left is None else left, y) if below.any() else y
    return where(above, getitem(fp, -1) if right is None else right, y) if above.any() else y


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    """The trapezoidal rule along ``axis``, with sample points ``x`` or spacing ``dx``."""
    y = moveaxis(y, axis, -1)
    if x is None:
        d = dx
    elif ndim(x) == 1:
        d = diff(x)
    else:
        d = diff(moveaxis(x, axis, -1), axis=-1)
    pairs = getitem(y, (Ellipsis, slice(1, None))) + getitem(y, (Ellipsis, slice(None, -1)))
    return sum(d * pairs, -1) / 2.0


def _along(f: Any, a: int, part: slice) -> Any:
    return getitem(f, (slice(None),) * a + (part,))


def _gradient_axis(f: Any, a: int, h: Any, edge_order: int) -> Any:
    n = shape(f)[a]
    if n < edge_order + 1:
        raise DiffkitError(f"gradient: axis {a} needs at least {edge_order + 1} points")
    h = np.asarray(h, dtype=float)
    dx = np.diff(h) if h.ndim == 1 else np.full(n - 1, float(h))
    if h.ndim == 1 and len(h) != n:
        raise DiffkitError(f"gradient: {len(h)} coordinates for an axis of {n} points")
    col = [1] * ndim(f)

    def c(v: np.ndarray) -> np.ndarray:  # coefficients shaped to broadcast along axis a
        col[a] = len(v)
        return np.reshape(v, col)

    f0, f1, f2 = _along(f, a, slice(None, -2)), _along(f, a, slice(1, -1)), _along(f, a, slice(2, None))
    h1, h2 = dx[:-1], dx[1:]
    inner = (c(-h2 / (h1 * (h1 + h2))) * f0 + c((h2 - h1) / (h1 * h2)) * f1
             + c(h1 / (h2 * (h1 + h2))) * f2) if n > 2 else None
    e = [_along(f, a, slice(k, k + 1 or None)) for k in (0, 1, 2, -3, -2, -1)] if n > 2 else None
    if edge_order == 1 or n == 2:
        first = (_along(f, a, slice(1, 2)) - _along(f, a, slice(0, 1))) / dx[0]
        last = (_along(f, a, slice(-1, None)) - _along(f, a, slice(-2, -1))) / dx[-1]
    else:
        d1, d2 = dx[0], dx[1]
        first = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * e[0] + (d1 + d2) / (d1 * d2) * e[1]
                 - d1 / (d2 * (d1 + d2)) * e[2])
        d1, d2 = dx[-2], dx[-1]
        last = (d2 / (d1 * (d1 + d2)) * e[3] - (d2 + d1) / (d1 * d2) * e[4]
                + (2 * d2 + d1) / (d2 * (d1 + d2)) * e[5])
    return concatenate([first] + ([inner] if inner is not None else []) + [last], axis=a)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """numpy's ``gradient``: one array per axis (a list), or the array for one axis."""
    if edge_order not in (1, 2):
        raise DiffkitError("gradient: edge_order must be 1 or 2")
    axes = list(range(ndim(f))) if axis is None else (
        [axis] if isinstance(axis, (int, np.integer)) else list(axis))
    axes = [a % ndim(f) for a in axes]
    spacing = list(varargs) if len(varargs) > 1 else list(varargs) * len(axes) if varargs \
        else [1.0] * len(axes)
    if len(spacing) != len(axes):
        raise DiffkitError(f"gradient: {len(spacing)} spacings for {len(axes)} axes")
    out = [_gradient_axis(f, a, np.asarray(primal(h)), edge_order) for a, h in zip(axes, spacing)]
    return out[0] if len(out) == 1 else out


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    """The covariance of the variables (rows; columns with ``rowvar=False``)."""
    if fweights is not None or aweights is not None:
        raise DiffkitError("cov: fweights/aweights are not supported; weight the centred "
                           "observations yourself")
    if ndim(m) > 2:
        raise DiffkitError(f"cov: m has more than 2 dimensions ({shape(m)})")
    x = atleast_2d(m)
    if not rowvar and shape(x)[0] != 1:
        x = x.T
    if y is not None:
        extra = atleast_2d(y)
        x = concatenate([x, extra if rowvar or shape(extra)[0] == 1 else extra.T], axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    centred = x - mean(x, 1, keepdims=True)
    c = matmul(centred, centred.T) / (shape(x)[1] - ddof)
    return reshape(c, ()) if shape(c) == (1, 1) else c


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """Pearson correlation coefficients: ``cov`` scaled by the standard deviations."""
    c = cov(x, y, rowvar)
    if ndim(c) == 0:
        return c / c
    d = sqrt(diagonal(c))
    return c / reshape(d, (-1, 1)) / reshape(d, (1, -1))


def unwrap(p: Any, discont: float | None = None, axis: int = -1, *,
           period: float = 2 * np.pi) -> Any:
    """Phases with jumps larger than ``discont`` (default half the period) replaced by their
    complement; the corrections are piecewise constant (derivative 1 in ``p``)."""
    p = moveaxis(p, axis, -1)
    half = period / 2.0
    dd = diff(p, axis=-1)
    step = np.asarray(primal(dd))
    wrapped = np.mod(step + half, period) - half
    wrapped = np.where((wrapped == -half) & (step > 0), half, wrapped)
    correction = np.where(np.abs(step) < (half if discont is None else max(discont, half)), 0.0,
                          wrapped - step)
    first = getitem(p, (Ellipsis, slice(0, 1)))
    rest = getitem(p, (Ellipsis, slice(1, None))) + np.cumsum(correction, axis=-1)
    return moveaxis(concatenate([first, rest], axis=-1), -1, axis)


__all__ = ["unwrap", "interp", "trapezoid", "gradient", "cov", "corrcoef"]
