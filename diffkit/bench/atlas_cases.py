"""The accuracy atlas's functions (:mod:`diffkit.bench.atlas` measures them): for each, how
diffkit and each peer compute it (``fn(lib, x)``), its exact value and derivatives on mpmath
numbers, its domain, the range worth sampling and its special points (zeros, poles, edges).

>>> [c.name for c in cases(["arctan2"])]
['arctan2(x, 1.5)', 'arctan2(1.5, x)']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np

mp = mpmath.mp
INF = math.inf


@dataclass(frozen=True)
class Lib:
    """An array library as a case sees it: ``np`` numpy's names, ``special`` scipy.special's."""

    np: Any
    special: Any
    name: str = "diffkit"


@dataclass(frozen=True)
class Case:
    """One function of one variable and how to measure it.

    ``fn(lib, x)`` computes it with a library's own names (diffkit's, or a peer's);
    ``exact``, ``d1``, ``d2`` are its value and derivatives on mpmath numbers (``None``:
    ``mp.diff`` of ``exact``); ``domain`` the closed interval where it is defined;
    ``span`` the largest magnitude worth sampling (beyond it every result under- or
    overflows); ``active`` the working range sampled uniformly; ``special`` its zeros,
    poles and other points approached from both sides; ``lift(x)`` extra digits the
    closed forms need at ``x`` (where they cancel); ``negative_span`` the largest magnitude
    sampled below 0 if smaller than ``span``."""

    name: str
    primitive: str
    fn: Callable[[Lib, Any], Any]
    exact: Callable[[Any], Any]
    d1: Callable[[Any], Any] | None = None
    d2: Callable[[Any], Any] | None = None
    domain: tuple[float, float] = (-INF, INF)
    span: float = 1e300
    active: tuple[float, float] = (-10.0, 10.0)
    special: tuple[float, ...] = ()
    lift: Callable[[float], int] | None = None
    negative_span: float | None = None


def _digits(x: float) -> int:
    """Decimal orders of magnitude of ``x`` away from 1 (extra digits a form may lose)."""
    return 0 if x == 0 or not math.isfinite(x) else int(abs(math.log10(abs(x)))) + 1


def _sign(x: Any) -> int:
    return (x > 0) - (x < 0)


def _sech2(x: Any) -> Any:
    return 1 / mp.cosh(x) ** 2


def _sigmoid(x: Any) -> Any:
    return 1 / (1 + mp.exp(-x))


def _dsigmoid(x: Any) -> Any:
    return _sech2(x / 2) / 4


def _diff(f: Callable[[Any], Any], x: Any, k: int = 1,
          domain: tuple[float, float] = (-INF, INF)) -> Any:
    """``mp.diff`` (where a closed form of the derivative would cancel) with a step of
    ``2^-(prec + 10)`` times the larger of |x| and 1, or a quarter of the distance to the
    edge of the domain if that is smaller (mpmath's ``relative=True`` scales the step the
    wrong way)."""
    scale = max(abs(x), 1)
    for edge in domain:
        if math.isfinite(edge) and x != edge:
            scale = min(scale, abs(x - edge) / 4)
    return mp.diff(f, x, k, h=scale * mp.mpf(2) ** (-mp.prec - 10))


def _log_ndtr(x: Any) -> Any:
    """log Phi(x); as log1p(-Phi(-x)) for x > 0 (Phi(x) at 50 digits is 1 from x = 15)."""
    return mp.log(mp.ncdf(x)) if x <= 0 else mp.log1p(-mp.ncdf(-x))


def _log_ndtr_d1(x: Any) -> Any:
    return mp.npdf(x) / mp.ncdf(x)


def _erfcx_series(x: Any, k: int) -> Any:
    """The k-th derivative of erfcx at a large x > 0, by its asymptotic series
    ``sum_n (-1)^n (2n-1)!! / (2^n sqrt(pi)) x^-(2n+1)``, differentiated term by term."""
    total, c = mp.mpf(0), 1 / mp.sqrt(mp.pi)
    for n in range(40):
        p = -(2 * n + 1)
        coef = c
        for j in range(k):
            coef *= p - j
        total += coef * x ** (p - k)
        c *= -(2 * n + 1) / mp.mpf(2)
    return total


def _erfcx(k: int) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        if x > 1000:
            return _erfcx_series(x, k)
        y = mp.exp(x * x) * mp.erfc(x)
        if k == 0:
            return y
        d1 = 2 * x * y - 2 / mp.sqrt(mp.pi)
        return d1 if k == 1 else 2 * y + 2 * x * d1
    return f


def _inverse(f: Callable[[Any], Any], start: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The inverse of an increasing f by Newton's method from ``start(p)``."""
    def g(p: Any) -> Any:
        return mp.findroot(lambda y: f(y) - p, start(p))
    return g


def _ndtri(p: Any) -> Any:
    if p == 0.5:
        return mp.mpf(0)
    if 1e-5 < p < 1 - 1e-5:
        return mp.sqrt(2) * mp.erfinv(2 * p - 1)
    small = min(p, 1 - p)
    t = mp.sqrt(-2 * mp.log(small))
    y = mp.findroot(lambda y: mp.log(mp.ncdf(y)) - mp.log(small), -t + (mp.log(t) + 1) / t)
    return y if p < 0.5 else -y


def _erfcinv(p: Any) -> Any:
    return -_ndtri(p / 2) / mp.sqrt(2)


def _poles(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``f``, undefined (NaN) at 0 and the negative integers (mpmath would try the
    reflection formula at a huge working precision for x = -1e300, an integer)."""
    def g(x: Any) -> Any:
        return mp.nan if x <= 0 and x == mp.floor(x) else f(x)
    return g


def _cot_derivative(n: int, x: Any) -> Any:
    """d^n/dx^n cot(pi x), n <= 3."""
    c, s2 = mp.cot(mp.pi * x), 1 / mp.sin(mp.pi * x) ** 2
    return (c, -mp.pi * s2, 2 * mp.pi**2 * s2 * c,
            -2 * mp.pi**3 * s2 * (2 * c * c + s2))[n]


def psi(n: int, x: Any) -> Any:
    """polygamma(n, x); for x < 0 by the reflection psi(1 - x) - psi(x) = pi cot(pi x),
    differentiated n times (mpmath's own takes minutes at x = -2.3e9)."""
    if x <= 0 and x == mp.floor(x):
        return mp.nan
    if x >= 0:
        return mp.polygamma(n, x)
    return (-1) ** n * mp.polygamma(n, 1 - x) - mp.pi * _cot_derivative(n, x)


def _psi(n: int) -> Callable[[Any], Any]:
    return lambda x: psi(n, x)


@_poles
def _gammaln(x: Any) -> Any:
    return mp.re(mp.loggamma(x))


def _power(a: float) -> Callable[[Any], Any]:
    return lambda x: mp.mpf(0) if x == 0 and a > 0 else x ** a


def _sinc(x: Any) -> Any:
    """sin(pi x) / (pi x) by sinpi (sin of a 50-digit pi times 2 is 1e-50, not 0)."""
    return mp.sinpi(x) / (mp.pi * x) if x else mp.mpf(1)


def _softplus2(x: Any) -> Any:  # log2(1 + 2^x), by log1p (1 + 2^-146 keeps 6 of 50 digits)
    return mp.log1p(mp.power(2, x)) / mp.ln2


def _entr(x: Any) -> Any:
    return -x * mp.log(x) if x > 0 else mp.mpf(0)


def _mod(b: float) -> Callable[[Any], Any]:
    return lambda x: x - mp.floor(x / b) * b


def _fmod(b: float) -> Callable[[Any], Any]:
    """C's fmod, x - trunc(x / b) b, the sign of x (mpmath's fmod takes Python's %)."""
    def f(x: Any) -> Any:
        q = x / b
        return x - (mp.floor(q) if q >= 0 else mp.ceil(q)) * b
    return f


def _step(x: Any, b: float, kind: str = "floor") -> Any:
    """1 between the multiples of ``b``, undefined (NaN) at them: mod's derivative."""
    return mp.nan if (x / b) == mp.floor(x / b) else mp.mpf(1)


def _zero(x: Any) -> Any:
    return mp.mpf(0)


def _relu(x: Any) -> Any:
    return x if x > 0 else mp.mpf(0)


def _relu_d(x: Any) -> Any:
    return mp.nan if x == 0 else (mp.mpf(1) if x > 0 else mp.mpf(0))


def _bessel(kind: Callable[..., Any], sign: int) -> Callable[[int, float], Callable]:
    """The k-th derivative of a Bessel function of integer order v by
    C' = (C_{v-1} + sign C_{v+1}) / 2 (J, Y: sign -1; I: +1), k times: mpmath's
    ``derivative=`` and ``mp.diff`` take seconds a point."""
    def of(m: float, x: Any) -> Any:  # C_-m = (-1)^m C_m (J, Y), I_m (I): mpmath's own
        if m >= 0:                       # series for a negative order near 0 takes seconds
            return kind(m, x)
        return kind(-m, x) * (1 if sign > 0 else (-1) ** int(-m))

    def order(k: int, v: float = 1.0) -> Callable[[Any], Any]:
        def f(x: Any) -> Any:
            with mp.extradps(10 + 2 * k):
                return sum(mp.binomial(k, j) * sign**j * of(v - k + 2 * j, x)
                           for j in range(k + 1)) / 2**k
        return f
    return order


_besselj, _bessely, _besseli = (_bessel(mp.besselj, -1), _bessel(mp.bessely, -1),
                                _bessel(mp.besseli, 1))


def _besselie_series(k: int, v: float, x: Any) -> Any:
    """The k-th derivative of ``iv(v, x) exp(-|x|)`` for |x| > 500 (an integer v), by the
    asymptotic series ``(2 pi x)^-1/2 sum_n (-1)^n c_n x^-n`` differentiated term by term."""
    a, total, c = abs(x), mp.mpf(0), mp.mpf(1)
    for n in range(40):
        p = -n - mp.mpf(0.5)
        coef = (-1) ** n * c
        for j in range(k):
            coef *= p - j
        total += coef * a ** (p - k)
        c *= (4 * v * v - (2 * n + 1) ** 2) / ((n + 1) * 8)
    total /= mp.sqrt(2 * mp.pi)
    return total if x > 0 else (-1) ** int(v) * (-1) ** k * total


def _besselie(k: int, v: float) -> Callable[[Any], Any]:
    """The k-th derivative of ``iv(v, x) exp(-|x|)``."""
    def f(x: Any) -> Any:
        if abs(x) > 500:
            return _besselie_series(k, v, x)
        s = _sign(x)
        terms = [_besseli(j, v)(x) for j in range(k + 1)]
        total = sum(mp.binomial(k, j) * terms[j] * (-s) ** (k - j) for j in range(k + 1))
        return total * mp.exp(-abs(x))
    return f


# digamma's zeros (its positive one, then one between each pair of poles)
DIGAMMA_ZEROS = (1.4616321449683622, -0.5040830082644554, -1.5734984731623506,
                 -2.6107208684441435, -3.6352933664369010)
POLES = (0.0, -1.0, -2.0, -3.0, -10.0)

C = Case
_CASES: list[Case] = [
    # ------------------------------------------------------------ arithmetic (slices)
    C("neg", "neg", lambda m, x: -x, lambda x: -x, lambda x: mp.mpf(-1), _zero),
    C("add(x, 1.5)", "add", lambda m, x: x + 1.5, lambda x: x + 1.5, lambda x: mp.mpf(1), _zero,
      special=(-1.5,)),
    C("sub(1.5, x)", "sub", lambda m, x: 1.5 - x, lambda x: 1.5 - x, lambda x: mp.mpf(-1), _zero,
      special=(1.5,)),
    C("mul(x, 2.7)", "mul", lambda m, x: x * 2.7, lambda x: x * mp.mpf(2.7),
      lambda x: mp.mpf(2.7), _zero),
    C("div(1, x)", "div", lambda m, x: 1.0 / x, lambda x: 1 / x, lambda x: -1 / x**2,
      lambda x: 2 / x**3, special=(0.0,)),
    C("power(x, 2.5)", "power", lambda m, x: m.np.power(x, 2.5), _power(2.5),
      lambda x: 2.5 * x**1.5, lambda x: 3.75 * mp.sqrt(x), domain=(0.0, INF), span=1e120,
      special=(0.0,)),
    C("power(x, -3)", "power", lambda m, x: m.np.power(x, -3.0), _power(-3),
      lambda x: -3 / x**4, lambda x: 12 / x**5, span=1e100, special=(0.0,)),
    C("power(2.5, x)", "power", lambda m, x: m.np.power(2.5, x), lambda x: mp.mpf(2.5) ** x,
      lambda x: mp.mpf(2.5) ** x * mp.log(2.5), lambda x: mp.mpf(2.5) ** x * mp.log(2.5) ** 2,
      span=820.0, active=(-810.0, 780.0)),
    C("abs", "abs", lambda m, x: m.np.abs(x), abs, lambda x: mp.mpf(_sign(x)) if x else mp.nan,
      _zero, special=(0.0,)),
    C("sign", "sign", lambda m, x: m.np.sign(x), lambda x: mp.mpf(_sign(x)), _zero, _zero),
    C("floor", "floor", lambda m, x: m.np.floor(x), mp.floor, _zero, _zero, span=1e17),
    C("ceil", "ceil", lambda m, x: m.np.ceil(x), mp.ceil, _zero, _zero, span=1e17),
    C("rint", "rint", lambda m, x: m.np.rint(x), mp.nint, _zero, _zero, span=1e17),
    C("maximum(x, 0)", "maximum", lambda m, x: m.np.maximum(x, 0.0), _relu, _relu_d, _zero),
    C("minimum(x, 0)", "minimum", lambda m, x: m.np.minimum(x, 0.0), lambda x: -_relu(-x),
      lambda x: _relu_d(-x), _zero),
    C("mod(x, 2.5)", "mod", lambda m, x: m.np.mod(x, 2.5), _mod(2.5),
      lambda x: _step(x, 2.5), _zero, span=1e15, special=(2.5, -5.0)),
    C("fmod(x, 2.5)", "fmod", lambda m, x: m.np.fmod(x, 2.5), _fmod(2.5),
      lambda x: _step(x, 2.5), _zero, span=1e15, special=(2.5, -5.0)),
    C("hypot(x, 1.5)", "hypot", lambda m, x: m.np.hypot(x, 1.5), lambda x: mp.hypot(x, 1.5),
      lambda x: x / mp.hypot(x, 1.5), lambda x: 2.25 / mp.hypot(x, 1.5) ** 3, span=1e150),
    C("arctan2(x, 1.5)", "arctan2", lambda m, x: m.np.arctan2(x, 1.5), lambda x: mp.atan2(x, 1.5),
      lambda x: 1.5 / (x * x + 2.25), lambda x: -3 * x / (x * x + 2.25) ** 2, span=1e150),
    C("arctan2(1.5, x)", "arctan2", lambda m, x: m.np.arctan2(1.5, x), lambda x: mp.atan2(1.5, x),
      lambda x: -1.5 / (x * x + 2.25), lambda x: 3 * x / (x * x + 2.25) ** 2, span=1e150),
    # ------------------------------------------------------------ exponentials, logarithms
    C("exp", "exp", lambda m, x: m.np.exp(x), mp.exp, mp.exp, mp.exp, span=746.0,
      active=(-745.0, 709.7)),
    C("exp2", "exp2", lambda m, x: m.np.exp2(x), lambda x: mp.mpf(2) ** x,
      lambda x: mp.mpf(2) ** x * mp.ln2, lambda x: mp.mpf(2) ** x * mp.ln2**2, span=1076.0,
      active=(-1075.0, 1024.0)),
    C("expm1", "expm1", lambda m, x: m.np.expm1(x), mp.expm1, mp.exp, mp.exp, span=746.0,
      active=(-40.0, 709.7), special=(0.0,)),
    C("log", "log", lambda m, x: m.np.log(x), mp.log, lambda x: 1 / x, lambda x: -1 / x**2,
      domain=(0.0, INF), active=(0.0, 10.0), special=(1.0,)),
    C("log1p", "log1p", lambda m, x: m.np.log1p(x), mp.log1p, lambda x: 1 / (1 + x),
      lambda x: -1 / (1 + x) ** 2, domain=(-1.0, INF), active=(-1.0, 10.0), special=(-1.0, 0.0)),
    C("sqrt", "sqrt", lambda m, x: m.np.sqrt(x), mp.sqrt, lambda x: 1 / (2 * mp.sqrt(x)),
      lambda x: -1 / (4 * x * mp.sqrt(x)), domain=(0.0, INF), active=(0.0, 10.0)),
    C("cbrt", "cbrt", lambda m, x: m.np.cbrt(x), lambda x: _sign(x) * mp.cbrt(abs(x)),
      lambda x: 1 / (3 * mp.cbrt(abs(x)) ** 2),
      lambda x: -2 * _sign(x) / (9 * mp.cbrt(abs(x)) ** 5)),
    C("logaddexp(x, 0)", "logaddexp", lambda m, x: m.np.logaddexp(x, 0.0),
      lambda x: mp.log1p(mp.exp(x)), _sigmoid, _dsigmoid, active=(-750.0, 750.0)),
    C("logaddexp2(x, 0)", "logaddexp2", lambda m, x: m.np.logaddexp2(x, 0.0), _softplus2,
      lambda x: 1 / (1 + mp.mpf(2) ** -x), lambda x: mp.ln2 * _dsigmoid(x * mp.ln2),
      active=(-1080.0, 1080.0)),
    # ------------------------------------------------------------ trigonometric
    C("sin", "sin", lambda m, x: m.np.sin(x), mp.sin, mp.cos, lambda x: -mp.sin(x),
      special=(math.pi, 2 * math.pi, 1e22)),
    C("cos", "cos", lambda m, x: m.np.cos(x), mp.cos, lambda x: -mp.sin(x), lambda x: -mp.cos(x),
      special=(math.pi / 2, 3 * math.pi / 2)),
    C("tan", "tan", lambda m, x: m.np.tan(x), mp.tan, lambda x: mp.sec(x) ** 2,
      lambda x: 2 * mp.tan(x) * mp.sec(x) ** 2, special=(math.pi / 2, math.pi, 0.0)),
    C("arcsin", "arcsin", lambda m, x: m.np.arcsin(x), mp.asin, lambda x: 1 / mp.sqrt(1 - x * x),
      lambda x: x / (1 - x * x) ** 1.5, domain=(-1.0, 1.0), active=(-1.0, 1.0),
      special=(-1.0, 1.0, 0.0)),
    C("arccos", "arccos", lambda m, x: m.np.arccos(x), mp.acos, lambda x: -1 / mp.sqrt(1 - x * x),
      lambda x: -x / (1 - x * x) ** 1.5, domain=(-1.0, 1.0), active=(-1.0, 1.0),
      special=(-1.0, 1.0)),
    C("arctan", "arctan", lambda m, x: m.np.arctan(x), mp.atan, lambda x: 1 / (1 + x * x),
      lambda x: -2 * x / (1 + x * x) ** 2),
    C("sinc", "sinc", lambda m, x: m.np.sinc(x), _sinc,
      lambda x: (mp.cospi(x) - _sinc(x)) / x if x else mp.mpf(0),
      lambda x: (((2 - (mp.pi * x) ** 2) * mp.sinpi(x) - 2 * mp.pi * x * mp.cospi(x))
                 / (mp.pi * x**3)) if x else -mp.pi**2 / 3,
      span=1e15, special=(1.0, 2.0, -3.0), lift=lambda x: 3 * _digits(x)),
    # ------------------------------------------------------------ hyperbolic
    C("sinh", "sinh", lambda m, x: m.np.sinh(x), mp.sinh, mp.cosh, mp.sinh, span=711.0,
      active=(-711.0, 711.0)),
    C("cosh", "cosh", lambda m, x: m.np.cosh(x), mp.cosh, mp.sinh, mp.cosh, span=711.0,
      active=(-711.0, 711.0)),
    C("tanh", "tanh", lambda m, x: m.np.tanh(x), mp.tanh, _sech2,
      lambda x: -2 * mp.tanh(x) * _sech2(x), active=(-30.0, 30.0)),
    C("sigmoid", "sigmoid", lambda m, x: m.special.expit(x), _sigmoid, _dsigmoid,
      lambda x: -_dsigmoid(x) * mp.tanh(x / 2), active=(-750.0, 750.0)),
    C("arcsinh", "arcsinh", lambda m, x: m.np.arcsinh(x), mp.asinh,
      lambda x: 1 / mp.sqrt(1 + x * x), lambda x: -x / (1 + x * x) ** 1.5),
    C("arccosh", "arccosh", lambda m, x: m.np.arccosh(x), mp.acosh,
      lambda x: 1 / mp.sqrt(x * x - 1), lambda x: -x / (x * x - 1) ** 1.5, domain=(1.0, INF),
      active=(1.0, 10.0), special=(1.0,)),
    C("arctanh", "arctanh", lambda m, x: m.np.arctanh(x), mp.atanh, lambda x: 1 / (1 - x * x),
      lambda x: 2 * x / (1 - x * x) ** 2, domain=(-1.0, 1.0), active=(-1.0, 1.0),
      special=(-1.0, 1.0)),
    # ------------------------------------------------------------ special functions
    C("erf", "erf", lambda m, x: m.special.erf(x), mp.erf,
      lambda x: 2 / mp.sqrt(mp.pi) * mp.exp(-x * x),
      lambda x: -4 * x / mp.sqrt(mp.pi) * mp.exp(-x * x), active=(-6.0, 6.0)),
    C("erfc", "erfc", lambda m, x: m.special.erfc(x), mp.erfc,
      lambda x: -2 / mp.sqrt(mp.pi) * mp.exp(-x * x),
      lambda x: 4 * x / mp.sqrt(mp.pi) * mp.exp(-x * x), active=(-6.0, 27.3)),
    C("erfcx", "erfcx", lambda m, x: m.special.erfcx(x), _erfcx(0), _erfcx(1), _erfcx(2),
      active=(-26.7, 50.0), span=1e300, lift=lambda x: 2 * _digits(x)),
    C("erfinv", "erfinv", lambda m, x: m.special.erfinv(x), mp.erfinv,
      lambda x: mp.sqrt(mp.pi) / 2 * mp.exp(mp.erfinv(x) ** 2),
      lambda x: 2 * mp.erfinv(x) * (mp.sqrt(mp.pi) / 2 * mp.exp(mp.erfinv(x) ** 2)) ** 2,
      domain=(-1.0, 1.0), active=(-1.0, 1.0), special=(-1.0, 1.0, 0.0)),
    C("erfcinv", "erfcinv", lambda m, x: m.special.erfcinv(x), _erfcinv,
      lambda x: -mp.sqrt(mp.pi) / 2 * mp.exp(_erfcinv(x) ** 2),
      lambda x: 2 * _erfcinv(x) * (mp.sqrt(mp.pi) / 2 * mp.exp(_erfcinv(x) ** 2)) ** 2,
      domain=(0.0, 2.0), active=(0.0, 2.0), special=(0.0, 1.0, 2.0)),
    C("ndtri", "ndtri", lambda m, x: m.special.ndtri(x), _ndtri,
      lambda x: mp.sqrt(2 * mp.pi) * mp.exp(_ndtri(x) ** 2 / 2),
      lambda x: _ndtri(x) * 2 * mp.pi * mp.exp(_ndtri(x) ** 2), domain=(0.0, 1.0),
      active=(0.0, 1.0), special=(0.0, 0.5, 1.0)),
    C("log_ndtr", "log_ndtr", lambda m, x: m.special.log_ndtr(x), _log_ndtr,
      _log_ndtr_d1, lambda x: _diff(_log_ndtr_d1, x),
      span=1e150,
      active=(-40.0, 40.0), lift=lambda x: 3 * _digits(x) + 10 if x < 0 else 0),
    C("logit", "logit", lambda m, x: m.special.logit(x), lambda x: mp.log(x / (1 - x)),
      lambda x: 1 / (x * (1 - x)), lambda x: (2 * x - 1) / (x * (1 - x)) ** 2,
      domain=(0.0, 1.0), active=(0.0, 1.0), special=(0.0, 0.5, 1.0)),
    C("gamma", "gamma", lambda m, x: m.special.gamma(x), mp.gamma,
      lambda x: mp.gamma(x) * psi(0, x),
      lambda x: mp.gamma(x) * (psi(0, x) ** 2 + psi(1, x)), span=200.0,
      active=(-185.0, 171.7), special=POLES),
    C("rgamma", "rgamma", lambda m, x: m.special.rgamma(x), mp.rgamma, None, None, span=200.0,
      active=(-185.0, 180.0), special=POLES),
    C("gammaln", "gammaln", lambda m, x: m.special.gammaln(x), _gammaln, _psi(0),
      _psi(1), span=1e300, active=(-50.0, 50.0),
      special=POLES + (1.0, 2.0),
      negative_span=1e6),
    C("polygamma(0, x)", "polygamma", lambda m, x: m.special.polygamma(0, x), _psi(0),
      _psi(1), _psi(2), span=1e300,
      active=(-20.0, 20.0), special=POLES + DIGAMMA_ZEROS,
      negative_span=1e6),
    C("polygamma(1, x)", "polygamma", lambda m, x: m.special.polygamma(1, x),
      _psi(1), _psi(2),
      _psi(3), span=1e300, active=(-20.0, 20.0), special=POLES,
      negative_span=1e6),
    C("beta(x, 2.5)", "beta", lambda m, x: m.special.beta(x, 2.5),
      _poles(lambda x: mp.beta(x, 2.5)),
      _poles(lambda x: mp.beta(x, 2.5) * (psi(0, x) - psi(0, x + 2.5))),
      _poles(lambda x: mp.beta(x, 2.5) * ((psi(0, x) - psi(0, x + 2.5)) ** 2
                                          + psi(1, x) - psi(1, x + 2.5))),
      span=1e30, active=(-20.0, 20.0), special=POLES,
      lift=lambda x: 2 * _digits(x) if abs(x) > 1 else 0,
      negative_span=1e6),
    C("betaln(x, 2.5)", "betaln", lambda m, x: m.special.betaln(x, 2.5),
      _poles(lambda x: mp.log(abs(mp.beta(x, 2.5)))),
      _poles(lambda x: psi(0, x) - psi(0, x + 2.5)),
      _poles(lambda x: psi(1, x) - psi(1, x + 2.5)), span=1e30,
      active=(-20.0, 20.0), special=POLES, lift=lambda x: 2 * _digits(x) if abs(x) > 1 else 0,
      negative_span=1e6),
    C("spence", "spence", lambda m, x: m.special.spence(x), lambda x: mp.polylog(2, 1 - x),
      lambda x: mp.log(x) / (1 - x) if x != 1 else mp.mpf(-1),
      lambda x: (1 / x - 1 + mp.log(x)) / (1 - x) ** 2 if x != 1 else mp.mpf(0.5),
      domain=(0.0, INF), span=1e100, active=(0.0, 10.0), special=(0.0, 1.0),
      lift=lambda x: 2 * _digits(1 - x) + 2 * _digits(x)),
    C("xlogy(1.5, x)", "xlogy", lambda m, x: m.special.xlogy(1.5, x), lambda x: 1.5 * mp.log(x),
      lambda x: 1.5 / x, lambda x: -1.5 / x**2, domain=(0.0, INF), active=(0.0, 10.0),
      special=(1.0,)),
    C("xlogy(x, 2.5)", "xlogy", lambda m, x: m.special.xlogy(x, 2.5),
      lambda x: x * mp.log(2.5), lambda x: mp.log(2.5), _zero),
    C("xlog1py(1.5, x)", "xlog1py", lambda m, x: m.special.xlog1py(1.5, x),
      lambda x: 1.5 * mp.log1p(x), lambda x: 1.5 / (1 + x), lambda x: -1.5 / (1 + x) ** 2,
      domain=(-1.0, INF), active=(-1.0, 10.0), special=(-1.0, 0.0)),
    # ------------------------------------------------------------ of an order or shape
    C("gammainc(2.5, x)", "gammainc", lambda m, x: m.special.gammainc(2.5, x),
      lambda x: mp.gammainc(2.5, 0, x, regularized=True),
      lambda x: x**1.5 * mp.exp(-x) / mp.gamma(2.5),
      lambda x: x**0.5 * mp.exp(-x) * (1.5 - x) / mp.gamma(2.5), domain=(0.0, INF), span=1e4,
      active=(0.0, 60.0), special=(1.5,)),
    C("gammaincc(2.5, x)", "gammaincc", lambda m, x: m.special.gammaincc(2.5, x),
      lambda x: mp.gammainc(2.5, x, mp.inf, regularized=True),
      lambda x: -x**1.5 * mp.exp(-x) / mp.gamma(2.5),
      lambda x: -x**0.5 * mp.exp(-x) * (1.5 - x) / mp.gamma(2.5), domain=(0.0, INF), span=800.0,
      active=(0.0, 700.0), special=(1.5,)),
    C("gammainc(x, 2.5)", "gammainc_da", lambda m, x: m.special.gammainc(x, 2.5),
      lambda a: mp.gammainc(a, 0, 2.5, regularized=True), domain=(1e-300, INF), span=1e3,
      active=(0.0, 30.0)),
    C("betainc(0.5, 2.5, x)", "betainc", lambda m, x: m.special.betainc(0.5, 2.5, x),
      lambda x: mp.betainc(0.5, 2.5, 0, x, regularized=True),
      lambda x: x**-0.5 * (1 - x) ** 1.5 / mp.beta(0.5, 2.5),
      lambda x: x**-0.5 * (1 - x) ** 1.5 / mp.beta(0.5, 2.5) * (-0.5 / x - 1.5 / (1 - x)),
      domain=(0.0, 1.0), active=(0.0, 1.0), special=(0.0, 1.0)),
    C("jv(1, x)", "jv", lambda m, x: m.special.jv(1.0, x), _besselj(0), _besselj(1),
      _besselj(2), span=1e4, active=(-40.0, 40.0), special=(3.8317059702075125, 0.0)),
    C("yv(1, x)", "yv", lambda m, x: m.special.yv(1.0, x), _bessely(0), _bessely(1),
      _bessely(2), domain=(0.0, INF), span=1e4, active=(0.0, 40.0),
      special=(2.197141326031017, 0.0)),
    C("iv(1, x)", "iv", lambda m, x: m.special.iv(1.0, x), _besseli(0), _besseli(1), _besseli(2),
      span=720.0, active=(-715.0, 715.0)),
    C("ive(1, x)", "ive", lambda m, x: m.special.ive(1.0, x), _besselie(0, 1.0),
      _besselie(1, 1.0), _besselie(2, 1.0), span=1e300, active=(-100.0, 100.0),
      lift=lambda x: 2 * _digits(x) if abs(x) <= 500 else 0),
    C("zeta(3, x)", "zeta", lambda m, x: m.special.zeta(3.0, x), lambda q: mp.zeta(3, q),
      lambda q: -3 * mp.zeta(4, q), lambda q: 12 * mp.zeta(5, q), domain=(0.0, INF), span=1e100,
      active=(0.0, 20.0)),
    # ------------------------------------------------------------ diffkit.scipy.special
    C("ndtr", "ndtr", lambda m, x: m.special.ndtr(x), mp.ncdf, mp.npdf,
      lambda x: -x * mp.npdf(x), active=(-38.0, 9.0)),
    C("entr", "entr", lambda m, x: m.special.entr(x), _entr, lambda x: -(mp.log(x) + 1),
      lambda x: -1 / x, domain=(0.0, INF), active=(0.0, 10.0), special=(1.0, 1 / math.e)),
    C("i0", "i0", lambda m, x: m.special.i0(x), _besseli(0, 0.0), _besseli(1, 0.0),
      _besseli(2, 0.0), span=720.0, active=(-715.0, 715.0)),
    C("i0e", "i0e", lambda m, x: m.special.i0e(x), _besselie(0, 0.0), _besselie(1, 0.0),
      _besselie(2, 0.0), span=1e300, active=(-100.0, 100.0),
      lift=lambda x: 2 * _digits(x) if abs(x) <= 500 else 0),
    C("j0", "j0", lambda m, x: m.special.j0(x), _besselj(0, 0.0), _besselj(1, 0.0),
      _besselj(2, 0.0), span=1e4, active=(-40.0, 40.0), special=(2.404825557695773,)),
    C("y0", "y0", lambda m, x: m.special.y0(x), _bessely(0, 0.0), _bessely(1, 0.0),
      _bessely(2, 0.0), domain=(0.0, INF), span=1e4, active=(0.0, 40.0),
      special=(0.8935769662791675,)),
]

#: cases by their name (``"sigmoid"``, ``"power(x, 2.5)"``)
CASES: dict[str, Case] = {c.name: c for c in _CASES}
#: other names of a function (diffkit.scipy.special's, the common ones)
ALIASES = {"expit": "sigmoid", "softplus": "logaddexp", "digamma": "polygamma(0, x)",
           "psi": "polygamma(0, x)", "trigamma": "polygamma(1, x)", "negative": "neg",
           "subtract": "sub", "multiply": "mul", "divide": "div", "jn": "jv", "i1": "iv",
           "i1e": "ive", "j1": "jv", "y1": "yv", "yn": "yv"}
#: elementwise primitives the atlas does not measure, and why
NOT_MEASURED = {
    "real": "complex values (a real input's real part is itself)",
    "imag": "complex values (a real input's imaginary part is the constant 0)",
    "conj": "complex values (a real input's conjugate is itself)",
    "where": "its condition is a constant mask: it copies an operand, exactly",
    "gamma_density": "gammainc's derivative in x: the first and second derivatives of the "
                     "rows gammainc(2.5, x) and gammaincc(2.5, x)",
    "sinc_derivative": "sinc's first and second derivatives: the row sinc",
    "ive_derivative": "ive's first and second derivatives: the rows ive(1, x) and i0e",
}


def names() -> list[str]:
    """The names :func:`cases` accepts (besides a slice's own, ``"power(x, 2.5)"``): the
    primitives and functions measured, and their other names."""
    return sorted({c.primitive for c in _CASES} | set(ALIASES))


def cases(wanted: Iterable[str] = ()) -> list[Case]:
    """The cases of ``wanted`` (a primitive's name gives each of its slices; none: all);
    an unknown name is a ValueError naming the allowed ones."""
    wanted = list(wanted)
    if not wanted:
        return list(_CASES)
    out: list[Case] = []
    for name in wanted:
        key = ALIASES.get(name, name)
        found = [c for c in _CASES if key in (c.name, c.primitive)]
        if not found:
            import difflib

            close = difflib.get_close_matches(name, names(), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ValueError(f"unknown function {name!r}; {hint}choose from "
                             f"{', '.join(names())}")
        out += [c for c in found if c not in out]
    return out


