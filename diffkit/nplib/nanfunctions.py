"""numpy's NaN-ignoring reductions: nansum, nanprod, nanmean, nanvar, nanstd, nanmax,
nanmin, nancumsum, nancumprod, nanargmax, nanargmin (the NaN quantiles are in
:mod:`diffkit.nplib.quantiles`).

Each replaces the NaN entries (found from the primal values) by the reduction's neutral
value with ``where``, so their derivative is zero, as JAX's. A lane of NaNs gives numpy's
answer: 0 for sums, 1 for products, NaN for means, maxima and minima.

>>> import diffkit as dk
>>> dk.grad(nanmean)(np.array([1.0, np.nan, 3.0]))
array([0.5, 0. , 0.5])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import primal
from .base import _axes, max, min, sqrt, sum, where  # noqa: A004
from .base import prod as _prod
from .shaping import argmax, argmin, squeeze
from .stats import cumprod, cumsum


def _nan(x: Any) -> np.ndarray:
    return np.isnan(np.asarray(primal(x)))


def _filled(x: Any, value: float) -> Any:
    nan = _nan(x)
    return where(nan, value, x) if nan.any() else x


def _count(x: Any, axis: Any, keepdims: bool) -> np.ndarray:
    return np.sum(~_nan(x), axis=_axes(x, axis), keepdims=keepdims)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
           keepdims: bool = False) -> Any:
    return sum(_filled(a, 0.0), axis, keepdims)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False) -> Any:
    return _prod(_filled(a, 1.0), axis, keepdims)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False) -> Any:
    """The mean of the non-NaN entries (NaN for a lane of NaNs)."""
    count = _count(a, axis, keepdims)
    return nansum(a, axis, keepdims=keepdims) / np.where(count == 0, np.nan, count)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: float = 0,
           keepdims: bool = False) -> Any:
    """The variance of the non-NaN entries, dividing by their count minus ``ddof``."""
    count = _count(a, axis, True)
    centred = _filled(a - nanmean(a, axis, keepdims=True), 0.0)
    divisor = np.where(count - ddof <= 0, np.nan, count - ddof)
    out = sum(centred * centred, axis, keepdims=True) / divisor
    return out if keepdims else squeeze(out, _axes(a, axis))


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: float = 0,
           keepdims: bool = False) -> Any:
    return sqrt(nanvar(a, axis, ddof=ddof, keepdims=keepdims))


def _extreme(pick: Any, fill: float, a: Any, axis: Any, keepdims: bool) -> Any:
    out = pick(_filled(a, fill), axis, keepdims)
    empty = _count(a, axis, keepdims) == 0
    return where(empty, np.nan, out) if np.any(empty) else out


def nanmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    return _extreme(max, -np.inf, a, axis, keepdims)


def nanmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    return _extreme(min, np.inf, a, axis, keepdims)


def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return cumsum(_filled(a, 0.0), axis)


def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return cumprod(_filled(a, 1.0), axis)


def nanargmax(a: Any, axis: int | None = None, out: None = None, *, keepdims: bool = False) -> Any:
    """The index of the largest non-NaN entry (an integer: no derivative)."""
    return argmax(_filled(a, -np.inf), axis, keepdims=keepdims)


def nanargmin(a: Any, axis: int | None = None, out: None = None, *, keepdims: bool = False) -> Any:
    return argmin(_filled(a, np.inf), axis, keepdims=keepdims)


__all__ = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nancumsum",
           "nancumprod", "nanargmax", "nanargmin"]
