"""Special functions (SciPy's ``scipy.special``): gamma and its relatives (log-gamma,
polygamma, beta), error functions and their inverses, logit, the normal CDF's log and
inverse, Spence's function and ``x log(1 + y)``.

Their numpy implementations come from SciPy, an optional extra: SciPy is imported when
one of them is first evaluated, and its absence is one clear error saying how to install
it; erf, erfc and erfcx (:mod:`.error_function`), erfinv, erfcinv, ndtri and log_ndtr
(:mod:`.inverse_error`) are diffkit's own on real numbers (within an ulp), SciPy's on complex
ones. Each derivative is again a special function of this
table (``gammaln' = polygamma(0)``, ``polygamma(n)' = polygamma(n + 1)``), so second
derivatives come for free. The user-facing names live in :mod:`diffkit.scipy.special`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import DiffkitError, Primitive
from . import beta_function, dilogarithm, error_function, inverse_error, polygamma_negative
from .compare import mask, select
from .elementwise import (abs, cos, exp, expm1, is_complex, log, log1p, maximum,  # noqa: A004
                          minimum, mod, no_closed_form, rint, sin)
from .elementwise import unary as _unary
from .log_gamma import log_gamma
from .lowering import PIECEWISE, SCIPY


def unary(*args: Any, lower: str = SCIPY, **facts: Any) -> Primitive:
    """An elementwise special function (:func:`~.elementwise.unary`): a library routine
    (scipy.special's unless ``lower`` says otherwise), which fused kernels call between
    them (``lower`` is the reason)."""
    return _unary(*args, lower=lower, **facts)


SQRT_2PI = float(np.sqrt(2.0 * np.pi))
SQRT_2 = float(np.sqrt(2.0))
TWO_OVER_SQRT_PI = float(2.0 / np.sqrt(np.pi))
_SPLIT = 2.0**20  # h = rint(x 2^20) 2^-20 has at most 26 bits for |x| <= 64: h^2 is exact


def scipy_special() -> Any:
    """``scipy.special``, or one clear error saying how to get it."""
    try:
        import scipy.special  # (deferred: SciPy is an optional extra)
    except ImportError:
        raise DiffkitError("special functions need SciPy, which is not installed: "
                           "pip install diffkit[scipy]") from None
    return scipy.special


def _sp(name: str) -> Any:
    def impl(*args: Any) -> Any:
        return getattr(scipy_special(), name)(*args)
    impl.__name__ = name
    return impl


def _own(name: str, real: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """diffkit's own function on real numbers (``real``, from :mod:`.error_function`,
    :mod:`.inverse_error` or :mod:`.dilogarithm`), and SciPy's of that name on complex
    ones."""
    def impl(x: Any) -> Any:
        x = np.asarray(x)
        return getattr(scipy_special(), name)(x) if x.dtype.kind == "c" else real(x)
    impl.__name__ = name
    return impl


def _jax_special(xp: Any, name: str) -> Any:
    """The same function in another array library (JAX and PyTorch name their modules)."""
    if xp.__name__.startswith("jax"):
        import jax.scipy.special as mod  # (deferred: a peer library, optional)
    elif xp.__name__.startswith("torch"):
        import torch.special as mod  # (deferred: a peer library, optional)
    else:
        raise DiffkitError(f"{name} has no array-API form for {xp.__name__}")
    return getattr(mod, name)


def _plain(x: Any) -> bool:
    """Whether a rule takes its textbook formula at ``x``: complex values (the rule must be
    holomorphic) and formulas (the symbolic backend) have no rint, masks or branches."""
    return is_complex(x) or bool(getattr(x, "expression", False))


def exp_square(x: Any, c: float) -> Any:
    """exp(c x^2) for c = +-1, +-1/2, without rounding x^2 first: that rounding is |c| x^2
    units of the exponent's last place, 700 ulps where exp(-x^2) is still a normal number.
    x = h + l with h = rint(x 2^20) 2^-20, whose square is exact, then
    exp(c h^2) exp(c l (x + h)) (within 2 ulps). A composition of primitives, so it
    differentiates again: h is piecewise constant, and exp(c h^2) exp(c (x^2 - h^2)) is
    exp(c x^2) for any constant h. Beyond |x| = 64 (the result over- or underflows) and on
    complex values and formulas, exp(c x^2) as written."""
    if _plain(x):
        return exp(c * (x * x))
    far = mask(np.greater, abs(x), 64.0)
    near = select(far, 0.0, x)
    h = rint(near * _SPLIT) * (1.0 / _SPLIT)
    split = exp(c * (h * h)) * exp(c * ((near - h) * (near + h)))
    return select(far, exp(c * (x * x)), split)


@functools.cache
def _libm_lgamma() -> Any:
    """The C library's lgamma, if it can be loaded (None otherwise)."""
    import ctypes  # (deferred: the C library, loaded once, where gammaln needs it)
    import ctypes.util  # (deferred: as ctypes)

    name = ctypes.util.find_library("m")
    try:
        f = ctypes.CDLL(name).lgamma if name else None
    except (OSError, AttributeError):
        return None
    if f is not None:
        f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
    return f


def _gammaln(x: Any) -> Any:
    """log|Gamma(x)|: diffkit's own in long double, rounded once (:mod:`.log_gamma`; SciPy's
    is 2.5 to 4 ulps off, and keeps an absolute error next to the zeros 1 and 2: 6.9e14
    ulps). Next to the zeros on the negative axis (-2.457, -2.747, -3.144 ..., where
    |Gamma| = 1) the reflection formula cancels, in long double too; there the C library's
    lgamma, element by element (0.6 us each), keeps its digits (within 2.4 ulps; SciPy's
    6e5 at -2.457). float32 values and infinities: SciPy's."""
    x = np.asarray(x)
    out = scipy_special().gammaln(x)
    if out.dtype != np.float64:  # (float32: SciPy's)
        return out
    out = np.array(out)
    with np.errstate(all="ignore"):
        own = np.isfinite(x)
        if np.any(own):
            values, cancelled = log_gamma(x[own].astype(float))
            out[own] = values
            libm = _libm_lgamma()
            where = np.flatnonzero(own)[cancelled]
            if libm is not None and where.size:
                out.flat[where] = [libm(v) for v in x.flat[where].tolist()]
    return out[()] if np.ndim(out) == 0 else out


gammaln = unary("gammaln", _gammaln, lambda y, x: polygamma(x, n=0), "x",
                lambda sp, x: sp.loggamma(x), lambda xp, x: _jax_special(xp, "gammaln")(x))


def _polygamma_array(xp: Any, x: Any, *, n: int) -> Any:
    if n == 0:
        return _jax_special(xp, "digamma")(x)
    return _jax_special(xp, "polygamma")(n, x)


def _polygamma(x: Any, *, n: int) -> Any:
    """SciPy's polygamma(n, x); for x < 0 and n <= 3 by the reflection formula
    (:mod:`.polygamma_negative`): SciPy's tan(pi x) takes the rounding of pi x (digamma at
    -1 + 1e-15 is 10% off, 2.6e14 ulps), and its polygamma(n >= 1) at x = -2.3e9 sums a
    series for a minute."""
    special = scipy_special()
    x = np.asarray(x)
    if n > 3 or x.dtype.kind == "c" or not np.any(x < 0):
        return special.polygamma(n, x)
    out = polygamma_negative.polygamma(x, n, special.polygamma)
    return out[()] if out.ndim == 0 else out


polygamma = Primitive(  # polygamma(x, n=k) is the k-th derivative of digamma (k = 0: digamma)
    "polygamma", _polygamma,
    jvp=(lambda x_dot, y, x, *, n: x_dot * polygamma(x, n=n + 1),),
    vjp=(lambda y_bar, y, x, *, n: y_bar * polygamma(x, n=n + 1),),
    saves=("x",), broadcasts=True, lower=SCIPY,
    sympy=lambda sp, x, *, n: sp.polygamma(n, x),
    array_api=_polygamma_array,
)


# erf, erfc (and erfcx below): values diffkit's own on real numbers, derivatives by exp_square
erf = unary("erf", _own("erf", error_function.erf),
            lambda y, x: TWO_OVER_SQRT_PI * exp_square(x, -1.0), "x",
            lambda sp, x: sp.erf(x), lambda xp, x: _jax_special(xp, "erf")(x), complex=True,
            lower=PIECEWISE)
erfc = unary("erfc", _own("erfc", error_function.erfc),
             lambda y, x: -TWO_OVER_SQRT_PI * exp_square(x, -1.0), "x",
             lambda sp, x: sp.erfc(x), lambda xp, x: _jax_special(xp, "erfc")(x), complex=True,
             lower=PIECEWISE)


def _dlogit(x: Any) -> Any:
    """1 / (x (1 - x)); for 1/4 < x < 3/4 as 1 / (1/4 - (x - 1/2)^2), x - 1/2 being exact
    there: the derivative of x (1 - x), (1 - x) - x, takes the rounding of 1 - x, and the
    second derivative vanishes at 1/2."""
    if _plain(x):
        return 1.0 / (x * (1.0 - x))
    d = x - 0.5
    near = mask(np.less, abs(d), 0.25)
    d_near = select(near, d, 0.0)  # (1/4 - d^2 is 0 at the ends: no infinity, even unused)
    return select(near, 1.0 / (0.25 - d_near * d_near), 1.0 / (x * (1.0 - x)))


logit = unary("logit", _sp("logit"), lambda y, x: _dlogit(x), "x",
              lambda sp, x: sp.log(x / (1 - x)), lambda xp, x: xp.log(x / (1.0 - x)))


def _erfc_fraction(t: Any, terms: int) -> Any:
    """Laplace's continued fraction T(t) = (1/2) / (t + 1 / (t + (3/2) / (t + ...))), by its
    last ``terms`` terms: sqrt(pi) erfcx(t) = 1 / (t + T(t)), every term positive, nothing
    cancels; within 1.4 ulps from t = 2 on with 60 terms, 0.6 from t = 1.25 with 150. Used
    for erfcx' = -(2 / sqrt(pi)) T / (t + T) (2 t erfcx(t) - 2 / sqrt(pi) subtracts two
    numbers that agree to 1 / (2 t^2): all of them by t = 1e8) and the Mills ratio of
    log_ndtr'."""
    fraction = 0.0
    for k in range(terms, 0, -1):
        fraction = (0.5 * k) / (t + fraction)
    return fraction


def _log_ndtr_d(y: Any, x: Any) -> Any:
    """d/dx log Phi(x) = phi(x) / Phi(x). For x >= 0: exp(-x^2 / 2) (:func:`exp_square`) over
    sqrt(2 pi) Phi(x) = sqrt(2 pi) e^y. For x < 0 the Mills ratio, with t = -x / sqrt 2:
    sqrt(2 / pi) / erfcx(t), and from t = 2 on sqrt 2 (t + T(t)) by the continued fraction
    (:func:`_erfc_fraction`). exp(-x^2 / 2 - y) subtracts two numbers of size x^2 / 2:
    1000 ulps by x = -30. Each branch sees a harmless value where it is not taken (its
    derivative must stay finite there)."""
    if _plain(x):
        return exp(-0.5 * x * x - y) / SQRT_2PI
    right = mask(np.greater_equal, x, 0.0)
    far = mask(np.less_equal, x, -2.0 * SQRT_2)
    x_right, y_right = select(right, x, 0.0), select(right, y, 0.0)
    t_mid = select(far, 1.0, select(right, 1.0, -x / SQRT_2))
    t_far = select(far, -x / SQRT_2, 2.0)
    mills = select(far, SQRT_2 * (t_far + _erfc_fraction(t_far, 60)),
                   (SQRT_2 / np.sqrt(np.pi)) / erfcx(t_mid))
    return select(right, exp_square(x_right, -0.5) * exp(-y_right) / SQRT_2PI, mills)


log_ndtr = unary(  # log Phi(x), diffkit's own on real numbers; d = phi(x) / Phi(x), by
    "log_ndtr", _own("log_ndtr", inverse_error.log_ndtr), _log_ndtr_d, "y x",  # branches
    lambda sp, x: sp.log((1 + sp.erf(x / sp.sqrt(2))) / 2),  # that keep their digits
    lambda xp, x: _jax_special(xp, "log_ndtr")(x), lower=PIECEWISE)


def _xlogy(x: Any, y: Any) -> Any:
    return scipy_special().xlogy(x, y)


xlogy = Primitive(  # x log y, 0 where x == 0
    "xlogy", _xlogy,
    jvp=(lambda x_dot, z, x, y: x_dot * log(y), lambda y_dot, z, x, y: y_dot * x / y),
    vjp=(lambda z_bar, z, x, y: z_bar * log(y), lambda z_bar, z, x, y: z_bar * x / y),
    saves=("y", "x y"), broadcasts=True, lower=SCIPY,
    sympy=lambda sp, x, y: x * sp.log(y),
    array_api=lambda xp, x, y: _jax_special(xp, "xlogy")(x, y),
)


def _peer(name: str) -> Any:
    """The array-API form of a special function: the same name in JAX's or PyTorch's module."""
    return lambda xp, *args: _jax_special(xp, name)(*args)


SQRT_PI_2 = float(np.sqrt(np.pi) / 2.0)
gamma = unary("gamma", _sp("gamma"), lambda y, x: y * polygamma(x, n=0), "y x",
              lambda sp, x: sp.gamma(x), _peer("gamma"))


def _rgamma_d(y: Any, x: Any) -> Any:
    """d/dx 1/Gamma(x) = -psi(x) / Gamma(x). Within 0.15 of the poles x = -k of Gamma (down
    to -170), where 1/Gamma goes through 0 and psi is infinite, the derivative of the
    reflection ``sin(pi x) Gamma(1 - x) / pi`` is taken (exact at x <= 0, to every order).
    Not further: its two terms cancel where psi(x) = 0, between 0.175 (x = -170) and 0.5 from
    the pole (within 1/4 of it from x = -8 on: 1984 ulps at -73.8), where -y psi(x) is a
    product of accurate factors. Each formula is evaluated only where it is finite (elsewhere
    at x = 1/2), so no NaN reaches a higher derivative."""
    if _plain(x):
        return -y * polygamma(x, n=0)
    # near a pole (within 0.15 of 0, -1, ... -170) the reflection throughout, not only at the
    # pole: -y psi(x) is a product of a number near 0 and one near infinity whose derivative
    # (the second) subtracts two numbers of size 1/(x + k)^2. sin and cos of pi x from
    # r = x - rint(x), exact, and the sign (-1)^rint(x): pi x itself takes a rounding.
    n = rint(x)
    # (|x - n| < 0.15, x < 1/2 and x > -170.5, as one mask)
    near = mask(np.less, maximum(maximum(abs(x - n), x - 0.25), -170.25 - x), 0.15)
    x_pole, x_regular = select(near, x, 0.5), select(near, 0.5, x)
    k = rint(x_pole)
    r, parity = x_pole - k, 1.0 - 2.0 * mod(k, 2.0)
    w = 1.0 - x_pole
    reflected = parity * (cos(np.pi * r) * gamma(w)
                          - sin(np.pi * r) * gamma(w) * polygamma(w, n=0) / np.pi)
    return select(near, reflected, -y * polygamma(x_regular, n=0))


rgamma = unary("rgamma", _sp("rgamma"), _rgamma_d, "y x", lambda sp, x: 1 / sp.gamma(x),
               lambda xp, x: 1.0 / _jax_special(xp, "gamma")(x))


def _inverse_d(y: Any, x: Any, near: Any, c: float, t: Any, tail: Any) -> Any:
    """The derivative of an inverse of erf, erfc or the normal CDF, as a multiple of
    exp(c y^2): by :func:`exp_square` where ``near`` (y small), elsewhere as
    erfcx(t) / tail with t = |y| (times sqrt(1/2) for the CDF) and ``tail`` = erfc(t) (times
    1/2), the distance of x from its end of the domain, which x gives exactly. exp(c y^2)
    multiplies y's own rounding by 2 c y^2 (100 ulps for erfinv near 1, 2000 for erfcinv and
    ndtri near 0); erfcx(t) / tail passes it on once. Each branch sees harmless values where
    the other is taken, and at the ends of the domain (x = 1, 0, 2) where y is infinite."""
    end = mask(np.equal, tail, 0.0)
    t_far = select(end, 1.0, select(near, 1.0, t))
    tail_far = select(end, 1.0, select(near, 1.0, tail))
    far = select(end, np.inf, erfcx(t_far) / tail_far)
    return select(near, exp_square(select(near, y, 0.0), c), far)


def _erfinv_d(y: Any, x: Any) -> Any:
    """erfinv'(x) = sqrt(pi)/2 exp(y^2) = sqrt(pi)/2 erfcx(|y|) / (1 - |x|)."""
    if _plain(x):
        return SQRT_PI_2 * exp_square(y, 1.0)
    return SQRT_PI_2 * _inverse_d(y, x, mask(np.less, abs(x), 0.5), 1.0, abs(y), 1.0 - abs(x))


def _erfcinv_d(y: Any, x: Any) -> Any:
    """erfcinv'(x) = -sqrt(pi)/2 exp(y^2) = -sqrt(pi)/2 erfcx(|y|) / erfc(|y|), erfc(|y|)
    being x for x < 1 and 2 - x beyond."""
    if _plain(x):
        return -SQRT_PI_2 * exp_square(y, 1.0)
    tail = select(mask(np.less, x, 1.0), x, 2.0 - x)
    return -SQRT_PI_2 * _inverse_d(y, x, mask(np.less, abs(1.0 - x), 0.5), 1.0, abs(y), tail)


# erfinv, erfcinv (and ndtri below): values diffkit's own on real numbers (.inverse_error)
erfinv = unary("erfinv", _own("erfinv", inverse_error.erfinv), _erfinv_d, "y x",
               lambda sp, x: sp.erfinv(x), _peer("erfinv"), lower=PIECEWISE)
erfcinv = unary("erfcinv", _own("erfcinv", inverse_error.erfcinv), _erfcinv_d, "y x",
                lambda sp, x: sp.erfinv(1 - x), lambda xp, x: _jax_special(xp, "erfinv")(1.0 - x),
                lower=PIECEWISE)


def _erfcx_d(y: Any, x: Any) -> Any:
    """erfcx'(x) = 2 x erfcx(x) - 2 / sqrt(pi); from x = 1.25 on, where the two terms agree to
    1 / (2 x^2) (every digit by x = 1e8), -(2 / sqrt(pi)) T / (x + T) by the continued
    fraction (:func:`_erfc_fraction`), whose terms are all positive."""
    if _plain(x):
        return 2.0 * x * y - 1.0 / SQRT_PI_2
    far = mask(np.greater_equal, x, 1.25)
    x_far = select(far, x, 2.0)
    fraction = _erfc_fraction(x_far, 150)
    return select(far, -TWO_OVER_SQRT_PI * fraction / (x_far + fraction),
                  2.0 * x * y - 1.0 / SQRT_PI_2)


def _ndtri_d(y: Any, x: Any) -> Any:
    """ndtri'(p) = sqrt(2 pi) exp(y^2 / 2) = sqrt(2 pi) erfcx(|y| / sqrt 2) / (2 min(p, 1 - p))."""
    if _plain(x):
        return SQRT_2PI * exp_square(y, 0.5)
    tail = 2.0 * select(mask(np.less, x, 0.5), x, 1.0 - x)
    return SQRT_2PI * _inverse_d(y, x, mask(np.less, abs(x - 0.5), 0.4), 0.5,
                                 abs(y) * (1.0 / SQRT_2), tail)


erfcx = unary("erfcx", _own("erfcx", error_function.erfcx), _erfcx_d, "y x",
              lambda sp, x: sp.exp(x * x) * sp.erfc(x), _peer("erfcx"), lower=PIECEWISE)
ndtri = unary("ndtri", _own("ndtri", inverse_error.ndtri), _ndtri_d, "y x",
              lambda sp, x: sp.sqrt(2) * sp.erfinv(2 * x - 1), _peer("ndtri"), lower=PIECEWISE)


# log(z) / (1 - z) = -sum_k w^k / (k + 1) with w = 1 - z: used for |w| < 0.2, where the
# quotient loses digits (and at z = 1 divides 0 by 0; the derivative of the quotient, the
# second of spence, subtracts numbers that agree to a factor 12 at |w| = 0.2, 20 at 0.1);
# 32 terms leave an error below 1e-23, and below 1e-20 in the series' second derivative.
_SPENCE_SERIES = tuple(-1.0 / (k + 1) for k in range(32))


def _spence_d(y: Any, x: Any) -> Any:
    """d/dz spence(z) = log(z) / (1 - z), and its Taylor series about z = 1."""
    w = 1.0 - x
    near_one = mask(np.less, abs(w), 0.2)
    w_near, w_far = select(near_one, w, 0.5), select(near_one, 0.5, w)
    series = 0.0
    for c in reversed(_SPENCE_SERIES):  # Horner's rule
        series = series * w_near + c
    # (log z itself, not log(1 - w): 1 - (1 - z) is 0 for z < 1e-16)
    return select(near_one, series, log(select(near_one, 0.5, x)) / w_far)


spence = unary("spence", _own("spence", dilogarithm.spence), _spence_d, "x",
               no_closed_form("spence"), _peer("spence"))


# B_2k / (2k), k = 1 .. 10: the asymptotic series of digamma, psi(x) ~ log x - 1/(2x) - sum_k
# B_2k / (2k x^2k), within 4e-18 for x >= 8
_DIGAMMA_TAIL = tuple(b / (2 * k) for k, b in enumerate(
    (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
     -174611 / 330), start=1))


def _digamma_gap(a: Any, b: Any) -> Any:
    """psi(a) - psi(a + b): d/da log B(a, b). From a, a + b >= 8 on by the asymptotic series,
    each difference written so that nothing cancels: -log1p(b / a) - b / (2 a (a + b))
    - sum_k B_2k / (2k) a^-2k (-expm1(-2k log1p(b / a))). psi(a) - psi(a + b) subtracts two
    numbers that agree to b / a: every digit by a = 1e17."""
    if _plain(a) or _plain(b):
        return polygamma(a, n=0) - polygamma(a + b, n=0)
    far = mask(np.greater_equal, minimum(a, a + b), 8.0)
    a_far, b_far = select(far, a, 8.0), select(far, b, 1.0)
    a_near, b_near = select(far, 1.0, a), select(far, 1.0, b)
    ratio = log1p(b_far / a_far)
    tail = 0.0
    for k, c in enumerate(_DIGAMMA_TAIL, start=1):
        tail = tail + c * a_far ** (-2.0 * k) * -expm1(-2.0 * k * ratio)
    series = -ratio - b_far / (2.0 * a_far * (a_far + b_far)) - tail
    return select(far, series, polygamma(a_near, n=0) - polygamma(a_near + b_near, n=0))


beta = Primitive(  # B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)
    "beta", beta_function.beta,
    jvp=(lambda a_dot, y, a, b: a_dot * y * _digamma_gap(a, b),
         lambda b_dot, y, a, b: b_dot * y * _digamma_gap(b, a)),
    vjp=(lambda y_bar, y, a, b: y_bar * y * _digamma_gap(a, b),
         lambda y_bar, y, a, b: y_bar * y * _digamma_gap(b, a)),
    saves=("y a b", "y a b"), broadcasts=True, lower=SCIPY,
    sympy=lambda sp, a, b: sp.beta(a, b),
    array_api=_peer("beta"))
betaln = Primitive(  # log |B(a, b)|
    "betaln", beta_function.betaln,
    jvp=(lambda a_dot, y, a, b: a_dot * _digamma_gap(a, b),
         lambda b_dot, y, a, b: b_dot * _digamma_gap(b, a)),
    vjp=(lambda y_bar, y, a, b: y_bar * _digamma_gap(a, b),
         lambda y_bar, y, a, b: y_bar * _digamma_gap(b, a)),
    saves=("a b", "a b"), broadcasts=True, lower=SCIPY,
    sympy=lambda sp, a, b: sp.log(sp.beta(a, b)),
    array_api=_peer("betaln"))
xlog1py = Primitive(  # x log(1 + y), 0 where x == 0
    "xlog1py", _sp("xlog1py"),
    jvp=(lambda x_dot, z, x, y: x_dot * log1p(y), lambda y_dot, z, x, y: y_dot * x / (1.0 + y)),
    vjp=(lambda z_bar, z, x, y: z_bar * log1p(y), lambda z_bar, z, x, y: z_bar * x / (1.0 + y)),
    saves=("y", "x y"), broadcasts=True, lower=SCIPY,
    sympy=lambda sp, x, y: x * sp.log(1 + y),
    array_api=_peer("xlog1py"))


# entr'(x) = -(log x + 1) vanishes at x = 1/e, where log x is -1 to a rounding (5.5e15 ulps
# next to 1/e, as SciPy, JAX and PyTorch): there it is -(c + log1p((x - x0) / x0)), x0 the
# double nearest 1/e, x - x0 exact (Sterbenz) and c = log(x0) + 1 (mpmath, 50 digits;
# tests/test_special_accuracy.py recomputes it).
_INVERSE_E = 0.36787944117144233
_LOG_INVERSE_E_PLUS_1 = 3.3784855259134224e-17


def _entr_d(y: Any, x: Any) -> Any:
    """d/dx (-x log x) = -(log x + 1), without the cancellation next to x = 1/e."""
    if _plain(x):
        return -(log(x) + 1.0)
    near = mask(np.less_equal, abs(x - _INVERSE_E), 0.5 * _INVERSE_E)
    close = log1p((select(near, x, _INVERSE_E) - _INVERSE_E) / _INVERSE_E)
    return -select(near, _LOG_INVERSE_E_PLUS_1 + close, log(select(near, 1.0, x)) + 1.0)


def _entr(x: Any) -> Any:
    x = np.asarray(x)
    if x.dtype.kind == "c":
        raise DiffkitError("entr is defined on real numbers; take the real part first")
    return scipy_special().entr(x)


entr = unary("entr", _entr, _entr_d, "x",  # -x log x, 0 at 0, -inf below (SciPy's entr)
             lambda sp, x: -x * sp.log(x), _peer("entr"))
