"""Building arrays: meshgrid, broadcast_arrays, select, piecewise, logspace, geomspace and
the index tricks ``r_`` / ``c_``, written with broadcasting, ``where`` and ``concatenate``
(values being differentiated keep their derivative).

* ``select``/``piecewise``: the derivative flows from the chosen branch only; the
  conditions are read from the primal values. ``piecewise`` calls each function on all of
  ``x`` (numpy calls it on the selected entries only), so a function must be defined
  everywhere (use ``where`` inside it otherwise).

>>> import diffkit as dk
>>> dk.grad(lambda s: geomspace(s, 8.0, 4).sum())(1.0).round(6)  # 1, 2, 4, 8: 1 + 2/3 (2 + 4)
np.float64(3.666667)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import Box, DiffkitError, ndim, primal, shape
from .base import broadcast_to, concatenate, exp, linspace, log, power, reshape, where
from .base import array as _array
from .shaping import atleast_1d, column_stack


def broadcast_arrays(*args: Any) -> tuple[Any, ...]:
    """The arguments broadcast to their common shape (a tuple, as numpy 2)."""
    common = np.broadcast_shapes(*(shape(a) for a in args))
    return tuple(broadcast_to(a, common) for a in args)


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple[Any, ...]:
    """Coordinate arrays from coordinate vectors (``indexing`` 'xy' or 'ij')."""
    if indexing not in ("xy", "ij"):
        raise DiffkitError("meshgrid: indexing must be 'xy' or 'ij'")
    n = len(xi)
    out = []
    for k, x in enumerate(xi):
        s = [1] * n
        s[k] = -1
        if indexing == "xy" and n > 1 and k < 2:
            s[0], s[1] = s[1], s[0]
        out.append(reshape(x, tuple(s)))
    return tuple(out) if sparse else broadcast_arrays(*out)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """The first choice whose condition holds, else ``default``."""
    if len(condlist) != len(choicelist):
        raise DiffkitError("select: condlist and choicelist must have the same length")
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, choice, out)
    return out


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """Each function (or constant) where its condition holds; one extra function is the
    value where none holds (else 0)."""
    conds = [condlist] if isinstance(condlist, (bool, np.bool_)) or np.ndim(primal(condlist)) == \
        ndim(x) and not isinstance(condlist, list) else list(condlist)
    funcs = list(funclist)
    if len(funcs) == len(conds) + 1:
        otherwise = funcs.pop()
        conds.append(~np.any([np.asarray(primal(c), dtype=bool) for c in conds], axis=0))
        funcs.append(otherwise)
    if len(funcs) != len(conds):
        raise DiffkitError(f"piecewise: {len(funcs)} functions for {len(conds)} conditions")
    out: Any = np.zeros(shape(x))
    for cond, f in zip(conds, funcs):
        value = f(x, *args, **kw) if isinstance(f, Callable) else f
        out = where(np.asarray(primal(cond), dtype=bool), value, out)
    return out


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Any:
    """``base ** linspace(start, stop)``."""
    if not any(isinstance(v, Box) for v in (start, stop, base)):
        return np.logspace(start, stop, num, endpoint, base, dtype, axis)
    return power(base, linspace(start, stop, num, endpoint, axis=axis))


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Any:
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (same sign, non-zero);
    the ends are ``start`` and ``stop`` exactly, as numpy's."""
    if not any(isinstance(v, Box) for v in (start, stop)):
        return np.geomspace(start, stop, num, endpoint, dtype, axis)
    sign = np.sign(primal(start))
    if np.any(sign != np.sign(primal(stop))) or np.any(sign == 0):
        raise DiffkitError("geomspace: start and stop must be non-zero and of one sign")
    y = sign * exp(linspace(log(start * sign), log(stop * sign), num, endpoint, axis=axis))
    if num < 2:
        return y
    middle = y[1:-1] if endpoint else y[1:]
    ends = [_expand(start)] + [middle] + ([_expand(stop)] if endpoint else [])
    return concatenate(ends, axis=0)


def _expand(v: Any) -> Any:
    return reshape(v, (1,) + shape(v))


class _Concatenator:
    """``r_[...]`` / ``c_[...]``: join arrays, numbers and ``start:stop:step`` ranges."""

    def __init__(self, columns: bool) -> None:
        self.columns = columns

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        parts = []
        for item in items:
            if isinstance(item, str):
                raise DiffkitError("r_/c_: string directives ('r', '0,2') are not supported; "
                                   "use concatenate or stack")
            if isinstance(item, slice):
                step = 1 if item.step is None else item.step
                start = 0 if item.start is None else item.start
                item = (np.linspace(start, item.stop, int(abs(step.imag)))
                        if isinstance(step, complex) else np.arange(start, item.stop, step))
            parts.append(atleast_1d(_array(item)))
        if self.columns:
            return column_stack(parts)
        return concatenate(parts, axis=0)


r_ = _Concatenator(columns=False)
c_ = _Concatenator(columns=True)

__all__ = ["broadcast_arrays", "meshgrid", "select", "piecewise", "logspace", "geomspace",
           "r_", "c_"]
