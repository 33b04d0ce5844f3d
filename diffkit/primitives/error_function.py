"""erf, erfc and erfcx of real numbers, diffkit's own: numpy, vectorized, no SciPy.

Each is within an ulp of the correctly rounded value wherever it is a normal float
(against mpmath at 50 digits: ``tests/test_error_function.py``, ``docs/accuracy.md``).
The forms, by x:

* ``|x| < 1/4``: erf(x) = x (c + z P(z)), z = x², c = 2/√π as hi + lo with hi of 26 bits,
  so that x·hi is exact once x is split in halves (Veltkamp); P is the Taylor series
  economized on [0, 1/16]. erfc(x) = 1 − erf(x) and erfcx(x) = exp(x²) erfc(x) there.
* ``1/4 ≤ x < 8``: erfcx(x) by a polynomial of degree 11 on each eighth of a binade
  ([1/4, 9/32), [9/32, 5/16) … [15/2, 8)), in τ ∈ [−1/2, 1/2) about its centre. Its
  constant term is hi + lo and the sum of the constant and the rest is kept as a pair:
  the rest, at most a 16th of the value, is all that carries rounding errors. erf the same
  way (degree 9) for 1/4 ≤ |x| < 1/2, where 1 − erfc(x) would cancel.
* ``x ≥ 8``: erfcx(x) = F(1/x²)/x, F a polynomial on [0, 1/64], the quotient as a pair.
* erfc(x) = exp(−x²) erfcx(x) from x = 1/4 on, exp(−x²) as a pair (:func:`_exp_square`);
  erf(x) = 1 − erfc(x) from x = 1/2 on; erfc(x) = 2 − erfc(−x) and
  erfcx(x) = 2 exp(x²) − erfcx(−x) for x ≤ −1/4. Each result is formed as a pair and
  rounded once at the end.

Each piece computes on the elements it holds (their indices, ``np.flatnonzero``), so no
element is computed twice. The coefficients come from mpmath at 50 digits (Chebyshev
interpolation, ``mpmath.chebyfit``), once: ``python -m diffkit.primitives.error_function
--fit`` prints the four tables of :mod:`.error_function_tables`, and the tests check that
they are its output.

>>> float(erf(0.25)), float(erfc(26.0)), float(erfcx(30.0))  # each correctly rounded
(0.27632639016823696, 5.663192408856143e-296, 0.01879588886141675)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from .error_function_tables import ERF_ROWS as _ERF_ROWS
from .error_function_tables import ERFCX_ROWS as _ERFCX_ROWS
from .error_function_tables import FAR as _FAR
from .error_function_tables import NEAR_0 as _NEAR_0

# ------------------------------------------------------------ constants (exact, at import)
_NEAR_0_END, _FAR_START = 0.25, 8.0  # the pieces' ends in |x|
_ERF_TABLE_END = 0.5  # erf by its own table below, by 1 − erfc(x) from here
_ERF_IS_ONE = 6.0  # erfc(x) < 2^-53 from 5.86 (erfc(-x) rounds to 2), 2^-54 from 5.92 (erf to 1)
_ERFC_IS_ZERO = 27.3  # erfc(x) < 2^-1075 from x = 27.23: it rounds to 0
_ERFCX_IS_INF = -27.0  # 2 exp(x^2) > 2^1024 below x = -26.63
_SCALE = 2.0**64  # erf near 0 is computed on 2^64 x, so that no part of it is subnormal
_VELTKAMP = 2.0**27 + 1.0
_BLOCK = 2**15  # elements computed at once (a form's temporaries, 256 kB each, stay cached)


def _split(c: Fraction, bits: int) -> tuple[float, float]:
    """c > 0 as hi + lo, hi of ``bits`` bits (so that hi times a short number is exact)."""
    scale = Fraction(2) ** (bits - 1 - math.floor(math.log2(c)))
    hi = Fraction(round(c * scale)) / scale
    return float(hi), float(c - hi)


_TWO_OVER_SQRT_PI = _split(Fraction("1.1283791670955125738961589031215451716881"), 26)
_LN2 = Fraction("0.6931471805599453094172321214581765680755")
_LN2_64 = _split(_LN2 / 64, 35)  # k * hi is exact for |k| < 2^18 (|x| <= 40)
_64_OVER_LN2 = float(64 / _LN2)
_EXPM1 = tuple(1.0 / math.factorial(n) for n in range(2, 7))  # (e^r − 1 − r)/r², degree 4


def _powers_of_two() -> np.ndarray:
    """2^(j/64) for j = 0 .. 63 as hi (26 bits) + lo, and rounded (three rows): 2^(1/64) to
    200 bits by six integer square roots of 2, then its powers (integer arithmetic, 0.4 ms)."""
    bits = 200
    root = 2 << bits
    for _ in range(6):
        root = math.isqrt(root << bits)
    power, unit = 1 << bits, Fraction(1, 1 << bits)
    hi, lo, rounded = [], [], []
    for _ in range(64):
        top = (power + (1 << (bits - 26))) >> (bits - 25)  # power's leading 26 bits, rounded
        hi.append(math.ldexp(top, -25))
        lo.append(float((power - (top << (bits - 25))) * unit))
        rounded.append(float(power * unit))
        power = (power * root) >> bits
    return np.array([hi, lo, rounded])


_POWERS = _powers_of_two()  # rows hi, lo, rounded; one column per j
# one row per coefficient, one column per interval (np.take gathers a row's entries)
_ERFCX_TABLE, _ERF_TABLE = np.array(_ERFCX_ROWS).T.copy(), np.array(_ERF_ROWS).T.copy()


# ------------------------------------------------------------ pairs (double-double)
def _two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """a + b as s + e exactly: s the rounded sum, e its error (Knuth)."""
    s = a + b
    b_part = s - a
    return s, (a - (s - b_part)) + (b - b_part)


def _fast_two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """a + b as s + e exactly, for |a| >= |b| (Dekker)."""
    s = a + b
    return s, b - (s - a)


def _halves(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a = hi + lo exactly, each of at most 26 bits (Veltkamp's split; |a| < 2^996)."""
    c = a * _VELTKAMP
    hi = c - (c - a)
    return hi, a - hi


def _short(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a = hi + lo exactly, hi of at most 24 bits (a's float32 rounding; |a| < 3e38)."""
    hi = a.astype(np.float32).astype(np.float64)
    return hi, a - hi


def _horner(coefficients: Any, t: np.ndarray) -> np.ndarray:
    """sum_k coefficients[k] t^k (lowest first), by Horner's rule (in place: one array)."""
    value = coefficients[-1] * t
    for c in coefficients[-2:0:-1]:
        value += c
        value *= t
    value += coefficients[0]
    return value


def _quotient(a_hi: np.ndarray, a_lo: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a_hi + a_lo)/b as a pair, for 1/2 <= b < 1 and a near 1: q = a_hi/b and the
    remainder a_hi − q b, exact from the products of the halves of q and b (_short)."""
    q = a_hi / b
    q_hi, q_lo = _short(q)
    b_hi, b_lo = _short(b)
    remainder = (((a_hi - q_hi * b_hi) - q_hi * b_lo) - q_lo * b_hi) - q_lo * b_lo
    return q, (remainder + a_lo) / b


def _times(e_hi: np.ndarray, e_lo: np.ndarray, c: tuple[np.ndarray, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray]:
    """(e_hi + e_lo)(c_hi + c_lo) as lead + rest, e_hi of 26 bits: lead = e_hi times c_hi's
    leading 24 bits, exact; rest the other products (e_lo c_lo left out: below 2^-60)."""
    c_top, c_bottom = _short(c[0])
    return e_hi * c_top, e_hi * (c_bottom + c[1]) + e_lo * c[0]


# ------------------------------------------------------------ the pieces
def _exp_square(x: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """exp(sign x²) = (hi + lo) 2^m for |x| <= 40, within 2^-59 (relative): hi is a 26-bit
    entry of the table of 2^(j/64), m an integer. x² = s + t with s = h² exact (h: x's
    leading 24 bits); sign s = (64 m + j) ln2/64 + d with d exact (ln2/64 as hi + lo, k hi
    exact); r = d + sign t − k lo, and e^r − 1 by its Taylor polynomial (|r| <= ln2/128)."""
    h, low = _short(x)
    s = h * h
    k = np.rint(s * (sign * _64_OVER_LN2))
    r = sign * s - k * _LN2_64[0]
    r += sign * (low * (x + h)) - k * _LN2_64[1]
    p = _horner(_EXPM1, r)
    p *= r
    p *= r
    p += r
    n = k.astype(np.int64)
    hi, lo, rounded = np.take(_POWERS, n & 63, axis=1)
    rounded *= p
    rounded += lo
    return hi, rounded, (n >> 6).astype(np.int32)  # (ldexp is slow on int64 exponents)


def _tabulated(table: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A function as a pair from its table: the polynomial of x's eighth of a binade from
    1/4 on (column 8 (e + 1) + i for x in 2^e [1/2 + i/16, 1/2 + (i + 1)/16), frexp's e),
    in τ = 16 f − (8 + i) − 1/2, exact, its coefficients gathered by interval."""
    f, e = np.frexp(x)
    u = 16.0 * f
    n = np.floor(u)
    tau = u - n - 0.5
    c = np.take(table, 8 * e + n.astype(np.int64), axis=1)  # (one call gathers every row)
    rest = c[-1] * tau
    for row in c[-2:1:-1]:
        rest += row
        rest *= tau
    hi, lo = _fast_two_sum(c[0], rest)
    lo += c[1]
    return hi, lo


def _erfcx_table(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """erfcx(x) for 1/4 <= x < 8 as a pair."""
    return _tabulated(_ERFCX_TABLE, x)


def _erfcx_far(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """erfcx(x) for 8 <= x < inf as a pair: F(w)/x with w = 1/x² (0 once x² overflows: F(0)
    is the limit), the quotient by x's mantissa as a pair, then by its power of 2."""
    w = 1.0 / (x * x)
    hi, lo = _fast_two_sum(_FAR[0], w * _horner(_FAR[2:], w))
    f, e = np.frexp(x)
    q_hi, q_lo = _quotient(hi, lo + _FAR[1], f)
    return np.ldexp(q_hi, -e), np.ldexp(q_lo, -e)


def _erf_near_0(x: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """scale·erf(x) for |x| < 1/4 as lead + rest: lead = h c_hi, exact (h the high half of
    scale·x, c = 2/√π), rest the low half's product and scale·x (c_lo + z P(z))."""
    scaled = x * scale
    h, low = _halves(scaled)
    z = x * x
    c_hi, c_lo = _TWO_OVER_SQRT_PI
    rest = scaled * (z * _horner(_NEAR_0, z)) + (low * c_hi + scaled * c_lo)
    return h * c_hi, rest


def _erf_small(x: np.ndarray) -> np.ndarray:
    """erf(x) for 0 < |x| < 1/4, on 2^64 x and scaled back (exactly, for normal results)."""
    lead, rest = _erf_near_0(x, _SCALE)
    return (lead + rest) / _SCALE


def _erf_table(x: np.ndarray) -> np.ndarray:
    """erf(x) for 1/4 <= |x| < 1/2 from its table, with x's sign."""
    hi, lo = _tabulated(_ERF_TABLE, np.abs(x))
    return np.copysign(hi + lo, x)


def _erfc_product(x: np.ndarray, c: tuple[np.ndarray, np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """erfc(x) = exp(−x²) erfcx(x) as (lead + rest) 2^m, from c = erfcx(x) as a pair."""
    e_hi, e_lo, m = _exp_square(x, -1.0)
    return (*_times(e_hi, e_lo, c), m)


def _minus_erfc(total: float, x: np.ndarray) -> np.ndarray:
    """total − erfc(x) for 1/4 <= x < 6, total 1 (erf) or 2 (erfc(−x)), rounded once."""
    lead, rest, m = _erfc_product(x, _erfcx_table(x))
    s, e = _two_sum(total, -np.ldexp(lead, m))
    return s + (e - np.ldexp(rest, m))


def _erf_right(x: np.ndarray) -> np.ndarray:
    """erf(x) for 1/2 <= |x| < 6: 1 − erfc(|x|), with x's sign."""
    return np.copysign(_minus_erfc(1.0, np.abs(x)), x)


def _erfc_near_0(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """erfc(x) for |x| < 1/4 as a pair: 1 − lead exactly (two-sum), then − rest."""
    lead, rest = _erf_near_0(x)
    s, e = _two_sum(1.0, -lead)
    return _fast_two_sum(s, e - rest)


def _erfc_small(x: np.ndarray) -> np.ndarray:
    """erfc(x) for |x| < 1/4."""
    hi, lo = _erfc_near_0(x)
    return hi + lo


def _erfc_right(erfcx_pair: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
                ) -> Callable[[np.ndarray], np.ndarray]:
    """erfc(x) for x >= 1/4 from erfcx(x) as a pair (_erfcx_table or _erfcx_far)."""
    def erfc_right(x: np.ndarray) -> np.ndarray:
        lead, rest, m = _erfc_product(x, erfcx_pair(x))
        return np.ldexp(lead + rest, m)
    return erfc_right


def _erfc_left(x: np.ndarray) -> np.ndarray:
    """erfc(x) for −6 < x <= −1/4: 2 − erfc(−x)."""
    return _minus_erfc(2.0, -x)


def _erfcx_small(x: np.ndarray) -> np.ndarray:
    """erfcx(x) for |x| < 1/4: exp(x²) erfc(x), both pairs (exp's power of 2 is 1: x² is
    below 64 ln2/128), their product rounded once."""
    e_hi, e_lo, _ = _exp_square(x, 1.0)
    lead, rest = _times(e_hi, e_lo, _erfc_near_0(x))
    return lead + rest


def _erfcx_right(erfcx_pair: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
                 ) -> Callable[[np.ndarray], np.ndarray]:
    """erfcx(x) for x >= 1/4: the pair, rounded."""
    def erfcx_right(x: np.ndarray) -> np.ndarray:
        hi, lo = erfcx_pair(x)
        return hi + lo
    return erfcx_right


def _erfcx_left(erfcx_pair: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
                ) -> Callable[[np.ndarray], np.ndarray]:
    """erfcx(x) for −27 < x <= −1/4: 2 exp(x²) − erfcx(−x), as (2 hi − c) + (2 lo − c')
    over exp's 2^m (two-sum), rounded once, then times 2^m (inf beyond 2^1024)."""
    def erfcx_left(x: np.ndarray) -> np.ndarray:
        e_hi, e_lo, m = _exp_square(x, 1.0)
        c_hi, c_lo = erfcx_pair(-x)
        s, e = _two_sum(2.0 * e_hi, -np.ldexp(c_hi, -m))
        return np.ldexp(s + (e + (2.0 * e_lo - np.ldexp(c_lo, -m))), m)
    return erfcx_left


# ------------------------------------------------------------ the functions
Form = Callable[[np.ndarray], np.ndarray] | float


def _by_pieces(x: Any, pieces: Callable[[np.ndarray, np.ndarray], list[tuple[Any, Form]]]
               ) -> Any:
    """A function of real x by pieces: ``pieces(x, |x|)`` lists (where, form), each form
    (or constant) computed on the elements where it holds. The wheres are disjoint; an
    element no piece holds (NaN; ±0 for erf) is x itself. float64 (float32 for float32, as
    SciPy's ufuncs), a number for a number."""
    x = np.asarray(x)
    single = x.dtype == np.float32
    flat = np.ravel(x).astype(np.float64, copy=False)
    out = flat.copy()
    with np.errstate(all="ignore"):
        for where, form in pieces(flat, np.abs(flat)):
            at = np.flatnonzero(where)
            if isinstance(form, float):
                out[at] = form
                continue
            for start in range(0, at.size, _BLOCK):  # (blocks: their temporaries stay cached)
                block = at[start:start + _BLOCK]
                out[block] = form(flat[block])
    out = out.reshape(x.shape).astype(np.float32 if single else np.float64, copy=False)
    return out[()] if out.ndim == 0 else out


def _erf_pieces(x: np.ndarray, a: np.ndarray) -> list[tuple[Any, Form]]:
    """erf's pieces: the series, the table, 1 − erfc, ±1 (by |x|; erf(±0) = ±0 is x)."""
    return [((a > 0.0) & (a < _NEAR_0_END), _erf_small),
            ((a >= _NEAR_0_END) & (a < _ERF_TABLE_END), _erf_table),
            ((a >= _ERF_TABLE_END) & (a < _ERF_IS_ONE), _erf_right),
            (a >= _ERF_IS_ONE, lambda v: np.copysign(1.0, v))]


def _erfc_pieces(x: np.ndarray, a: np.ndarray) -> list[tuple[Any, Form]]:
    """erfc's pieces: the series, exp(−x²) erfcx(x) (table, far), 2 − erfc(−x), 0 and 2."""
    return [(a < _NEAR_0_END, _erfc_small),
            ((x >= _NEAR_0_END) & (x < _FAR_START), _erfc_right(_erfcx_table)),
            ((x >= _FAR_START) & (x < _ERFC_IS_ZERO), _erfc_right(_erfcx_far)),
            ((x <= -_NEAR_0_END) & (x > -_ERF_IS_ONE), _erfc_left),
            (x >= _ERFC_IS_ZERO, 0.0), (x <= -_ERF_IS_ONE, 2.0)]


def _erfcx_pieces(x: np.ndarray, a: np.ndarray) -> list[tuple[Any, Form]]:
    """erfcx's pieces: the series, the table and F(1/x²)/x on both sides, inf and 0."""
    return [(a < _NEAR_0_END, _erfcx_small),
            ((x >= _NEAR_0_END) & (x < _FAR_START), _erfcx_right(_erfcx_table)),
            ((x >= _FAR_START) & (x < np.inf), _erfcx_right(_erfcx_far)),
            ((x <= -_NEAR_0_END) & (x > -_FAR_START), _erfcx_left(_erfcx_table)),
            ((x <= -_FAR_START) & (x > _ERFCX_IS_INF), _erfcx_left(_erfcx_far)),
            (x <= _ERFCX_IS_INF, np.inf), (x == np.inf, 0.0)]


def erf(x: Any) -> Any:
    """The error function (2/√π) ∫_0^x exp(−t²) dt, within an ulp.

    >>> erf(np.array([0.0, -0.0, 3.0, np.inf, np.nan]))
    array([ 0.        , -0.        ,  0.99997791,  1.        ,         nan])
    """
    return _by_pieces(x, _erf_pieces)


def erfc(x: Any) -> Any:
    """The complementary error function 1 − erf(x), within an ulp (erfc(x) itself, not
    1 − erf(x), for large x: it is a normal number up to x = 26.5).

    >>> erfc(np.array([0.0, 10.0, -3.0, np.inf, -np.inf]))
    array([1.00000000e+00, 2.08848758e-45, 1.99997791e+00, 0.00000000e+00,
           2.00000000e+00])
    """
    return _by_pieces(x, _erfc_pieces)


def erfcx(x: Any) -> Any:
    """The scaled complementary error function exp(x²) erfc(x), within an ulp (inf below
    x = −26.63, where 2 exp(x²) overflows).

    >>> erfcx(np.array([0.0, 1e300, -1.0, np.inf, -np.inf]))
    array([1.00000000e+000, 5.64189584e-301, 5.00898008e+000, 0.00000000e+000,
                       inf])
    """
    return _by_pieces(x, _erfcx_pieces)


# ------------------------------------------------------------ the generator of the tables
def fit() -> dict[str, tuple]:
    """The tables ``NEAR_0``, ``ERFCX_ROWS``, ``ERF_ROWS`` and ``FAR`` from mpmath at 50
    digits: Chebyshev interpolation of each function on its interval (``mpmath.chebyfit``),
    the constant terms of the tables' polynomials and of F as hi + lo (about 2 s)."""
    import mpmath  # (deferred: only the generator needs mpmath, not the functions)

    with mpmath.workdps(50):
        def erfcx_mp(x: Any) -> Any:
            return mpmath.exp(x * x) * mpmath.erfc(x)

        def near_0(z: Any) -> Any:  # (erf(x)/x − 2/√π)/z by its Taylor series, to 1e-40
            return 2 / mpmath.sqrt(mpmath.pi) * mpmath.fsum(
                (-1) ** n * z ** (n - 1) / (mpmath.factorial(n) * (2 * n + 1))
                for n in range(1, 30))

        def far(w: Any) -> Any:
            return erfcx_mp(1 / mpmath.sqrt(w)) / mpmath.sqrt(w)

        def polynomial(f: Callable[[Any], Any], interval: list[Any], terms: int,
                       split: bool = True) -> tuple[float, ...]:
            c = mpmath.chebyfit(f, interval, terms)[::-1]  # (lowest first)
            head = (float(c[0]), float(c[0] - float(c[0]))) if split else (float(c[0]),)
            return head + tuple(float(v) for v in c[1:])

        def table(f: Callable[[Any], Any], binades: range, terms: int) -> tuple[tuple, ...]:
            rows = []
            for e in binades:  # [2^e, 2^(e + 1)) in eighths, τ = 8 x / 2^e − (8 + i) − 1/2
                for i in range(8):
                    centre, width = (1 + (i + 0.5) / mpmath.mpf(8)) * 2**e, mpmath.mpf(2)**e / 8
                    rows.append(polynomial(lambda tau: f(centre + tau * width),
                                           [-0.5, 0.5], terms))
            return tuple(rows)

        return {"NEAR_0": polynomial(near_0, [0, mpmath.mpf(1) / 16], 8, split=False),
                "ERFCX_ROWS": table(erfcx_mp, range(-2, 3), 12),
                "ERF_ROWS": table(mpmath.erf, range(-2, -1), 10),
                "FAR": polynomial(far, [0, mpmath.mpf(1) / 64], 11)}


def _source(tables: dict[str, tuple]) -> str:
    """The tables as Python source, three numbers a line."""
    def numbers(values: tuple[float, ...], indent: str) -> str:
        lines = [", ".join(repr(v) for v in values[k:k + 3]) for k in range(0, len(values), 3)]
        return "(" + f",\n{indent}".join(lines) + ")"

    out = []
    for name, value in tables.items():
        if isinstance(value[0], tuple):
            rows = ",\n    ".join(numbers(row, "     ") for row in value)
            out.append(f"{name} = (\n    {rows})")
        else:
            out.append(f"{name} = {numbers(value, ' ' * (len(name) + 4))}")
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:] != ["--fit"]:
        sys.exit("usage: python -m diffkit.primitives.error_function --fit")
    print(_source(fit()))
