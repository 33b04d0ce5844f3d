"""Structural primitives: reshape, transpose, indexing, concatenation.

They move numbers without doing arithmetic, so their derivative rules are the same
operation (forward) or its transpose (reverse): the adjoint of indexing scatters back
into zeros, the adjoint of a reshape reshapes back. Their batching rules (used by
:mod:`diffkit.interpreters.batching`) put the batch axis in front of the shapes and indices they hold.
(Broadcasting and its adjoint ``sum_to`` live with the reductions.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Each, Primitive, ndim
from ..core import shape as shape_of
from .lowering import LibraryCall
from . import patterns

ALL = slice(None)


def align(args: list, batched: tuple[bool, ...], size: int, rank: int = 0) -> list:
    """Batched arguments with size-1 axes after the batch axis, so that numpy broadcasting
    lines their trailing axes up with the unbatched arguments' (a broadcasting rule);
    ``rank``: at least this many trailing axes (another operand's)."""
    rank = max(rank, *(ndim(a) - b for a, b in zip(args, batched)))
    return [reshape(a, shape=(size,) + (1,) * (rank - ndim(a) + 1) + shape_of(a)[1:])
            if b and ndim(a) - 1 < rank else a for a, b in zip(args, batched)]


def _an_array(shape: tuple[int, ...]) -> bool:
    """An operand of at least one axis is an ndarray in generated code (a 0-d one may be
    a Python float), so the method is there; it costs a fifth of ``np.reshape``'s
    dispatch, which a training step's program pays at every call."""
    return len(shape) > 0


def _reshape_batch(args: list, batched: tuple, size: int, *, shape: tuple[int, ...]) -> Any:
    return reshape(args[0], shape=(size,) + shape)


reshape = Primitive(
    "reshape", lambda x, *, shape: np.reshape(x, shape),
    jvp=(lambda x_dot, y, x, *, shape: reshape(x_dot, shape=shape),),
    vjp=(lambda y_bar, y, x, *, shape: reshape(y_bar, shape=shape_of(x)),),
    saves=("",), batch=_reshape_batch,
    array_api=lambda xp, x, *, shape: xp.reshape(x, shape),
    library=LibraryCall("{0}.reshape({shape})", when=_an_array),
    kind="view", linear=True,
    complex=True,
)


def _transpose_batch(args: list, batched: tuple, size: int, *, axes: tuple[int, ...]) -> Any:
    return transpose(args[0], axes=(0,) + tuple(a + 1 for a in axes))


transpose = Primitive(
    "transpose", lambda x, *, axes: np.transpose(x, axes),
    jvp=(lambda x_dot, y, x, *, axes: transpose(x_dot, axes=axes),),
    vjp=(lambda y_bar, y, x, *, axes: transpose(y_bar, axes=tuple(np.argsort(axes))),),
    saves=("",), batch=_transpose_batch,
    array_api=lambda xp, x, *, axes: xp.permute_dims(x, axes),
    library=LibraryCall("{0}.transpose({axes})", when=_an_array),
    kind="view", linear=True,
    complex=True,
)


def _is_basic(idx: tuple) -> bool:
    """Basic indexing (ints, slices, None, ...) never selects an element twice."""
    return all(isinstance(i, (int, np.integer, slice, type(None), type(Ellipsis))) for i in idx)


def _front_axes(idx: tuple) -> int:
    """How many axes numpy puts in front when indexing with ``(:,) + idx``.

    When advanced (array) indices are separated by a slice, numpy moves their broadcast
    axes to the front, ahead of the batch axis; a batching rule moves them back.
    """
    adv = [k for k, i in enumerate(idx) if not isinstance(i, (slice, type(None), type(Ellipsis)))]
    if _is_basic(idx) or adv == list(range(adv[0], adv[-1] + 1)):
        return 0
    shapes = [(int(np.count_nonzero(idx[k])),) if np.asarray(idx[k]).dtype == bool
              else np.shape(idx[k]) for k in adv]  # a boolean mask gives one axis
    return len(np.broadcast_shapes(*shapes))


def _getitem_batch(args: list, batched: tuple, size: int, *, idx: tuple) -> Any:
    out = getitem(args[0], idx=(ALL,) + idx)
    k = _front_axes(idx)  # batch axis back to the front
    return transpose(out, axes=(k,) + tuple(range(k)) + tuple(range(k + 1, ndim(out)))) if k else out


def _getitem_add(buf: np.ndarray, y_bar: np.ndarray, *, idx: tuple) -> None:
    if _is_basic(idx):
        buf[idx] += y_bar
    else:
        np.add.at(buf, idx, y_bar)


getitem = Primitive(
    "getitem", lambda x, *, idx: x[idx],
    jvp=(lambda x_dot, y, x, *, idx: getitem(x_dot, idx=idx),),
    vjp=(lambda y_bar, y, x, *, idx: scatter_add(y_bar, idx=idx, shape=shape_of(x)),),
    saves=("",), batch=_getitem_batch,
    vjp_add=_getitem_add,  # x[a:b] used several times: add into one buffer, not n zero-arrays
    array_api=lambda xp, x, *, idx: x[idx],
    library=LibraryCall("{0}[{idx}]"),
    kind="view", linear=True,
    complex=True,
)


def _scatter_add(v: Any, *, idx: tuple, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape, dtype=np.result_type(v))
    if _is_basic(idx):
        out[idx] = v
    else:
        np.add.at(out, idx, v)
    return out


def _scatter_batch(args: list, batched: tuple, size: int, *, idx: tuple,
                   shape: tuple[int, ...]) -> Any:
    v, k = args[0], _front_axes(idx)
    if k:  # numpy's indexing expects the advanced-index axes in front of the batch axis
        v = transpose(v, axes=tuple(range(1, k + 1)) + (0,) + tuple(range(k + 1, ndim(v))))
    return scatter_add(v, idx=(ALL,) + idx, shape=(size,) + shape)


scatter_add = Primitive(
    "scatter_add", _scatter_add,
    jvp=(lambda v_dot, y, v, *, idx, shape: scatter_add(v_dot, idx=idx, shape=shape),),
    vjp=(lambda y_bar, y, v, *, idx, shape: getitem(y_bar, idx=idx),),
    saves=("",), batch=_scatter_batch,
    linear=True, sparsity=patterns.scatter,
    complex=True,
)


def _concat_vjp(i: int, y_bar: Any, y: Any, *xs: Any, axis: int) -> Any:
    start = sum(shape_of(x)[axis] for x in xs[:i])
    return getitem(y_bar, idx=(Ellipsis, slice(start, start + shape_of(xs[i])[axis]))
                   + (ALL,) * (-axis - 1))


concatenate = Primitive(  # axis counted from the end: a leading batch axis leaves it as is
    "concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
    jvp_joint=lambda x_dots, y, *xs, axis: concatenate(*x_dots, axis=axis),
    vjp=Each(_concat_vjp), saves=("",),
    array_api=lambda xp, *xs, axis: xp.concat(list(xs), axis=axis),
    linear=True, sparsity=patterns.selecting,
    complex=True,
)
