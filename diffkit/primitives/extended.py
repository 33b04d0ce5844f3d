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
    off where long double's are within 2⁻¹¹ ulp of the correctly rounded double, at 5 to 60
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
        return narrow(ufunc(*(np.asarray(a, np.longdouble) for a in args)))

    return call


def rounded_derivative(d: Callable[[Any, Any], Any], impl: Callable | None
                       ) -> Callable[[Any, Any], Any]:
    """A unary function's derivative ``d(y, x)``, but on a plain double x (a first
    derivative's value: nothing traced or differentiated again) run in long double, y
    recomputed there by ``impl`` where the rule reads it, and rounded once: ``1 + tan² x``
    from a rounded tan x takes its rounding twice (1.6 ulps)."""
    @functools.wraps(d)
    def rule(y: Any, x: Any) -> Any:
        if not plain_double(x):
            return d(y, x)
        wide = np.asarray(x, np.longdouble)
        return narrow(d(None if impl is None else impl(wide), wide))
    return rule


def rounded_rule(rule: Callable[..., Any], impl: Callable | None = None,
                 exact: Callable[[Any], bool] = lambda y: False) -> Callable[..., Any]:
    """:func:`rounded_derivative` for a binary function's JVP or VJP rule ``rule(t, z, x, y)``
    (t the tangent or adjoint, kept as it is; z recomputed by ``impl`` where the rule reads
    it); not where ``exact(y)``: the rule is exact in doubles there (x ** 2: 2x)."""
    @functools.wraps(rule)
    def wide(t: Any, z: Any, x: Any, y: Any) -> Any:
        if exact(y) or not (plain_double(t) and plain_double(x) and plain_double(y)):
            return rule(t, z, x, y)
        xw, yw = np.asarray(x, np.longdouble), np.asarray(y, np.longdouble)
        return narrow(rule(t, None if impl is None else impl(xw, yw), xw, yw))
    return wide


def narrow(v: Any) -> Any:
    """A long double result rounded once to a double (a number for a number; where the
    double overflows numpy warns, as the ufunc would)."""
    out = np.asarray(v).astype(np.float64)
    return out[()] if out.ndim == 0 else out


def plain_double(v: Any) -> bool:
    """Whether v is a plain float64 value (not traced, not differentiated again) and long
    double has more digits than a double."""
    return EXTENDED and (type(v) in (float, int, np.float64)
                         or type(v) is np.ndarray and v.dtype == np.float64)
