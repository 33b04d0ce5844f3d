"""The basic functions of :mod:`diffkit.numpy`: elementwise primitives, reductions,
reshaping, indexing, stacking and the matrix product. The families in this package
build on them; users import ``diffkit.numpy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as _np

from .. import primitives as _p
from ..core import Box, DiffkitError, NotApplicable, _namespace, bind, ndim, primal
from ..core import shape as _shape_of

exp, log, log1p, sqrt = _p.exp, _p.log, _p.log1p, _p.sqrt
sin, cos, tan, arcsin, arccos, arctan = _p.sin, _p.cos, _p.tan, _p.arcsin, _p.arccos, _p.arctan
sinh, cosh, tanh, sigmoid = _p.sinh, _p.cosh, _p.tanh, _p.sigmoid
abs = absolute = _p.abs  # noqa: A001
sign, maximum, minimum, power = _p.sign, _p.maximum, _p.minimum, _p.power
add, sub, mul, div, neg = _p.add, _p.sub, _p.mul, _p.div, _p.neg
subtract, multiply, divide, true_divide, negative = sub, mul, div, div, neg


def where(cond: Any, x: Any, y: Any) -> Any:
    """``x`` where ``cond`` holds, else ``y``; the derivative flows only to the chosen side."""
    cond = primal(cond)
    if isinstance(cond, Box):  # a mask in a graph being traced: select is an equation
        from ..primitives.compare import select

        return bind(select, cond, x, y)
    if _namespace[0] is None or isinstance(cond, (bool, _np.ndarray, _np.generic)):
        cond = _np.asarray(cond)  # (another library's condition array stays as it is)
        cond = cond if cond.dtype == object else cond.astype(bool)
    return bind(_p.where, x, y, cond=cond)


def clip(x: Any, lo: Any, hi: Any) -> Any:
    """Limit ``x`` to [lo, hi] (either bound may be None)."""
    if lo is not None:
        x = maximum(x, lo)
    return x if hi is None else minimum(x, hi)


def relu(x: Any) -> Any:
    """max(x, 0) with derivative 0 at the kink (as JAX and PyTorch)."""
    return where(x > 0, x, 0.0)


def _axes(x: Any, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    """Normalise ``axis`` to a sorted tuple of negative ints, checked against ``x``."""
    n = ndim(x)
    if axis is None:
        return tuple(range(-n, 0))
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    for a in axes:
        if not -n <= a < n:
            raise DiffkitError(f"axis {a} is out of bounds for an array of dimension {n}")
    return tuple(sorted(a - n if a >= 0 else a for a in axes))


def sum(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Any:  # noqa: A001
    """Sum over ``axis`` (all axes by default)."""
    return bind(_p.sum, x, axis=_axes(x, axis), keepdims=keepdims)


def prod(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Any:
    """Product over ``axis``; its derivative is exact where entries are zero."""
    return bind(_p.prod, x, axis=_axes(x, axis), keepdims=keepdims)


def max(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Any:  # noqa: A001
    """Maximum over ``axis``; tied entries share the derivative equally."""
    return bind(_p.max, x, axis=_axes(x, axis), keepdims=keepdims)


def min(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Any:  # noqa: A001
    """Minimum over ``axis``; tied entries share the derivative equally."""
    return bind(_p.min, x, axis=_axes(x, axis), keepdims=keepdims)


def mean(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis``."""
    axes = _axes(x, axis)
    count = int(_np.prod([_shape_of(x)[a] for a in axes]))
    return sum(x, axes, keepdims) / count


def logsumexp(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Any:
    """log(sum(exp(x))) computed without overflow."""
    return bind(_p.logsumexp, x, axis=_axes(x, axis), keepdims=keepdims)


def reshape(x: Any, newshape: int | Sequence[int]) -> Any:
    """``x`` with a new shape (one entry may be -1)."""
    target = _np.empty(_shape_of(x), dtype=bool).reshape(newshape).shape  # resolves -1, checks size
    return x if target == _shape_of(x) else bind(_p.reshape, x, shape=target)


def ravel(x: Any) -> Any:
    return reshape(x, -1)


def expand_dims(x: Any, axis: int) -> Any:
    s = list(_shape_of(x))
    s.insert(axis if axis >= 0 else len(s) + axis + 1, 1)
    return reshape(x, tuple(s))


def transpose(x: Any, axes: Sequence[int] | None = None) -> Any:
    """Permute axes (reverse them by default)."""
    n = ndim(x)
    axes = tuple(range(n))[::-1] if axes is None else tuple(a % n for a in axes)
    return x if axes == tuple(range(n)) else bind(_p.transpose, x, axes=axes)


def broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    target = tuple(shape)
    return x if _shape_of(x) == target else bind(_p.broadcast_to, x, shape=target)


def getitem(x: Any, idx: Any) -> Any:
    """``x[idx]``: ints, slices, None, ``...``, integer and boolean arrays."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    idx = tuple(_np.asarray(primal(i)) if isinstance(i, (list, Box, _np.ndarray)) else i
                for i in idx)
    if any(isinstance(i, _np.ndarray) and i.dtype == object for i in idx):
        raise NotApplicable("the symbolic backend needs a closed form, but this function "
                           "selects entries by a condition on values (x[x > 0]); write it "
                           "with dnp.where(cond, x, 0), or use another backend")
    return bind(_p.getitem, x, idx=idx)


def concatenate(xs: Sequence[Any], axis: int = 0) -> Any:
    """Join arrays along an existing axis."""
    xs = list(xs)
    if not xs:
        raise DiffkitError("concatenate needs at least one array")
    return bind(_p.concatenate, *xs, axis=_axes(xs[0], axis)[0])


def stack(xs: Sequence[Any], axis: int = 0) -> Any:
    """Join arrays (or numbers) along a new axis."""
    xs = list(xs)
    return concatenate([expand_dims(x, axis) for x in xs], axis=axis)


def array(obj: Any, dtype: Any = None) -> Any:
    """Like ``np.array``; nested lists holding values being differentiated are stacked
    (traced scalars or arrays, mixed with constants). The dtype is numpy's (integer lists
    stay integer: indices)."""
    if _holds_box(obj):
        return stack([array(o) for o in obj])
    if isinstance(obj, Box):
        return obj
    out = _np.array(obj, dtype=dtype)
    return out if dtype is not None or out.dtype.kind in "biuf" else out.astype(float)


def _holds_box(obj: Any) -> bool:
    return isinstance(obj, (list, tuple)) and any(
        isinstance(o, Box) or _holds_box(o) for o in obj)


asarray = array


def matmul(x: Any, y: Any) -> Any:
    """Matrix product ``x @ y`` with numpy's rules for vectors and stacks of matrices."""
    if not isinstance(x, Box) and not isinstance(y, Box) and _namespace[0] is None:
        return _np.matmul(x, y)
    if ndim(x) == 0 or ndim(y) == 0:
        raise DiffkitError("matmul: operands must be arrays, not scalars; use * instead")
    x2 = reshape(x, (1,) + _shape_of(x)) if ndim(x) == 1 else x
    y2 = reshape(y, _shape_of(y) + (1,)) if ndim(y) == 1 else y
    z = bind(_p.matmul, x2, y2)
    if ndim(x) == 1:
        z = reshape(z, _shape_of(z)[:-2] + _shape_of(z)[-1:])
    if ndim(y) == 1:
        z = reshape(z, _shape_of(z)[:-1])
    return z


__all__ = sorted(
    ["exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
     "cosh", "tanh", "sigmoid", "relu", "abs", "sign", "maximum", "minimum", "power", "add", "sub",
     "mul", "div", "neg", "where", "clip", "sum", "prod", "max", "min", "mean", "logsumexp",
     "reshape", "ravel", "expand_dims", "transpose", "broadcast_to", "getitem", "concatenate",
     "stack", "array", "matmul"])
