"""The accuracy atlas: each elementwise function's value, first and second derivative,
in ulps against mpmath at 50 digits, over its whole domain, for every way of computing them.

For one function (an elementwise primitive of the table, a slice of a binary one such as
``logaddexp(x, 0)``, or a function of :mod:`diffkit.scipy.special`) the points are:
log-spaced magnitudes of both signs from 1e-300 up to where the function's values
under- or overflow, uniform points over its working range, and points approaching its
zeros, poles and the edges of its domain (``s ± δ``, δ from 1e-15 to 0.1 relative).
At each point the exact value and derivatives come from mpmath at :data:`DPS` digits
(closed forms where written out, with extra digits where a closed form cancels, else
``mp.diff``), taken at the exact binary value of the float64 input.

The error of a computed number ``g`` against the exact ``r`` is ``|g - r| / ulp(r)``, ``ulp``
being the spacing of float64 numbers at ``r`` (a correctly rounded result is within 0.5).
A point where the exact result is not a normal float (zero, subnormal, beyond the
largest double, undefined, not real) is left out of that quantity's maxima and counted.
A computed NaN or infinity where the exact result is a normal float counts as infinitely
many ulps.

The methods (:data:`METHODS`): diffkit's eager reverse and forward modes, the compiled
backend's fused kernels (when numba is installed), central differences and the complex
step (first derivative only), and the peers where they are installed: JAX in float64,
PyTorch in float64 and autograd, each with its own function of that name
(``jax.scipy.special.expit`` for ``sigmoid``), differentiated by its own rules.

``python -m diffkit.bench.atlas --markdown`` prints the summary table of
``docs/accuracy.md``; ``diffkit accuracy NAME`` the full table of one function.

>>> r = measure(CASES["exp"], methods=("reverse",), n=40)
>>> r[0]["method"], r[0]["value"]["max"] <= 1.0
('diffkit reverse', True)
"""

from __future__ import annotations

import importlib.util
import math
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np

from .. import numpy as dnp
from ..scipy import special as dsp
from ..backends import backend
from ..core import NotApplicable
from ..transforms import functional as fx

mp = mpmath.mp
DPS = 50
TINY, HUGE = float(np.finfo(float).tiny), float(np.finfo(float).max)
INF = math.inf
QUANTITIES = ("value", "d1", "d2")
#: method key -> the label the tables show
METHODS = {"reverse": "diffkit reverse", "forward": "diffkit forward",
           "compiled": "diffkit compiled", "central": "central differences",
           "complex": "complex step", "jax": "JAX (float64)", "torch": "PyTorch (float64)",
           "autograd": "autograd"}
DIFFKIT = ("reverse", "forward", "compiled")
PEERS = ("jax", "torch", "autograd")


# ----------------------------------------------------------------------------- the cases


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


# ----------------------------------------------------------------------------- the points


def points(case: Case, n: int = 400, seed: int = 0) -> np.ndarray:
    """About ``n`` points of ``case``'s domain (see the module doc), sorted, distinct: the
    same ones each time for ``seed`` 0 (the documented tables), others for another seed
    (the distances to the special points drawn too): a search for what the fixed points
    miss."""
    rng = np.random.default_rng([zlib.crc32(case.name.encode()), seed] if seed
                                else zlib.crc32(case.name.encode()))
    lo, hi = case.domain
    top = min(case.span, max(abs(lo) if math.isfinite(lo) else HUGE,
                             abs(hi) if math.isfinite(hi) else HUGE), 1e300)
    k = max(n // 3, 4)
    # log-spaced magnitudes of both signs, from 1e-300 to the largest worth sampling
    mags = 10.0 ** (np.linspace(-300.0, math.log10(top), k // 2)
                    + rng.uniform(-0.1, 0.1, k // 2))
    low = case.negative_span if case.negative_span is not None else top
    logs = np.concatenate([mags, -mags[mags <= low]])
    a, b = max(case.active[0], lo), min(case.active[1], hi)
    uniform = rng.uniform(a, b, k)
    near: list[float] = []
    deltas = 10.0 ** rng.uniform(-15.0, -1.0, 8) if seed else np.geomspace(1e-15, 0.1, 8)
    edges = [e for e in (lo, hi) if math.isfinite(e)]
    for s in (*case.special, *edges):
        scale = abs(s) if s else 1.0
        near += [s] + [s + side * d * scale for d in deltas for side in (-1.0, 1.0)]
        if s == 0.0:
            near += [side * d for d in (1e-300, 1e-200, 1e-100, 1e-50, 1e-30) for side in (-1, 1)]
    near_a = np.array(near, dtype=float)
    if near_a.size > n - 2 * k:
        near_a = rng.choice(near_a, max(n - 2 * k, 0), replace=False)
    extra = rng.uniform(a, b, max(n - 2 * k - near_a.size, 0))
    xs = np.concatenate([logs, uniform, near_a, extra])
    xs = xs[np.isfinite(xs) & (xs >= lo) & (xs <= hi)]
    return np.unique(xs)


# ----------------------------------------------------------------------------- references


def _as_real(v: Any) -> Any:
    """An mpmath result as a real number, NaN if it is not one."""
    if isinstance(v, mpmath.mpc):
        return v.real if v.imag == 0 else mp.nan
    return v


def _derivative(case: Case, k: int) -> Callable[[Any], Any]:
    given = (case.exact, case.d1, case.d2)[k]
    if given is not None:
        return given

    return lambda x: _diff(case.exact, x, k, case.domain)


def reference(case: Case, xs: np.ndarray, upto: int = len(QUANTITIES)
              ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The exact value and derivatives at ``xs`` (the first ``upto`` of
    :data:`QUANTITIES`): for each quantity the float64 nearest the exact number and the
    rest (``hi + lo`` carries ~106 bits); NaN where undefined."""
    out = {}
    for k, q in enumerate(QUANTITIES[:upto]):
        f = _derivative(case, k)
        hi, lo = np.empty(xs.size), np.empty(xs.size)
        for i, x in enumerate(xs):
            extra = case.lift(float(x)) if case.lift else 0
            with mpmath.workdps(DPS + extra):
                try:
                    v = _as_real(f(mp.mpf(float(x))))
                except (ValueError, ZeroDivisionError, OverflowError):
                    v = mp.nan
                if not mp.isfinite(v):
                    hi[i], lo[i] = (float(v) if not mp.isnan(v) else math.nan), 0.0
                    continue
                h = float(v)
                hi[i] = h
                lo[i] = float(v - h) if math.isfinite(h) else 0.0
        out[q] = (hi, lo)
    return out


def value_errors(name: str, xs: np.ndarray, got: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ulps, points)``: ``got``'s error against case ``name``'s exact value at ``xs``,
    where that value is a normal float, and those points of ``xs``."""
    hi, lo = reference(CASES[name], xs, upto=1)[QUANTITIES[0]]
    counted = normal(hi)
    return ulps(got, hi, lo)[counted], xs[counted]


def normal(hi: np.ndarray) -> np.ndarray:
    """Where the exact result is a normal float (neither 0, subnormal, NaN nor beyond range)."""
    a = np.abs(hi)
    return np.isfinite(hi) & (a >= TINY) & (a <= HUGE)


def ulps(got: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``|got - exact| / ulp(exact)``; infinite where ``got`` is NaN or infinite."""
    got = np.asarray(got, dtype=float)
    with np.errstate(all="ignore"):
        err = np.abs((got - hi) - lo) / np.spacing(np.abs(hi))
    return np.where(np.isfinite(got), err, np.inf)


# ----------------------------------------------------------------------------- the methods


DK = Lib(dnp, dsp)


class _Names:
    """A peer's functions by numpy's and scipy.special's names (``renames``: its own
    spelling); a missing one is NotApplicable. ``wrap`` adapts each function found."""

    def __init__(self, lib: str, modules: Sequence[Any], renames: dict[str, str] | None = None,
                 wrap: Callable[[Callable], Callable] | None = None) -> None:
        self._lib, self._modules, self._renames = lib, modules, renames or {}
        self._wrap = wrap or (lambda f: f)

    def __getattr__(self, name: str) -> Any:
        own = self._renames.get(name, name)
        for module in self._modules:
            f = getattr(module, own, None)
            if callable(f):
                return self._wrap(f)
        raise NotApplicable(f"{self._lib} has no {name}")


def _diffkit(method: str, f: Callable[[Any], Any], xs: np.ndarray) -> dict[str, Any]:
    """Value, first and second derivative of ``f`` by one of diffkit's ways."""
    def total(g: Callable) -> Callable:
        return lambda x: dnp.sum(g(x))

    if method == "reverse":
        d1 = fx.grad(total(f))
        return {"value": lambda: f(xs), "d1": lambda: d1(xs), "d2": lambda: fx.grad(total(d1))(xs)}
    if method == "forward":
        d1 = fx.derivative(f)
        return {"value": lambda: fx.jvp(f, (xs,), (np.ones_like(xs),))[0], "d1": lambda: d1(xs),
                "d2": lambda: fx.derivative(d1)(xs)}
    if method == "compiled":
        from ..compiler.jit import jit  # (deferred: the compiler loads numba's LLVM)

        be = backend("compiled", fuse=True)
        d1 = fx.grad(total(f), backend=be)
        return {"value": lambda: jit(f)(xs), "d1": lambda: d1(xs),
                "d2": lambda: fx.grad(total(fx.grad(total(f))), backend=be)(xs)}
    if method == "complex":  # Im f(x + ih) / h, h the numeric backend's power of two
        return {"d1": lambda: _complex_step(f, xs)}
    numeric = backend("numeric", method=method)
    return {"d1": lambda: numeric.derivative(f, xs)}


def _complex_step(f: Callable[[Any], Any], xs: np.ndarray) -> np.ndarray:
    """The complex step at every point, as ``numeric[method=complex]`` takes it but without
    its check against central differences (which refuses the whole array where one point
    underflows); a function that takes no complex value is NotApplicable."""
    h = 2.0 ** np.floor(np.log2(1e-20 * np.maximum(np.abs(xs), 1.0)))
    try:
        out = np.asarray(f(xs + 1j * h))
    except (TypeError, NotApplicable) as exc:
        raise NotApplicable(f"no complex values: {_line(exc)}") from None
    if not np.iscomplexobj(out):
        raise NotApplicable("the function drops the imaginary part (not analytic here)")
    return out.imag / h


def _jax(case: Case, xs: np.ndarray) -> dict[str, Any]:
    import jax  # (deferred: a peer library, optional)

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp  # (deferred: a peer library, optional)
    import jax.scipy.special as jsp  # (deferred: a peer library, optional)

    lib = Lib(jnp, _Names("JAX", [jsp, jax.nn]), "jax")

    def f(x: Any) -> Any:
        return case.fn(lib, x)

    d1 = jax.grad(lambda x: jnp.sum(f(x)))
    d2 = jax.grad(lambda x: jnp.sum(d1(x)))
    x = jnp.asarray(xs, dtype=jnp.float64)
    return {"value": lambda: np.asarray(f(x)), "d1": lambda: np.asarray(d1(x)),
            "d2": lambda: np.asarray(d2(x))}


def _torch(case: Case, xs: np.ndarray) -> dict[str, Any]:
    import torch  # (deferred: a peer library, optional)

    def tensors(fn: Callable) -> Callable:
        def call(*args: Any) -> Any:
            return fn(*[torch.tensor(a, dtype=torch.float64) if isinstance(a, float) else a
                        for a in args])
        return call

    lib = Lib(_Names("PyTorch", [torch], {"mod": "remainder", "rint": "round"}, tensors),
              _Names("PyTorch", [torch.special, torch],
                     {"j0": "bessel_j0", "j1": "bessel_j1", "y0": "bessel_y0",
                      "y1": "bessel_y1"}, tensors), "torch")

    def derivatives(order: int) -> np.ndarray:
        x = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
        y = case.fn(lib, x)
        for _ in range(order):
            if not y.requires_grad:
                return np.zeros(xs.shape)
            (y,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        return y.detach().numpy().copy()

    return {"value": lambda: derivatives(0), "d1": lambda: derivatives(1),
            "d2": lambda: derivatives(2)}


def _autograd(case: Case, xs: np.ndarray) -> dict[str, Any]:
    import autograd  # (deferred: a peer library, optional)
    import autograd.numpy as anp  # (deferred: a peer library, optional)
    import autograd.scipy.special as asp  # (deferred: a peer library, optional)

    lib = Lib(anp, _Names("autograd", [asp]), "autograd")

    def f(x: Any) -> Any:
        return case.fn(lib, x)

    d1 = autograd.elementwise_grad(f)
    return {"value": lambda: np.asarray(f(xs)), "d1": lambda: np.asarray(d1(xs)),
            "d2": lambda: np.asarray(autograd.elementwise_grad(d1)(xs))}


PEER_RUNNERS = {"jax": _jax, "torch": _torch, "autograd": _autograd}
PEER_PACKAGES = {"jax": "jax", "torch": "torch", "autograd": "autograd", "compiled": "numba"}


def available(method: str) -> bool:
    """Whether ``method`` can run here (its package is installed)."""
    package = PEER_PACKAGES.get(method)
    return package is None or importlib.util.find_spec(package) is not None


def _runs(case: Case, method: str, xs: np.ndarray) -> dict[str, Callable[[], Any]]:
    if method in PEER_RUNNERS:
        return PEER_RUNNERS[method](case, xs)
    return _diffkit(method, lambda x: case.fn(DK, x), xs)


def _quiet(what: Callable[[], Any]) -> Any:
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return what()


@dataclass
class Stat:
    """One quantity's errors: max and 99th percentile in ulps, the x of the max, and how
    many points counted (``n``) or were left out (``excluded``: exact result not normal)."""

    max: float
    p99: float
    x: float
    n: int
    excluded: int

    def as_dict(self) -> dict[str, Any]:
        return {"max": self.max, "p99": self.p99, "x": self.x, "n": self.n,
                "excluded": self.excluded}


def stat(err: np.ndarray, xs: np.ndarray, counted: np.ndarray) -> Stat | None:
    """The summary of ``err`` over the points ``counted``; None if none is."""
    if not counted.any():
        return None
    e, x = err[counted], xs[counted]
    worst = int(np.argmax(e))
    return Stat(float(e[worst]), float(np.quantile(e, 0.99, method="higher")), float(x[worst]),
                int(counted.sum()), int((~counted).sum()))


def measure(case: Case, methods: Sequence[str] = tuple(METHODS), n: int = 400,
            xs: np.ndarray | None = None, ref: dict | None = None, detail: bool = False,
            seed: int = 0) -> list[dict[str, Any]]:
    """One record per method: ``{"function", "method", "value", "d1", "d2", "note"}``, each
    quantity ``Stat.as_dict()`` (None: not computed by it, or no point counted); methods
    not installed are left out, one that fails says why in ``note``. With ``detail`` a
    record also holds ``ulps``: per quantity computed, the error at each point (3
    significant digits; None where the point is left out), for a figure."""
    xs = points(case, n, seed) if xs is None else xs
    ref = reference(case, xs) if ref is None else ref
    records = []
    for method in methods:
        if not available(method):
            continue
        rec: dict[str, Any] = {"function": case.name, "method": METHODS[method], "key": method,
                               "points": int(xs.size), "value": None, "d1": None, "d2": None,
                               "note": ""}
        notes = []
        try:
            runs = _runs(case, method, xs)
        except (NotApplicable, ImportError) as exc:
            rec["note"] = f"n/a: {_line(exc)}"
            records.append(rec)
            continue
        for q, run in runs.items():
            if q not in ref:  # (a reference of fewer quantities: the others are not measured)
                continue
            try:
                got = np.asarray(_quiet(run), dtype=float).reshape(xs.shape)
            except Exception as exc:  # noqa: BLE001  (a peer's or a rule's failure: reported)
                notes.append(f"{q}: n/a ({_line(exc)})")
                continue
            hi, lo = ref[q]
            err, counted = ulps(got, hi, lo), normal(hi)
            s = stat(err, xs, counted)
            rec[q] = s.as_dict() if s else None
            if detail:
                rec.setdefault("ulps", {})[q] = [float(f"{e:.3g}") if c else None
                                                 for e, c in zip(err.tolist(), counted)]
        rec["note"] = "; ".join(notes)
        records.append(rec)
    return records


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def atlas(wanted: Iterable[str] = (), methods: Sequence[str] = tuple(METHODS), n: int = 400
          ) -> list[dict[str, Any]]:
    """:func:`measure` of every case of ``wanted`` (all by default)."""
    return [r for c in cases(wanted) for r in measure(c, methods, n)]


# ----------------------------------------------------------------------------- tables


def fmt_ulps(v: float | None) -> str:
    """An error in ulps for a table: ``0.5``, ``12``, ``3.4e+05``, ``inf``; ``-`` for none."""
    if v is None:
        return "-"
    if not math.isfinite(v):
        return "inf"
    if v < 10:
        return f"{v:.2g}" if v >= 0.01 else "0" if v == 0 else f"{v:.1g}"
    return f"{v:.0f}" if v < 1e4 else f"{v:.1e}"


def cell(s: dict[str, Any] | None, with_x: bool = True) -> str:
    """``max / p99 at x``."""
    if s is None:
        return "-"
    text = f"{fmt_ulps(s['max'])} / {fmt_ulps(s['p99'])}"
    return f"{text} at {s['x']:.3g}" if with_x and s["max"] > 0 else text


def rows(records: list[dict[str, Any]]) -> list[list[str]]:
    """The full table: one row per function and method."""
    head = ["function", "method", "value", "first derivative", "second derivative", "note"]
    return [head] + [[r["function"], r["method"], cell(r["value"]), cell(r["d1"]),
                      cell(r["d2"]), r["note"]] for r in records]


SUMMARY_METHODS = ("reverse", "forward", "compiled", "jax", "torch", "autograd", "central",
                   "complex")


def summary(records: list[dict[str, Any]]) -> list[list[str]]:
    """The compact table of docs/accuracy.md: per function, each method's max ulps of
    value / first / second derivative (``-``: not computed, or nothing counted)."""
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in records:
        by.setdefault(r["function"], {})[r["key"]] = r
    present = [m for m in SUMMARY_METHODS if any(m in v for v in by.values())]
    head = ["function"] + [METHODS[m] for m in present]
    out = [head]
    for name, per in by.items():
        row = [name]
        for m in present:
            r = per.get(m)
            if r is None:
                row.append("")
            elif all(r[q] is None for q in QUANTITIES) and r["note"]:
                row.append("n/a")
            else:
                row.append(" / ".join(fmt_ulps(r[q]["max"]) if r[q] else "-"
                                      for q in (QUANTITIES if m not in ("central", "complex")
                                                else ("d1",))))
        out.append(row)
    return out


def markdown(table: list[list[str]]) -> str:
    esc = [[c.replace("|", "\\|") for c in row] for row in table]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in esc[1:]])


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m diffkit.bench.atlas [--markdown] [--points N] [NAME ...]``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m diffkit.bench.atlas",
                                description="errors in ulps against mpmath (docs/accuracy.md)")
    p.add_argument("names", nargs="*")
    p.add_argument("--markdown", action="store_true", help="the summary table of docs/accuracy.md")
    p.add_argument("--points", type=int, default=400)
    args = p.parse_args(argv)
    records = atlas(args.names, n=args.points)
    print(markdown(summary(records) if args.markdown else rows(records)))


if __name__ == "__main__":
    main()
