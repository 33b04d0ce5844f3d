"""``diffkit.scipy.linalg``: SciPy's names for the linear algebra of :mod:`diffkit.numpy.linalg`,
and the matrix functions ``expm``, ``expm_frechet``, ``sqrtm``, ``solve_sylvester`` and
``solve_triangular`` (needs SciPy), and ``solve_banded`` (dense, from SciPy's band storage).

* ``expm``: the Fréchet derivative by the block-triangular identity (every order).
* ``sqrtm``: the principal square root, SciPy's: real where it is real, complex for a
  negative eigenvalue or a complex matrix; its derivative solves ``s ds + ds s = da``
  (no eigenvalue 0).
* ``solve_triangular(a, b, lower=False, trans=0, unit_diagonal=False)``: reads one triangle
  of ``a``, as SciPy, so the derivative with respect to the other is zero (as JAX's).
* ``lstsq``: ``(x, residues, rank, s)`` as SciPy (residues a number for a vector ``b``).
* ``cholesky(a, lower=False)``: SciPy's upper factor by default.

>>> import diffkit as dk, numpy as np
>>> a = np.array([[2.0, 0.0], [1.0, 4.0]])
>>> dk.grad(lambda m: solve_triangular(m, np.ones(2), lower=True).sum())(a)
array([[-0.1875 ,  0.     ],
       [-0.125  , -0.03125]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, ndim, primal, shape
from ..nplib import linalg as _np_linalg
from ..nplib.base import concatenate, eye, getitem, reshape
from ..nplib.shaping import take
from ..nplib.linalg import det, inv, norm, pinv, solve, svd, svdvals  # noqa: F401
from ..nplib.linalg import matrix_transpose
from ..nplib.shaping import tril, triu
from ..primitives import matrix_functions as _mf


def expm(a: Any) -> Any:
    """The matrix exponential (of the last two axes)."""
    _np_linalg._square(a, "expm")
    return _mf.expm(a)


def expm_frechet(a: Any, e: Any, method: Any = None, compute_expm: bool = True) -> Any:
    """``(expm(a), L(a, e))``, or ``L(a, e)`` alone: the Fréchet derivative of expm."""
    _np_linalg._square(a, "expm_frechet")
    frechet = _mf.frechet(a, e)
    return (expm(a), frechet) if compute_expm else frechet


def sqrtm(a: Any, disp: bool = True, blocksize: int = 64) -> Any:
    """The principal square root, SciPy's (complex where a negative eigenvalue makes it so).

    >>> sqrtm(np.array([[-4.0, 0.0], [0.0, 9.0]])).tolist()
    [[2j, 0j], [0j, (3+0j)]]
    """
    _np_linalg._square(a, "sqrtm")
    return _mf.sqrtm(a + 0j if _mf.complex_root(primal(a)) else a)


def solve_sylvester(a: Any, b: Any, q: Any) -> Any:
    """``x`` with ``a x + x b = q`` (``a`` and ``-b`` share no eigenvalue)."""
    _np_linalg._square(a, "solve_sylvester")
    _np_linalg._square(b, "solve_sylvester")
    return _mf.solve_sylvester(a, b, q)


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     check_finite: bool = True) -> Any:
    """``x`` with ``op(t) x = b``, ``t`` the lower or upper triangle of ``a`` (ones on the
    diagonal with ``unit_diagonal``), ``op`` the identity (trans 0/'N') or the transpose
    (1/'T', 2/'C' for real values)."""
    _np_linalg._square(a, "solve_triangular")
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise DiffkitError(f"solve_triangular: trans={trans!r}; use 0/'N', 1/'T' or 2/'C'")
    n = shape(a)[-1]
    t = tril(a, -1 if unit_diagonal else 0) if lower else triu(a, 1 if unit_diagonal else 0)
    if unit_diagonal:
        t = t + eye(n)
    if trans not in (0, "N"):
        t = matrix_transpose(t)
    return solve(t, b)


def lstsq(a: Any, b: Any, cond: float | None = None, **_: Any) -> tuple[Any, Any, int, Any]:
    """``(x, residues, rank, s)`` as SciPy: the residues are a number for a vector ``b``."""
    x, residues, rank, s = _np_linalg.lstsq(a, b, rcond=cond)
    if ndim(b) == 1 and shape(residues) == (1,):
        residues = reshape(residues, ())
    return x, residues, rank, s


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """SciPy's Cholesky factor: upper (``a = uᵀ u``) unless ``lower=True``."""
    low = _np_linalg.cholesky(a)
    return low if lower else matrix_transpose(low)


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> Any:
    """SciPy's QR: ``mode='full'`` (square ``q``; for a tall matrix the extra columns are not
    unique, so differentiate with ``'economic'``), ``'economic'``, or ``'r'`` (a 1-tuple)."""
    if pivoting or mode not in ("full", "economic", "r"):
        raise DiffkitError(f"scipy.linalg.qr: mode={mode!r}, pivoting={pivoting} not supported; "
                           "use mode 'full', 'economic' or 'r' without pivoting")
    m, n = shape(a)[-2:]
    if mode == "full" and m > n:
        if not _np_linalg._packed(a):
            return _mf._scipy_linalg().qr(a)
        raise DiffkitError("scipy.linalg.qr: the derivative of mode='full' for a tall matrix is "
                           "not defined (the extra columns of q are not unique); use 'economic'")
    if mode == "r":
        return (_np_linalg.qr(a, "r"),)
    return _np_linalg.qr(a)


def eigh(a: Any, b: Any = None, *, lower: bool = True, eigvals_only: bool = False,
         **_: Any) -> Any:
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix (one triangle read);
    the generalized problem (``b``) is not supported."""
    if b is not None:
        raise DiffkitError("scipy.linalg.eigh: the generalized problem (b=) is not supported; "
                           "use eigh(inv(cholesky(b)) a inv(cholesky(b)).T)")
    w, v = _np_linalg.eigh(a, "L" if lower else "U")
    return w if eigvals_only else (w, v)


def eig(a: Any, b: Any = None, left: bool = False, right: bool = True, **_: Any) -> Any:
    """Eigenvalues and right eigenvectors (see :func:`diffkit.numpy.linalg.eig`)."""
    if b is not None or left or not right:
        raise DiffkitError("scipy.linalg.eig: only the standard problem with right "
                           "eigenvectors is supported (b=None, left=False, right=True)")
    return _np_linalg.eig(a)


def eigvals(a: Any, b: Any = None, **_: Any) -> Any:
    return eig(a, b)[0]


def _by_index(values: Any, index: np.ndarray) -> Any:
    """A matrix whose entry (i, j) is ``values[index[i, j]]``."""
    return reshape(take(values, index.ravel()), index.shape)


def toeplitz(c: Any, r: Any = None) -> Any:
    """``t[i, j] = c[i - j]`` below the diagonal, ``r[j - i]`` above (``r`` defaults to ``c``)."""
    r = c if r is None else r
    m, n = shape(c)[0], shape(r)[0]
    values = concatenate([getitem(c, slice(None, None, -1)), getitem(r, slice(1, None))])
    return _by_index(values, np.arange(n)[None, :] - np.arange(m)[:, None] + m - 1)


def hankel(c: Any, r: Any = None) -> Any:
    """``h[i, j] = c[i + j]``, continued by ``r[1:]`` (zeros by default)."""
    m = shape(c)[0]
    r = np.zeros(m) if r is None else r
    values = concatenate([c, getitem(r, slice(1, None))])
    return _by_index(values, np.arange(m)[:, None] + np.arange(shape(r)[0])[None, :])


def circulant(c: Any) -> Any:
    """``C[i, j] = c[(i - j) mod n]``."""
    n = shape(c)[0]
    return _by_index(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % n)


def companion(a: Any) -> Any:
    """The companion matrix of the polynomial ``a`` (highest power first)."""
    n = shape(a)[0] - 1
    if n < 1:
        raise DiffkitError("companion: the polynomial needs at least two coefficients")
    top = reshape(-getitem(a, slice(1, None)) / getitem(a, 0), (1, n))
    return concatenate([top, np.eye(n - 1, n)]) if n > 1 else top


def solve_banded(l_and_u: tuple[int, int], ab: Any, b: Any, overwrite_ab: bool = False,
                 overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``a x = b`` for the banded ``a`` stored as SciPy's ``ab``:
    ``a[i, j] = ab[u + i - j, j]`` (``l`` diagonals below, ``u`` above); the matrix is
    built from ``ab`` (entries outside the band read as 0) and solved densely.

    >>> solve_banded((1, 0), np.array([[2.0, 4.0], [1.0, 0.0]]), np.array([2.0, 9.0]))
    array([1., 2.])
    """
    lower, upper = (int(k) for k in l_and_u)
    if ndim(ab) != 2 or shape(ab)[0] != lower + upper + 1:
        raise DiffkitError(f"solve_banded: ab must have l + u + 1 = {lower + upper + 1} rows "
                           f"(one per diagonal), got shape {shape(ab)}")
    n = shape(ab)[1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    band = (i - j <= lower) & (j - i <= upper)
    index = np.where(band, (upper + i - j) * n + j, (lower + upper + 1) * n)  # the last: 0
    return solve(_by_index(concatenate([reshape(ab, (-1,)), np.zeros(1)]), index), b)


def block_diag(*arrs: Any) -> Any:
    """The blocks on the diagonal of a matrix of zeros."""
    blocks = [reshape(b, (1, -1)) if ndim(b) < 2 else b for b in arrs]
    cols = sum(shape(b)[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        h, w = shape(b)
        rows.append(concatenate([np.zeros((h, left)), b, np.zeros((h, cols - left - w))], axis=1))
        left += w
    return concatenate(rows, axis=0)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    """``(c, lower)``: the Cholesky factor (zeros in the other triangle) for ``cho_solve``."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """``x`` with ``a x = b`` from ``cho_factor(a)`` (one triangle of ``c`` read)."""
    c, lower = c_and_lower
    low = tril(c) if lower else matrix_transpose(triu(c))
    return solve_triangular(low, solve_triangular(low, b, lower=True), trans=1, lower=True)


def polar(a: Any, side: str = "right") -> tuple[Any, Any]:
    """``(u, p)`` with ``a = u p`` (``side='right'``) or ``a = p u``: ``u`` with orthonormal
    columns, ``p`` symmetric positive semidefinite, from the SVD (distinct singular values)."""
    w, s, vh = svd(a, full_matrices=False)
    u = w @ vh
    if side == "right":
        return u, matrix_transpose(vh) @ (reshape(s, (-1, 1)) * vh)
    return u, (w * s) @ matrix_transpose(w)


__all__ = ["toeplitz", "hankel", "circulant", "companion", "block_diag", "cho_factor",
           "cho_solve", "polar", "expm", "expm_frechet", "sqrtm", "solve_sylvester", "solve_triangular", "lstsq",
           "cholesky", "det", "eigh", "inv", "norm", "pinv", "qr", "solve", "svd", "svdvals",
           "eig", "eigvals", "solve_banded"]
