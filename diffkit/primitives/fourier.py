"""Discrete Fourier transforms: fft, ifft (n-d), rfft, irfft (one axis).

They are how complex values enter a differentiated function: a real input, a transform,
then a real loss through ``abs``, ``real`` or ``imag`` (complex values and their
derivative convention, JAX's: see :mod:`diffkit.primitives.elementwise`).

The transforms are numpy's unnormalized ones (``ifft``/``irfft`` divide by n);
:mod:`diffkit.nplib.fft` scales for ``norm=`` and composes the 2-d and n-d forms. The
DFT matrix is symmetric, so ``fft`` and ``ifft`` are their own transposes; ``rfft`` is
the first half of an ``fft``, and ``irfft`` reads each inner frequency twice, which
their rules undo.

>>> import numpy as np
>>> fft(np.array([1.0, 0.0, 0.0, 0.0]), axes=(-1,)).real.tolist()
[1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Primitive, shape
from .elementwise import conj, no_closed_form, real, to_input
from .structure import concatenate, reshape


def _fft_api(name: str) -> Any:
    return lambda xp, x, *, axes: getattr(xp.fft, name)(x, axes=axes)


fft = Primitive(  # the DFT over ``axes`` (negative ints)
    "fft", lambda x, *, axes: np.fft.fftn(x, axes=axes),
    jvp=(lambda x_dot, y, x, *, axes: fft(x_dot, axes=axes),),
    vjp=(lambda y_bar, y, x, *, axes: to_input(x, fft(y_bar, axes=axes)),),
    saves=("",), sympy=no_closed_form("fft"), array_api=_fft_api("fftn"),
    linear=True,
    complex=True,
)
ifft = Primitive(  # the inverse DFT over ``axes``, divided by their sizes
    "ifft", lambda x, *, axes: np.fft.ifftn(x, axes=axes),
    jvp=(lambda x_dot, y, x, *, axes: ifft(x_dot, axes=axes),),
    vjp=(lambda y_bar, y, x, *, axes: to_input(x, ifft(y_bar, axes=axes)),),
    saves=("",), sympy=no_closed_form("ifft"), array_api=_fft_api("ifftn"),
    linear=True,
    complex=True,
)


def _pad(v: Any, axis: int, n: int) -> Any:
    """``v`` followed by zeros along ``axis`` up to length ``n``."""
    s = list(shape(v))
    extra = n - s[axis]
    if extra <= 0:
        return v
    s[axis] = extra
    return concatenate(v, np.zeros(s), axis=axis)


rfft = Primitive(  # the DFT of real x along ``axis``, frequencies 0 .. n // 2
    "rfft", lambda x, *, axis: np.fft.rfft(x, axis=axis),
    jvp=(lambda x_dot, y, x, *, axis: rfft(x_dot, axis=axis),),
    vjp=(lambda y_bar, y, x, *, axis: real(fft(_pad(y_bar, axis, shape(x)[axis]), axes=(axis,))),),
    saves=("",), sympy=no_closed_form("rfft"),
    array_api=lambda xp, x, *, axis: xp.fft.rfft(x, axis=axis),
    linear=True,
)


def _twice_inner(m: int, n: int, axis: int) -> np.ndarray:
    """1 for frequency 0 (and n / 2 for even n), 2 for the others, along ``axis``: how
    often irfft reads each entry of its half spectrum."""
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w.reshape((m,) + (1,) * (-axis - 1))


def _irfft_vjp(y_bar: Any, y: Any, x: Any, *, axis: int, n: int) -> Any:
    m = shape(x)[axis]
    half = rfft(y_bar, axis=axis)
    return conj(half * (_twice_inner(m, n, axis) / n))


irfft = Primitive(  # real signal of length n along ``axis`` from its half spectrum (m = n // 2 + 1)
    "irfft", lambda x, *, axis, n: np.fft.irfft(x, n=n, axis=axis),
    jvp=(lambda x_dot, y, x, *, axis, n: irfft(x_dot, axis=axis, n=n),),
    vjp=(_irfft_vjp,),
    saves=("",), sympy=no_closed_form("irfft"),
    array_api=lambda xp, x, *, axis, n: xp.fft.irfft(x, n=n, axis=axis),
    linear=True,
    complex=True,
)

__all__ = ["fft", "ifft", "irfft", "rfft"]
