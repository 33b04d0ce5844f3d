"""numpy's elementwise functions beyond the basic ones in :mod:`diffkit.numpy`.

Where a function is a short composition of primitives (``square`` is ``x * x``, ``log2``
is ``log(x) / log(2)``) it is written so, and its derivative, exact, comes from those
primitives; the others are primitives of :mod:`diffkit.primitives.elementwise`.
``real``, ``imag``, ``conj``, ``angle`` and ``abs`` take complex values (inputs, or what the
Fourier transforms give; docs/complex.md); of a real value, ``real``/``conj`` are the
identity, ``imag`` is zero and ``angle`` is 0 or pi (constants).

>>> import diffkit as dk
>>> float(dk.grad(log2)(8.0)) == 1 / (8.0 * float(np.log(2.0)))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import primitives as _p
from ..core import bind, primal
from .base import abs, log, maximum, minimum, where  # noqa: A004

cbrt, exp2, expm1, floor, ceil, rint = _p.cbrt, _p.exp2, _p.expm1, _p.floor, _p.ceil, _p.rint
arcsinh, arccosh, arctanh, sinc = _p.arcsinh, _p.arccosh, _p.arctanh, _p.sinc
arctan2, hypot, logaddexp, logaddexp2, fmod = _p.arctan2, _p.hypot, _p.logaddexp, _p.logaddexp2, _p.fmod
mod = remainder = _p.mod
asinh, acosh, atanh, atan2 = arcsinh, arccosh, arctanh, arctan2
fabs = abs
fmax, fmin = maximum, minimum  # (numpy's fmax/fmin also skip NaNs; here NaNs propagate)


def square(x: Any) -> Any:
    return x * x


def reciprocal(x: Any) -> Any:
    return 1.0 / x


def log2(x: Any) -> Any:
    return log(x) / np.log(2.0)


def log10(x: Any) -> Any:
    return log(x) / np.log(10.0)


def deg2rad(x: Any) -> Any:
    return x * (np.pi / 180.0)


def rad2deg(x: Any) -> Any:
    return x * (180.0 / np.pi)


radians, degrees = deg2rad, rad2deg


def round(x: Any, decimals: int = 0) -> Any:  # noqa: A001
    """Round half to even, to ``decimals`` places; its derivative is zero."""
    if decimals == 0:
        return rint(x)
    scale = 10.0 ** decimals
    return rint(x * scale) / scale


around = round


def trunc(x: Any) -> Any:
    """Round towards zero; its derivative is zero."""
    return where(primal(x) >= 0, floor(x), ceil(x))


fix = trunc


def floor_divide(x: Any, y: Any) -> Any:
    """``x // y``, the floor of the quotient; its derivative is zero."""
    return floor(x / y)


def divmod(x: Any, y: Any) -> tuple[Any, Any]:  # noqa: A001
    """``(x // y, x % y)``."""
    return floor_divide(x, y), mod(x, y)


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Any:
    """NaN and infinities replaced by numbers; the derivative flows through finite entries."""
    value = primal(x)
    finite = np.isfinite(value)
    if finite.all():
        return x
    return where(finite, x, np.nan_to_num(value, nan=nan, posinf=posinf, neginf=neginf))


def real(x: Any) -> Any:
    """The real part (``x`` itself for a real ``x``)."""
    return bind(_p.real, x) if _p.is_complex(x) else x


def conj(x: Any) -> Any:
    """The complex conjugate (``x`` itself for a real ``x``)."""
    return bind(_p.conj, x) if _p.is_complex(x) else x


conjugate = conj


def imag(x: Any) -> Any:
    """The imaginary part (zeros, a constant, for a real ``x``)."""
    return bind(_p.imag, x) if _p.is_complex(x) else np.zeros(np.shape(primal(x)))


def angle(x: Any, deg: bool = False) -> Any:
    """The argument, arctan2(imag, real); of a real ``x`` a constant, 0 or pi."""
    if not _p.is_complex(x):
        if getattr(primal(x), "abstract", False):  # a graph traced for all values: per entry
            return where(x < 0, 180.0 if deg else np.pi, 0.0)
        return np.angle(primal(x), deg=deg)
    out = arctan2(imag(x), real(x))
    return out * (180.0 / np.pi) if deg else out


def real_if_close(x: Any, tol: float = 100) -> Any:
    """The real part when every imaginary part is within ``tol`` machine epsilons of 0.

    >>> real_if_close(np.array([1.0 + 1e-20j]))
    array([1.])
    """
    if not _p.is_complex(x):
        return x
    value = primal(x)
    bound = tol * np.finfo(np.result_type(value)).eps if tol > 1 else tol  # (numpy's rule)
    return real(x) if np.all(np.abs(np.imag(value)) < bound) else x


__all__ = ["cbrt", "exp2", "expm1", "floor", "ceil", "rint", "arcsinh", "arccosh", "arctanh",
           "sinc", "arctan2", "hypot", "logaddexp", "logaddexp2", "fmod", "mod", "remainder",
           "asinh", "acosh", "atanh", "atan2", "fabs", "fmax", "fmin", "square", "reciprocal",
           "log2", "log10", "deg2rad", "rad2deg", "radians", "degrees", "round", "around",
           "trunc", "fix", "floor_divide", "divmod", "nan_to_num", "real", "conj", "conjugate", "imag",
           "angle", "real_if_close"]
