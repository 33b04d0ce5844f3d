"""The eigendecomposition of a general (non-symmetric) real matrix whose eigenvalues are
real and distinct: ``a = v diag(w) v⁻¹``, the columns of ``v`` of unit length (numpy's
normalization; their signs are LAPACK's).

Packed like ``eigh``: row 0 holds the eigenvalues, rows 1.. the eigenvectors. With
``c = v⁻¹ da v`` and ``F_ij = 1 / (w_j - w_i)`` (0 on the diagonal):

* ``dw = diag(c)``;
* ``dv = v (F ∘ c)``, then each column's component along itself removed (the columns stay
  of unit length): ``dv_j -= v_j (v_jᵀ dv_j)``.

The adjoint reverses the steps: ``v̄₀ = v̄ - v diag(diag(vᵀ v̄))``, ``c̄ = diag(w̄) + F ∘ (vᵀ v̄₀)``,
``ā = v⁻ᵀ c̄ vᵀ``. A matrix with complex eigenvalues is a clear error: their derivatives
need complex values (JAX returns complex eigenvalues and eigenvectors always).

>>> import numpy as np
>>> eig(np.array([[2.0, 1.0], [0.0, 3.0]]))[..., 0, :].tolist()
[2.0, 3.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, Primitive, ndim, shape
from .contraction import einsum
from .linalg import _diag_embed, _eig_parts, _mT, _refuse, inv, matmul
from .structure import concatenate, getitem, reshape


def _eig(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eig(a)
    if np.iscomplexobj(w):
        if np.any(w.imag != 0):
            raise DiffkitError("linalg.eig: this matrix has complex eigenvalues; diffkit "
                               "differentiates eig of real matrices with real, distinct "
                               "eigenvalues (symmetric matrices: use eigh)")
        w, v = w.real, v.real
    return np.concatenate([w[..., None, :], v], axis=-2)


def _diagonal(m: Any) -> Any:
    lead = "ZYXW"[:ndim(m) - 2]
    return einsum(m, subs=f"{lead}ii->{lead}i")


def _unit_columns(v: Any, v_dot: Any) -> Any:
    """``v_dot`` without each column's component along its (unit) column of ``v``."""
    along = _diagonal(matmul(_mT(v), v_dot))
    return v_dot - v * reshape(along, shape=shape(along)[:-1] + (1, shape(along)[-1]))


def _eig_jvp(a_dot: Any, y: Any, a: Any) -> Any:
    w, v, f = _eig_parts(y)
    c = matmul(inv(v), matmul(a_dot, v))
    w_dot = _diagonal(c)
    v_dot = _unit_columns(v, matmul(v, f * c))
    return concatenate(reshape(w_dot, shape=shape(w_dot)[:-1] + (1, shape(w_dot)[-1])), v_dot,
                       axis=-2)


def _eig_vjp(y_bar: Any, y: Any, a: Any) -> Any:
    w, v, f = _eig_parts(y)
    w_bar = getitem(y_bar, idx=(Ellipsis, 0, slice(None)))
    v_bar = _unit_columns(v, getitem(y_bar, idx=(Ellipsis, slice(1, None), slice(None))))
    c_bar = _diag_embed(w_bar) + f * matmul(_mT(v), v_bar)
    return matmul(_mT(inv(v)), matmul(c_bar, _mT(v)))


eig = Primitive(  # packed: row 0 the eigenvalues (LAPACK's order), rows 1.. the eigenvectors
    "eig", _eig, jvp=(_eig_jvp,), vjp=(_eig_vjp,), saves=("y",),
    sympy=_refuse("eig", " (eigenvalues are roots of a polynomial)"),
    array_api=lambda xp, a: _packed(xp, *xp.linalg.eig(a)),
)


def _packed(xp: Any, w: Any, v: Any) -> Any:
    """Another library's ``eig`` packed as this one's (real parts: the real case)."""
    return xp.concat([w[..., None, :], v], axis=-2).real
