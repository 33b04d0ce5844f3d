"""Rearranging entries: delete, insert, resize, compress, extract, choose, trim_zeros,
diagflat, ediff1d, block, unstack, apply_along_axis, apply_over_axes (and astype,
positive), written with ``take`` and ``concatenate``.

Where numpy decides *which* entries go where (``delete``, ``insert``, ``resize`` ...), the
decision is numpy's own, run on arrays of labels (the entries' flat positions); the labels
then gather the values being differentiated, so each entry's derivative follows it.

>>> import diffkit as dk
>>> dk.grad(lambda x: insert(x, 1, x[0] * 3.0).sum())(np.array([1.0, 2.0]))
array([4., 1.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import Box, DiffkitError, ndim, primal, shape
from .base import array, concatenate, expand_dims, getitem, reshape, stack, where
from .shaping import diag, moveaxis, take
from .stats import diff


def _gather_by_labels(sources: Sequence[Any], labels: np.ndarray) -> Any:
    """Entries of the flattened, joined ``sources`` at ``labels`` (a flat position each)."""
    flat = concatenate([reshape(s, (-1,)) for s in sources]) if len(sources) > 1 \
        else reshape(sources[0], (-1,))
    return reshape(take(flat, labels.ravel()), labels.shape)


def delete(arr: Any, obj: Any, axis: int | None = None) -> Any:
    """``arr`` without the entries ``obj`` along ``axis`` (flattened when None)."""
    labels = np.arange(int(np.prod(shape(arr)))).reshape(shape(arr))
    return _gather_by_labels([arr], np.delete(labels, obj, axis))


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """``arr`` with ``values`` inserted before the indices ``obj`` along ``axis``."""
    n = int(np.prod(shape(arr)))
    own = np.arange(n).reshape(shape(arr))
    theirs = -1 - np.arange(int(np.prod(shape(values)))).reshape(shape(values))
    labels = np.insert(own, obj, theirs, axis)  # numpy broadcasts the labels as the values
    return _gather_by_labels([arr, array(values) + 0.0], np.where(labels >= 0, labels, n - 1 - labels))


def resize(a: Any, new_shape: Any) -> Any:
    """``a`` repeated (or cut) to ``new_shape``, as ``np.resize``."""
    labels = np.resize(np.arange(int(np.prod(shape(a)))), new_shape)
    return _gather_by_labels([a], labels)


def compress(condition: Any, a: Any, axis: int | None = None) -> Any:
    """The slices of ``a`` along ``axis`` where ``condition`` holds."""
    keep = np.nonzero(np.asarray(primal(condition), dtype=bool))[0]
    return take(a, keep, axis)


def extract(condition: Any, arr: Any) -> Any:
    """The entries of ``arr`` where ``condition`` holds (flattened)."""
    keep = np.nonzero(np.ravel(np.asarray(primal(condition), dtype=bool)))[0]
    return take(reshape(arr, (-1,)), keep)


def choose(a: Any, choices: Sequence[Any], mode: str = "raise") -> Any:
    """``choices[a]`` entry by entry (``a`` integers)."""
    index = np.asarray(primal(a))
    if mode != "raise" or index.min(initial=0) < 0 or index.max(initial=0) >= len(choices):
        raise DiffkitError("choose: indices must lie in [0, len(choices)); modes other than "
                           "'raise' are not supported")
    out = choices[0] + 0.0 * choices[0]
    for i, c in enumerate(choices[1:], 1):
        out = where(index == i, c, out)
    return out


def trim_zeros(filt: Any, trim: str = "fb") -> Any:
    """``filt`` (a vector) without its leading ('f') and trailing ('b') zeros."""
    nonzero = np.nonzero(np.asarray(primal(filt)))[0]
    if nonzero.size == 0:
        return getitem(filt, slice(0, 0))
    first = nonzero[0] if "f" in trim.lower() else 0
    last = nonzero[-1] + 1 if "b" in trim.lower() else shape(filt)[0]
    return getitem(filt, slice(int(first), int(last)))


def diagflat(v: Any, k: int = 0) -> Any:
    """A matrix with the flattened ``v`` on its ``k``-th diagonal."""
    return diag(reshape(v, (-1,)), k)


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences of the flattened array, with values before and after."""
    parts = [diff(reshape(ary, (-1,)))]
    if to_begin is not None:
        parts.insert(0, reshape(array(to_begin) + 0.0, (-1,)))
    if to_end is not None:
        parts.append(reshape(array(to_end) + 0.0, (-1,)))
    return concatenate(parts) if len(parts) > 1 else parts[0]


def _depth(x: Any) -> int:
    return 1 + _depth(x[0]) if isinstance(x, list) else 0


def _leaves(x: Any) -> list[Any]:
    return [leaf for e in x for leaf in _leaves(e)] if isinstance(x, list) else [x]


def block(arrays: Any) -> Any:
    """Assemble an array from nested lists of blocks (the innermost list joins along the
    last axis, the next along the one before ...)."""
    depth = _depth(arrays)
    rank = max(depth, *(ndim(leaf) for leaf in _leaves(arrays)))

    def build(x: Any, level: int) -> Any:
        if not isinstance(x, list):
            return reshape(x, (1,) * (rank - ndim(x)) + shape(x))
        return concatenate([build(e, level + 1) for e in x], axis=level - depth)

    return build(arrays, 0)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices along ``axis`` (numpy 2.1)."""
    moved = moveaxis(x, axis, 0)
    return tuple(getitem(moved, i) for i in range(shape(moved)[0]))


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any,
                     **kwargs: Any) -> Any:
    """``func1d`` applied to each 1-d slice along ``axis``; its result's axes take that
    axis's place."""
    axis = axis % ndim(arr)
    moved = moveaxis(arr, axis, -1)
    lead = shape(moved)[:-1]
    outs = [func1d(getitem(moved, idx), *args, **kwargs) for idx in np.ndindex(*lead)]
    result = reshape(stack(outs), lead + shape(outs[0]))
    k = ndim(outs[0])
    return moveaxis(result, tuple(range(len(lead), len(lead) + k)),
                    tuple(range(axis, axis + k))) if k else result


def apply_over_axes(func: Callable[[Any, int], Any], a: Any, axes: Sequence[int]) -> Any:
    """``func(a, axis)`` for each axis in turn, keeping the dimension (as numpy)."""
    for axis in np.atleast_1d(axes):
        out = func(a, int(axis))
        a = out if ndim(out) == ndim(a) else expand_dims(out, int(axis))
    return a


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """``x`` as ``dtype``: float dtypes keep the derivative; others are a clear error for a
    value being differentiated (the derivative would be dropped)."""
    if not isinstance(x, Box):
        return np.asarray(x).astype(dtype)
    if not np.issubdtype(np.dtype(dtype), np.floating):
        raise DiffkitError(f"astype({np.dtype(dtype).name}) of a value being differentiated "
                           "would drop its derivative; only float dtypes are supported")
    return x


def positive(x: Any) -> Any:
    """``+x``."""
    return x


__all__ = ["delete", "insert", "resize", "compress", "extract", "choose", "trim_zeros",
           "diagflat", "ediff1d", "block", "unstack", "apply_along_axis", "apply_over_axes",
           "astype", "positive"]
