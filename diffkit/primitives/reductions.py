"""Reductions (sum, prod, max, min, logsumexp over ``axis``) and their adjoint, broadcasting.

The adjoint of a reduction broadcasts ``y_bar`` back over the reduced axes (``_expand``
puts them back as size-1 axes); the adjoint of broadcasting sums (``sum_to``, the one
place where broadcasting is undone). ``axis`` is a tuple of negative ints: counted from
the end, it means the same axes when a batch axis is put in front (:mod:`diffkit.interpreters.batching`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import Box, Primitive, ndim, primal, shape
from ..core import shape as shape_of
from .compare import mask, select
from .lowering import LibraryCall
from . import patterns
from .elementwise import exp
from .structure import getitem, reshape

Axes = tuple[int, ...]


def _expand(y: Any, x: Any, axis: Axes, keepdims: bool) -> Any:
    """``y`` with the reduced axes back as size 1, so it broadcasts against ``x``."""
    if keepdims:
        return y
    kept = list(shape(x))
    for a in axis:
        kept[a] = 1
    return reshape(y, shape=tuple(kept))


def _spread(y_bar: Any, x: Any, axis: Axes, keepdims: bool) -> Any:
    return broadcast_to(_expand(y_bar, x, axis, keepdims), shape=shape(x))


sum = Primitive(  # noqa: A001
    "sum", lambda x, *, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    jvp=(lambda x_dot, y, x, *, axis, keepdims: sum(x_dot, axis=axis, keepdims=keepdims),),
    vjp=(lambda y_bar, y, x, *, axis, keepdims: _spread(y_bar, x, axis, keepdims),),
    saves=("",),
    sympy=lambda sp, x, *, axis, keepdims:  # one Add of n terms: pairwise sums cost O(n²)
        lanes(x, axis, keepdims, lambda v: sp.Add(*v)),
    library=LibraryCall("np.sum({0}, axis={axis}, keepdims={keepdims})"),
    kind="reduction", linear=True,
    complex=True,
)


def sum_to(g: Any, to: tuple[int, ...]) -> Any:
    """Undo broadcasting: sum ``g`` down to shape ``to`` (the adjoint of broadcast_to)."""
    lead = ndim(g) - len(to)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(to)
                                      if n == 1 and shape(g)[lead + i] != 1)
    if axes:
        g = sum(g, axis=tuple(a - ndim(g) for a in axes), keepdims=True)
    return reshape(g, shape=to) if shape(g) != to else g


def _broadcast_batch(args: list, batched: tuple, size: int, *, shape: tuple[int, ...]) -> Any:
    x = args[0]  # (size, *core): align core's axes with the end of shape
    x = reshape(x, shape=(size,) + (1,) * (len(shape) - ndim(x) + 1) + shape_of(x)[1:])
    return broadcast_to(x, shape=(size,) + shape)


broadcast_to = Primitive(
    "broadcast_to", lambda x, *, shape: np.broadcast_to(x, shape),
    jvp=(lambda x_dot, y, x, *, shape: broadcast_to(x_dot, shape=shape),),
    vjp=(lambda y_bar, y, x, *, shape: sum_to(y_bar, shape_of(x)),),
    saves=("",), batch=_broadcast_batch,
    array_api=lambda xp, x, *, shape: xp.broadcast_to(x, shape),
    library=LibraryCall("np.broadcast_to({0}, {shape})"),
    kind="view", linear=True,
    complex=True,
)


def _others(y: Any, x: Any, axis: Axes, keepdims: bool) -> Any:
    """d prod(x) / d x_i: the product of the other entries.

    Without zeros that is y / x_i. Where a lane holds zeros, it is built from pieces
    that keep their own derivatives (the product ``p`` of the non-zero entries and
    ``q`` of the zero ones), so second derivatives at zeros are exact too.
    """
    zero = mask(np.equal, x, 0.0)  # per example under vmap; a traced mask in a static graph
    if not isinstance(zero, Box) and not zero.any():  # (a traced mask takes the general form)
        return _expand(y, x, axis, keepdims) / x
    count = sum(zero, axis=axis, keepdims=True)  # zeros per lane
    p = prod(select(zero, 1.0, x), axis=axis, keepdims=True)
    q = prod(select(zero, x, 1.0), axis=axis, keepdims=True)  # 0, with a derivative
    other_zeros = select(mask(np.equal, count, 1), 1.0,
                         select(mask(np.equal, count, 2),
                                sum(select(zero, x, 0.0), axis=axis, keepdims=True) - x, 0.0))
    return select(zero, p * other_zeros, q * p / select(zero, 1.0, x))


prod = Primitive(
    "prod", lambda x, *, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
    jvp=(lambda x_dot, y, x, *, axis, keepdims:
         sum(x_dot * _others(y, x, axis, keepdims), axis=axis, keepdims=keepdims),),
    vjp=(lambda y_bar, y, x, *, axis, keepdims:
         _expand(y_bar, x, axis, keepdims) * _others(y, x, axis, keepdims),),
    saves=("y x",),
    kind="reduction",
    complex=True,
)


def _winners(y: Any, x: Any, axis: Axes, keepdims: bool) -> Any:
    """Weights of the entries that attain the max (or min); ties share equally. (Ones and
    zeros as floats, counted as floats: the count is exact, and a fused kernel of floats
    only takes the LLVM route.)"""
    hit = select(mask(np.equal, x, _expand(y, x, axis, keepdims)), 1.0, 0.0)
    return hit / sum(hit, axis=axis, keepdims=True)


def lanes(x: np.ndarray, axis: Axes, keepdims: bool, fn: Any) -> Any:
    """Apply ``fn`` to the list of entries along ``axis`` (for the sympy translations)."""
    moved = np.moveaxis(x, axis, tuple(range(-len(axis), 0)))
    kept = moved.shape[: moved.ndim - len(axis)]
    out = np.empty(kept, dtype=object).reshape(-1)
    for k, lane in enumerate(moved.reshape((out.size, math.prod(moved.shape[len(kept):])))):
        out[k] = fn(list(lane))
    out = out.reshape(kept)
    return np.expand_dims(out, axis) if keepdims else out


def _chooser(name: str, impl: Any, sym: str, **facts: Any) -> Primitive:
    return Primitive(
        name, lambda x, *, axis, keepdims: impl(x, axis=axis, keepdims=keepdims),
        jvp=(lambda x_dot, y, x, *, axis, keepdims:
             sum(x_dot * _winners(y, x, axis, keepdims), axis=axis, keepdims=keepdims),),
        vjp=(lambda y_bar, y, x, *, axis, keepdims:
             _expand(y_bar, x, axis, keepdims) * _winners(y, x, axis, keepdims),),
        saves=("y x",),
        sympy=lambda sp, x, *, axis, keepdims:
            lanes(x, axis, keepdims, lambda v: getattr(sp, sym)(*v)),
        kind="reduction", **facts,
    )


max = _chooser("max", np.max, "Max", complex=True)  # noqa: A001
min = _chooser("min", np.min, "Min", complex=True)  # noqa: A001


def _logsumexp(x: Any, *, axis: Axes, keepdims: bool, xp: Any = np) -> Any:
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0.0)
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else xp.squeeze(out, axis=axis)


def _softmax(y: Any, x: Any, axis: Axes, keepdims: bool) -> Any:
    return exp(x - _expand(y, x, axis, keepdims))


logsumexp = Primitive(
    "logsumexp", _logsumexp,
    jvp=(lambda x_dot, y, x, *, axis, keepdims:
         sum(x_dot * _softmax(y, x, axis, keepdims), axis=axis, keepdims=keepdims),),
    vjp=(lambda y_bar, y, x, *, axis, keepdims:
         _expand(y_bar, x, axis, keepdims) * _softmax(y, x, axis, keepdims),),
    saves=("y x",),
    array_api=lambda xp, x, *, axis, keepdims: _logsumexp(x, axis=axis, keepdims=keepdims, xp=xp),
    sympy=lambda sp, x, *, axis, keepdims:
        lanes(x, axis, keepdims, lambda v: sp.log(sp.Add(*[sp.exp(e) for e in v]))),
    kind="reduction",
)


# --------------------------------------------------------------------------- running sums
# ``axis`` is one negative int. The adjoint of a running sum is the running sum taken
# from the other end: x_bar_i = sum_{j >= i} y_bar_j.


def _reverse(a: Any, axis: int) -> Any:
    return getitem(a, idx=(Ellipsis, slice(None, None, -1)) + (slice(None),) * (-axis - 1))


def _cumsum_from_end(y_bar: Any, axis: int) -> Any:
    return _reverse(cumsum(_reverse(y_bar, axis), axis=axis), axis)


def _cumulative(xp: Any, name: str, x: Any, axis: int) -> Any:
    fn = getattr(xp, f"cumulative_{name}", None) or getattr(xp, f"cum{name}")
    return fn(x, axis=axis)


cumsum = Primitive(
    "cumsum", lambda x, *, axis: np.cumsum(x, axis=axis),
    jvp=(lambda x_dot, y, x, *, axis: cumsum(x_dot, axis=axis),),
    vjp=(lambda y_bar, y, x, *, axis: _cumsum_from_end(y_bar, axis),),
    saves=("",),
    array_api=lambda xp, x, *, axis: _cumulative(xp, "sum", x, axis),
    linear=True, sparsity=patterns.cumulative,
    complex=True,
)
cumprod = Primitive(  # d y_k = y_k sum_{i <= k} x_dot_i / x_i: entries must be non-zero
    "cumprod", lambda x, *, axis: np.cumprod(x, axis=axis),
    jvp=(lambda x_dot, y, x, *, axis: y * cumsum(x_dot / x, axis=axis),),
    vjp=(lambda y_bar, y, x, *, axis: _cumsum_from_end(y_bar * y, axis) / x,),
    saves=("y x",),
    array_api=lambda xp, x, *, axis: _cumulative(xp, "prod", x, axis),
    sparsity=patterns.cumulative,
    complex=True,
)
