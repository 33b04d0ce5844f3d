"""A complex point as two real ones, for the backends that differentiate real variables
(symbolic, numeric).

``z = x + iy`` with ``n`` entries is the real array ``p = [x, y]`` (shape ``(2,) + z.shape``),
and ``f(z)`` is the real array ``[Re f, Im f]``. The real Jacobian of that map has four
blocks; :func:`directions` reads them as two complex matrices, ``A = df/dx`` and
``B = df/dy`` (the output's change along each entry's real and imaginary direction). JAX's
derivatives follow from them with no further choice:

* the JVP along ``z_dot`` is ``A Re(z_dot) + B Im(z_dot)``;
* the VJP of a cotangent ``u`` (the transpose for the pairing ``Re Σ u v``, no conjugation)
  is ``Re(u A) - i Re(u B)``;
* the Jacobian is the VJP of each unit cotangent: ``Re A - i Re B``. For a real ``f`` that
  is JAX's gradient ``df/dx - i df/dy``; for a holomorphic ``f`` (``B = iA``) it is
  ``f'(z) = A``.

>>> import numpy as np
>>> z = np.array([3.0 + 4.0j])
>>> f = lambda z: np.real(z * np.conj(z))                       # |z|^2
>>> jac = np.array([[[[6.0]], [[8.0]]], [[[0.0]], [[0.0]]]])      # d[Re f, Im f]/d[x, y]
>>> A, B = directions(jac, (), z.shape)
>>> jacobian(A, B)                                     # 2 conj(z): one output, one input
array([[6.-8.j]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def as_parts(z: Any) -> np.ndarray:
    """``z`` as the real array ``[Re z, Im z]``.

    >>> as_parts(np.array([1 + 2j]))
    array([[1.],
           [2.]])
    """
    return np.stack([np.real(z), np.imag(z)])


def on_parts(fun: Callable, xnp: Any = np) -> Callable:
    """``p -> [Re f, Im f]`` of ``f(p[0] + i p[1])``, written with the numpy ``xnp``
    (``diffkit.numpy`` for a function traced on symbols).

    >>> on_parts(np.exp)(np.array([0.0, np.pi / 2]))[1].round(12)
    np.float64(1.0)
    """
    def real_map(p: Any) -> Any:
        y = fun(p[0] + 1j * p[1])
        return xnp.stack([xnp.real(y), xnp.imag(y)])

    return real_map


def directions(jac: np.ndarray, y_shape: tuple[int, ...], z_shape: tuple[int, ...]
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)``: the output's change along the real and the imaginary direction of each
    input entry (shape ``y.size x z.size``), from the Jacobian of :func:`on_parts`."""
    m, n = int(np.prod(y_shape)), int(np.prod(z_shape))
    blocks = np.asarray(jac).reshape(2, m, 2, n)
    return blocks[0, :, 0] + 1j * blocks[1, :, 0], blocks[0, :, 1] + 1j * blocks[1, :, 1]


def jacobian(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The VJP of every unit cotangent, JAX's Jacobian (module docstring); flat, ``m x n``."""
    return np.real(A) - 1j * np.real(B)


def jvp(A: np.ndarray, B: np.ndarray, z_dot: Any) -> np.ndarray:
    """``A Re(z_dot) + B Im(z_dot)``, flat."""
    z_dot = np.ravel(z_dot)
    return A @ np.real(z_dot) + B @ np.imag(z_dot)


def vjp(A: np.ndarray, B: np.ndarray, u: Any) -> np.ndarray:
    """``Re(u A) - i Re(u B)``, flat: the transpose of :func:`jvp` for ``Re Σ u v``."""
    u = np.ravel(u)
    return np.real(u @ A) - 1j * np.real(u @ B)
