"""``diffkit.numpy.linalg``: inv, det, slogdet, solve, cholesky, eigh, eigvalsh, svd,
svdvals, qr, norm, pinv, matrix_power, multi_dot.

Conditions, as for any derivative of these functions: ``inv``, ``det``'s and ``slogdet``'s
derivatives and ``solve`` need invertible matrices; ``cholesky`` a symmetric positive
definite one; ``eigh`` a symmetric one with distinct eigenvalues (eigenvectors are
defined up to sign; the derivative is that of the vectors LAPACK returns); ``pinv`` a
matrix of full rank. ``cholesky`` and ``eigh`` read the lower triangle only, as numpy.
``svd`` needs distinct, non-zero singular values and ``full_matrices=False`` (its
singular vectors, like eigenvectors, are defined up to sign); ``qr`` is the reduced
factorization of a square or tall matrix of full rank. Complex matrices are differentiated
as JAX does (Hermitian for ``eigh`` and ``cholesky``; eigen- and singular vectors move
with JAX's phase convention; see docs/complex.md). Matrix norms of order 2, -2 and
'nuc' go through the SVD. ``eig``/``eigvals`` of a general (real or complex) matrix:
complex values always, as JAX's; distinct eigenvalues for the derivative.

The rest of ``numpy.linalg`` is written with those functions: lstsq, cond, matrix_rank,
cross, tensorsolve, tensorinv and numpy 2's array-API names (vector_norm, matrix_norm,
matrix_transpose, vecdot, outer, diagonal, trace). Their derivatives are those of the
compositions: ``lstsq`` is ``pinv(a) @ b`` (numpy's ``rcond`` cut; the derivative holds the
rank fixed), ``cond`` a ratio of singular values (or of norms of ``a`` and ``inv(a)``),
``tensorsolve``/``tensorinv`` are ``solve``/``inv`` of the matrix the axes flatten to. ``matrix_rank`` is an integer (no derivative).

>>> import diffkit as dk
>>> dk.grad(det)(np.array([[2.0, 1.0], [1.0, 3.0]]))  # det(A) inv(A)^T
array([[ 3., -1.],
       [-1.,  2.]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import primitives as _p
from ..core import Box, DiffkitError, NotApplicable, bind, namespace, ndim, primal, shape
from .base import abs, getitem, matmul, max, min, reshape, sqrt, stack, sum, transpose  # noqa: A004
from .contract import tensordot  # noqa: F401
from .math import conj
from .shaping import diagonal as _diagonal, moveaxis


def _square(a: Any, name: str) -> None:
    if ndim(a) < 2 or shape(a)[-1] != shape(a)[-2]:
        raise DiffkitError(f"linalg.{name} needs square matrices (..., n, n), got shape {shape(a)}")


def inv(a: Any) -> Any:
    _square(a, "inv")
    return bind(_p.inv, a)


def det(a: Any) -> Any:
    _square(a, "det")
    return bind(_p.det, a)


def slogdet(a: Any) -> tuple[np.ndarray, Any]:
    """``(sign, log|det a|)``; the sign is a constant."""
    _square(a, "slogdet")
    value = primal(a)
    if isinstance(value, Box):  # a graph being traced: the sign is an equation too
        return bind(_p.sign, bind(_p.det, a)), bind(_p.logabsdet, a)
    return np.linalg.slogdet(value)[0], bind(_p.logabsdet, a)


def solve(a: Any, b: Any) -> Any:
    """The solution of ``a x = b``; ``b`` a vector (n,) or matrices (..., n, k), as numpy 2."""
    _square(a, "solve")
    if ndim(b) == 1:
        return reshape(bind(_p.solve, a, reshape(b, (-1, 1))), shape(a)[:-2] + shape(b))
    return bind(_p.solve, a, b)


def cholesky(a: Any) -> Any:
    _square(a, "cholesky")
    return bind(_p.cholesky, a)


def eigh(a: Any, UPLO: str = "L") -> tuple[Any, Any]:  # noqa: N803
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix (its lower triangle)."""
    _square(a, "eigh")
    if UPLO != "L":
        a = transpose(a, tuple(range(ndim(a) - 2)) + (ndim(a) - 1, ndim(a) - 2))
    packed = bind(_p.eigh, a)
    return _real(getitem(packed, (Ellipsis, 0, slice(None)))), \
        getitem(packed, (Ellipsis, slice(1, None), slice(None)))


def _real(v: Any) -> Any:
    """Eigenvalues and singular values of complex matrices: real, as numpy returns them."""
    return bind(_p.real, v) if _p.is_complex(v) else v


def eigvalsh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803
    return eigh(a, UPLO)[0]


def _packed(x: Any) -> bool:
    """Whether a factorization must go through its primitive (a value being differentiated,
    or another library's arrays), not straight to numpy."""
    return isinstance(x, Box) or namespace() is not None


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        hermitian: bool = False) -> Any:
    """``u, s, vh`` with ``a = u diag(s) vh`` (or ``s`` alone); the derivative needs
    ``full_matrices=False`` and distinct, non-zero singular values.

    >>> import diffkit as dk
    >>> dk.grad(lambda a: svd(a, compute_uv=False)[0])(np.diag([3.0, 1.0]))  # u_0 v_0^T
    array([[1., 0.],
           [0., 0.]])
    """
    if ndim(a) < 2:
        raise DiffkitError(f"linalg.svd needs matrices (..., m, n), got shape {shape(a)}")
    if not _packed(a):
        return np.linalg.svd(a, full_matrices, compute_uv, hermitian)
    m, n = shape(a)[-2:]
    if compute_uv and full_matrices and m != n:
        raise DiffkitError("linalg.svd: the derivative needs full_matrices=False (the extra "
                           "singular vectors of a non-square matrix are not unique)")
    packed = bind(_p.svd, a)
    s = _real(getitem(packed, (Ellipsis, m)))
    if not compute_uv:
        return s
    lead = tuple(range(ndim(a) - 2))
    u = transpose(getitem(packed, (Ellipsis, slice(0, m))), lead + (ndim(a) - 1, ndim(a) - 2))
    return u, s, getitem(packed, (Ellipsis, slice(m + 1, None)))


def svdvals(a: Any) -> Any:
    """The singular values, descending (numpy 2's ``linalg.svdvals``)."""
    return svd(a, compute_uv=False)


def qr(a: Any, mode: str = "reduced") -> Any:
    """``q, r`` with ``a = q r`` (mode 'reduced'), or ``r`` alone (mode 'r'), of a square
    or tall matrix (m >= n) of full rank."""
    if ndim(a) < 2:
        raise DiffkitError(f"linalg.qr needs matrices (..., m, n), got shape {shape(a)}")
    if not _packed(a):
        return np.linalg.qr(a, mode)
    m, n = shape(a)[-2:]
    if mode not in ("reduced", "r"):
        raise DiffkitError(f"linalg.qr: mode={mode!r} is not differentiated; use 'reduced' or 'r'")
    if m < n:
        raise DiffkitError(f"linalg.qr: the derivative needs a square or tall matrix (m >= n), "
                           f"got shape {shape(a)}; factor the transpose instead")
    packed = bind(_p.qr, a)
    r = getitem(packed, (Ellipsis, slice(m, None), slice(None)))
    return r if mode == "r" else (getitem(packed, (Ellipsis, slice(0, m), slice(None))), r)


def eig(a: Any) -> Any:
    """Eigenvalues and unit eigenvectors of a general square matrix, real or complex, as
    JAX's ``eig``: complex arrays always (numpy's are real when every eigenvalue is), the
    order and the vectors (largest entry real) LAPACK's. Differentiable where the
    eigenvalues are distinct; the eigenvectors' derivative is that of LAPACK's
    normalization (JAX's, ``enable_eigvec_derivs=True``).

    >>> w, v = eig(np.array([[0.0, -1.0], [1.0, 0.0]]))  # a rotation: eigenvalues ±i
    >>> w.tolist()
    [1j, -1j]
    """
    _square(a, "eig")
    packed = bind(_p.eig, a)
    return (getitem(packed, (Ellipsis, 0, slice(None))),
            getitem(packed, (Ellipsis, slice(1, None), slice(None))))


def eigvals(a: Any) -> Any:
    """The eigenvalues of :func:`eig` (complex always, as JAX's)."""
    return eig(a)[0]


def pinv(a: Any, rcond: float | None = None, hermitian: bool = False) -> Any:
    """Moore-Penrose inverse, numpy's (singular values below ``rcond`` times the largest are
    cut, so a rank-deficient matrix is handled); the derivative holds the rank fixed."""
    if ndim(a) < 2:
        raise DiffkitError(f"pinv: needs a matrix (or a stack of them), got shape {shape(a)}")
    return bind(_p.pinv, a, rcond=None if rcond is None else float(rcond))


def matrix_power(a: Any, n: int) -> Any:
    _square(a, "matrix_power")
    if n < 0:
        return matrix_power(inv(a), -n)
    out = None
    for _ in range(n):
        out = a if out is None else matmul(out, a)
    return np.broadcast_to(np.eye(shape(a)[-1]), shape(a)).copy() if out is None else out


def multi_dot(arrays: Sequence[Any]) -> Any:
    out = arrays[0]
    for a in arrays[1:]:
        out = matmul(out, a)
    return out


def norm(x: Any, ord: Any = None, axis: int | tuple[int, int] | None = None,  # noqa: A002
         keepdims: bool = False) -> Any:
    """Vector norms (ord None/2, 1, inf, -inf, p) and matrix norms (None/'fro', 1, inf, -1, -inf)."""
    if axis is None and (ord is None or ndim(x) == 1):
        axis = tuple(range(ndim(x))) if ord is None else 0
    if axis is None:
        axis = (0, 1) if ndim(x) == 2 else None
        if axis is None:
            raise DiffkitError("norm: give axis for an array of more than 2 dimensions")
    if isinstance(axis, (int, np.integer)) or len(axis) == 1 or ord is None and len(axis) != 2:
        return _vector_norm(x, ord, axis, keepdims)
    return _matrix_norm(x, ord, tuple(axis), keepdims)


def _squares(x: Any) -> Any:
    """|x|^2 entrywise (x * x for real x)."""
    return bind(_p.real, x * bind(_p.conj, x)) if _p.is_complex(x) else x * x


def _vector_norm(x: Any, ord: Any, axis: Any, keepdims: bool) -> Any:  # noqa: A002
    if ord is None or ord == 2:
        return sqrt(sum(_squares(x), axis, keepdims))
    if ord == 1:
        return sum(abs(x), axis, keepdims)
    if ord == np.inf:
        return max(abs(x), axis, keepdims)
    if ord == -np.inf:
        return min(abs(x), axis, keepdims)
    if isinstance(ord, (int, float)) and ord > 0:
        return sum(abs(x) ** ord, axis, keepdims) ** (1.0 / ord)
    raise DiffkitError(f"norm: vector norm order {ord!r} is not supported")


def _matrix_norm(x: Any, ord: Any, axis: tuple[int, int], keepdims: bool) -> Any:  # noqa: A002
    rows, cols = axis
    if ord in (None, "fro"):
        return sqrt(sum(_squares(x), axis, keepdims))
    if ord in (1, -1):  # max / min absolute column sum
        col = sum(abs(x), rows, keepdims=True)
        return (max if ord == 1 else min)(col, axis, keepdims)
    if ord in (np.inf, -np.inf):
        row = sum(abs(x), cols, keepdims=True)
        return (max if ord == np.inf else min)(row, axis, keepdims)
    if ord in (2, -2, "nuc"):  # through the singular values, of the axes moved last
        rest = tuple(a for a in range(ndim(x)) if a not in (rows % ndim(x), cols % ndim(x)))
        s = svdvals(transpose(x, rest + (rows % ndim(x), cols % ndim(x))))
        out = sum(s, -1) if ord == "nuc" else getitem(s, (Ellipsis, 0 if ord == 2 else -1))
        if keepdims:
            for a in sorted((rows % ndim(x), cols % ndim(x))):
                out = _expand(out, a)
        return out
    raise DiffkitError(f"norm: matrix norm order {ord!r} is not supported")


def _expand(x: Any, axis: int) -> Any:
    s = list(shape(x))
    s.insert(axis, 1)
    return reshape(x, tuple(s))


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
    cut = np.finfo(float).eps * (m if m > n else n) if rcond is None else float(rcond)
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


__all__ = ["inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "pinv",
           "matrix_power", "multi_dot", "norm", "svd", "svdvals", "qr", "eig", "eigvals",
           "lstsq", "cond", "matrix_rank", "cross", "tensorsolve", "tensorinv", "vector_norm",
           "matrix_norm", "matrix_transpose", "vecdot", "outer", "diagonal", "trace",
           "matmul", "tensordot"]  # (matmul and tensordot: numpy.linalg's, imported above)
