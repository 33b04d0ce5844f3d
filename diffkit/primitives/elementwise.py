"""Elementwise primitives: arithmetic, powers, transcendental and non-smooth functions.

Every entry is complete: numpy implementation, JVP rule (tangent ``x_dot`` in, tangent
out), VJP rule (adjoint ``y_bar`` in, adjoint of the argument out) and sympy
translation. A unary function needs only its derivative ``d(y, x)`` (``y = f(x)`` is
passed too, when it is cheaper to use) and says which of the two it reads (``saves``:
what a reverse-mode tape keeps): forward mode computes ``x_dot * d``, reverse mode
``y_bar * d``. Rules are written with the primitives themselves, so they can be
differentiated again (Hessians, nested derivatives). Broadcasting is undone by the
interpreters, once, not in each rule.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import Box, NotApplicable, Primitive, primal, shape
from . import lowering as low
from . import patterns, series
from .extended import EXTENDED, rounded, rounded_derivative, rounded_rule
from . import sinc_derivative as sinc_series
from .compare import mask, select, without_derivatives
from .structure import align


def unary(name: str, impl: np.ufunc | Callable, d: Callable[[Any, Any], Any], saves: str,
          sympy: Callable[..., Any], array_api: str | Callable | None = None,
          **facts: Any) -> Primitive:
    """A unary elementwise primitive from its derivative ``d(y, x)``, which reads ``saves``;
    ``facts`` are the entry's other fields (``lower=``, ``taylor=`` …). An elementary
    function rounded once (``impl = rounded(np.f)``) that saves x has its derivative's value
    rounded once too (:func:`~.extended.rounded_derivative`)."""
    if _ufunc(impl) is not None and impl is not _ufunc(impl) and "x" in saves.split():
        d = rounded_derivative(d, impl if "y" in saves.split() else None)
    return Primitive(
        name, impl,
        jvp=(lambda x_dot, y, x: x_dot * d(y, x),),
        vjp=(lambda y_bar, y, x: y_bar * d(y, x),),
        saves=(saves,), sympy=sympy, broadcasts=True,
        ufunc=_ufunc(impl), array_api=array_api, **facts,
    )


def _ufunc(impl: Callable) -> np.ufunc | None:
    """The numpy ufunc an implementation computes (``rounded(np.exp)`` computes np.exp)."""
    base = getattr(impl, "__wrapped__", impl)
    return base if isinstance(base, np.ufunc) else None


def _sigmoid(x: Any) -> Any:
    """1 / (1 + e^-x) from e = exp(-|x|), as scipy.special.expit: e / (1 + e) for x < 0,
    where 1 - (a number near 1) would leave a rounding error (0.5 tanh(x/2) + 0.5 does);
    complex values by tanh."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return 0.5 * np.tanh(0.5 * x) + 0.5
    e = np.empty(x.shape, x.dtype if x.dtype.kind == "f" else np.float64)
    np.abs(x, out=e)  # (in place: e = exp(-|x|) takes one buffer)
    np.negative(e, out=e)
    np.exp(e, out=e)
    out = np.where(x >= 0, 1.0, e)
    e += 1.0
    np.divide(out, e, out=out)
    return out[()] if out.ndim == 0 else out


def _zero(y: Any, x: Any) -> np.ndarray:
    return np.zeros(shape(y))


exp = unary("exp", rounded(np.exp), lambda y, x: y, "y", lambda sp, x: sp.exp(x),
            lower=low.libm("exp"), taylor=series.ode(np.exp, lambda y, m: y[m]), complex=True)
log = unary("log", rounded(np.log), lambda y, x: 1.0 / x, "x", lambda sp, x: sp.log(x),
            lower=low.libm("log"), taylor=series.log, complex=True)
log1p = unary("log1p", rounded(np.log1p), lambda y, x: 1.0 / (1.0 + x), "x",
              lambda sp, x: sp.log(1 + x), lower=low.libm("log1p"), complex=True)


def _dsqrt(y: Any, x: Any) -> Any:
    """sqrt'(x) = x^(-1/2) / 2 by one pow: 0.5 / y takes the rounding of y = sqrt(x) and of
    the quotient (1.4 ulps), pow rounds once (0.7), and its own derivative, -x^(-3/2) / 4, is
    one pow again. On complex values and formulas 0.5 / y (numpy's complex pow is less
    accurate than its sqrt)."""
    if is_complex(x) or getattr(x, "expression", False):
        return 0.5 / y
    return 0.5 * power(x, -0.5)


sqrt = unary("sqrt", np.sqrt, _dsqrt, "y x", lambda sp, x: sp.sqrt(x),
             lower=low.libm("sqrt"), taylor=series.sqrt, complex=True)
sin = unary("sin", rounded(np.sin), lambda y, x: cos(x), "x", lambda sp, x: sp.sin(x),
            lower=low.libm("sin"), taylor=series.pair(np.sin, np.cos, -1.0, 0), complex=True)
cos = unary("cos", rounded(np.cos), lambda y, x: -sin(x), "x", lambda sp, x: sp.cos(x),
            lower=low.libm("cos"), taylor=series.pair(np.sin, np.cos, -1.0, 1), complex=True)
tan = unary("tan", rounded(np.tan), lambda y, x: 1.0 + y * y, "y x", lambda sp, x: sp.tan(x),
            lower=low.libm("tan"),
            taylor=series.ode(np.tan, lambda y, m: (m == 0) + series.square(y, m)), complex=True)


def _one_minus_square(x: Any) -> Any:
    """1 - x^2: as (1 - x)(1 + x) for |x| >= 1/2, exact to a rounding where x^2 rounds first
    (from x = 1 - 1e-10, 1 - x * x keeps 6 digits); as 1 - x * x below, whose derivative -2x
    keeps its digits near 0 (that of (1 - x)(1 + x) is (1 - x) - (1 + x))."""
    if is_complex(x) or getattr(x, "expression", False):
        return 1.0 - x * x
    return select(mask(np.less, abs(x), 0.5), 1.0 - x * x, (1.0 - x) * (1.0 + x))


def _darcsin(x: Any) -> Any:
    """arcsin'(x) = (1 - x^2)^(-1/2) as sqrt(1 / (1 - x^2)): the quotient's rounding is halved
    by the root, which rounds last (1.3 ulps at most; 1 / sqrt(...) 1.9); 1 / sqrt on complex
    values and formulas (the principal branch, as numpy's)."""
    if is_complex(x) or getattr(x, "expression", False):
        return 1.0 / sqrt(1.0 - x * x)
    return sqrt(1.0 / _one_minus_square(x))


arcsin = unary("arcsin", rounded(np.arcsin), lambda y, x: _darcsin(x), "x",
               lambda sp, x: sp.asin(x), "asin", lower=low.libm("asin"), complex=True)
arccos = unary("arccos", rounded(np.arccos), lambda y, x: -_darcsin(x), "x",
               lambda sp, x: sp.acos(x), "acos", lower=low.libm("acos"), complex=True)


_VELTKAMP = 2.0**27 + 1.0


def _split(v: Any) -> tuple[Any, Any]:
    """``v = h + l``, h the leading 26 bits of v and l the rest (Veltkamp's splitting, exact
    for |v| < 2^995), so h * h and products of 26-bit parts are exact. In real arithmetic
    h = v and l = 0: a derivative takes h's tangent as v's (to within 2^-26) and l's as their
    difference (exactly), and every identity below holds whatever h is, so the parts of a
    tangent add up to it within a rounding."""
    c = _VELTKAMP * v
    h = c - (c - v)
    return h, v - h


def _two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """``a + b = s + t`` exactly, s the rounded sum (Knuth's two-sum). In real arithmetic t
    is 0, and so are its derivatives."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def _sum_of_squares(a: Any, b: Any, b_exact: bool = False) -> tuple[Any, Any]:
    """``a^2 + b^2 = s + t``, s rounded and t its rounding error, to within 2^-100 of the
    sum, for 2^-480 < max(|a|, |b|) < 2^500: with a = ha + la (:func:`_split`),
    a^2 = ha^2 + la (a + ha), ha^2 exact and the rest 2^-25 of it; the exact sum of the
    leading squares (:func:`_two_sum`), the rest added to its error, the two renormalized.
    ``b_exact``: b is a power of two (its square is exact as it is)."""
    ha, la = _split(a)
    rest, hb = la * (a + ha), b
    if not b_exact:
        hb, lb = _split(b)
        rest = rest + lb * (b + hb)
    s, t = _two_sum(ha * ha, hb * hb)
    r = t + rest
    total = s + r
    return total, r - (total - s)


def _reciprocal(s: Any, t: Any, u: Any = 1.0) -> Any:
    """``u / (s + t)`` for |t| within an ulp of s: ``q - q (t / s)`` with ``q = u / s``, the
    rounding of the quotient and of the difference (within 1 ulp)."""
    q = u / s
    return q - q * (t / s)


# (bound, scale): beyond (below) each power of two max(|a|, |b|) is scaled by the other,
# exactly, into 2^-192 .. 2^256, where squares are normal numbers and the adjoints of
# reverse mode (1 / s^2 for a quotient by s) do not underflow before the derivative does
_SCALES = ((2.0**512, 2.0**-768), (2.0**128, 2.0**-320))
_CLIP = 2.0**400  # a scaled argument beyond this (an infinite one) gives the limit, 0


def _scale(m: Any, small: bool = True) -> Any:
    """The power of two of :data:`_SCALES` for max(|a|, |b|) = m (``small``: m may be below
    2^-128), computed on values (piecewise constant: no derivative); None where m is an
    array of values between 2^-128 (or 0) and 2^128: the scale is 1 throughout, and eager
    code skips the scaling (which would change no digit)."""
    if isinstance(m, np.ndarray) and np.all(m < _SCALES[-1][0]) and not (
            small and np.any((m < 1.0 / _SCALES[-1][0]) & (m != 0.0))):
        return None
    sigma = 1.0
    for bound, scale in reversed(_SCALES):
        sigma = select(mask(np.greater_equal, m, bound), scale, sigma)
        if small:
            sigma = select(mask(np.less, m, 1.0 / bound), 1.0 / scale, sigma)
    return sigma


def _clip(v: Any) -> Any:
    return maximum(minimum(v, _CLIP), -_CLIP)


def _over_square(a: Any, b: Any, which: int) -> Any:
    """a / (a^2 + b^2) (``which`` 0) or b / (a^2 + b^2) (1), with a^2 + b^2 = s + t to
    2^-100 (:func:`_sum_of_squares`) and the quotient corrected by t (:func:`_reciprocal`):
    within 1 ulp. (u / r) / r with r = hypot(a, b) rounds r, doubled, and two quotients
    (2 ulps); u / (a * a + b * b) its sum, an ulp where that is near a power of two, and
    overflows from 1.3e154. a and b are first scaled by a power of two (:func:`_scale`),
    exactly, and the result scaled back; an infinite one is clipped (the result is then 0,
    the limit). The formula on complex values (hypot is not holomorphic) and on formulas."""
    if is_complex(a) or is_complex(b) or getattr(a, "expression", False) \
            or getattr(b, "expression", False):
        return (a, b)[which] / (a * a + b * b)
    sigma = _scale(maximum(abs(without_derivatives(a)), abs(without_derivatives(b))))
    if sigma is None:
        return _reciprocal(*_sum_of_squares(a, b), (a, b)[which])
    a, b = _clip(a * sigma), _clip(b * sigma)
    return _reciprocal(*_sum_of_squares(a, b), (a, b)[which]) * sigma


def _darctan(x: Any) -> Any:
    """1 / (1 + x^2) as arctan2's rule computes 1 / (x^2 + 1^2) (:func:`_over_square`), 1
    scaled with x to a power of two: within 1 ulp. 1 / (1 + x * x) takes the rounding of
    1 + x^2, an ulp of the result where it is near 1 (1.9 ulps; JAX's, with a fused
    multiply-add, 1.5), and its reverse-mode derivative underflows from |x| = 1e77
    (1 / s^2). Every step is a sum, a product or a quotient whose derivative does not
    cancel, so the second derivative keeps its digits too; the textbook formula on complex
    values and formulas."""
    if is_complex(x) or getattr(x, "expression", False):
        return 1.0 / (1.0 + x * x)
    sigma = _scale(abs(without_derivatives(x)), small=False)
    if sigma is None:
        return _reciprocal(*_sum_of_squares(x, 1.0, b_exact=True))
    return _reciprocal(*_sum_of_squares(_clip(x * sigma), sigma, b_exact=True), sigma) * sigma


arctan = unary("arctan", rounded(np.arctan), lambda y, x: _darctan(x), "x",
               lambda sp, x: sp.atan(x), "atan", lower=low.libm("atan"), complex=True)
sinh = unary("sinh", rounded(np.sinh), lambda y, x: cosh(x), "x", lambda sp, x: sp.sinh(x),
             lower=low.libm("sinh"), taylor=series.pair(np.sinh, np.cosh, 1.0, 0), complex=True)
cosh = unary("cosh", rounded(np.cosh), lambda y, x: sinh(x), "x", lambda sp, x: sp.cosh(x),
             lower=low.libm("cosh"), taylor=series.pair(np.sinh, np.cosh, 1.0, 1), complex=True)


def _dtanh(x: Any, y: Any) -> Any:
    """tanh'(x) = 1 - y^2 (y = tanh x) for |x| < 0.625, where y^2 < 0.31 and the difference
    keeps its digits; beyond, q (2 - q) with q = 2e / (1 + e) = 1 - |y| and e = exp(-2|x|)
    (= 4e / (1 + e)^2 = 1 / cosh^2 x): 1 - y^2 cancels there (every digit once y rounds to
    1, |x| > 19). Each branch is a product or a quotient of terms of one sign, so its own
    derivative (the second) keeps its digits too; for complex values 1 - y^2 (holomorphic,
    as the rule must be). q is computed as the compiled ``tanh`` computes it
    (``compiler/vector_math.py``), so a kernel computing both computes e and q once."""
    if is_complex(x) or getattr(x, "expression", False):
        return 1.0 - y * y
    a = abs(x)
    e = exp(-2.0 * a)
    q = (e + e) / (1.0 + e)
    return select(mask(np.less, a, 0.625), 1.0 - y * y, q * (2.0 - q))


tanh = unary("tanh", rounded(np.tanh), lambda y, x: _dtanh(x, y), "y x", lambda sp, x: sp.tanh(x),
             lower=low.libm("tanh"),
             taylor=series.logistic(np.tanh, lambda x: _dtanh(x, np.tanh(x)), 1.0, 1.0),
             complex=True)
# sigmoid'(x) = tanh'(x/2) / 4 (sigmoid(x) = (1 + tanh(x/2)) / 2): the same two branches, so
# no digit is lost where sigmoid rounds to 1 (y (1 - y) is 0 there, x > 37) nor in the second
# derivative near 0 (sigmoid(x) sigmoid(-x), differentiated, subtracts two numbers near 1/8)


def _dsigmoid(x: Any) -> Any:
    return 0.25 * _dtanh(0.5 * x, tanh(0.5 * x))


sigmoid = unary("sigmoid", _sigmoid, lambda y, x: _dsigmoid(x), "x",
                lambda sp, x: 1 / (1 + sp.exp(-x)), lambda xp, x: 1.0 / (1.0 + xp.exp(-x)),
                lower=low.Lowering(low.sigmoid, ulps=low.SIMD_ULPS["exp"] + 1),
                taylor=series.logistic(_sigmoid, _dsigmoid, 0.5, 0.5), complex=True)
sign = unary("sign", np.sign, _zero, "", lambda sp, x: sp.sign(x), lower=low.Lowering(low.sign),
             zero_derivative=True)

neg = Primitive(
    "neg", operator.neg,
    jvp=(lambda x_dot, y, x: -x_dot,),
    vjp=(lambda y_bar, y, x: -y_bar,),
    saves=("",),
    sympy=lambda sp, x: -x, broadcasts=True, ufunc=np.negative, array_api="negative",
    lower=low.infix("neg"),
    linear=True,
    complex=True,
)
add = Primitive(
    "add", operator.add,
    jvp=(lambda x_dot, z, x, y: x_dot, lambda y_dot, z, x, y: y_dot),
    vjp=(lambda z_bar, z, x, y: z_bar, lambda z_bar, z, x, y: z_bar),
    saves=("", ""),
    sympy=lambda sp, x, y: x + y, broadcasts=True, ufunc=np.add,
    lower=low.infix("add"),
    linear=True,
    complex=True,
)
sub = Primitive(
    "sub", operator.sub,
    jvp=(lambda x_dot, z, x, y: x_dot, lambda y_dot, z, x, y: -y_dot),
    vjp=(lambda z_bar, z, x, y: z_bar, lambda z_bar, z, x, y: -z_bar),
    saves=("", ""),
    sympy=lambda sp, x, y: x - y, broadcasts=True, ufunc=np.subtract, array_api="subtract",
    lower=low.infix("sub"),
    linear=True,
    complex=True,
)
mul = Primitive(
    "mul", operator.mul,
    jvp=(lambda x_dot, z, x, y: x_dot * y, lambda y_dot, z, x, y: x * y_dot),
    vjp=(lambda z_bar, z, x, y: z_bar * y, lambda z_bar, z, x, y: x * z_bar),
    saves=("y", "x"),
    sympy=lambda sp, x, y: x * y, broadcasts=True, ufunc=np.multiply, array_api="multiply",
    lower=low.infix("mul"),
    taylor=series.product,
    complex=True,
)
div = Primitive(
    "div", np.true_divide,
    jvp=(lambda x_dot, z, x, y: x_dot / y, lambda y_dot, z, x, y: -y_dot * z / y),
    vjp=(lambda z_bar, z, x, y: z_bar / y, lambda z_bar, z, x, y: -z_bar * z / y),
    saves=("y", "z y"),
    sympy=lambda sp, x, y: x / y, broadcasts=True, ufunc=np.true_divide, array_api="divide",
    lower=low.infix("div"),
    taylor=series.quotient,
    complex=True,
)


_POWER = rounded(np.power)


def _power(x: Any, y: Any) -> Any:
    """x ** y rounded once (:func:`~.extended.rounded`), but for the exponents numpy computes
    exactly rounded already, and faster: 2, 0.5 and -1 (x·x, √x, 1/x), 0 and 1; a constant
    half-integer exponent below 8 in magnitude (sqrt′ is x^-0.5) as x^(y - 1/2) √x in long
    double, three roundings 2⁻¹¹ ulp apart where long double's pow takes 0.5 µs a number.

    >>> float(_power(np.float64(4.0), -1.5)), float(_power(np.float64(2.0), 3.0))
    (0.125, 8.0)
    """
    if np.ndim(y) == 0 and y in (0, 1, 2, 0.5, -1):
        return np.power(x, y)
    kind = np.result_type(x)
    if EXTENDED and np.isrealobj(y) and np.ndim(y) == 0 and y % 1 == 0.5 and abs(y) < 8 \
            and kind in (np.float64, np.longdouble):
        wide = np.asarray(x, np.longdouble)
        with np.errstate(divide="ignore", invalid="ignore"):  # (said by numpy's power below)
            out = np.power(wide, y - 0.5) * np.sqrt(wide)
        edge = (wide == 0) | np.isinf(wide) | (wide < 0)  # (0 · inf, NaN: numpy's power)
        out = (np.where(edge, np.power(wide, y), out) if edge.any() else out).astype(kind)
        return out[()] if out.ndim == 0 else out
    return _POWER(x, y)


def _dpow_dx(x: Any, y: Any) -> Any:
    """d(x**y)/dx = y x^(y-1), exactly 0 where y == 0 (not 0 * inf at x = 0); x^(y-1) by the
    primitive (on arrays ``**`` would be numpy's own pow, not rounded once).

    Where y == 0 the product ``y * x^(y-1)`` is kept, not replaced by a constant, so its
    derivative in y (the mixed second derivative, 1/x) survives; only at x = y = 0 the
    base is swapped for 1 (nothing infinite is computed) and the result is the constant 0.
    """
    if not isinstance(y, Box) and np.ndim(y) == 0:  # a constant exponent: the common case
        return 0.0 * x if y == 0 else (2.0 * x if y == 2 else y * power(x, y - 1))
    both_zero = mask(np.equal, abs(x) + abs(y), 0.0)  # x = y = 0 (one mask per example: vmap)
    return select(both_zero, 0.0, y * power(select(both_zero, 1.0, x), y - 1))


def _dpow_dy(z: Any, x: Any) -> Any:
    """d(x**y)/dy = x^y log x, exactly 0 where x == 0 (the double-where keeps log(0) out)."""
    at_zero = mask(np.equal, x, 0.0)  # (one mask per example under vmap)
    return select(at_zero, 0.0, z * log(select(at_zero, 1.0, x)))


def _small_integer(y: Any) -> bool:
    """A constant exponent 0, 1 or 2, whose x-derivative 0, 1, 2x is exact in doubles."""
    return np.ndim(y) == 0 and not isinstance(y, Box) and y in (0, 1, 2)


power = Primitive(
    "power", _power,
    jvp=(rounded_rule(lambda x_dot, z, x, y: x_dot * _dpow_dx(x, y), exact=_small_integer),
         rounded_rule(lambda y_dot, z, x, y: y_dot * _dpow_dy(z, x), _power)),
    vjp=(rounded_rule(lambda z_bar, z, x, y: z_bar * _dpow_dx(x, y), exact=_small_integer),
         rounded_rule(lambda z_bar, z, x, y: z_bar * _dpow_dy(z, x), _power)),
    saves=("x y", "z x y"),  # (y too: the rule rounded once recomputes z from x and y)
    sympy=lambda sp, x, y: x**y, broadcasts=True, ufunc=np.power, array_api="pow",
    lower=low.Lowering(low.power, "{0} ** {1}", ulps=low.SIMD_ULPS["pow"]),
    taylor=series.power,
    complex=True,
)


def _share(x: Any, y: Any) -> Any:
    """Weight of x in max(x, y): 1 where x wins, 1/2 at ties (as JAX and PyTorch do)."""
    return select(mask(np.greater, x, y), 1.0, select(mask(np.equal, x, y), 0.5, 0.0))


maximum = Primitive(
    "maximum", np.maximum,
    jvp=(lambda x_dot, z, x, y: x_dot * _share(x, y), lambda y_dot, z, x, y: y_dot * _share(y, x)),
    vjp=(lambda z_bar, z, x, y: z_bar * _share(x, y), lambda z_bar, z, x, y: z_bar * _share(y, x)),
    saves=("x y", "x y"),
    sympy=lambda sp, x, y: sp.Max(x, y), broadcasts=True, ufunc=np.maximum,
    lower=low.Lowering(low.extremum("greater")),
    sparsity=patterns.extremum(np.greater),
    complex=True,
)
minimum = Primitive(
    "minimum", np.minimum,
    jvp=(lambda x_dot, z, x, y: x_dot * _share(y, x), lambda y_dot, z, x, y: y_dot * _share(x, y)),
    vjp=(lambda z_bar, z, x, y: z_bar * _share(y, x), lambda z_bar, z, x, y: z_bar * _share(x, y)),
    saves=("x y", "x y"),
    sympy=lambda sp, x, y: sp.Min(x, y), broadcasts=True, ufunc=np.minimum,
    lower=low.Lowering(low.extremum("less")),
    sparsity=patterns.extremum(np.less),
    complex=True,
)


def _where(x: Any, y: Any, *, cond: np.ndarray) -> Any:
    return np.where(cond, x, y)


def _where_batch(args: list, batched: tuple, size: int, cond: np.ndarray) -> Any:
    """``where`` over a batch of ``x``/``y``; the condition is the same for every example
    (the condition of forward mode's batched tangents is computed from primal values)."""
    x, y = align(args, batched, size, rank=np.ndim(cond))
    return where(x, y, cond=cond)


where = Primitive(
    "where", _where,
    jvp=(lambda x_dot, z, x, y, *, cond: where(x_dot, 0.0, cond=cond),
         lambda y_dot, z, x, y, *, cond: where(0.0, y_dot, cond=cond)),
    vjp=(lambda z_bar, z, x, y, *, cond: where(z_bar, 0.0, cond=cond),
         lambda z_bar, z, x, y, *, cond: where(0.0, z_bar, cond=cond)),
    saves=("", ""),
    sympy=lambda sp, x, y, *, cond: sp.Piecewise((x, cond), (y, True)), broadcasts=True,
    batch=lambda args, batched, size, *, cond: _where_batch(args, batched, size, cond),
    array_api=lambda xp, x, y, *, cond: xp.where(xp.asarray(cond), x, y),
    lower="its condition is a constant mask (a parameter, not an operand); a traced "
          "condition becomes select, which fuses",
    linear=True, sparsity=patterns.where,
    complex=True,
)


# --------------------------------------------------------------------------- more functions
# (the rest of numpy's elementwise functions; compositions such as square, log2 or
# deg2rad live in diffkit.numpy, where their derivatives come from the primitives above)


def no_closed_form(name: str) -> Callable[..., Any]:
    """The sympy translation of a function with no closed form in sympy: a clear error
    that the harness reports as a "n/a" cell."""
    def refuse(sp: Any, *args: Any, **params: Any) -> Any:
        raise NotApplicable(f"the symbolic backend needs a closed form, but {name} has no "
                           "closed form here; use another backend")
    refuse.no_closed_form = True  # type: ignore[attr-defined]
    return refuse


LN2 = float(np.log(2.0))



def _dcbrt(y: Any, x: Any) -> Any:
    """cbrt'(x) = 1 / (3 y^2) = (y / x) / 3: y's error once and two quotients (1.8 ulps;
    1 / (3 y y) doubles y's and rounds three times more, 3); y / x is no over- or underflow
    for any x (3 x overflows from 6e307), and +inf at x = 0 (from a harmless 1). The
    formula 1 / (3 y^2) on formulas."""
    if getattr(x, "expression", False):
        return 1.0 / (3.0 * y * y)
    at_zero = mask(np.equal, x, 0.0)
    return select(at_zero, np.inf, y / select(at_zero, 1.0, x) / 3.0)


cbrt = unary("cbrt", rounded(np.cbrt), _dcbrt, "y x", lambda sp, x: sp.real_root(x, 3),
             lambda xp, x: xp.sign(x) * xp.abs(x) ** (1.0 / 3.0),
             lower=low.Lowering(low.cbrt, ulps=2))
exp2 = unary("exp2", rounded(np.exp2), lambda y, x: LN2 * y, "y x", lambda sp, x: 2**x,
             lambda xp, x: xp.pow(2.0, x), lower=low.libm("exp2"), complex=True)
# (expm1' = exp(x), not y + 1: y + 1 is 1 + (a number near -1) for x < 0, every digit lost
# by x = -37)
expm1 = unary("expm1", rounded(np.expm1), lambda y, x: exp(x), "x", lambda sp, x: sp.exp(x) - 1,
              lower=low.libm("expm1"), complex=True)


def _hypot1(x: Any) -> Any:
    """sqrt(x^2 + 1): hypot(x, 1) on real numbers (no overflow), the formula on complex ones."""
    return sqrt(x * x + 1.0) if is_complex(x) else hypot(x, 1.0)


# (hypot(x, 1) and sqrt(x - 1) sqrt(x + 1), not sqrt(x^2 + 1) and sqrt(x^2 - 1): x^2 overflows
# beyond 1.3e154, and rounds before the difference is taken near x = 1)
arcsinh = unary("arcsinh", rounded(np.arcsinh), lambda y, x: 1.0 / _hypot1(x), "x",
                lambda sp, x: sp.asinh(x), "asinh", lower=low.libm("asinh"), complex=True)
arccosh = unary("arccosh", rounded(np.arccosh),
                lambda y, x: 1.0 / (sqrt(x - 1.0) * sqrt(x + 1.0)), "x",
                lambda sp, x: sp.acosh(x), "acosh", lower=low.libm("acosh"), complex=True)
arctanh = unary("arctanh", rounded(np.arctanh), lambda y, x: 1.0 / _one_minus_square(x), "x",
                lambda sp, x: sp.atanh(x), "atanh", lower=low.libm("atanh"), complex=True)


def _sinc(x: Any) -> Any:
    """sin(pi x) / (pi x), 1 at 0 (numpy's sinc, with numpy's 1e-20 for x = 0), sin(pi x) as
    (-1)^n sin(pi (x - n)) for n = rint(x), x - n exact: numpy's sin(pi * x) takes the
    rounding of pi x, every digit next to the zeros (x = 1 - 1e-15) and beyond x = 1e15."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return np.sinc(x)
    with np.errstate(invalid="ignore"):
        y = np.where(x == 0, 1.0e-20, x)
        n = np.rint(y)
        out = np.sin(np.pi * (y - n)) * (1.0 - 2.0 * np.abs(np.fmod(n, 2.0))) / (np.pi * y)
    return out[()] if out.ndim == 0 else out


def _cospi(x: Any) -> Any:
    """cos(pi x) as (-1)^n cos(pi (x - n)), n = rint(x) (pi x rounded first is no number
    beyond 1e15); the formula on complex values and formulas."""
    if is_complex(x) or getattr(x, "expression", False):
        return cos(np.pi * x)
    n = rint(x)
    return cos(np.pi * (x - n)) * (1.0 - 2.0 * abs(fmod(n, 2.0)))


def _series(x: Any, coefficients: Sequence[float]) -> Any:
    """sum_n c_n x^(2n-2), n = 1, 2 ... (Horner's rule in x^2, on primitives)."""
    xx, total = x * x, 0.0
    for c in reversed(coefficients):
        total = total * xx + c
    return total


def _dsinc(y: Any, x: Any) -> Any:
    """d sinc(x)/dx: the primitive :data:`sinc_derivative` on real numbers; on complex values
    and formulas (cos(pi x) - sinc(x)) / x, and its Taylor series near 0."""
    if not (is_complex(x) or getattr(x, "expression", False)):
        return sinc_derivative(x, n=1)
    near_zero = mask(np.less, abs(x), sinc_series.NEAR)  # (one mask per example under vmap)
    safe = _choose(near_zero, 1.0, x)
    return _choose(near_zero, _series(x, sinc_series.SERIES) * x, (_cospi(x) - y) / safe)


def _sinc_derivative_d(x_dot: Any, y: Any, x: Any, *, n: int) -> Any:
    """The derivative of sinc_derivative(x, n): sinc'' itself the primitive (n = 1); sinc''' as
    -(3 sinc'' + pi^2 sinc + pi^2 x sinc') / x (sinc's equation differentiated), near 0 the
    series differentiated term by term."""
    if n == 1:
        return x_dot * sinc_derivative(x, n=2)
    if is_complex(x) or getattr(x, "expression", False):  # (the formula: no masks)
        return -x_dot * (3.0 * y + np.pi**2 * sinc(x) + np.pi**2 * x * sinc_derivative(x, n=1)) / x
    near_zero = mask(np.less, abs(x), sinc_series.NEAR)
    safe = _choose(near_zero, 1.0, x)
    slopes = [c * (2 * k - 1) * (2 * k - 2) for k, c in enumerate(sinc_series.SERIES, start=1)]
    far = -(3.0 * y + np.pi**2 * sinc(safe) + np.pi**2 * safe * sinc_derivative(safe, n=1)) / safe
    return x_dot * _choose(near_zero, _series(x, slopes[1:]) * x, far)


def _choose(cond: Any, a: Any, b: Any) -> Any:
    """``a`` where the mask ``cond`` holds, else ``b``; on formulas (the symbolic backend
    runs the rule on symbols) the mask is an inequality, and the choice a Piecewise."""
    return where(a, b, cond=cond) if getattr(cond, "is_Relational", False) else select(cond, a, b)


sinc = unary("sinc", _sinc, _dsinc, "y x", lambda sp, x: sp.sinc(sp.pi * x),
             lambda xp, x: xp.where(x == 0, 1.0, xp.sin(np.pi * x) / (np.pi * xp.where(x == 0, 1.0, x))),
             lower=low.Lowering(low.sinc))
sinc_derivative = Primitive(  # sinc'(x) (n = 1), sinc''(x) (n = 2): sinc_derivative.py
    "sinc_derivative", sinc_series.sinc_derivative,
    jvp=(_sinc_derivative_d,),
    vjp=(lambda y_bar, y, x, *, n: _sinc_derivative_d(y_bar, y, x, n=n),),
    saves=("y x",), broadcasts=True,
    sympy=lambda sp, x, *, n: sp.diff(sp.sin(sp.pi * x) / (sp.pi * x), x, n),
    array_api=lambda xp, x, *, n: _sinc_derivative_array(xp, x, n),
    lower=("diffkit's own routine (in long double, a series near 0), one vectorized numpy "
           "call between kernels"))


def _sinc_derivative_array(xp: Any, x: Any, n: int) -> Any:
    s, c = xp.sin(np.pi * x), xp.cos(np.pi * x)
    slope = (np.pi * x * c - s) / (np.pi * x * x)
    return slope if n == 1 else -np.pi**2 * s / (np.pi * x) - 2.0 * slope / x


@functools.cache
def flat(sp: Any, name: str) -> Any:
    """sympy's ``floor`` / ``ceiling`` with derivative 0 (sympy leaves it unevaluated);
    it keeps the name, so printers and lambdify treat it as the original."""
    return type(name, (getattr(sp, name),), {"fdiff": lambda self, argindex=1: sp.S.Zero})


floor = unary("floor", np.floor, _zero, "", lambda sp, x: flat(sp, "floor")(x),
              lower=low.libm("floor"), zero_derivative=True)
ceil = unary("ceil", np.ceil, _zero, "", lambda sp, x: flat(sp, "ceiling")(x),
             lower=low.libm("ceil"), zero_derivative=True)
rint = unary("rint", np.rint, _zero, "", no_closed_form("rint"),
             lambda xp, x: xp.round(x), lower=low.libm("rint"), zero_derivative=True)


def _floor_div(x: Any, y: Any) -> Any:
    return floor(x / y)  # (a primitive: its derivative, zero, is known to every interpreter)


@functools.cache
def _sympy_mod(sp: Any) -> Any:
    """sympy's Mod with its derivatives (1, and -floor(x / y)), which sympy leaves unevaluated."""
    def fdiff(self: Any, argindex: int = 1) -> Any:
        x, y = self.args
        return sp.S.One if argindex == 1 else -flat(sp, "floor")(x / y)
    return type("Mod", (sp.Mod,), {"fdiff": fdiff})


mod = Primitive(  # numpy's mod / remainder: x - floor(x / y) y, the sign of y
    "mod", np.mod,
    jvp=(lambda x_dot, z, x, y: x_dot, lambda y_dot, z, x, y: -y_dot * _floor_div(x, y)),
    vjp=(lambda z_bar, z, x, y: z_bar, lambda z_bar, z, x, y: -z_bar * _floor_div(x, y)),
    saves=("", "x y"),
    sympy=lambda sp, x, y: _sympy_mod(sp)(x, y), broadcasts=True, ufunc=np.mod,
    array_api="remainder",
    lower=low.Lowering(low.mod),
)


def _trunc_div(x: Any, y: Any) -> Any:
    return sign(x) * sign(y) * floor(abs(x) / abs(y))


fmod = Primitive(  # C's fmod: x - trunc(x / y) y, the sign of x
    "fmod", np.fmod,
    jvp=(lambda x_dot, z, x, y: x_dot, lambda y_dot, z, x, y: -y_dot * _trunc_div(x, y)),
    vjp=(lambda z_bar, z, x, y: z_bar, lambda z_bar, z, x, y: -z_bar * _trunc_div(x, y)),
    saves=("", "x y"),
    sympy=lambda sp, x, y: x - y * sp.sign(x) * sp.sign(y) * flat(sp, "floor")(sp.Abs(x) / sp.Abs(y)),
    broadcasts=True, ufunc=np.fmod, array_api=lambda xp, x, y: x - y * xp.trunc(x / y),
    lower=low.libm("fmod"),
)


arctan2 = Primitive(  # arctan2(y, x), the angle of the point (x, y); named a, b here
    "arctan2", rounded(np.arctan2),
    jvp=(rounded_rule(lambda a_dot, z, a, b: a_dot * _over_square(a, b, 1)),
         rounded_rule(lambda b_dot, z, a, b: -b_dot * _over_square(a, b, 0))),
    vjp=(rounded_rule(lambda z_bar, z, a, b: z_bar * _over_square(a, b, 1)),
         rounded_rule(lambda z_bar, z, a, b: -z_bar * _over_square(a, b, 0))),
    saves=("a b", "a b"),
    sympy=lambda sp, a, b: sp.atan2(a, b), broadcasts=True, ufunc=np.arctan2, array_api="atan2",
    lower=low.libm("atan2"),
)


def _hypot_share(a: Any, b: Any, z: Any) -> Any:
    """d hypot(a, b) / da = a / z; where |a| >= |b| as sign(a) sqrt(1 / (1 + (b/a)^2)), the
    root rounding last (within 1.3 ulps; a / z 1.5, sign(a) / sqrt(...) 1.9): the
    derivative of a / z, 1 / z - a^2 / z^3, cancels there (every digit once a^2 / z^2 rounds
    to 1), that of the second form is a product (b^2 / z^3). The formula on complex values
    and formulas."""
    if is_complex(a) or is_complex(b) or getattr(a, "expression", False) \
            or getattr(b, "expression", False):
        return a / z
    big = mask(np.greater_equal, abs(a), abs(b))
    r = select(big, b, 0.0) / select(big, a, 1.0)
    return select(big, sign(a) * sqrt(1.0 / (1.0 + r * r)), a / select(big, 1.0, z))


hypot = Primitive(
    "hypot", rounded(np.hypot),
    jvp=(rounded_rule(lambda x_dot, z, x, y: x_dot * _hypot_share(x, y, z), np.hypot),
         rounded_rule(lambda y_dot, z, x, y: y_dot * _hypot_share(y, x, z), np.hypot)),
    vjp=(rounded_rule(lambda z_bar, z, x, y: z_bar * _hypot_share(x, y, z), np.hypot),
         rounded_rule(lambda z_bar, z, x, y: z_bar * _hypot_share(y, x, z), np.hypot)),
    saves=("z x y", "z x y"),
    sympy=lambda sp, x, y: sp.sqrt(x**2 + y**2), broadcasts=True, ufunc=np.hypot,
    lower=low.libm("hypot"),
)


def _share2(t: Any) -> Any:
    """2^t / (1 + 2^t) (d/dx logaddexp2(x, y) at t = x - y) from e = 2^-|t|, as sigmoid's
    value: exp2 of an exact argument (exp2(x - z) takes the rounding of z, log2(1 + 2^t)
    near |t|: hundreds of ulps there); the formula on complex values and formulas."""
    if is_complex(t) or getattr(t, "expression", False):
        return 1.0 / (1.0 + exp2(-t))
    e = exp2(-abs(t))
    return select(mask(np.greater_equal, t, 0.0), 1.0, e) / (1.0 + e)


# d/dx logaddexp(x, y) = sigmoid(x - y), not exp(x - z): x - z carries the rounding of z
# (|z| ulps: 30 for softplus near x = 30), and exp(x - z) is NaN at x = inf
logaddexp = Primitive(
    "logaddexp", rounded(np.logaddexp),
    jvp=(rounded_rule(lambda x_dot, z, x, y: x_dot * sigmoid(x - y)),
         rounded_rule(lambda y_dot, z, x, y: y_dot * sigmoid(y - x))),
    vjp=(rounded_rule(lambda z_bar, z, x, y: z_bar * sigmoid(x - y)),
         rounded_rule(lambda z_bar, z, x, y: z_bar * sigmoid(y - x))),
    saves=("x y", "x y"),
    sympy=lambda sp, x, y: sp.log(sp.exp(x) + sp.exp(y)), broadcasts=True, ufunc=np.logaddexp,
    lower=low.Lowering(low.logaddexp(False), ulps=2, at_least=1.0),
)
logaddexp2 = Primitive(
    "logaddexp2", rounded(np.logaddexp2),
    jvp=(rounded_rule(lambda x_dot, z, x, y: x_dot * _share2(x - y)),
         rounded_rule(lambda y_dot, z, x, y: y_dot * _share2(y - x))),
    vjp=(rounded_rule(lambda z_bar, z, x, y: z_bar * _share2(x - y)),
         rounded_rule(lambda z_bar, z, x, y: z_bar * _share2(y - x))),
    saves=("x y", "x y"),
    sympy=lambda sp, x, y: sp.log(2**x + 2**y, 2), broadcasts=True, ufunc=np.logaddexp2,
    array_api=lambda xp, x, y: xp.logaddexp(x * LN2, y * LN2) / LN2,
    lower=low.Lowering(low.logaddexp(True), ulps=2, at_least=1.0),
)


# --------------------------------------------------------------------------- complex values
# Complex values are inputs being differentiated, or come from the Fourier transforms
# (diffkit.primitives.fourier). Derivatives follow JAX's convention: the VJP of a primitive is
# the transpose of its JVP (a real-linear map) for the pairing <u, v> = Re sum(u v), with
# no complex conjugation. Holomorphic rules (mul, exp ...) then hold as they are for
# complex values; the gradient of a real loss L(z) is dL/dx - i dL/dy (PyTorch returns
# its conjugate). An adjoint reaching a real input is made real: its imaginary part would
# be the derivative with respect to an imaginary part the input does not have.


def is_complex(x: Any) -> bool:
    """Whether ``x`` holds complex values (for boxes: their primal value's dtype; for a
    formula of the symbolic backend, whether it may be complex)."""
    if getattr(x, "expression", False):
        return x.complex_valued()
    value = primal(x)
    return isinstance(value, complex) or getattr(value, "dtype", np.float64(0).dtype).kind == "c"


def to_input(x: Any, x_bar: Any) -> Any:
    """The adjoint of ``x``: real where ``x`` is real."""
    return x_bar if is_complex(x) else real(x_bar)


real = Primitive(
    "real", np.real,
    jvp=(lambda x_dot, y, x: real(x_dot),),
    vjp=(lambda y_bar, y, x: y_bar,),  # (y_bar + 0i: a real adjoint of a complex x)
    saves=("",), sympy=lambda sp, x: sp.re(x), broadcasts=True,
    lower=low.COMPLEX,
    linear=True,
    complex=True,
)
_MINUS_I = np.complex128(-1j)  # (a numpy scalar: a constant any interpreter takes)
imag = Primitive(
    "imag", np.imag,
    jvp=(lambda x_dot, y, x: imag(x_dot),),
    vjp=(lambda y_bar, y, x: y_bar * _MINUS_I if is_complex(x) else 0.0 * y_bar,),
    saves=("",), sympy=lambda sp, x: sp.im(x), broadcasts=True,  # (a kept input keeps its dtype)
    lower=low.COMPLEX,
    linear=True,
    complex=True,
)
conj = Primitive(
    "conj", np.conjugate,
    jvp=(lambda x_dot, y, x: conj(x_dot),),
    vjp=(lambda y_bar, y, x: to_input(x, conj(y_bar)),),
    saves=("",), sympy=lambda sp, x: sp.conjugate(x), broadcasts=True, ufunc=np.conjugate,
    lower=low.COMPLEX,
    linear=True,
    complex=True,
)


def _conj_unit(x: Any) -> Any:
    """conj(x) / |x|, and 0 at x = 0 (as sign(0) = 0 on the reals, and as JAX)."""
    r = abs(x)
    return conj(x) / select(mask(np.equal, r, 0.0), 1.0, r)


def _dabs_dot(x_dot: Any, y: Any, x: Any) -> Any:
    """d|x| = sign(x) dx; for complex x, Re(conj(x) dx) / |x|."""
    return real(x_dot * _conj_unit(x)) if is_complex(x) else x_dot * sign(x)


def _dabs_bar(y_bar: Any, y: Any, x: Any) -> Any:
    return y_bar * _conj_unit(x) if is_complex(x) else y_bar * sign(x)


abs = Primitive(  # noqa: A001
    "abs", np.abs, jvp=(_dabs_dot,), vjp=(_dabs_bar,), saves=("x",),
    sympy=lambda sp, x: sp.Abs(x), broadcasts=True, ufunc=np.abs,
    lower=low.libm("fabs"),
    complex=True,
)
