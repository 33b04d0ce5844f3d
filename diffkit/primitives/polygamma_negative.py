"""polygamma(n, x) on the negative axis, n = 0 … 3, by the reflection formula
``ψ⁽ⁿ⁾(x) = (−1)ⁿ ψ⁽ⁿ⁾(1 − x) − dⁿ/drⁿ π cot πr``, ``r = x − rint(x)`` (exact).

ψ and ψ'' (n = 0, 2) have a zero between each two poles, where the formula's two terms
agree: in doubles they lose the digits they share (75 ulps over 800 points in (−200, −20)).
They are computed in 64-bit long double (x86's extended precision) and rounded once
(:func:`_extended`: within 1 ulp over those points; about 1 µs a number, SciPy's digamma
0.06). Closer to a zero than 2⁻¹¹ of the terms that is not enough either (digamma at
−0.504 + 1e-15 lost every digit, 4.7e14 ulps, in doubles): next to the zeros in (−20, 0),
within a fraction of the distance to the nearer pole, by the Taylor series about the zero
(:func:`_zero_series`, from mpmath); beyond −20 such points still lose digits.

Where numpy's long double is a double (Windows, ARM macOS), and for n = 1, 3 (whose two
terms have one sign), in doubles: ``dⁿ/drⁿ π cot πr`` (:func:`cot_derivative`) for |r| ≤ 0.45
(0.4 for n = 0) from its Laurent series ``π cot πr = 1/r − 2 Σₖ ζ(2k) r^(2k−1)``, the pole
term ``(−1)ⁿ n!/r^(n+1)`` apart; beyond, from ``sin πr`` and ``cos πr`` with πr as two
doubles (``2π³ cos πr / sin³ πr`` from πr rounded: 5 ulps over 2,000 points of ψ'' in
(−20, 0); 2 this way).

>>> round(float(cot_derivative(np.array(0.25), 0)), 15)  # π cot(π/4) = π
3.141592653589793
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from math import factorial
from typing import Any

import numpy as np

from .extended import EXTENDED, PI, pi_times, sincospi

_LAURENT_UP_TO = (0.4, 0.45, 0.45, 0.45)  # by n: where the Laurent series is the more accurate
_LAURENT_TERMS = 32  # 0.45² per term: the 32nd is below 1e-20 of the first (n <= 3)
_ZEROS_TABULATED = 20  # the zeros of digamma and of polygamma(2) in (-20, 0), one an interval
_ZERO_TERMS = 24
_NEAR_A_ZERO = {0: 5.0, 2: 50.0}  # |polygamma(n, x)| within the series' radius is below these
# the radius, a fraction of the distance to the nearer pole: within a fifth the terms fall by
# 5 each, but polygamma(2)'s coefficients grow as m^2 (a pole of order 3): 10 ulps at the
# edge of a fifth, 1 within an eighth (where the reflection formula is within 2)
_RADIUS = {0: 1 / 5, 2: 1 / 8}
_ASYMPTOTIC_FROM = 15  # from there the 10 terms are within 1e-22 of digamma, 3e-20 of polygamma(2)
#: the Bernoulli numbers B_2, B_4 … B_20
BERNOULLI = tuple(Fraction(b) for b in ("1/6", "-1/30", "1/42", "-1/30", "5/66", "-691/2730",
                                        "7/6", "-3617/510", "43867/798", "-174611/330"))


def polygamma(x: np.ndarray, n: int, scipy_polygamma: Callable[[int, Any], Any]) -> np.ndarray:
    """polygamma(n, x), n <= 3, for a float array x: the reflection formula where x < 0,
    ``scipy_polygamma`` elsewhere and at the poles."""
    with np.errstate(all="ignore"):
        negative = x < 0
        r = np.where(negative, x - np.rint(x), 0.5)
        pole = negative & (r == 0)
        reflect = negative & ~pole
        out = scipy_polygamma(n, np.where(reflect, 1.0, x))
        if EXTENDED and n in (0, 2):
            out = np.array(out, dtype=float)
            out[reflect] = _extended(x[reflect], n)
        else:
            reflected = ((-1) ** n * scipy_polygamma(n, np.where(negative, 1.0 - x, 1.0))
                         - cot_derivative(r, n))
            out = np.where(reflect, reflected, out)
        return _near_zeros(x, n, out) if n in (0, 2) else out


@functools.cache
def _laurent(n: int) -> tuple[int, tuple[float, ...], float]:
    """The series part of dⁿ/drⁿ π cot πr: r^e Σⱼ cⱼ r^2j, as (e, (c₀, c₁ ...)), from
    mpmath at 40 digits (once per n), and π^(n+1) rounded once."""
    import mpmath  # (deferred: SymPy's mpmath, once per order)

    with mpmath.workdps(40):
        coefficients = []
        for k in range(1, _LAURENT_TERMS + 1):
            falling = 1  # (2k − 1)(2k − 2) … (2k − n): the n-th derivative of r^(2k−1)
            for j in range(n):
                falling *= 2 * k - 1 - j
            if falling or coefficients:
                coefficients.append(float(-2 * mpmath.zeta(2 * k) * falling))
        first = next(k for k in range(1, 3) if 2 * k - 1 >= n)
        return 2 * first - 1 - n, tuple(coefficients), float(mpmath.pi ** (n + 1))


def cot_derivative(r: np.ndarray, n: int) -> np.ndarray:
    """dⁿ/drⁿ π cot πr for |r| ≤ 1/2, n = 0 … 3 (±inf at r = 0)."""
    exponent, coefficients, pi_power = _laurent(n)
    r2 = r * r
    series = np.zeros_like(r)
    for c in reversed(coefficients):  # Horner's rule in r²
        series = series * r2 + c
    with np.errstate(divide="ignore"):
        near = (-1) ** n * factorial(n) / r ** (n + 1) + series * r ** exponent
    th, tl = pi_times(r)
    s = np.sin(th) + tl * np.cos(th)
    c = np.cos(th) - tl * np.sin(th)
    far = (pi_power * c / s, -pi_power / (s * s), 2.0 * pi_power * c / (s * s * s),
           -2.0 * pi_power * (2.0 * c * c + 1.0) / (s * s * s * s))[n]
    return np.where(np.abs(r) <= _LAURENT_UP_TO[n], near, far)


def _extended(x: np.ndarray, n: int) -> np.ndarray:
    """ψ(x) (n = 0) or ψ''(x) (n = 2) for x < 0 off the poles, in long double, rounded once.

    ψ⁽ⁿ⁾(1 − x) at z = 1 − x (exact): below z = 15 by ψ⁽ⁿ⁾(z) = ψ⁽ⁿ⁾(z + m) − Σⱼ (−1)ⁿ n!/(z + j)^(n+1),
    then the asymptotic series ψ(z) = log z − 1/(2z) − Σ B_2k/(2k z^2k),
    ψ''(z) = −1/z² − 1/z³ − Σ (2k + 1) B_2k/z^(2k+2). Minus π cot πr (resp. 2π³ cos πr / sin³ πr)
    from sin and cos of πr, or of π(1/2 − |r|) beyond |r| = 1/4, where cos πr is small and
    would take the rounding of πr."""
    ld = np.longdouble
    z = ld(1.0) - x.astype(ld)
    shift = np.zeros_like(z)
    low = np.flatnonzero(z < _ASYMPTOTIC_FROM)
    if low.size:
        z_low = z[low]
        m = np.ceil(_ASYMPTOTIC_FROM - z_low)
        total = np.zeros_like(z_low)
        for j in range(int(m.max())):
            v = 1 / (z_low + j)
            total += np.where(j < m, v if n == 0 else 2 * v * v * v, 0)
        shift[low] = -total
        z[low] = z_low + m
    w = 1 / (z * z)
    series = np.zeros_like(z)
    for k in range(len(BERNOULLI), 0, -1):  # Horner's rule in w
        b = ld(BERNOULLI[k - 1].numerator) / ld(BERNOULLI[k - 1].denominator)
        series = (series + (b / (2 * k) if n == 0 else (2 * k + 1) * b)) * w
    s, c = sincospi(x)
    if n == 0:
        out = np.log(z) - 0.5 / z - series + shift - PI * c / s
    else:
        out = -w - w / z - w * series + shift - 2 * PI**3 * c / (s * s * s)
    return out.astype(np.float64)


@functools.cache
def _zero_series(n: int, k: int) -> tuple[float, float, float, tuple[float, ...]]:
    """The zero x0 of polygamma(n, x) in (-k - 1, -k) (one for n = 0 and 2: it goes from
    -inf to inf there) as hi + lo, the radius (``_RADIUS`` of its distance to the nearer
    pole), and the Taylor coefficients polygamma(n + m, x0) / m!, m = 1 .. 24, from mpmath
    at 40 digits (34 ms, once per interval used)."""
    import mpmath  # (deferred: SymPy's mpmath, once per zero, where an argument is near one)

    with mpmath.workdps(40):
        eps = mpmath.mpf(10) ** -9
        x0 = mpmath.findroot(lambda t: mpmath.polygamma(n, t), (-k - 1 + eps, -k - eps),
                             solver="anderson")
        hi = float(x0)
        coefficients = tuple(float(mpmath.polygamma(n + m, x0) / mpmath.factorial(m))
                             for m in range(1, _ZERO_TERMS + 1))
        return hi, float(x0 - hi), float(min(x0 + k + 1, -k - x0)) * _RADIUS[n], coefficients


def _near_zeros(x: np.ndarray, n: int, out: np.ndarray) -> np.ndarray:
    """``out`` (polygamma(n, x) by the reflection formula), but next to the zeros x0 in
    (-20, 0) by the Taylor series about x0, in d = (x - hi) - lo: the reflection's two terms
    agree there (digamma at -0.504 + 1e-15 lost every digit: 4.7e14 ulps; polygamma(2, x)
    29 at -19.5), the series keeps them (within 3 ulps)."""
    close = (x < 0) & (x > -_ZEROS_TABULATED) & (np.abs(out) < _NEAR_A_ZERO[n])
    if not np.any(close):  # (so a zero's series is made only where an argument may need it)
        return out
    out = np.array(out, dtype=float)
    k = np.where(close, np.floor(-np.where(close, x, 0.5)), -1.0)
    for interval in np.unique(k[close]):
        hi, lo, radius, coefficients = _zero_series(n, int(interval))
        d = (x - hi) - lo  # (x - hi exact: within a factor 2 of hi)
        near = (k == interval) & (np.abs(d) <= radius)
        series = 0.0
        for c in reversed(coefficients):  # Horner's rule
            series = series * d + c
        out = np.where(near, series * d, out)
    return out


