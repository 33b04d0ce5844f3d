"""The basic functions of :mod:`diffkit.numpy`: elementwise primitives, where, clip,
reductions over ``axis``, reshaping, indexing, joining, ``array`` and ``matmul``.

Each normalises its arguments (``axis`` to negative ints, shapes, indices) and calls a
primitive of :mod:`diffkit.primitives`, or composes primitives. The other modules of
this package build on these; :mod:`diffkit.numpy` gathers them all into one namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as _np
from numpy import (arange, e, eye, float32, float64, inf, nan, newaxis,  # noqa: F401
                   ones, pi, zeros)

from .. import primitives as _p
from ..core import Box, DiffkitError, NotApplicable, bind, namespace, ndim, primal
from ..core import shape as _shape_of
from ..primitives.compare import select
from ..primitives.gather import At

exp, log, log1p, sqrt = _p.exp, _p.log, _p.log1p, _p.sqrt
sin, cos, tan, arcsin, arccos, arctan = _p.sin, _p.cos, _p.tan, _p.arcsin, _p.arccos, _p.arctan
sinh, cosh, tanh, sigmoid = _p.sinh, _p.cosh, _p.tanh, _p.sigmoid
abs = absolute = _p.abs  # noqa: A001
sign, maximum, minimum, power = _p.sign, _p.maximum, _p.minimum, _p.power
add, sub, mul, div, neg = _p.add, _p.sub, _p.mul, _p.div, _p.neg
subtract, multiply, divide, true_divide, negative = sub, mul, div, div, neg


def where(cond: Any, x: Any = None, y: Any = None) -> Any:
    """``x`` where ``cond`` holds, else ``y``; the derivative flows only to the chosen side.
    (numpy's one-argument form, the indices where ``cond`` holds, is ``nonzero``.)"""
    if x is None or y is None:
        raise DiffkitError("where needs three arguments, where(cond, x, y); for the indices "
                           "where cond holds (numpy's where(cond)) use dnp.nonzero(cond)")
    if not (isinstance(cond, Box) and cond.batched):
        cond = primal(cond)
    if isinstance(cond, Box):  # one mask per example (vmap), or a traced graph's equation
        return bind(select, cond, x, y)
    if namespace() is None or isinstance(cond, (bool, _np.ndarray, _np.generic)):
        cond = _np.asarray(cond)  # (another library's condition array stays as it is)
        cond = cond if cond.dtype == object else cond.astype(bool)
    return bind(_p.where, x, y, cond=cond)


def clip(x: Any, a_min: Any = None, a_max: Any = None, *, min: Any = None,  # noqa: A002
         max: Any = None) -> Any:  # noqa: A002
    """Limit ``x`` to [a_min, a_max]; either bound may be None. numpy's keyword spellings
    ``min=`` / ``max=`` work too. At a bound the derivative is 1/2 (a tie of maximum/minimum).

    >>> float(clip(3.0, max=1.0))
    1.0
    """
    if min is not None or max is not None:
        if a_min is not None or a_max is not None:
            raise DiffkitError("clip: give the bounds as a_min/a_max or as min/max, not both")
        a_min, a_max = min, max
    if a_min is not None:
        x = maximum(x, a_min)
    return x if a_max is None else minimum(x, a_max)


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


def _dtype(x: Any, dtype: Any, fn: str) -> Any:
    """``x`` ready for a reduction with numpy's ``dtype=``: plain values are cast as numpy
    would; a value being differentiated keeps its own precision, so only that is accepted."""
    if dtype is None:
        return x
    if not isinstance(x, Box):
        return x if namespace() is not None else _np.asarray(x, dtype=dtype)
    kept = _np.dtype(float) if x.dtype == object else x.dtype  # SymPy's values compile to float64
    if _np.dtype(dtype) != kept:
        raise DiffkitError(f"{fn}: dtype={_np.dtype(dtype)} differs from the {kept} of the value "
                           "being differentiated, whose precision diffkit keeps; drop dtype= or "
                           "pass the argument in that precision")
    return x


def sum(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False, *,  # noqa: A001
        dtype: Any = None) -> Any:
    """Sum over ``axis`` (all axes by default)."""
    x = _dtype(x, dtype, "sum")
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


def mean(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False, *,
         dtype: Any = None) -> Any:
    """Arithmetic mean over ``axis``."""
    x = _dtype(x, dtype, "mean")
    axes = _axes(x, axis)
    count = int(_np.prod([_shape_of(x)[a] for a in axes]))
    return sum(x, axes, keepdims=keepdims) / count


def logsumexp(x: Any, axis: int | Sequence[int] | None = None, b: Any = None,
              keepdims: bool = False, return_sign: bool = False) -> Any:
    """log(sum(b * exp(x))) computed without overflow; -inf over no entries (as SciPy and
    JAX). With weights ``b`` of either sign the sum may be negative: ``return_sign=True``
    gives ``(log|sum|, sign)``, else its log is nan (as SciPy).

    >>> float(logsumexp(zeros(0)))
    -inf
    >>> [round(float(v), 12) for v in logsumexp(_np.log([1.0, 4.0]), b=_np.array([2.0, -1.0]),
    ...                                         return_sign=True)]
    [0.69314718056, -1.0]
    """
    axes = _axes(x, axis)
    if b is None and not return_sign:
        if any(_shape_of(x)[a] == 0 for a in axes):  # log(0); its derivative is empty
            return sum(x, axes, keepdims=keepdims) - inf
        return bind(_p.logsumexp, x, axis=axes, keepdims=keepdims)
    shift = max(x, axes, keepdims=True) if all(_shape_of(x)[a] for a in axes) else 0.0
    shift = where(_np.isfinite(primal(shift)), shift, 0.0)
    total = sum((1.0 if b is None else b) * exp(x - shift), axes, keepdims=True)
    out = (log(abs(total)) if return_sign else log(total)) + shift
    out = out if keepdims else reshape(out, _shape_of(sum(total, axes)))
    if not return_sign:
        return out
    sign = _np.sign(primal(total))
    return out, sign if keepdims else _np.reshape(sign, _shape_of(out))


def reshape(x: Any, shape: int | Sequence[int], order: str = "C", *, copy: bool | None = None,
            ) -> Any:
    """``x`` with a new shape (one entry may be -1), read in C or Fortran ``order``.
    ``copy`` is accepted for numpy's sake: values being differentiated are never written to.
    """
    if order not in ("C", "F"):
        raise DiffkitError(f"reshape: order={order!r} is not supported; use 'C' or 'F'")
    if order == "F":  # Fortran order is C order on the reversed axes
        return transpose(reshape(transpose(x), tuple(_np.atleast_1d(shape))[::-1]))
    target = _np.empty(_shape_of(x), dtype=bool).reshape(shape).shape  # resolves -1, checks size
    return x if target == _shape_of(x) else bind(_p.reshape, x, shape=target)


def ravel(x: Any, order: str = "C") -> Any:
    return reshape(x, -1, order)


def expand_dims(x: Any, axis: int | Sequence[int]) -> Any:
    """``x`` with new size-1 axes at the positions ``axis`` of the result (as numpy).

    >>> expand_dims(ones((2, 3)), (0, -1)).shape
    (1, 2, 3, 1)
    """
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    n = ndim(x) + len(axes)
    for a in axes:
        if not -n <= a < n:
            raise DiffkitError(f"expand_dims: axis {a} is out of bounds for the result's "
                               f"dimension {n}")
    at = sorted(a % n for a in axes)
    if len(set(at)) != len(at):
        raise DiffkitError(f"expand_dims: axis {axis!r} names a position twice")
    s = list(_shape_of(x))
    for a in at:
        s.insert(a, 1)
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
    if any(isinstance(i, Box) for i in idx):
        return _gather(x, idx)
    idx = tuple(_np.asarray(primal(i)) if isinstance(i, (list, _np.ndarray)) else i
                for i in idx)
    if any(isinstance(i, _np.ndarray) and i.dtype == object for i in idx):
        raise NotApplicable("the symbolic backend needs a closed form, but this function "
                           "selects entries by a condition on values (x[x > 0]); write it "
                           "with dnp.where(cond, x, 0), or use another backend")
    return bind(_p.getitem, x, idx=idx)


def _gather(x: Any, idx: tuple) -> Any:
    """``x[idx]`` where an index is itself a value (one per example under vmap): the index
    arrays become arguments of a gather, the slices its template."""
    if any(i is None or _np.asarray(primal(i)).dtype.kind not in "iu" and
           not isinstance(i, slice) and i is not Ellipsis for i in idx):
        raise DiffkitError("indexing with a computed index (x[i], i from argmax, argsort ...) "
                           "takes integers, slices and ...; a mask or None there is not "
                           "supported: select with dnp.where(mask, x, 0)")
    explicit = len([i for i in idx if i is not Ellipsis])
    spread: list = []
    for i in idx:
        spread += [slice(None)] * (ndim(x) - explicit) if i is Ellipsis else [i]
    spread += [slice(None)] * (ndim(x) - len(spread))
    arrays = [i for i in spread if not isinstance(i, slice)]
    slots = iter(range(len(arrays)))
    template = tuple(i if isinstance(i, slice) else At(next(slots)) for i in spread)
    return bind(_p.gather, x, *[i if isinstance(i, Box) else _np.asarray(i) for i in arrays],
                idx=template)


def _filled_like(x: Any, fill: float, dtype: Any, peer_function: str) -> Any:
    """A constant of ``x``'s shape: made by the peer's array library when running on its
    arrays (so it meets ``x`` in a torch or JAX program), else by numpy."""
    xp = namespace()
    if xp is not None and not isinstance(x, (Box, _np.ndarray, _np.generic)):
        return getattr(xp, peer_function)(x, dtype=dtype)
    dtype = dtype or (x.dtype if hasattr(x, "dtype") else _np.asarray(x).dtype)
    return _np.full(_shape_of(x), fill, dtype=dtype)


def zeros_like(x: Any, dtype: Any = None) -> Any:
    """Zeros of ``x``'s shape and dtype (a constant: no derivative flows through it).

    >>> zeros_like(_np.ones(2)).tolist()
    [0.0, 0.0]
    """
    return _filled_like(x, 0, dtype, "zeros_like")


def ones_like(x: Any, dtype: Any = None) -> Any:
    """Ones of ``x``'s shape and dtype (a constant: no derivative flows through it).

    >>> ones_like(_np.zeros(2)).tolist()
    [1.0, 1.0]
    """
    return _filled_like(x, 1, dtype, "ones_like")


def concatenate(xs: Sequence[Any], axis: int | None = 0) -> Any:
    """Join arrays along an existing axis (``axis=None``: flattened, as numpy).

    >>> concatenate([_np.ones((2, 2)), _np.zeros(3)], axis=None).shape
    (7,)
    """
    xs = list(xs)
    if not xs:
        raise DiffkitError("concatenate needs at least one array")
    if axis is None:
        xs, axis = [reshape(x, (-1,)) for x in xs], 0
    if len({ndim(x) for x in xs}) > 1:
        raise DiffkitError("concatenate: the arrays have different numbers of axes ("
                           + ", ".join(str(_shape_of(x)) for x in xs) + "); give them the same "
                           "number, or axis=None to join them flattened")
    return bind(_p.concatenate, *xs, axis=_axes(xs[0], axis)[0])


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop``, as numpy; traced endpoints
    keep their derivative (d/d start = 1 - t, d/d stop = t at the fraction t of the way).

    >>> linspace(0.0, 1.0, 3)
    array([0. , 0.5, 1. ])
    """
    if not isinstance(start, Box) and not isinstance(stop, Box):
        return _np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
    if axis != 0:
        raise DiffkitError("linspace with traced endpoints takes axis=0 only; move the axis "
                           "afterwards with dnp.moveaxis")
    num = int(num)
    rank = len(_np.broadcast_shapes(_shape_of(start), _shape_of(stop)))
    div = num - 1 if endpoint else num
    delta = stop - start
    step = delta / div if div > 0 else delta * nan
    steps = _np.arange(num, dtype=float).reshape((num,) + (1,) * rank)
    y = steps * step + start if div > 0 else steps * delta + start
    if endpoint and num > 1:  # the last value is stop itself, as numpy's
        y = concatenate([getitem(y, slice(None, -1)), expand_dims(stop + 0.0 * start, 0)])
    return (y, step) if retstep else y


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
    return out if dtype is not None or out.dtype.kind in "biufc" else out.astype(float)


def _holds_box(obj: Any) -> bool:
    return isinstance(obj, (list, tuple)) and any(
        isinstance(o, Box) or _holds_box(o) for o in obj)


asarray = array


def matmul(x: Any, y: Any) -> Any:
    """Matrix product ``x @ y`` with numpy's rules for vectors and stacks of matrices."""
    if not isinstance(x, Box) and not isinstance(y, Box) and namespace() is None:
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


__all__ = [
    "exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
    "cosh", "tanh", "sigmoid", "relu", "abs", "sign", "maximum", "minimum", "power", "add", "sub",
    "mul", "div", "neg", "where", "clip", "sum", "prod", "max", "min", "mean", "logsumexp",
    "reshape", "ravel", "expand_dims", "transpose", "broadcast_to", "getitem", "concatenate",
    "stack", "array", "matmul", "asarray", "absolute", "subtract", "multiply", "divide",
    "true_divide", "negative", "arange", "e", "eye", "float32", "float64", "inf", "linspace",
    "nan", "newaxis", "ones", "ones_like", "pi", "zeros", "zeros_like"
]
