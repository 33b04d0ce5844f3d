"""A numpy-like namespace whose functions every diffkit backend can differentiate.

Write functions against it exactly as against numpy::

    import diffkit.numpy as dnp

    def f(x):
        return dnp.sum(dnp.sin(x) ** 2) / x.size

Called on plain numbers or arrays, these are numpy (results are ordinary numpy
values); called inside ``dk.grad``, ``dk.jvp``... they record or propagate
derivatives. Functions here are thin: they normalise arguments (``axis``, shapes,
indices) and call a primitive from :mod:`diffkit.primitives`, or compose primitives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as _np
from numpy import (arange, e, eye, float32, float64, inf, linspace, nan, newaxis,  # noqa: F401
                   ones, ones_like, pi, zeros, zeros_like)

from . import primitives as _p
from .core import Box, DiffkitError, NotApplicable, _namespace, bind, ndim, primal
from .primitives.compare import COMPARISONS as _MASKS
from .primitives.compare import mask as _mask
from .primitives.compare import select as _select
from .core import shape as _shape_of

exp, log, log1p, sqrt = _p.exp, _p.log, _p.log1p, _p.sqrt
sin, cos, tan, arcsin, arccos, arctan = _p.sin, _p.cos, _p.tan, _p.arcsin, _p.arccos, _p.arctan
sinh, cosh, tanh, sigmoid = _p.sinh, _p.cosh, _p.tanh, _p.sigmoid
abs = absolute = _p.abs  # noqa: A001
sign, maximum, minimum, power = _p.sign, _p.maximum, _p.minimum, _p.power
add, sub, mul, div, neg = _p.add, _p.sub, _p.mul, _p.div, _p.neg
subtract, multiply, divide, true_divide, negative = sub, mul, div, div, neg


def where(cond: Any, x: Any, y: Any) -> Any:
    """``x`` where ``cond`` holds, else ``y``; the derivative flows only to the chosen side."""
    if not (isinstance(cond, Box) and cond.batched):
        cond = primal(cond)
    if isinstance(cond, Box):  # one mask per example (vmap), or a traced graph's equation
        return bind(_select, cond, x, y)
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
    if any(isinstance(i, Box) and i.batched for i in idx):
        raise DiffkitError("vmap: indexing with a value that differs per example (x[i], x[mask]) "
                           "is not supported yet; select with dnp.where or one-hot weights "
                           "(dnp.sum(x * onehot)), or keep the index unmapped (in_axes=None)")
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


# the larger part of the namespace, one module per family (they use the functions above)
from .nplib import linalg  # noqa: E402
from .nplib.contract import *  # noqa: E402,F403
from .nplib.math import *  # noqa: E402,F403
from .nplib.shaping import *  # noqa: E402,F403
from .nplib.stats import *  # noqa: E402,F403


# --------------------------------------------------------------------------- numpy protocol

_UFUNCS = {prim.ufunc: prim for prim in _p.table().values() if prim.ufunc is not None}
_UFUNCS[_np.matmul] = matmul
_COMPARISONS = {_np.less, _np.less_equal, _np.greater, _np.greater_equal, _np.equal,
                _np.not_equal, _np.isfinite, _np.isnan, _np.isinf}
_FUNCTIONS = {"sum", "prod", "max", "min", "amax", "amin", "mean", "where", "clip", "dot",
              "matmul", "reshape", "ravel", "transpose", "concatenate", "stack", "expand_dims",
              "broadcast_to"}
_SHAPE_QUERIES = {"shape", "ndim", "size", "result_type", "zeros_like", "ones_like", "allclose",
                  "isclose"}


def _unsupported(what: str) -> DiffkitError:
    return DiffkitError(
        f"{what} does not support values being differentiated; use the diffkit.numpy "
        f"functions instead (import diffkit.numpy as dnp): {', '.join(sorted(__all__))}"
    )


def _dispatch_ufunc(self: Box, ufunc: _np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``np.sin(box)`` and ``ndarray + box`` land here (``Box.__array_ufunc__``)."""
    if method == "__call__" and not kwargs:
        if ufunc in _UFUNCS:
            return _UFUNCS[ufunc](*inputs)
        if ufunc in _MASKS:
            return _mask(ufunc, *inputs)
        if ufunc in _COMPARISONS:
            return ufunc(*(primal(i) for i in inputs))
    raise _unsupported(f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}"))


def _dispatch_function(self: Box, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
    """``np.sum(box)`` and friends land here (``Box.__array_function__``); anything
    unsupported is a clear error."""
    name = func.__name__
    if name in _SHAPE_QUERIES:
        return func(*(primal(a) for a in args), **kwargs)
    if func.__module__ == "numpy.linalg" and name in linalg.__all__:
        return getattr(linalg, name)(*args, **kwargs)
    if name in _FUNCTIONS:
        return globals()[{"amax": "max", "amin": "min"}.get(name, name)](*args, **kwargs)
    raise _unsupported(f"{func.__module__}.{name}()")


def _install_operators() -> None:
    """Give :class:`Box` numpy's operators, array methods and protocols, via the primitives."""
    def binary(prim: _p.Primitive) -> tuple[Any, Any]:
        return (lambda self, o: bind(prim, self, o)), (lambda self, o: bind(prim, o, self))

    for name, prim in [("add", _p.add), ("sub", _p.sub), ("mul", _p.mul), ("truediv", _p.div),
                       ("pow", _p.power)]:
        forward, reflected = binary(prim)
        setattr(Box, f"__{name}__", forward)
        setattr(Box, f"__r{name}__", reflected)
    Box.__matmul__ = lambda self, o: matmul(self, o)
    Box.__rmatmul__ = lambda self, o: matmul(o, self)
    for name, ufunc in [("lt", _np.less), ("le", _np.less_equal), ("gt", _np.greater),
                        ("ge", _np.greater_equal), ("eq", _np.equal), ("ne", _np.not_equal)]:
        setattr(Box, f"__{name}__", lambda self, o, ufunc=ufunc: _mask(ufunc, self, o))
    Box.__neg__ = lambda self: bind(_p.neg, self)
    Box.__pos__ = lambda self: self
    Box.__abs__ = lambda self: bind(_p.abs, self)
    Box.__getitem__ = lambda self, idx: getitem(self, idx)
    Box.T = property(lambda self: transpose(self))
    for name in ["sum", "mean", "prod", "max", "min", "dot"]:
        setattr(Box, name, globals()[name])
    # numpy's method forms: x.reshape(2, 3) as well as x.reshape((2, 3)); x.transpose(1, 0)
    Box.reshape = lambda self, *s: reshape(self, s[0] if len(s) == 1 else s)
    Box.transpose = lambda self, *a: transpose(self, (a[0] if len(a) == 1 else a) or None)
    Box.__array_ufunc__ = _dispatch_ufunc
    Box.__array_function__ = _dispatch_function


_install_operators()

__all__ = sorted(
    ["exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
     "cosh", "tanh", "sigmoid", "relu", "abs", "sign", "maximum", "minimum", "power", "add", "sub",
     "mul", "div", "neg", "where", "clip", "sum", "prod", "max", "min", "mean", "logsumexp",
     "reshape", "ravel", "expand_dims", "transpose", "broadcast_to", "getitem", "concatenate",
     "stack", "array", "matmul"])


def _astype(self: Box, dtype: Any, *args: Any, **kwargs: Any) -> Any:
    if not _np.issubdtype(_np.dtype(dtype), _np.floating):
        raise DiffkitError(f"astype({_np.dtype(dtype).name}) of a value being differentiated "
                           "would drop its derivative; only float dtypes are supported "
                           "(take .item() or dk.stop_gradient first to convert on purpose)")
    return self


def _install_methods() -> None:
    """The rest of numpy's array methods and the ``%``, ``//`` and ``divmod`` operators."""
    methods = {"var": var, "std": std, "cumsum": cumsum, "cumprod": cumprod, "clip": clip,
               "squeeze": squeeze, "ravel": ravel, "flatten": ravel, "copy": copy,
               "diagonal": diagonal, "trace": trace, "swapaxes": swapaxes, "repeat": repeat,
               "take": take, "round": round, "astype": _astype}
    for name, fn in methods.items():
        setattr(Box, name, fn)
    Box.__mod__, Box.__rmod__ = (lambda self, o: mod(self, o)), (lambda self, o: mod(o, self))
    Box.__floordiv__ = lambda self, o: floor_divide(self, o)
    Box.__rfloordiv__ = lambda self, o: floor_divide(o, self)
    Box.__divmod__ = lambda self, o: divmod(self, o)
    Box.__rdivmod__ = lambda self, o: divmod(o, self)


_install_methods()
from .nplib import contract as _contract, math as _math, shaping as _shaping, stats as _stats  # noqa: E402

_FAMILIES = (_contract, _math, _shaping, _stats)
_FUNCTIONS |= {name for m in _FAMILIES for name in m.__all__ if hasattr(_np, name)}
__all__ = sorted({*__all__, *(name for m in _FAMILIES for name in m.__all__), "linalg", "absolute",
                  "subtract", "multiply", "divide", "true_divide", "negative", "asarray", "arange",
                  "e", "eye", "float32", "float64", "inf", "linspace", "nan", "newaxis", "ones",
                  "ones_like", "pi", "zeros", "zeros_like"})


def __dir__() -> list[str]:
    """Only the functions and constants of the namespace (not the helpers it imports)."""
    return list(__all__)
