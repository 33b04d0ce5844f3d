"""Extended precision where numpy has it: x86's 64-bit long double (Windows and ARM macOS
have none: there numpy's long double is a double, and ``EXTENDED`` is False).

A formula whose terms cancel keeps 11 more bits computed this way and rounded once: the
reflection formula of digamma next to its zeros (:mod:`.polygamma_negative`), sinc's
derivative next to its extrema (:mod:`.sinc_derivative`). The elementary functions of the
table (exp, log, sin, tanh, power …) are computed so too on real doubles (:func:`rounded`):
a correctly rounded result but where the exact value lies within 2⁻¹¹ ulp of a midpoint.

>>> s, c = sincospi(np.array([0.5, 1.0 / 3.0]))
>>> [float(v) for v in s], round(float(c[1]), 15)
([1.0, 0.8660254037844386], 0.5)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .inverse_error import _product

EXTENDED = np.finfo(np.longdouble).nmant >= 63
PI_LO = 1.2246467991473532e-16  # π − np.pi
PI = np.longdouble(np.pi) + np.longdouble(PI_LO)  # (π to 64 bits where long double has them)


def pi_times(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """πr as two doubles, hi + lo (Dekker's product by np.pi, and π − np.pi times r)."""
    hi, lo = _product(np.full_like(r, np.pi), r)
    return hi, lo + PI_LO * r


def sincospi(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin πx and cos πx in long double for a float array x: from r = x − rint(x) (exact),
    the sign (−1)^rint(x), and beyond |r| = 1/4 from u = 1/2 − |r| (exact), where cos πr is
    small and would take the rounding of πr: cos πr = sin πu, sin πr = sign(r) cos πu."""
    n = np.rint(x)
    r = x - n
    parity = np.where(np.fmod(n, 2.0) == 0, 1.0, -1.0).astype(np.longdouble)
    folded = np.abs(r) > 0.25
    u = np.where(folded, 0.5 - np.abs(r), r).astype(np.longdouble)
    s, c = np.sin(PI * u), np.cos(PI * u)
    return (parity * np.where(folded, np.sign(r) * c, s),
            parity * np.where(folded, s, c))


def rounded(ufunc: np.ufunc) -> Callable[..., Any]:
    """``ufunc`` on real doubles (or integers) computed in long double and rounded once to a
    double: numpy's float64 exp, tanh, power … are its own SIMD routines, up to 0.6–0.8 ulp
    off where long double's are within 2⁻¹¹ ulp of the correctly rounded double, at 10–40
    times the time (docs/accuracy.md). Other dtypes (float32, complex, objects), and every
    argument where long double is a double, go to ``ufunc`` itself.

    >>> x = np.array([0.5, 7.25])
    >>> bool(np.all(rounded(np.exp)(x) == np.exp(x.astype(np.longdouble)).astype(np.float64)))
    True
    """
    if not EXTENDED:
        return ufunc

    @functools.wraps(ufunc)
    def call(*args: Any) -> Any:
        try:
            kind = np.result_type(*args)
        except TypeError:  # (objects numpy cannot type: the ufunc says what it makes of them)
            return ufunc(*args)
        if kind != np.float64 and kind.kind not in "iub":
            return ufunc(*args)
        out = ufunc(*(np.asarray(a, np.longdouble) for a in args)).astype(np.float64)
        return out[()] if out.ndim == 0 else out

    return call
