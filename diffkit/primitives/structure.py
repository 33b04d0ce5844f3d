"""Structural primitives: reshape, transpose, broadcast, indexing, concatenation.

They move numbers without doing arithmetic, so their derivative rules are the same
operation (forward) or its transpose (reverse): the adjoint of indexing scatters back
into zeros, the adjoint of broadcasting sums (``sum_to``, the one place where
broadcasting is undone).

Forward mode may carry several tangent directions at once as *leading* axes of the
tangent (``jacobian``, ``hessian``); ``nb = ndim(x_dot) - ndim(x)`` is their number,
and the JVP rules here keep those axes in front.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Each, Primitive, ndim
from ..core import shape as shape_of


def _lead(x_dot: Any, x: Any) -> tuple[int, ...]:
    """The leading tangent-direction axes of ``x_dot`` (empty when not batched)."""
    return shape_of(x_dot)[: ndim(x_dot) - ndim(x)]


reshape = Primitive(
    "reshape", lambda x, *, shape: np.reshape(x, shape),
    jvp=(lambda x_dot, y, x, *, shape: reshape(x_dot, shape=_lead(x_dot, x) + shape),),
    vjp=(lambda y_bar, y, x, *, shape: reshape(y_bar, shape=shape_of(x)),),
    array_api=lambda xp, x, *, shape: xp.reshape(x, shape),
)


def _transpose_jvp(x_dot: Any, y: Any, x: Any, *, axes: tuple[int, ...]) -> Any:
    nb = ndim(x_dot) - ndim(x)
    return transpose(x_dot, axes=tuple(range(nb)) + tuple(a + nb for a in axes))


transpose = Primitive(
    "transpose", lambda x, *, axes: np.transpose(x, axes),
    jvp=(_transpose_jvp,),
    vjp=(lambda y_bar, y, x, *, axes: transpose(y_bar, axes=tuple(np.argsort(axes))),),
    array_api=lambda xp, x, *, axes: xp.permute_dims(x, axes),
)


def sum_to(g: Any, to: tuple[int, ...]) -> Any:
    """Undo broadcasting: sum ``g`` down to shape ``to`` (the adjoint of broadcast_to)."""
    from .reductions import sum

    lead = ndim(g) - len(to)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(to) if n == 1 and shape_of(g)[lead + i] != 1)
    if axes:
        g = sum(g, axis=tuple(a - ndim(g) for a in axes), keepdims=True)
    return reshape(g, shape=to) if shape_of(g) != to else g


def _broadcast_jvp(x_dot: Any, y: Any, x: Any, *, shape: tuple[int, ...]) -> Any:
    lead = _lead(x_dot, x)
    aligned = lead + (1,) * (len(shape) - ndim(x)) + shape_of(x)
    return broadcast_to(reshape(x_dot, shape=aligned), shape=lead + shape)


broadcast_to = Primitive(
    "broadcast_to", lambda x, *, shape: np.broadcast_to(x, shape),
    jvp=(_broadcast_jvp,),
    vjp=(lambda y_bar, y, x, *, shape: sum_to(y_bar, shape_of(x)),),
    array_api=lambda xp, x, *, shape: xp.broadcast_to(x, shape),
)


def _is_basic(idx: tuple) -> bool:
    """Basic indexing (ints, slices, None, ...) never selects an element twice."""
    return all(isinstance(i, (int, np.integer, slice, type(None), type(Ellipsis))) for i in idx)


def _lead_position(idx: tuple) -> int:
    """Where numpy puts leading axes when indexing with ``(:,)*nb + idx``.

    When advanced (array) indices are separated by a slice, numpy moves their
    broadcast axes to the front, in front of our tangent-direction axes.
    """
    adv = [k for k, i in enumerate(idx) if not isinstance(i, (slice, type(None), type(Ellipsis)))]
    if _is_basic(idx) or adv == list(range(adv[0], adv[-1] + 1)):
        return 0
    shapes = [(int(np.count_nonzero(idx[k])),) if np.asarray(idx[k]).dtype == bool
              else np.shape(idx[k]) for k in adv]  # a boolean mask gives one axis
    return len(np.broadcast_shapes(*shapes))


def _getitem_jvp(x_dot: Any, y: Any, x: Any, *, idx: tuple) -> Any:
    nb = ndim(x_dot) - ndim(x)
    out = getitem(x_dot, idx=(slice(None),) * nb + idx)
    k = _lead_position(idx) if nb else 0
    return transpose(out, axes=tuple(range(k, k + nb)) + tuple(range(k)) + tuple(
        range(k + nb, ndim(out)))) if k else out


def _getitem_add(buf: np.ndarray, y_bar: np.ndarray, *, idx: tuple) -> None:
    if _is_basic(idx):
        buf[idx] += y_bar
    else:
        np.add.at(buf, idx, y_bar)


getitem = Primitive(
    "getitem", lambda x, *, idx: x[idx],
    jvp=(_getitem_jvp,),
    vjp=(lambda y_bar, y, x, *, idx: scatter_add(y_bar, idx=idx, shape=shape_of(x)),),
    vjp_add=_getitem_add,  # x[a:b] used several times: add into one buffer, not n zero-arrays
    array_api=lambda xp, x, *, idx: x[idx],
)


def _scatter_add(v: Any, *, idx: tuple, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, dtype=np.result_type(v))
    if _is_basic(idx):
        out[idx] = v
    else:
        np.add.at(out, idx, v)
    return out


def _scatter_jvp(v_dot: Any, y: Any, v: Any, *, idx: tuple, shape: tuple[int, ...]) -> Any:
    lead = _lead(v_dot, v)
    nb, k = len(lead), _lead_position(idx) if lead else 0
    if k:  # put the direction axes where numpy's indexing expects them
        n = ndim(v_dot)
        v_dot = transpose(v_dot, axes=tuple(range(nb, nb + k)) + tuple(range(nb)) + tuple(
            range(nb + k, n)))
    return scatter_add(v_dot, idx=(slice(None),) * nb + idx, shape=lead + shape)


scatter_add = Primitive(
    "scatter_add", _scatter_add,
    jvp=(_scatter_jvp,),
    vjp=(lambda y_bar, y, v, *, idx, shape: getitem(y_bar, idx=idx),),
)


def _concat_vjp(i: int, y_bar: Any, y: Any, *xs: Any, axis: int) -> Any:
    start = sum(shape_of(x)[axis] for x in xs[:i])
    return getitem(y_bar, idx=(Ellipsis, slice(start, start + shape_of(xs[i])[axis]))
                   + (slice(None),) * (-axis - 1))


concatenate = Primitive(
    "concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
    jvp_joint=lambda x_dots, y, *xs, axis: concatenate(*x_dots, axis=axis),
    vjp=Each(_concat_vjp),
    array_api=lambda xp, *xs, axis: xp.concat(list(xs), axis=axis),
)
