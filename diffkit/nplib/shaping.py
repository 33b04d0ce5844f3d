"""Shaping and rearranging: stacking and splitting, flips, rolls, tiles, repeats, pads,
diagonals, triangles, sorting and taking entries.

Everything here moves entries without arithmetic, so it is written with the structural
primitives (reshape, transpose, indexing, concatenate, broadcast_to, where): each
derivative is exact and comes from those primitives' rules. Sorting and partitioning
pick their order from the values, then gather (the derivative follows the entries).

>>> flip(np.array([1.0, 2.0, 3.0]))
array([3., 2., 1.])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import builtins

import numpy as np

from .. import primitives as _p
from ..core import Box, DiffkitError, bind, ndim, primal, shape
from .byvalue import flat_axis, per_example
from .base import _axes, array, broadcast_to, concatenate, expand_dims, getitem, reshape
from .base import sum, transpose, where  # noqa: A004

ALL = slice(None)


def _axis(x: Any, axis: int) -> int:
    """``axis`` as a non-negative int, checked against ``x``."""
    return _axes(x, axis)[0] + ndim(x)


def _along(x: Any, axis: int, idx: Any) -> tuple:
    """The index that applies ``idx`` along ``axis`` of ``x``."""
    return (ALL,) * _axis(x, axis) + (idx,)


# --------------------------------------------------------------------------- shapes


def squeeze(x: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Remove axes of length one (all of them, or those in ``axis``)."""
    s = shape(x)
    drop = [a + len(s) for a in _axes(x, axis)] if axis is not None else \
        [i for i, n in enumerate(s) if n == 1]
    if [a for a in drop if s[a] != 1]:  # (this module's any is numpy's)
        raise DiffkitError("squeeze: cannot remove an axis whose length is not one")
    return reshape(x, tuple(n for i, n in enumerate(s) if i not in drop))


def atleast_1d(x: Any) -> Any:
    return reshape(x, (1,)) if ndim(x) == 0 else x


def atleast_2d(x: Any) -> Any:
    return reshape(x, (1,) * (2 - ndim(x)) + shape(x)) if ndim(x) < 2 else x


def atleast_3d(x: Any) -> Any:
    """As numpy: a vector (n,) becomes (1, n, 1), a matrix (m, n) becomes (m, n, 1)."""
    if ndim(x) >= 3:
        return x
    s = {0: (1, 1, 1), 1: (1,) + shape(x) + (1,), 2: shape(x) + (1,)}[ndim(x)]
    return reshape(x, s)


def swapaxes(x: Any, axis1: int, axis2: int) -> Any:
    axes = list(range(ndim(x)))
    a, b = _axis(x, axis1), _axis(x, axis2)
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(x, axes)


def moveaxis(x: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    src, dst = [_axis(x, a) for a in src], [_axis(x, a) for a in dst]
    order = [a for a in range(ndim(x)) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def rollaxis(x: Any, axis: int, start: int = 0) -> Any:
    a = _axis(x, axis)
    start = start + ndim(x) if start < 0 else start
    return moveaxis(x, a, start - 1 if start > a else start)


# --------------------------------------------------------------------------- joining, splitting


def hstack(xs: Sequence[Any]) -> Any:
    xs = [atleast_1d(x) for x in xs]
    return concatenate(xs, axis=0 if ndim(xs[0]) == 1 else 1)


def vstack(xs: Sequence[Any]) -> Any:
    return concatenate([atleast_2d(x) for x in xs], axis=0)


row_stack = vstack


def dstack(xs: Sequence[Any]) -> Any:
    return concatenate([atleast_3d(x) for x in xs], axis=2)


def column_stack(xs: Sequence[Any]) -> Any:
    return concatenate([reshape(x, (-1, 1)) if ndim(x) < 2 else x for x in xs], axis=1)


def append(x: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` after ``x`` (flattened, or along ``axis``); either may be a (nested) list
    holding values being differentiated, as numpy's array_like.

    >>> append([[1.0, 2.0]], [[3.0, 4.0]], axis=0).shape
    (2, 2)
    """
    x, values = array(x), array(values)
    if axis is None:
        return concatenate([reshape(x, -1), reshape(values, -1)])
    return concatenate([x, values], axis=axis)


def array_split(x: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Any]:
    """Split into pieces along ``axis``: n nearly equal ones, or at the given indices."""
    n = shape(x)[_axis(x, axis)]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise DiffkitError("split: the number of sections must be positive")
        sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
        cuts = list(np.cumsum(sizes)[:-1])
    else:
        cuts = list(indices_or_sections)
    bounds = zip([0] + cuts, cuts + [n])
    return [getitem(x, _along(x, axis, slice(a, b))) for a, b in bounds]


def split(x: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Any]:
    """As :func:`array_split`, but n sections must divide the axis evenly (as numpy)."""
    if isinstance(indices_or_sections, (int, np.integer)) and \
            shape(x)[_axis(x, axis)] % indices_or_sections:
        raise DiffkitError("split: the array does not divide into equal sections; "
                           "use array_split")
    return array_split(x, indices_or_sections, axis)


def hsplit(x: Any, sections: int | Sequence[int]) -> list[Any]:
    return split(x, sections, axis=1 if ndim(x) > 1 else 0)


def vsplit(x: Any, sections: int | Sequence[int]) -> list[Any]:
    return split(x, sections, axis=0)


def dsplit(x: Any, sections: int | Sequence[int]) -> list[Any]:
    return split(x, sections, axis=2)


# --------------------------------------------------------------------------- rearranging


def flip(x: Any, axis: int | Sequence[int] | None = None) -> Any:
    """Reverse the order of entries along ``axis`` (all axes by default; a 0-d value is
    its own reverse)."""
    if ndim(x) == 0 and axis is None:
        return x if isinstance(x, Box) else np.asarray(x)
    axes = {a + ndim(x) for a in _axes(x, axis)}
    return getitem(x, tuple(slice(None, None, -1) if a in axes else ALL for a in range(ndim(x))))


def fliplr(x: Any) -> Any:
    return flip(x, 1)


def flipud(x: Any) -> Any:
    return flip(x, 0)


def rot90(x: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    k %= 4
    a, b = axes
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a), b)
    return swapaxes(flip(x, b), a, b) if k == 1 else flip(swapaxes(x, a, b), b)


def roll(x: Any, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Any:
    """Shift entries cyclically by ``shift`` along ``axis`` (the flattened array when None)."""
    if axis is None:
        return reshape(roll(reshape(x, -1), shift, 0), shape(x))
    shifts = [shift] if isinstance(shift, (int, np.integer)) else list(shift)
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    if len(axes) != len(shifts):
        shifts = shifts * len(axes) if len(shifts) == 1 else shifts
    for s, a in zip(shifts, axes):
        n = shape(x)[_axis(x, a)]
        s = int(s) % n if n else 0
        if s:
            x = concatenate([getitem(x, _along(x, a, slice(n - s, None))),
                             getitem(x, _along(x, a, slice(0, n - s)))], axis=a)
    return x


def _pairs(pairs: Any) -> tuple[int, ...]:
    return tuple(int(v) for pair in pairs for v in pair)


def tile(x: Any, reps: int | Sequence[int]) -> Any:
    """Repeat the whole array ``reps`` times along each axis."""
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    d = builtins.max(len(reps), ndim(x))
    reps = (1,) * (d - len(reps)) + reps
    s = (1,) * (d - ndim(x)) + shape(x)
    spread = broadcast_to(reshape(x, _pairs((1, n) for n in s)), _pairs(zip(reps, s)))
    return reshape(spread, tuple(r * n for r, n in zip(reps, s)))


def repeat(x: Any, repeats: int | Sequence[int], axis: int | None = None) -> Any:
    """Repeat each entry ``repeats`` times along ``axis`` (the flattened array when None)."""
    if axis is None:
        x, axis = reshape(x, -1), 0
    a = _axis(x, axis)
    s = shape(x)
    if isinstance(repeats, (int, np.integer)):  # broadcast a new axis after ``a``
        spread = broadcast_to(expand_dims(x, a + 1), s[:a + 1] + (int(repeats),) + s[a + 1:])
        return reshape(spread, s[:a] + (s[a] * int(repeats),) + s[a + 1:])
    return getitem(x, _along(x, a, np.repeat(np.arange(s[a]), repeats)))


def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: float = 0.0) -> Any:
    """Pad with a constant (the only mode supported)."""
    if mode != "constant":
        raise DiffkitError(f"pad: mode {mode!r} is not supported; use mode='constant'")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (ndim(x), 2))
    out_shape = tuple(int(n + a + b) for n, (a, b) in zip(shape(x), widths))
    idx = tuple(slice(int(a), int(a) + n) for n, (a, _) in zip(shape(x), widths))
    inner = bind(_p.scatter_add, x, idx=idx, shape=out_shape)
    if constant_values == 0:
        return inner
    border = np.full(out_shape, float(constant_values))
    border[idx] = 0.0
    return inner + border


# --------------------------------------------------------------------------- diagonals, triangles


def diagonal(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The diagonal of the (axis1, axis2) planes, as numpy: that axis moves to the end."""
    x = moveaxis(x, (axis1, axis2), (-2, -1))
    n, m = shape(x)[-2:]
    rows = np.arange(builtins.max(0, -offset), builtins.max(0, builtins.min(n, m - offset)))
    return getitem(x, (Ellipsis, rows, rows + offset))


def trace(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return sum(diagonal(x, offset, axis1, axis2), axis=-1)


def diag(v: Any, k: int = 0) -> Any:
    """The k-th diagonal of a matrix, or the matrix with a vector on its k-th diagonal."""
    if ndim(v) == 2:
        return diagonal(v, k)
    if ndim(v) != 1:
        raise DiffkitError("diag: the input must be 1-d or 2-d")
    n = shape(v)[0] + builtins.abs(k)
    rows = np.arange(shape(v)[0]) + builtins.max(0, -k)
    return bind(_p.scatter_add, v, idx=(rows, rows + k), shape=(n, n))


def _triangle(x: Any, keep: np.ndarray) -> Any:
    return where(np.broadcast_to(keep, shape(x)), x, 0.0)


def tril(x: Any, k: int = 0) -> Any:
    n, m = shape(x)[-2:]
    return _triangle(x, np.tri(n, m, k, dtype=bool))


def triu(x: Any, k: int = 0) -> Any:
    n, m = shape(x)[-2:]
    return _triangle(x, ~np.tri(n, m, k - 1, dtype=bool))


# --------------------------------------------------------------------------- sorting, taking


def take_along_axis(x: Any, indices: Any, axis: int | None) -> Any:
    """Entries of ``x`` at ``indices`` along ``axis`` (numpy's take_along_axis)."""
    if axis is None:
        return getitem(reshape(x, -1), (_index(indices),))
    a = _axis(x, axis)
    grids = np.ogrid[tuple(slice(n) for n in shape(indices))]
    return getitem(x, tuple(_index(indices) if d == a else grids[d] for d in range(ndim(x))))


def _index(indices: Any) -> Any:
    """An index array: its plain integers, or the box of one index per example (vmap)."""
    return indices if isinstance(indices, Box) and indices.batched else np.asarray(primal(indices))


def sort(x: Any, axis: int | None = -1, kind: Any = None, order: Any = None) -> Any:
    """Sorted values; the derivative follows each entry to its place."""
    if axis is None:
        x, axis = reshape(x, -1), -1
    return take_along_axis(x, argsort(x, axis=axis, kind="stable"), axis)


def argsort(x: Any, axis: int | None = -1, kind: Any = None, order: Any = None) -> Any:
    def decide(v: np.ndarray, k: int) -> np.ndarray:
        return np.argsort(*flat_axis(v, k, axis, ndim(x)), kind=kind)
    return per_example(x, decide, "argsort")


def _arg(pick: Any, what: str, x: Any, axis: int | None, keepdims: bool, out: Any = None) -> Any:
    if out is not None:
        raise DiffkitError(f"{what}: out= is not supported; use the value it returns")

    def decide(v: np.ndarray, k: int) -> np.ndarray:
        out = pick(*flat_axis(v, k, axis, ndim(x)), keepdims=keepdims)
        return out.reshape(out.shape[:k] + (1,) * ndim(x)) if keepdims and axis is None else out
    return per_example(x, decide, what)


def argmax(x: Any, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Any:
    return _arg(np.argmax, "argmax", x, axis, keepdims, out)


def argmin(x: Any, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Any:
    return _arg(np.argmin, "argmin", x, axis, keepdims, out)


def nonzero(x: Any) -> tuple[np.ndarray, ...]:
    """Indices of the non-zero entries (integers: no derivative), one array per axis."""
    def decide(v: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
        if k:
            raise DiffkitError("nonzero under vmap: each example would have its own number of "
                               "entries; select with dnp.where(x != 0, x, 0) instead")
        return np.nonzero(v)
    return per_example(x, decide, "nonzero")


def _logical(test: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    def decide(v: np.ndarray, k: int) -> Any:
        n = ndim(x)
        axes = tuple(range(k, k + n)) if axis is None else tuple(
            a % n + k for a in ((axis,) if isinstance(axis, (int, np.integer)) else axis))
        return test(v, axis=axes, keepdims=keepdims)
    return per_example(x, decide, test.__name__)


def any(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Whether any entry is true (a boolean: no derivative), as numpy's ``any``.

    >>> bool(any(np.array([0.0, 2.0]) > 1.0))
    True
    """
    return _logical(np.any, x, axis, keepdims)


def all(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Whether every entry is true (a boolean: no derivative), as numpy's ``all``."""
    return _logical(np.all, x, axis, keepdims)


def partition(x: Any, kth: int | Sequence[int], axis: int | None = -1) -> Any:
    """numpy's partition (the k-th entry in its sorted place, smaller before, larger after)."""
    if axis is None:
        x, axis = reshape(x, -1), -1
    def decide(v: np.ndarray, k: int) -> np.ndarray:
        values, along = flat_axis(v, k, axis, ndim(x))
        return np.argpartition(values, kth, axis=along)
    return take_along_axis(x, per_example(x, decide, "partition"), axis)


def take(x: Any, indices: Any, axis: int | None = None) -> Any:
    """Entries at ``indices`` along ``axis`` (of the flattened array when None)."""
    if axis is None:
        return getitem(reshape(x, -1), (_index(indices),))
    return getitem(x, _along(x, axis, _index(indices)))


def full(shape_: Any, fill_value: Any, dtype: Any = None) -> Any:
    """An array of ``fill_value`` (a traced value is broadcast, keeping its derivative)."""
    s = (shape_,) if isinstance(shape_, (int, np.integer)) else tuple(shape_)
    if isinstance(fill_value, np.ndarray) or np.isscalar(fill_value):
        return np.full(s, fill_value, dtype=dtype or float)
    return broadcast_to(fill_value, s)


def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Any:
    return full(shape(x), fill_value, dtype)


def copy(x: Any) -> Any:
    """A copy; traced values are never changed in place, so they are returned as they are."""
    return np.array(x, dtype=float) if isinstance(x, (list, tuple, np.ndarray)) else x


__all__ = ["squeeze", "atleast_1d", "atleast_2d", "atleast_3d", "swapaxes", "moveaxis",
           "rollaxis", "hstack", "vstack", "row_stack", "dstack", "column_stack", "append",
           "array_split", "split", "hsplit", "vsplit", "dsplit", "flip", "fliplr", "flipud",
           "rot90", "roll", "tile", "repeat", "pad", "diagonal", "trace", "diag", "tril", "triu",
           "take_along_axis", "sort", "argsort", "argmax", "argmin", "nonzero", "any", "all",
           "partition", "take", "full", "full_like", "copy"]
