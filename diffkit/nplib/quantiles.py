"""Order statistics: median, quantile and percentile (numpy's default method, 'linear'),
and their NaN-ignoring forms, written with ``sort`` and indexing.

The ``q``-quantile of ``n`` sorted values ``s`` sits at position ``p = q (n - 1)``:
``s[i] + (p - i) (s[i+1] - s[i])`` with ``i = floor(p)``. So its derivative flows to the
two order statistics it interpolates (``sort``'s derivative follows each entry to its
place) and to ``q`` with slope ``(n - 1)(s[i+1] - s[i])``, as JAX's. The NaN forms count
each lane's non-NaN entries (sorted first) and interpolate among those; a lane of NaNs
gives NaN, and so does any NaN in a lane for the plain forms (as numpy).

>>> import diffkit as dk
>>> dk.grad(median)(np.array([3.0, 1.0, 4.0, 1.5]))
array([0.5, 0. , 0. , 0.5])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, ndim, primal, shape
from .base import _axes, broadcast_to, getitem, reshape, where
from .shaping import moveaxis, sort, take_along_axis

_METHODS = ("linear",)


def _quantile(x: Any, q: Any, axis: Any, keepdims: bool, method: str, skip_nan: bool) -> Any:
    if method not in _METHODS:
        raise DiffkitError(f"quantile: method={method!r} is not supported; numpy's default "
                           "'linear' is")
    q_plain = np.asarray(primal(q), dtype=float)
    if np.any((q_plain < 0) | (q_plain > 1)):
        raise DiffkitError("quantile: q must lie in [0, 1] (percentile: in [0, 100])")
    axes = _axes(x, axis)
    kept = shape(x)
    rest = tuple(a for a in range(-ndim(x), 0) if a not in axes)
    lanes = moveaxis(x, axes, tuple(range(-len(axes), 0))) if axes else x
    lanes = reshape(lanes, tuple(kept[a] for a in rest) + (-1,))  # (..., n): one lane per row
    s = sort(lanes, axis=-1)
    values = np.asarray(primal(s))
    nan = np.isnan(values)
    count = (~nan).sum(-1) if skip_nan else np.full(values.shape[:-1], values.shape[-1])
    q_shape, lane_shape = q_plain.shape, values.shape[:-1]
    spread = q_shape + (1,) * len(lane_shape)  # q's axes lead the result, as numpy
    position = q_plain.reshape(spread) * (count - 1)
    top = np.maximum(count - 1, 0)
    low = np.clip(np.floor(position), 0, top).astype(int)
    high = np.minimum(low + 1, top)
    full = q_shape + lane_shape + values.shape[-1:]
    s_all = broadcast_to(reshape(s, (1,) * len(q_shape) + shape(s)), full)
    s_low = getitem(take_along_axis(s_all, low[..., None], -1), (Ellipsis, 0))
    s_high = getitem(take_along_axis(s_all, high[..., None], -1), (Ellipsis, 0))
    fraction = (reshape(q, spread) if ndim(q) else q) * (count - 1) - low
    out = s_low + fraction * (s_high - s_low)
    bad = (count == 0) if skip_nan else nan.any(-1)
    if bad.any():
        out = where(np.broadcast_to(bad, q_shape + lane_shape), np.nan, out)
    if keepdims:
        full = list(kept)
        for a in axes:
            full[a] = 1
        out = reshape(out, shape(q) + tuple(full))
    return out


def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: None = None) -> Any:
    """The ``q``-quantiles over ``axis`` (``q`` in [0, 1], a number or an array whose axes
    lead the result), method 'linear'."""
    return _quantile(a, q, axis, keepdims, method, skip_nan=False)


def percentile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: None = None) -> Any:
    """:func:`quantile` with ``q`` in percent."""
    return _quantile(a, q / 100.0, axis, keepdims, method, skip_nan=False)


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """The 0.5-quantile (the mean of the two middle values for an even count)."""
    return _quantile(a, 0.5, axis, keepdims, "linear", skip_nan=False)


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights: None = None) -> Any:
    """:func:`quantile` of the non-NaN entries of each lane."""
    return _quantile(a, q, axis, keepdims, method, skip_nan=True)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                  *, weights: None = None) -> Any:
    return _quantile(a, q / 100.0, axis, keepdims, method, skip_nan=True)


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    return _quantile(a, 0.5, axis, keepdims, "linear", skip_nan=True)


__all__ = ["quantile", "percentile", "median", "nanquantile", "nanpercentile", "nanmedian"]
