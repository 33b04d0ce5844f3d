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
from ..core import Box, DiffkitError, _namespace, bind, ndim, primal, shape
from .base import abs, getitem, matmul, max, min, reshape, sqrt, sum, transpose  # noqa: A004


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
    return isinstance(x, Box) or _namespace[0] is not None


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


__all__ = ["inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "pinv",
           "matrix_power", "multi_dot", "norm", "svd", "svdvals", "qr", "eig", "eigvals"]

from .contract import tensordot  # noqa: E402,F401

# numpy.linalg's rest, written with the functions above (diffkit.nplib.linalg_numpy2),
# looked up when first used: that module builds on this one
NUMPY2 = ["lstsq", "cond", "matrix_rank", "cross", "tensorsolve", "tensorinv", "vector_norm",
          "matrix_norm", "matrix_transpose", "vecdot", "outer", "diagonal", "trace"]
__all__ += [*NUMPY2, "matmul", "tensordot"]  # (matmul: numpy.linalg's, imported above)


def __getattr__(name: str) -> Any:
    if name in NUMPY2:
        from . import linalg_numpy2  # (deferred: that module builds on this one)

        return getattr(linalg_numpy2, name)
    raise AttributeError(f"module 'diffkit.numpy.linalg' has no attribute {name!r}")
