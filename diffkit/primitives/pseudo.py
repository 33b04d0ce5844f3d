"""The pseudo-inverse, defined at singular and rectangular matrices.

``pinv`` is numpy's (singular values below ``rcond`` times the largest are cut), so a
rank-deficient matrix gets numpy's answer rather than ``(AᵀA)⁻¹Aᵀ`` of a singular
``AᵀA``. Its derivative is the constant-rank formula of Golub and Pereyra,
``dP = -P dA P + P Pᴴ dAᴴ (I - A P) + (I - P A) dAᴴ Pᴴ P``, exact where the rank does not
change along ``dA`` (everywhere for a full-rank matrix). For a complex matrix the
conjugate transposes make it real-linear, not holomorphic (JAX's convention,
docs/complex.md); for a real one ``ᴴ`` is ``ᵀ``.

>>> import numpy as np
>>> pinv(np.array([[1.0, 1.0], [1.0, 1.0]]), rcond=None)
array([[0.25, 0.25],
       [0.25, 0.25]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Primitive, shape
from .linalg import _cj, _mH, _mT, _per_matrix, matmul


def _eye_like(a: Any, side: int) -> np.ndarray:
    return np.eye(shape(a)[side])


def _pinv_jvp(a_dot: Any, p: Any, a: Any) -> Any:
    dh = _mH(a_dot)
    return (-matmul(p, matmul(a_dot, p))
            + matmul(matmul(p, _mH(p)), matmul(dh, _eye_like(a, -2) - matmul(a, p)))
            + matmul(_eye_like(a, -1) - matmul(p, a), matmul(dh, matmul(_mH(p), p))))


def _pinv_vjp(p_bar: Any, p: Any, a: Any) -> Any:
    """The transpose of the JVP for ``Re Σ p̄ dP``: the holomorphic term gives
    ``-Pᵀ p̄ Pᵀ``, each ``X dAᴴ Y`` term ``conj(Y p̄ᵀ X)``."""
    bt = _mT(p_bar)
    return (-matmul(_mT(p), matmul(p_bar, _mT(p)))
            + _cj(matmul(_eye_like(a, -2) - matmul(a, p), matmul(bt, matmul(p, _mH(p))))
                  + matmul(matmul(_mH(p), p), matmul(bt, _eye_like(a, -1) - matmul(p, a)))))


pinv = Primitive(  # rcond: numpy's cut (None: numpy's default)
    "pinv", lambda a, *, rcond: np.linalg.pinv(a) if rcond is None else np.linalg.pinv(a, rcond),
    jvp=(lambda a_dot, y, a, *, rcond: _pinv_jvp(a_dot, y, a),),
    vjp=(lambda y_bar, y, a, *, rcond: _pinv_vjp(y_bar, y, a),),
    saves=("y a",),
    sympy=_per_matrix(lambda sp, m: m.pinv()),
    array_api=lambda xp, a, *, rcond: xp.linalg.pinv(a),
    complex=True,
)
