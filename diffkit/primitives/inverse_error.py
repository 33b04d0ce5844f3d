"""erfinv, erfcinv, ndtri and log_ndtr of real numbers, diffkit's own: numpy, vectorized,
no SciPy, on :mod:`.error_function`'s erf, erfc and erfcx as pairs of doubles.

Each is within an ulp of the correctly rounded value wherever it is a normal float
(against mpmath at 50 digits: ``tests/test_inverse_error.py``, ``docs/accuracy.md``).

* The inverses solve erf(y) = t (|t| < 1/2) or erfc(y) = c (0 < c <= 1/2), both exact:
  erfinv(x) is t = x or c = 1 − |x|; erfcinv(x) is c = x, t = 1 − x or c = 2 − x (negated);
  ndtri(p) = −√2 erfcinv(2p). A start y0 within 2e-9 (relative), then one Halley step:
  with d = f(y0)/f'(y0), f'' = −2y f' for both, y = y0 − d/(1 + y0 d). The residual is
  exact but for the pair's error (2^-56): erf(y0) − t from erf's pair (Sterbenz: the lead
  minus t is exact), erfc(y0) − c from erfc = exp(−y0²) erfcx(y0) = (lead + rest) 2^m with
  c 2^-m (exact: no underflow for subnormal c). The start: for t, t P(t²), P of degree 7 on
  [0, 1/4]; for c, a polynomial of degree 9 in w = √(−log c) on each binade of w from 1/2
  to 32. The Halley step leaves (y² + 1)/3 e0³: below 1e-24. The result, s (y0 + step)
  with s = 1 or −√2 as hi + lo, is rounded once. Below |t| = 2^-30, erfinv(t) = √π/2 t.
* log_ndtr(x) = log Φ(x) with t = −x/√2 as a pair (t_hi + t_lo, from √2's halves): for
  x <= −1, log(erfcx(t)/2) − x²/2, erfcx(t_hi) corrected by t_lo erfcx'/erfcx, its log as
  a pair (:func:`_log_pair`), x²/2 exact (Dekker's product), so the two negative parts add
  without cancelling; above −1, from q = Φ(−|x|) = erfc(|t|)/2 as a pair (erfc's series or
  exp(−t²) erfcx(|t|), corrected by t_lo), log q for x < 0 and log(1 − q) = 2 atanh(−q/(2 − q))
  for x >= 0; from x = 10, −q. Below x = −2^64, −x²/2 (log(erfcx/2) is below its ulp).

The tables (:mod:`.inverse_error_tables`) come from mpmath at 50 digits (Chebyshev
interpolation): ``python -m diffkit.primitives.inverse_error --fit`` prints them.

>>> float(erfinv(0.5)), float(ndtri(1e-300)), float(log_ndtr(-40.0))  # correctly rounded
(0.4769362762044699, -37.0470962993612, -804.6084420137538)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from .error_function import (Form, _by_pieces, _erf_near_0, _ERF_TABLE, _erfc_near_0,
                             _erfcx_far, _erfcx_table, _exp_square, _fast_two_sum, _halves,
                             _horner, _split, _tabulated, _times, _two_sum)
from .inverse_error_tables import CENTRAL as _CENTRAL
from .inverse_error_tables import TAIL_ROWS as _TAIL_ROWS

# ------------------------------------------------------------ constants (exact, at import)
_SQRT_PI = Fraction("1.7724538509055160272981674833411451827975")
_SQRT_2 = Fraction("1.4142135623730950488016887242096980785697")
_LN2 = Fraction("0.6931471805599453094172321214581765680755")
_SMALL = 2.0**-30  # erfinv(t) = √π/2 t (1 + π t²/12): the cube is below 2^-61 of it
_SCALE = 2.0**64  # the small form computes on 2^64 t, so that no part of it is subnormal
_ONE = (1.0, 0.0)
_MINUS_SQRT_2 = tuple(-v for v in _split(_SQRT_2, 26))
_HALF_SQRT_PI = _split(_SQRT_PI / 2, 26)  # erfinv'(0)
_MINUS_SQRT_HALF_PI = tuple(-v for v in _split(_SQRT_PI / _SQRT_2, 26))  # ndtri'(1/2)
_SQRT_HALF = _split(1 / _SQRT_2, 26)  # t = −x/√2 from x's halves
_LN2_40 = _split(_LN2, 40)  # e ln2_hi is exact for |e| < 2^13
_TWO_OVER_SQRT_PI = float(2 / _SQRT_PI)
_FAR_START = 8.0  # erfcx by its far form from here (error_function's seam)
_LEFT_END, _FAR_LEFT = -1.0, -(2.0**64)  # log_ndtr's seams
_FAR_RIGHT = 10.0  # Φ(−x) < 2^-76 from here: log Φ(x) = −Φ(−x) (1 + Φ(−x)/2 + …) rounds as −Φ(−x)
_LOG_NDTR_IS_ZERO = 40.0  # Φ(−x) < 2^-1075 from x = 38.5: log Φ(x) rounds to −0
# (atanh u − u)/u³ in z = u², to 2^-64 of it: for |u| <= 1/3 (20 terms), <= 0.172 (12)
_ATANH = tuple(1.0 / (2 * j + 1) for j in range(1, 21))
_ATANH_NEAR = _ATANH[:12]
_SQRT_HALF_ROUNDED = float(1 / _SQRT_2)
_TAIL_TABLE = np.array(_TAIL_ROWS).T.copy()  # a row per coefficient, a column per binade


# ------------------------------------------------------------ pairs
def _pair_where(where: np.ndarray, first: Callable[[np.ndarray], tuple[Any, Any]],
                second: Callable[[np.ndarray], tuple[Any, Any]], y: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """A pair: ``first(y)`` where ``where``, ``second(y)`` elsewhere, each computed only on
    its own elements."""
    hi, lo = np.empty_like(y), np.empty_like(y)
    for at, form in ((np.flatnonzero(where), first), (np.flatnonzero(~where), second)):
        if at.size:
            hi[at], lo[at] = form(y[at])
    return hi, lo


def _product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a b as p + e exactly (Dekker's product on Veltkamp's halves; |a|, |b| < 2^996)."""
    p = a * b
    a_hi, a_lo = _halves(a)
    b_hi, b_lo = _halves(b)
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _times_pair(y: np.ndarray, step: np.ndarray, s: tuple[float, float]) -> np.ndarray:
    """s (y + step) rounded once, s = hi + lo with hi of 26 bits (y's halves times s_hi are
    exact); ``step`` is below 1e-8 of y."""
    y_hi, y_lo = _halves(y)
    return y_hi * s[0] + ((y_lo * s[0] + y * s[1]) + step * (s[0] + s[1]))


def _erf_pair(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """erf(y) for 0 <= y < 1/2 as a pair: the series below 1/4, the table above."""
    def table(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _tabulated(_ERF_TABLE, v)
    return _pair_where(y < 0.25, _erf_near_0, table, y)


def _erfcx_pair(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """erfcx(y) for y >= 1/4 as a pair: the table below 8, the far form above."""
    return _pair_where(y < _FAR_START, _erfcx_table, _erfcx_far, y)


def _log_quotient(n: np.ndarray, n_lo: np.ndarray, d: np.ndarray, d_lo: np.ndarray,
                  k: Any, series: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """2 atanh(u) + k ln2 as a pair, u = (n + n_lo)/(d + d_lo) (each lo within an ulp of its
    hi): u as a pair (the quotient's remainder from Dekker's product, exact),
    2u + 2u³ Σ u^2j/(2j + 3) on u (``series``: enough terms for |u|), u_lo times the
    derivative 2/(1 − u²); ln2 as hi + lo, k ln2_hi exact."""
    u = n / d
    p, p_lo = _product(u, d)
    u_lo = (((n - p) - p_lo) + n_lo - u * d_lo) / d
    z = u * u
    tail = 2.0 * u * z * _horner(series, z)
    s, s_lo = _two_sum(k * _LN2_40[0], 2.0 * u)
    return _fast_two_sum(s, s_lo + ((k * _LN2_40[1] + 2.0 * u_lo / (1.0 - z)) + tail))


def _log_pair(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(hi + lo) as a pair, |lo| < hi, their sum normal: hi + lo = 2^e (f + l) with f in
    [1/√2, √2) (after a two-sum, |l| <= ulp(f)/2), and log(f + l) = 2 atanh(u) with
    u = (f − 1 + l)/(f + 1 + l), f − 1 exact, |u| < 0.172 (:func:`_log_quotient`)."""
    hi, lo = _fast_two_sum(hi, lo)
    f, e = np.frexp(hi)
    low = f < _SQRT_HALF_ROUNDED
    f = np.where(low, 2.0 * f, f)
    e = np.where(low, e - 1, e)
    lo = np.ldexp(lo, -e)
    n, n_lo = _two_sum(f - 1.0, lo)
    d, d_lo = _two_sum(f, 1.0)
    return _log_quotient(n, n_lo, d, d_lo + lo, e.astype(np.float64), _ATANH_NEAR)


def _log1m_pair(q: np.ndarray, q_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(1 − q) as a pair for 0 <= q <= 1/2: 2 atanh(−q/(2 − q)) (:func:`_log_quotient`),
    without 1 − q, whose pair would round q's last digits where q is small."""
    q, q_lo = _fast_two_sum(q, q_lo)
    d, d_lo = _two_sum(2.0, -q)
    return _log_quotient(-q, -q_lo, d, d_lo - q_lo, 0.0, _ATANH)


# ------------------------------------------------------------ the inverses
def _central_start(t: np.ndarray) -> np.ndarray:
    """erfinv(t) for 0 <= t < 1/2 within 5e-11 (relative): t P(t²)."""
    return t * _horner(_CENTRAL, t * t)


def _tail_start(c: np.ndarray) -> np.ndarray:
    """erfcinv(c) for 0 < c <= 1/2 within 2e-9 (relative): the polynomial of the binade
    of w = √(−log c) in [1/2, 32) (column e for w in [2^(e − 1), 2^e)), in τ = 4 f − 3,
    f w's mantissa (frexp), exact."""
    w = np.sqrt(-np.log(c))
    f, e = np.frexp(w)
    tau = 4.0 * f - 3.0
    return _horner(np.take(_TAIL_TABLE, e, axis=1), tau)


def _halley(y: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Halley's step from y for f with f'' = −2y f' (erf and erfc), d = f(y)/f'(y)."""
    return -d / (1.0 + y * d)


def _erfinv_central(t: np.ndarray, s: tuple[float, float]) -> np.ndarray:
    """s erfinv(t) for 2^-30 <= |t| < 1/2: y0 from the start, erf(y0) − |t| from erf's pair
    (the lead minus |t| is exact), one Halley step."""
    a = np.abs(t)
    y = _central_start(a)
    hi, lo = _erf_pair(y)
    d = ((hi - a) + lo) / (_TWO_OVER_SQRT_PI * np.exp(-y * y))
    sign = np.copysign(1.0, t)
    return _times_pair(sign * y, sign * _halley(y, d), s)


def _erfcinv_tail(c: np.ndarray, s: tuple[float, float]) -> np.ndarray:
    """s erfcinv(c) for 0 < c <= 1/2: y0 from the start, erfc(y0) = (lead + rest) 2^m
    (exp(−y0²) and erfcx(y0) as pairs) less c 2^-m (exact), one Halley step."""
    y = _tail_start(c)
    e_hi, e_lo, m = _exp_square(y, -1.0)
    lead, rest = _times(e_hi, e_lo, _erfcx_pair(y))
    d = ((lead - np.ldexp(c, -m)) + rest) / (-_TWO_OVER_SQRT_PI * (e_hi + e_lo))
    return _times_pair(y, _halley(y, d), s)


def _erfinv_small(t: np.ndarray, k: tuple[float, float]) -> np.ndarray:
    """k t for |t| < 2^-30 (k = √π/2 erfinv'(0), or −√(π/2) for ndtri), on 2^64 t."""
    scaled = t * _SCALE
    h, low = _halves(scaled)
    return (h * k[0] + (low * k[0] + scaled * k[1])) / _SCALE


def _erfinv_pieces(x: np.ndarray, a: np.ndarray) -> list[tuple[Any, Form]]:
    """erfinv's pieces by |x|: k x, the central form, the tail of c = 1 − |x| with x's sign,
    ±inf at ±1, NaN beyond, +0 at ±0 (as SciPy's)."""
    return [((a > 0.0) & (a < _SMALL), lambda v: _erfinv_small(v, _HALF_SQRT_PI)),
            ((a >= _SMALL) & (a < 0.5), lambda v: _erfinv_central(v, _ONE)),
            ((a >= 0.5) & (a < 1.0),
             lambda v: np.copysign(_erfcinv_tail(1.0 - np.abs(v), _ONE), v)),
            (a == 1.0, lambda v: np.copysign(np.inf, v)), (a > 1.0, np.nan), (a == 0.0, 0.0)]


def _erfcinv_pieces(x: np.ndarray, a: np.ndarray) -> list[tuple[Any, Form]]:
    """erfcinv's pieces: the tail of x, erfinv(1 − x) (exact from x = 1/2 to 3/2), minus the
    tail of 2 − x; inf at 0, −inf at 2, −0 at 1 (as SciPy's), NaN outside [0, 2]."""
    t = np.abs(1.0 - x)
    minus = (-1.0, 0.0)
    return [((x > 0.0) & (x <= 0.5), lambda v: _erfcinv_tail(v, _ONE)),
            ((x > 0.5) & (x < 1.5) & (t >= _SMALL), lambda v: _erfinv_central(1.0 - v, _ONE)),
            ((t < _SMALL) & (t > 0.0), lambda v: _erfinv_small(1.0 - v, _HALF_SQRT_PI)),
            ((x >= 1.5) & (x < 2.0), lambda v: _erfcinv_tail(2.0 - v, minus)),
            (x == 0.0, np.inf), (x == 2.0, -np.inf), (x == 1.0, -0.0),
            ((x < 0.0) | (x > 2.0), np.nan)]


def _ndtri_pieces(p: np.ndarray, a: np.ndarray) -> list[tuple[Any, Form]]:
    """ndtri's pieces: −√2 erfcinv(2p) by its tail (2p exact), −√2 erfinv(1 − 2p) (exact from
    p = 1/4 to 3/4), √2 times the tail of 2(1 − p); ∓inf at 0 and 1, +0 at 1/2 (as SciPy's),
    NaN outside [0, 1]."""
    t = np.abs(1.0 - 2.0 * p)
    plus = tuple(-v for v in _MINUS_SQRT_2)
    return [((p > 0.0) & (p <= 0.25), lambda v: _erfcinv_tail(2.0 * v, _MINUS_SQRT_2)),
            ((p > 0.25) & (p < 0.75) & (t >= _SMALL),
             lambda v: _erfinv_central(1.0 - 2.0 * v, _MINUS_SQRT_2)),
            ((t < _SMALL) & (t > 0.0), lambda v: _erfinv_small(1.0 - 2.0 * v, _MINUS_SQRT_HALF_PI)),
            ((p >= 0.75) & (p < 1.0), lambda v: _erfcinv_tail(2.0 * (1.0 - v), plus)),
            (p == 0.0, -np.inf), (p == 1.0, np.inf), (p == 0.5, 0.0),
            ((p < 0.0) | (p > 1.0), np.nan)]


def erfinv(x: Any) -> Any:
    """The inverse of erf on [−1, 1], within an ulp.

    >>> erfinv(np.array([0.0, 0.25, -0.999, 1.0, 2.0]))
    array([ 0.        ,  0.22531206, -2.32675377,         inf,         nan])
    """
    return _by_pieces(x, _erfinv_pieces)


def erfcinv(x: Any) -> Any:
    """The inverse of erfc on [0, 2], within an ulp (to subnormal x: erfcinv(5e-324) is 27.2).

    >>> erfcinv(np.array([5e-324, 1e-300, 0.5, 1.5, 2.0]))
    array([27.21329321, 26.20946996,  0.47693628, -0.47693628,        -inf])
    """
    return _by_pieces(x, _erfcinv_pieces)


def ndtri(p: Any) -> Any:
    """The inverse of the normal CDF Φ on [0, 1], within an ulp (to subnormal p).

    >>> ndtri(np.array([0.0, 5e-324, 0.025, 0.5, 0.975]))
    array([        -inf, -38.46740562,  -1.95996398,   0.        ,
             1.95996398])
    """
    return _by_pieces(p, _ndtri_pieces)


# ------------------------------------------------------------ log_ndtr
def _minus_t(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """t = −x/√2 as t_hi + t_lo, |t_lo| <= ulp(t_hi)/2 (to 2^-100): x (1/√2)_hi and its
    error from x's halves (exact), plus x (1/√2)_lo."""
    p = x * _SQRT_HALF[0]
    h, low = _halves(x)
    error = (h * _SQRT_HALF[0] - p) + low * _SQRT_HALF[0]
    hi, lo = _fast_two_sum(p, error + x * _SQRT_HALF[1])
    return -hi, -lo


def _log_ndtr_left(x: np.ndarray) -> np.ndarray:
    """log Φ(x) for −2^64 <= x <= −1: log(erfcx(t)/2) − x²/2, erfcx(t_hi) corrected by
    t_lo (log erfcx)' = t_lo (2t − 2/(√π erfcx)), −1/t from the far form on (where the
    difference cancels and the correction is below x²/2's ulp)."""
    t, t_lo = _minus_t(x)
    c, c_lo = _erfcx_pair(t)
    slope = np.where(t < _FAR_START, 2.0 * t - _TWO_OVER_SQRT_PI / c, -1.0 / t)
    log_hi, log_lo = _log_pair(0.5 * c, 0.5 * (c_lo + c * slope * t_lo))
    square, square_lo = _product(0.5 * x, x)
    s, e = _two_sum(log_hi, -square)
    return s + (e + (log_lo - square_lo))


def _abs_t(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|t| = |x|/√2 as a pair."""
    t, t_lo = _minus_t(x)
    return np.abs(t), np.where(t < 0.0, -t_lo, t_lo)


def _half_erfc(tau: np.ndarray, tau_lo: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """erfc(tau + tau_lo)/2 = (lead + rest) 2^m for tau >= 1/4: exp(−tau²) times
    erfcx(tau) − 2/√π tau_lo (erfc' = −2/√π exp(−tau²)), the correction's product apart
    (:func:`~.error_function._times` leaves out e_lo c_lo, 2^-40 of the rest here)."""
    e_hi, e_lo, m = _exp_square(tau, -1.0)
    lead, rest = _times(e_hi, e_lo, _erfcx_pair(tau))
    rest -= (e_hi + e_lo) * (_TWO_OVER_SQRT_PI * tau_lo)
    return 0.5 * lead, 0.5 * rest, m


def _q_near_0(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Φ(−|x|) = erfc(|t|)/2 for |t| < 1/4 as a pair: the series, less 2/√π exp(−t²) |t|_lo."""
    tau, tau_lo = _abs_t(x)
    hi, lo = _erfc_near_0(tau)
    lo -= _TWO_OVER_SQRT_PI * np.exp(-tau * tau) * tau_lo
    return 0.5 * hi, 0.5 * lo


def _q_right(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Φ(−|x|) = erfc(|t|)/2 for |t| >= 1/4 as a pair: exp(−t²) erfcx(|t|)."""
    lead, rest, m = _half_erfc(*_abs_t(x))
    return np.ldexp(lead, m), np.ldexp(rest, m)


def _log_phi(q: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
             log: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]) -> Form:
    """log Φ(x) from q = Φ(−|x|) as a pair: log q (x < 0) or log(1 − q) (x >= 0), rounded
    once, negative (−0 where it rounds to 0)."""
    def form(x: np.ndarray) -> np.ndarray:
        return -np.abs(np.add(*log(*q(x))))
    return form


def _log_ndtr_far_right(x: np.ndarray) -> np.ndarray:
    """log Φ(x) = −Φ(−x) for 10 <= x < 40, the pair rounded once, then scaled (exactly, for
    normal results)."""
    lead, rest, m = _half_erfc(*_abs_t(x))
    return -np.ldexp(lead + rest, m)


def _log_ndtr_pieces(x: np.ndarray, a: np.ndarray) -> list[tuple[Any, Form]]:
    """log_ndtr's pieces: −x²/2, the left form, log Φ from the series or erfc forms of Φ(−|x|)
    (by t_hi itself: the erfc forms hold from 1/4), −Φ(−x), −0."""
    near = np.abs(_minus_t(x)[0]) < 0.25
    mid = ~near & (x > _LEFT_END) & (x < _FAR_RIGHT)
    negative = x < 0.0
    return [(x < _FAR_LEFT, lambda v: -(0.5 * v) * v),
            ((x >= _FAR_LEFT) & (x <= _LEFT_END), _log_ndtr_left),
            (near & negative, _log_phi(_q_near_0, _log_pair)),
            (near & ~negative, _log_phi(_q_near_0, _log1m_pair)),
            (mid & negative, _log_phi(_q_right, _log_pair)),
            (mid & ~negative, _log_phi(_q_right, _log1m_pair)),
            ((x >= _FAR_RIGHT) & (x < _LOG_NDTR_IS_ZERO), _log_ndtr_far_right),
            (x >= _LOG_NDTR_IS_ZERO, -0.0)]


def log_ndtr(x: Any) -> Any:
    """log Φ(x), the log of the normal CDF, within an ulp.

    >>> log_ndtr(np.array([-1e10, -3.0, 0.0, 3.0, 30.0, np.inf]))
    array([-5.00000000e+019, -6.60772622e+000, -6.93147181e-001,
           -1.35080996e-003, -4.90671393e-198, -0.00000000e+000])
    """
    return _by_pieces(x, _log_ndtr_pieces)


# ------------------------------------------------------------ the generator of the tables
def fit() -> dict[str, tuple]:
    """The tables ``CENTRAL`` and ``TAIL_ROWS`` from mpmath at 50 digits: Chebyshev
    interpolation (``mpmath.chebyfit``) of erfinv(t)/t in t² on [0, 1/4] (8 terms), and of
    erfcinv(exp(−w²)) on each binade of w, [2^(e − 1), 2^e) for e = 0 .. 5, in
    τ = 4 w/2^e − 3 (10 terms), y from findroot on log erfc(y) + w² (about 2 s)."""
    import mpmath  # (deferred: only the generator needs mpmath, not the functions)

    with mpmath.workdps(50):
        def central(z: Any) -> Any:
            return mpmath.erfinv(mpmath.sqrt(z)) / mpmath.sqrt(z) if z else mpmath.sqrt(
                mpmath.pi) / 2

        def tail(w: Any) -> Any:
            start = w if w > 1.5 else mpmath.erfinv(1 - mpmath.exp(-w * w))
            return mpmath.findroot(lambda y: mpmath.log(mpmath.erfc(y)) + w * w, start)

        def polynomial(f: Callable[[Any], Any], interval: list[Any], terms: int
                       ) -> tuple[float, ...]:
            return tuple(float(v) for v in mpmath.chebyfit(f, interval, terms)[::-1])

        rows = tuple(polynomial(lambda tau, e=e: tail((tau + 3) * mpmath.mpf(2) ** e / 4),
                                [-1, 1], 10) for e in range(6))
        return {"CENTRAL": polynomial(central, [0, mpmath.mpf(1) / 4], 8), "TAIL_ROWS": rows}


if __name__ == "__main__":
    if sys.argv[1:] != ["--fit"]:
        sys.exit("usage: python -m diffkit.primitives.inverse_error --fit")
    from .error_function import _source
    print(_source(fit()))
