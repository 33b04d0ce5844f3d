"""The rest of ``numpy.linalg``, written with the functions of :mod:`diffkit.nplib.linalg`:
lstsq, cond, matrix_rank, cross, tensorsolve, tensorinv and numpy 2's array-API names
(vector_norm, matrix_norm, matrix_transpose, vecdot, outer, diagonal, trace).

Their derivatives are those of the compositions: ``lstsq`` is ``pinv(a) @ b`` (numpy's
``rcond`` cut; the derivative holds the rank fixed), ``cond`` a ratio of singular values
(or of norms of ``a`` and ``inv(a)``), ``tensorsolve``/``tensorinv`` are ``solve``/``inv``
of the matrix the axes flatten to. ``matrix_rank`` is an integer (no derivative).

>>> import diffkit as dk
>>> dk.grad(lambda a: lstsq(a, np.array([1.0, 2.0, 2.0]))[0].sum())(np.eye(3)[:, :2]).round(6)
array([[-1., -2.],
       [-1., -2.],
       [ 2.,  2.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, NotApplicable, ndim, primal, shape
from .base import getitem, matmul, reshape, stack, sum, transpose  # noqa: A004
from .math import conj
from .shaping import diagonal as _diagonal, moveaxis
from .linalg import NUMPY2, _matrix_norm, _vector_norm, inv, norm, pinv, solve, svdvals


def matrix_transpose(x: Any) -> Any:
    """Swap the last two axes (numpy 2's ``matrix_transpose``, the array API's ``.mT``)."""
    if ndim(x) < 2:
        raise DiffkitError(f"matrix_transpose needs at least 2 dimensions, got shape {shape(x)}")
    return transpose(x, tuple(range(ndim(x) - 2)) + (ndim(x) - 1, ndim(x) - 2))


def lstsq(a: Any, b: Any, rcond: float | None = None) -> tuple[Any, Any, int, Any]:
    """``(x, residuals, rank, s)`` minimising ``|a x - b|``, as numpy: ``x = pinv(a) b`` with
    singular values below ``rcond * max(s)`` cut (default ``eps * max(m, n)``); residuals
    are the squared column norms of ``b - a x`` when ``a`` is tall and of full rank,
    else empty; ``rank`` is an int, ``s`` the singular values."""
    if ndim(a) != 2 or ndim(b) not in (1, 2):
        raise DiffkitError(f"lstsq needs a matrix a and a vector or matrix b, got shapes "
                           f"{shape(a)} and {shape(b)}")
    m, n = shape(a)
    cut = np.finfo(float).eps * max(m, n) if rcond is None else float(rcond)
    x = matmul(pinv(a, rcond=cut), b)
    rank = int(np.linalg.matrix_rank(_plain(a), tol=cut * np.linalg.norm(_plain(a), 2)))
    if rank == n and m > n:
        r = b - matmul(a, x)
        residuals = reshape(sum(r * r, 0), (1,)) if ndim(b) == 1 else sum(r * r, 0)
    else:
        residuals = np.zeros(0)
    return x, residuals, rank, svdvals(a)


def _plain(x: Any) -> np.ndarray:
    """The primal value as a plain array (for integer answers such as a rank)."""
    value = primal(x)
    if getattr(value, "abstract", False):
        raise NotApplicable("a rank depends on the values, which a graph traced once for all "
                            "values does not have; use an eager backend (forward or reverse)")
    return np.asarray(value)


def matrix_rank(a: Any, tol: float | None = None, hermitian: bool = False, *,
                rtol: float | None = None) -> Any:
    """The number of singular values above the cut, as numpy (an integer: no derivative)."""
    return np.linalg.matrix_rank(_plain(a), tol=tol, hermitian=hermitian, rtol=rtol)


def cond(x: Any, p: Any = None) -> Any:
    """The condition number ``|x| |inv(x)|`` in the norm ``p`` (numpy's orders); orders
    None/2/-2 are ratios of singular values (distinct ones, for the derivative)."""
    if ndim(x) < 2:
        raise DiffkitError(f"cond needs matrices (..., m, n), got shape {shape(x)}")
    if p in (None, 2, -2):
        s = svdvals(x)
        ratio = getitem(s, (Ellipsis, 0)) / getitem(s, (Ellipsis, -1))
        return ratio if p != -2 else 1.0 / ratio
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


def vector_norm(x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    """numpy 2's ``linalg.vector_norm``: a vector norm over ``axis`` (all entries when
    None, whatever the dimension); orders as :func:`norm`, and 0 (the count of non-zeros)."""
    if axis is None:
        out = vector_norm(reshape(x, (-1,)), 0, False, ord)
        return reshape(out, (1,) * ndim(x)) if keepdims else out
    if ord == 0:
        return np.sum(_plain(x) != 0, axis=axis, keepdims=keepdims).astype(float)
    return _vector_norm(x, ord, axis, keepdims)


def matrix_norm(x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    """numpy 2's ``linalg.matrix_norm``: a matrix norm of the last two axes."""
    if ndim(x) < 2:
        raise DiffkitError(f"matrix_norm needs matrices (..., m, n), got shape {shape(x)}")
    return _matrix_norm(x, ord, (ndim(x) - 2, ndim(x) - 1), keepdims)


def vecdot(x1: Any, x2: Any, axis: int = -1) -> Any:
    """``sum(conj(x1) * x2, axis)``, broadcasting the other axes (numpy 2)."""
    return sum(conj(x1) * x2, axis)


def outer(x1: Any, x2: Any) -> Any:
    """The outer product of two vectors (``numpy.linalg.outer``)."""
    if ndim(x1) != 1 or ndim(x2) != 1:
        raise DiffkitError(f"linalg.outer needs two vectors, got shapes {shape(x1)} and {shape(x2)}")
    return reshape(x1, (-1, 1)) * reshape(x2, (1, -1))


def diagonal(x: Any, offset: int = 0) -> Any:
    """The diagonal of the last two axes (``numpy.linalg.diagonal``)."""
    return _diagonal(x, offset, -2, -1)


def trace(x: Any, offset: int = 0) -> Any:
    """The trace of the last two axes (``numpy.linalg.trace``)."""
    return sum(diagonal(x, offset), -1)


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    """The cross product of 3-vectors (a 2-vector has z = 0; two 2-vectors give the z
    component alone), along the given axes, broadcasting the others (numpy's rules)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    da, db = shape(a)[-1], shape(b)[-1]
    if da not in (2, 3) or db not in (2, 3):
        raise DiffkitError(f"cross: vectors must have 2 or 3 components, got {da} and {db}")
    ax, ay = getitem(a, (Ellipsis, 0)), getitem(a, (Ellipsis, 1))
    bx, by = getitem(b, (Ellipsis, 0)), getitem(b, (Ellipsis, 1))
    z = ax * by - ay * bx
    if da == db == 2:
        return z
    az = getitem(a, (Ellipsis, 2)) if da == 3 else 0.0
    bz = getitem(b, (Ellipsis, 2)) if db == 3 else 0.0
    c = stack([ay * bz - az * by, az * bx - ax * bz, z], -1)
    return moveaxis(c, -1, axisc)


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """``x`` with ``tensordot(a, x, x.ndim) == b``: ``solve`` of the flattened system."""
    if axes is not None:
        axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
        a = moveaxis(a, axes, tuple(range(ndim(a) - len(axes), ndim(a))))
    rows = int(np.prod(shape(b)))
    rest = shape(a)[ndim(b):]
    if int(np.prod(rest)) != rows:
        raise DiffkitError(f"tensorsolve: a's trailing axes {rest} must hold as many entries as "
                           f"b {shape(b)}")
    return reshape(solve(reshape(a, (rows, rows)), reshape(b, (rows,))), rest)


def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse for ``tensordot(.., ind)``: ``inv`` of the flattened matrix, reshaped."""
    head, tail = shape(a)[:ind], shape(a)[ind:]
    rows = int(np.prod(head))
    if ind <= 0 or rows != int(np.prod(tail)):
        raise DiffkitError(f"tensorinv: the first {ind} axes of a {shape(a)} must hold as many "
                           "entries as the rest")
    return reshape(inv(reshape(a, (rows, rows))), tail + head)


__all__ = list(NUMPY2)
