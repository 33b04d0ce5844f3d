"""The eigendecomposition of a general square matrix, real or complex, as JAX's:
``a = v diag(w) v⁻¹`` with complex eigenvalues and eigenvectors always (a static output
dtype, whatever the values), the columns of ``v`` of unit 2-norm with their largest
entry real (LAPACK's ``geev`` normalization, numpy's and JAX's vectors).

Packed like ``eigh``: row 0 holds the eigenvalues, rows 1.. the eigenvectors. With
``p = v⁻¹ da v`` and ``F_ij = 1 / (w_j - w_i)`` (0 on the diagonal), the eigenvalues
must be distinct:

* ``dw = diag(p)``;
* ``dv_j = u_j + c_j v_j`` with ``u = v (F ∘ p)``; the eigenvalue equation leaves ``c_j``
  free, and the normalization fixes it: ``Re(v_jᴴ dv_j) = 0`` keeps the length,
  ``Im(dv_kj / v_kj) = 0`` the phase of the largest entry ``k``, so
  ``c_j = -Re(v_jᴴ u_j) - i Im(u_kj / v_kj)`` (the derivative JAX takes with
  ``enable_eigvec_derivs=True``).

The adjoint (for the pairing ``Re Σ ū u``, JAX's, docs/complex.md) runs backwards:
``c̄_j = Σ_i v̄_ij v_ij``, ``ū = v̄ - Re(c̄) ∘ conj(v) - i Im(c̄) ∘ m / v_k`` (``m`` the mask
of the largest entries), ``p̄ = diag(w̄) + F ∘ (vᵀ ū)``, ``ā = v⁻ᵀ p̄ vᵀ`` (its real part for
a real ``a``).

>>> import numpy as np
>>> eig(np.array([[2.0, 1.0], [0.0, 3.0]]))[..., 0, :].tolist()
[(2+0j), (3+0j)]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, Primitive, ndim, primal, shape
from .compare import mask, select
from .contraction import einsum
from .elementwise import abs, conj, imag, real, to_input  # noqa: A004
from .linalg import _diag_embed, _eig_parts, _mT, _refuse, matmul, solve
from .reductions import cumsum, max, sum  # noqa: A004
from .structure import concatenate, getitem, reshape


def _eig(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eig(a)
    packed = np.concatenate([w[..., None, :], v], axis=-2)
    return packed.astype(np.result_type(packed, np.complex64))


def _diagonal(m: Any) -> Any:
    lead = "ZYXW"[:ndim(m) - 2]
    return einsum(m, subs=f"{lead}ii->{lead}i")


def _row(x: Any) -> Any:
    """A vector (..., n) as a row (..., 1, n), to scale each column of a matrix."""
    return reshape(x, shape=shape(x)[:-1] + (1, shape(x)[-1]))


def _parts(y: Any) -> tuple[Any, Any, Any]:
    """Eigenvalues, eigenvectors and F from the packed output; repeated eigenvalues (where
    the eigenvectors, and the eigenvalues' derivatives, are not defined) are refused."""
    value = primal(y)
    if not getattr(value, "abstract", False):  # (a traced graph: no values to look at)
        w = np.asarray(value)[..., 0, :]
        same = w[..., :, None] == w[..., None, :]
        if np.any(same & ~np.eye(w.shape[-1], dtype=bool)):
            raise DiffkitError("linalg.eig: this matrix has a repeated eigenvalue, where eig "
                               "has no derivative (its eigenvectors are not unique); "
                               "differentiate at a matrix with distinct eigenvalues "
                               "(symmetric matrices: use eigh)")
    w, v, f = _eig_parts(y)
    return w, v, f


def _columns(m: Any) -> Any:
    """Each column's sum: (..., n, n) to (..., n)."""
    return sum(m, axis=(-2,), keepdims=False)


def _largest(v: Any) -> tuple[Any, Any]:
    """The mask of each column's first largest-magnitude entry (a constant) and that entry."""
    size = abs(v)
    top = select(mask(np.equal, size, max(size, axis=(-2,), keepdims=True)), 1.0, 0.0)
    first = select(mask(np.equal, cumsum(top, axis=-2), 1.0), top, 0.0)
    return first, _columns(first * v)


def _eig_jvp(a_dot: Any, y: Any, a: Any) -> Any:
    w, v, f = _parts(y)
    p = solve(v, matmul(a_dot, v))
    u = matmul(v, f * p)
    first, pivot = _largest(v)
    c = -real(_columns(conj(v) * u)) - 1j * imag(_columns(first * u) / pivot)
    return concatenate(_row(_diagonal(p)), u + v * _row(c), axis=-2)


def _eig_vjp(y_bar: Any, y: Any, a: Any) -> Any:
    w, v, f = _parts(y)
    w_bar = getitem(y_bar, idx=(Ellipsis, 0, slice(None)))
    v_bar = getitem(y_bar, idx=(Ellipsis, slice(1, None), slice(None)))
    first, pivot = _largest(v)
    c_bar = _columns(v_bar * v)
    u_bar = v_bar - _row(real(c_bar)) * conj(v) - 1j * _row(imag(c_bar) / pivot) * first
    p_bar = _diag_embed(w_bar) + f * matmul(_mT(v), u_bar)
    return to_input(a, solve(_mT(v), matmul(p_bar, _mT(v))))


eig = Primitive(  # packed: row 0 the eigenvalues (LAPACK's order), rows 1.. the eigenvectors
    "eig", _eig, jvp=(_eig_jvp,), vjp=(_eig_vjp,), saves=("y",),
    sympy=_refuse("eig", " (eigenvalues are roots of a polynomial)"),
    array_api=lambda xp, a: _packed(xp, *xp.linalg.eig(a)),
    complex=True,
)


def _packed(xp: Any, w: Any, v: Any) -> Any:
    """Another library's ``eig`` (complex, as JAX's and PyTorch's) packed as this one's."""
    return xp.concat([w[..., None, :], v], axis=-2)
