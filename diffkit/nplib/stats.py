"""Reductions and statistics: var, std, average, cumulative sums and products, diff,
trace, ptp, built on the primitives (sum, max, cumsum, cumprod, indexing).

``axis`` follows numpy: an int or a tuple, ``None`` for all axes (the cumulative
functions then work on the flattened array).

>>> import diffkit as dk
>>> dk.grad(var)(np.array([1.0, 2.0, 6.0]))  # 2 (x - mean) / n
array([-1.33333333, -0.66666667,  2.        ])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import primitives as _p
from ..core import DiffkitError, bind, ndim, shape
from .base import (_axes, broadcast_to, concatenate, getitem, max, mean, min,  # noqa: A004
                   reshape, sqrt, sum)

Axis = int | Sequence[int] | None


def var(x: Any, axis: Axis = None, dtype: Any = None, out: None = None, ddof: float = 0,
        keepdims: bool = False) -> Any:
    """Variance over ``axis`` with ``ddof`` delta degrees of freedom (divides by n - ddof)."""
    axes = _axes(x, axis)
    count = int(np.prod([shape(x)[a] for a in axes])) - ddof
    d = x - mean(x, axes, keepdims=True)
    squares = bind(_p.real, d * bind(_p.conj, d)) if _p.is_complex(d) else d * d  # (|d|^2)
    return sum(squares, axes, keepdims) / count


def std(x: Any, axis: Axis = None, dtype: Any = None, out: None = None, ddof: float = 0,
        keepdims: bool = False) -> Any:
    """Standard deviation: the square root of :func:`var`; over lanes of one entry it is 0
    whatever that entry, so its derivative is 0 there (not sqrt's 1/0 at 0).

    >>> import diffkit as dk
    >>> dk.grad(std)(3.5)
    np.float64(0.0)
    """
    if int(np.prod([shape(x)[a] for a in _axes(x, axis)])) == 1:
        return 0.0 * var(x, axis, ddof=ddof, keepdims=keepdims)
    return sqrt(var(x, axis, ddof=ddof, keepdims=keepdims))


def average(x: Any, axis: Axis = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """Weighted mean; ``weights`` has the shape of ``x`` or, with one axis, of that axis."""
    if weights is None:
        avg, total = mean(x, axis, keepdims), None
    else:
        if ndim(weights) == 1 and ndim(x) > 1:
            if axis is None or not isinstance(axis, (int, np.integer)):
                raise DiffkitError("average: 1-d weights need an int axis (as in numpy)")
            expand = [1] * ndim(x)
            expand[axis] = shape(weights)[0]
            weights = reshape(weights, tuple(expand))
        total = sum(weights * np.ones(shape(x)), axis, keepdims)
        avg = sum(x * weights, axis, keepdims) / total
    if not returned:
        return avg
    return avg, total if total is not None else np.full(shape(avg), float(
        np.prod([shape(x)[a] for a in _axes(x, axis)])))


def _flat_or_axis(x: Any, axis: int | None) -> tuple[Any, int]:
    if axis is None:
        return reshape(x, -1), -1
    return x, _axes(x, axis)[0]


def cumsum(x: Any, axis: int | None = None) -> Any:
    """Running sum along ``axis`` (the flattened array when None)."""
    x, a = _flat_or_axis(x, axis)
    return bind(_p.cumsum, x, axis=a)


def cumprod(x: Any, axis: int | None = None) -> Any:
    """Running product along ``axis``; its derivative needs non-zero entries."""
    x, a = _flat_or_axis(x, axis)
    return bind(_p.cumprod, x, axis=a)


def diff(x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th forward difference along ``axis``; ``prepend`` / ``append`` join values
    before / after first (a scalar is repeated across the other axes), as numpy.

    >>> diff(np.array([1.0, 2.0, 4.0]), prepend=0.0)
    array([1., 1., 2.])
    """
    a = _axes(x, axis)[0]
    rest = (slice(None),) * (-a - 1)
    if prepend is not None or append is not None:
        edge = shape(x)[:ndim(x) + a] + (1,) + shape(x)[ndim(x) + a + 1:]
        ends = [v if ndim(v) else broadcast_to(v, edge) for v in (prepend, append)
                if v is not None]
        parts = ([ends.pop(0)] if prepend is not None else []) + [x] + ends
        x = concatenate(parts, axis=a)
    for _ in range(n):
        x = getitem(x, (Ellipsis, slice(1, None)) + rest) - getitem(x, (Ellipsis, slice(None, -1)) + rest)
    return x


def ptp(x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    """Range (max - min) over ``axis``."""
    return max(x, axis, keepdims) - min(x, axis, keepdims)


amax, amin = max, min

__all__ = ["var", "std", "average", "cumsum", "cumprod", "diff", "ptp", "amax", "amin"]
