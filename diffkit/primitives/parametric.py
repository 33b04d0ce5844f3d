"""Special functions of an order or a shape (SciPy's ``scipy.special``): Bessel functions
``jv``/``yv``/``iv``/``ive``, the regularized incomplete gamma and beta functions and the
Hurwitz zeta function.

The Bessel functions and the incomplete beta function are differentiable in ``x`` (their
last argument), zeta in ``q``. Their derivative there is again a function of this table
(``jv'(v, x) = (jv(v-1, x) - jv(v+1, x)) / 2``, ``gammainc'(a, x) = x^(a-1) e^-x / Gamma(a)``),
so higher derivatives come for free. The derivative in an order or shape (``v``, ``b``, ``a``
of ``betainc``) or in zeta's exponent has no such form: differentiating one is an error that
names the argument, as a constant it is fine. The incomplete gamma functions are
differentiable in their shape ``a`` too: ``d^n/da^n gammainc`` is the primitive
``gammainc_da(a, x, n=n)``, computed by the series and the continued fraction of ``gammainc``
carried out in Taylor arithmetic in ``a`` (:mod:`diffkit.primitives.incomplete_gamma`); its
own derivatives are ``gammainc_da(n=n+1)`` in ``a`` and the n-th ``a``-derivative of the gamma
density in ``x``, so every order and every mix of ``a`` and ``x`` composes.

>>> import diffkit as dk
>>> round(float(dk.grad(lambda x: jv(0.0, x))(1.0)), 12)  # -J1(1)
-0.440050585745
>>> round(float(dk.grad(lambda a: gammainc(a, 1.0))(1.0)), 12)  # d/da P(a, 1) at a = 1
-0.431729710635
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import DiffkitError, Primitive
from .compare import mask, select
from .elementwise import abs, exp, log, maximum, no_closed_form, power, sign  # noqa: A004
from .incomplete_gamma import gammainc_da as _gammainc_da_impl
from .incomplete_gamma import regularized
from .lowering import SCIPY
from .extended import EXTENDED, PI, narrow, plain_double
from .polygamma_negative import BERNOULLI
from .special import (_jax_special, _plain, _sp, beta, betaln, gamma, gammaln, polygamma,
                      scipy_special, xlog1py, xlogy)


def _refused(name: str, arg: str) -> Callable[..., Any]:
    def rule(t: Any, y: Any, *args: Any) -> Any:
        raise DiffkitError(f"{name} is not differentiable in its argument {arg!r}: pass it as a "
                           f"constant (a number or numpy array) and differentiate in the other")
    return rule


def _times(d: Callable[..., Any]) -> Callable[..., Any]:
    def rule(t: Any, y: Any, *args: Any) -> Any:
        return t * d(y, *args)
    return rule


def in_one(name: str, refused: tuple[str, ...], d: Callable[..., Any],
           array_api: Any = None, impl: Callable[..., Any] | None = None) -> Primitive:
    """A primitive differentiable in its last argument, with derivative ``d(y, *args)``
    there; the arguments before it, named in ``refused``, are refused by name when
    differentiated."""
    return partials(name, (*refused, d), array_api, impl)


def partials(name: str, each: tuple[str | Callable[..., Any], ...],
             array_api: Any = None, impl: Callable[..., Any] | None = None) -> Primitive:
    """A SciPy function of several arguments with one entry of ``each`` per argument: its
    partial derivative ``d(y, *args)``, or the argument's name where it has none (then
    differentiating it is an error that names it). ``impl``: its numpy implementation, if
    not SciPy's function of that name."""
    rules = tuple(_refused(name, d) if isinstance(d, str) else _times(d) for d in each)
    return Primitive(name, impl or _sp(name), jvp=rules, vjp=rules, broadcasts=True, lower=SCIPY,
                     sympy=no_closed_form(name), array_api=array_api or (lambda xp, *args: _jax_special(xp, name)(*args)))


_NEAR, _FAR = 2.0, 20.0  # |x| <= 2: the power series of I_v; |x| >= 20 + v^2: the asymptotic one


def _asymptotic(v: Any, u: Any, weight: Callable[[int], float] = lambda k: 1.0) -> Any:
    """sum_k w(k) c_k u^k, 40 terms, c_k those of ive(v, x) ~ (2 pi x)^-1/2 sum_k c_k x^-k:
    c_0 = 1, c_k = c_(k-1) ((2k - 1)^2 - 4 v^2) / (8k), with 1/sqrt(2 pi) folded in. For
    x >= 20 + v^2 the terms fall below 1e-17 before they grow again (the smallest is about
    e^-2x). Numbers or primitives alike (v a constant), so it differentiates again; in long
    double where u is."""
    wide = getattr(u, "dtype", None) == np.longdouble
    c = 1 / np.sqrt(2 * PI) if wide else 1.0 / math.sqrt(2.0 * math.pi)
    mu, terms = 4.0 * v * v, []
    for k in range(40):
        if k:
            c = c * ((2 * k - 1) ** 2 - mu) / (8 * k)
        terms.append(c * weight(k))
    total = 0.0
    for t in reversed(terms):  # Horner's rule
        total = total * u + t
    return total


def _bessel_i(v: Any, x: Any, scaled: bool) -> Any:
    """iv(v, x), or ive(v, x) = iv(v, x) exp(-|x|) (``scaled``): SciPy's (i0e for ive(0, x)),
    but for |x| <= 2 the power series (x/2)^v sum_k (x^2/4)^k / (k! Gamma(v + k + 1)), every
    term positive (SciPy's iv(1, x) is 0 below 1e-235, its ive(2.5, 1e-200) 6e14 ulps off),
    for |x| >= 20 + v^2 the asymptotic series (:func:`_asymptotic`; SciPy's ive is NaN
    from |x| = 1.3e9, its iv 11 ulps off near 470), and in between the power series in long
    double (:func:`_series_long`; SciPy's where long double is a double). Where I_v(x) is
    not real (x < 0, v not an integer) and for complex values, SciPy's.

    >>> float(_bessel_i(1.0, 1e-300, scaled=False)), float(_bessel_i(0.0, -1e300, scaled=True))
    (5e-301, 3.9894228040143264e-151)
    """
    special = scipy_special()
    out = special.ive(v, x) if scaled else special.iv(v, x)
    if np.iscomplexobj(x) or np.iscomplexobj(v):
        return out
    with np.errstate(all="ignore"):
        v, x = np.broadcast_arrays(np.asarray(v, dtype=float), np.asarray(x, dtype=float))
        if scaled:
            out = np.where(v == 0, special.i0e(x), out)
        integer = v == np.rint(v)
        order = np.where(integer, np.abs(v), v)  # I_-n = I_n
        a = np.abs(x)
        sign = np.where(x < 0, 1.0 - 2.0 * np.abs(np.fmod(order, 2.0)), 1.0)
        real = (order >= 0) & (integer | (x >= 0))
        near, far = real & (a <= _NEAR), real & (a >= _FAR + order * order)
        t, ratios = 0.25 * np.where(near, x * x, 0.0), [1.0]
        for k in range(1, 16):  # (x^2/4)^k / (k!)^2 < 2e-19 from k = 16
            ratios.append(ratios[-1] / (k * (order + k)))
        rest = 0.0
        for r in reversed(ratios[1:]):  # sum_k>=1 t^k / (k! (v + 1)_k), smallest first
            rest = (rest + r) * t
        base = np.power(0.5 * a, order) * special.rgamma(order + 1.0) * (
            np.exp(-a) if scaled else 1.0)
        small = base + base * rest  # (1 + rest rounded would round at 1's last place)
        large = np.power(a, -0.5) * _asymptotic(order, 1.0 / np.where(far, a, 1e3))
        if not scaled:  # (e^a as e^(a/2) twice: I_v overflows at 714, e^a at 709.8)
            half = np.exp(0.5 * np.where(far, a, 0.0))
            large = large * half * half
        out = np.where(near, sign * small, np.where(far, sign * large, out))
        middle = real & ~near & ~far
        if EXTENDED and middle.any():
            out = np.array(out, dtype=float)
            out[middle] = sign[middle] * _series_long(order[middle], a[middle], scaled)
        if EXTENDED and far.any():  # (the asymptotic series and e^a in long double)
            wide = a[far].astype(np.longdouble)
            big = wide ** -0.5 * _asymptotic(order[far].astype(np.longdouble), 1 / wide)
            out = np.array(out, dtype=float)
            out[far] = sign[far] * (big if scaled else big * np.exp(wide)).astype(float)
    return out[()] if out.ndim == 0 else out


def _series_long(v: np.ndarray, a: np.ndarray, scaled: bool) -> np.ndarray:
    """I_v(a) (times e^-a if ``scaled``) for 2 < a < 20 + v^2 by the power series in long
    double, every term positive, rounded once (SciPy's iv is 8 ulps off there); up to
    2 sqrt(a^2/4) + 60 terms, the last below 2^-64 of the sum."""
    ld = np.longdouble
    half = a.astype(ld) / 2
    t = half * half
    term, total = np.ones_like(t), np.ones_like(t)
    for k in range(1, int(2 * np.sqrt(float(t.max()))) + 61):
        term = term * t / (k * (v + k))
        total = total + term
    base = half ** v.astype(ld) * scipy_special().rgamma(v + 1.0).astype(ld)
    if scaled:
        base = base * np.exp(-a.astype(ld))
    return (base * total).astype(np.float64)


def _ive_d(y: Any, v: Any, x: Any) -> Any:
    """d/dx ive(v, x) = (ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x) ive(v, x): the terms
    agree to about 1/(2|x|), so from |x| = 20 + v^2 on the asymptotic series differentiated
    term by term, -sign(x) sign(y) |x|^-3/2 sum_k (k + 1/2) c_k |x|^-k, instead (all of the
    difference's digits are gone by |x| = 1e16), and from |x| = 1/2 the primitive
    :data:`ive_derivative` (the power series in long double: the rule was 10 ulps off at 1.4,
    68 at 18). Each form sees harmless values (|x| = 1000, x = 1, x = 5) where another is
    taken."""
    if _plain(x):
        return 0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x)) - sign(x) * y
    far = mask(np.greater_equal, abs(x), _FAR + v * v)
    inner = mask(np.less_equal, abs(x), 0.5)
    a = select(far, abs(x), 1e3)
    d_far = -sign(x) * sign(y) * power(a, -1.5) * _asymptotic(v, 1.0 / a, lambda k: k + 0.5)
    x_near, y_near = select(far, 1.0, x), select(far, 0.0, y)
    d_near = 0.5 * (ive(v - 1.0, x_near) + ive(v + 1.0, x_near)) - sign(x_near) * y_near
    d_middle = ive_derivative(v, select(far, 5.0, select(inner, 5.0, x)), n=1)
    return select(far, d_far, select(inner, d_near, d_middle))


def _ive_derivative_impl(v: Any, x: Any, *, n: int) -> Any:
    """d^n/dx^n ive(v, x) on numbers with |x| > 1/2: sigma s^n e^-a sum_k T_k sum_j C(n, j)
    (-1)^(n-j) (m)_j / a^j, a = |x|, s = sign(x), sigma = (-1)^v for x < 0, m = 2k + v and
    T_k = (a/2)^m / (k! Gamma(v + k + 1)) (the power series of I_v and of its derivatives),
    in long double: the terms cancel to about 1/(2a) of the largest (the rule
    (ive(v - 1) + ive(v + 1))/2 - sign(x) ive(v) in doubles: 68 ulps at |x| = 18), 11 more
    bits keep the result within an ulp. Up to 2 sqrt(a^2/4) + 60 terms (a < 20 + v^2)."""
    v, x = np.broadcast_arrays(np.asarray(v, dtype=float), np.asarray(x, dtype=float))
    dtype = np.longdouble  # (a double where numpy has no extended precision)
    integer = v == np.rint(v)
    order = np.where(integer, np.abs(v), v)
    a = np.abs(x).astype(dtype)
    with np.errstate(all="ignore"):
        half = a / 2
        t = half * half
        term = half ** order.astype(dtype) * scipy_special().rgamma(order + 1.0).astype(dtype)
        total = np.zeros_like(a)
        for k in range(int(2 * np.sqrt(float(np.max(t, initial=1.0)))) + 61):
            m = 2 * k + order.astype(dtype)
            falling, inner = np.ones_like(a), np.zeros_like(a)
            for j in range(n + 1):  # sum_j C(n, j) (-1)^(n-j) (m)_j / a^j
                inner = inner + math.comb(n, j) * (-1) ** (n - j) * falling
                falling = falling * (m - j) / a
            total = total + term * inner
            term = term * t / ((k + 1) * (order + k + 1))
        sign = np.where(x < 0, (1.0 - 2.0 * np.abs(np.fmod(order, 2.0))) * (-1.0) ** n, 1.0)
        out = (total * np.exp(-a)).astype(np.float64) * sign
        out = np.where((order >= 0) & (integer | (x >= 0)), out, np.nan)
    return out[()] if out.ndim == 0 else out


def _ive_derivative_refused(t: Any, y: Any, v: Any, x: Any, *, n: int) -> Any:
    return _refused("ive", "v")(t, y, v, x)


ive_derivative = Primitive(  # d^n/dx^n ive(v, x), for 1/2 < |x| < 20 + v^2
    "ive_derivative", _ive_derivative_impl,
    jvp=(_ive_derivative_refused,
         lambda x_dot, y, v, x, *, n: x_dot * ive_derivative(v, x, n=n + 1)),
    vjp=(_ive_derivative_refused,
         lambda y_bar, y, v, x, *, n: y_bar * ive_derivative(v, x, n=n + 1)),
    saves=("", "v x"), broadcasts=True,
    lower=("diffkit's own routine (a power series in long double), one vectorized numpy call "
           "between kernels"),
    sympy=no_closed_form("ive_derivative"))


def _jv_array(xp: Any, v: Any, x: Any) -> Any:
    """``jv`` in JAX, which has integer orders only (``bessel_jn`` gives orders 0 .. v)."""
    return _jax_special(xp, "bessel_jn")(x, v=int(v))[-1]


def _own_orders(name: str, zero: str, one: str | None = None) -> Callable[[Any, Any], Any]:
    """SciPy's ``name(v, x)``, but for |x| <= 5 its own ``zero(x)`` (and ``one(x)``, C_-1 =
    -C_1) of Cephes for the orders 0 (and +-1): j0's and j1's rational forms there carry the
    factors (x^2 - z_1^2)(x^2 - z_2^2) of their first zeros, where the general routine keeps
    an absolute error (jv(0, x) is 5e15 ulps off next to 2.4048, j0 2.8e15; yv(0, x) 1.2e16
    next to 0.8936, y0 1.4e15; y1 is no better than yv(1, x)). Beyond 5 Cephes's are the
    less accurate (j1 at x = 1e4: 1000 ulps)."""
    def impl(v: Any, x: Any) -> Any:
        special = scipy_special()
        out = getattr(special, name)(v, x)
        if np.iscomplexobj(x) or np.iscomplexobj(v):
            return out
        with np.errstate(all="ignore"):
            own = np.where(v == 0, getattr(special, zero)(x), out)
            if one:
                c1 = getattr(special, one)(x)
                own = np.where(v == 1, c1, np.where(v == -1, -c1, own))
            out = np.where(np.abs(x) <= 5.0, own, out)
            if name == "yv":  # (SciPy's yv(2, 1e-152) is -inf, yn's recurrence -9.7e303)
                integer = np.isinf(out) & (x > 0) & (v == np.rint(v)) & (np.abs(v) < 2**31)
                out = np.where(integer, special.yn(np.where(integer, v, 0).astype(int), x), out)
        return out[()] if out.ndim == 0 else out
    impl.__name__ = name
    return impl


jv = in_one("jv", ("v",), lambda y, v, x: 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x)),
            array_api=_jv_array, impl=_own_orders("jv", "j0", "j1"))
yv = in_one("yv", ("v",), lambda y, v, x: 0.5 * (yv(v - 1.0, x) - yv(v + 1.0, x)),
            impl=_own_orders("yv", "y0"))
iv = in_one("iv", ("v",), lambda y, v, x: 0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x)),
            impl=lambda v, x: _bessel_i(v, x, scaled=False))
ive = in_one(  # iv(v, x) exp(-|x|)
    "ive", ("v",), lambda y, v, x: _ive_d(y, v, x), impl=lambda v, x: _bessel_i(v, x, scaled=True))


def _below(*exponents: Any) -> Any:
    """Where every one of the natural logarithms ``exponents`` is below 700: none of the
    numbers they are the logarithms of overflows (one mask per example under vmap)."""
    largest = exponents[0]
    for e in exponents[1:]:
        largest = maximum(largest, e)
    return mask(np.less, largest, 700.0)


def _gamma_density_form(a: Any, x: Any, *, k: int) -> Any:
    """x^(a-k) e^-x / Gamma(a) on numbers: k = 1, d/dx of the regularized lower incomplete
    gamma function; k = 2, 3 ... its derivatives' factors.

    As the product ``power(x, a - k) exp(-x) / Gamma(a)`` wherever no factor overflows
    (a < 171; beyond x = 700, where exp(-x) is subnormal before the density is, exp(-x/2)
    twice): pow and exp take their arguments exactly, so the product is within 3 ulps.
    ``exp((a - k) log x - x - log Gamma(a))`` takes the rounding of its exponent (500 ulps
    at x = 1e-198, where it is -680): it is kept where a factor would overflow. Each form
    sees harmless values (a = 2, x = 1) where the other is taken.

    >>> round(float(_gamma_density_form(2.5, 700.0, k=1)) * 1e300, 12)  # 700^1.5 e^-700 / Gamma(2.5)
    1.373641895033
    """
    ok = _below(xlogy(a - k, maximum(x, 1e-300)), 0.5 * x, 4.1 * a)
    a_p, x_p = select(ok, a, 2.0), select(ok, x, 1.0)
    split = mask(np.greater, x_p, 700.0)
    e = exp(-select(split, 0.5, 1.0) * x_p)  # (x/2 exact)
    product = power(x_p, a_p - k) * e / gamma(a_p) * select(split, e, 1.0)
    a_e, x_e = select(ok, 2.0, a), select(ok, 1.0, x)
    return select(ok, product, exp(xlogy(a_e - k, x_e) - x_e - gammaln(a_e)))


def _gamma_density_array(xp: Any, a: Any, x: Any, *, k: int) -> Any:
    return xp.exp(_jax_special(xp, "xlogy")(a - k, x) - x - _jax_special(xp, "gammaln")(a))


# Its derivative in x is x^(a-k-1) e^-x (a - k - x) / Gamma(a): the density with k + 1 times
# a - k - x, which is exact next to its zero x = a - k. (The derivative of the product,
# (a-k) x^(a-k-1) e^-x - x^(a-k) e^-x, subtracts two terms that agree there: 1.4e15 ulps in
# gammainc's second derivative next to x = a - 1.) In a: the density times log x - psi(a).
gamma_density = Primitive(
    "gamma_density", _gamma_density_form,
    jvp=(lambda a_dot, y, a, x, *, k: a_dot * y * (log(x) - polygamma(a, n=0)),
         lambda x_dot, y, a, x, *, k: x_dot * gamma_density(a, x, k=k + 1) * (a - k - x)),
    vjp=(lambda y_bar, y, a, x, *, k: y_bar * y * (log(x) - polygamma(a, n=0)),
         lambda y_bar, y, a, x, *, k: y_bar * gamma_density(a, x, k=k + 1) * (a - k - x)),
    saves=("y a x", "a x"), broadcasts=True,
    lower=("diffkit's own choice between two forms by the arguments (the product, or the "
           "exponential of its logarithm), one vectorized numpy call between kernels"),
    sympy=lambda sp, a, x, *, k: x ** (a - k) * sp.exp(-x) / sp.gamma(a),
    array_api=_gamma_density_array)


def _beta_density(a: Any, b: Any, x: Any) -> Any:
    """x^(a-1) (1-x)^(b-1) / B(a, b): d/dx of the regularized incomplete beta function.

    As the product ``power(x, a - 1) power(1 - x, b - 1) / B(a, b)`` wherever no factor
    over- or underflows (1 - x is exact from x = 1/2, and within half an ulp below):
    within 3 ulps; on values (not traced, not differentiated again) the same product in long
    double, rounded once: within an ulp and B's rounding.
    ``exp((a - 1) log x + (b - 1) log1p(-x) - log B(a, b))`` takes the rounding of its
    exponent (290 ulps at x = 1e-291): it is kept where a factor would overflow. Each form
    sees harmless values (a = b = 2, x = 1/2) where the other is taken.

    >>> round(float(_beta_density(0.5, 2.5, 0.25)) * float(beta(0.5, 2.5)), 15)
    1.299038105676658
    """
    if _plain(a) or _plain(b) or _plain(x):
        return exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b))
    log_b = betaln(a, b)
    ok = _below(xlogy(a - 1.0, maximum(x, 1e-300)), xlog1py(b - 1.0, -x), abs(log_b))
    a_p, b_p, x_p = select(ok, a, 2.0), select(ok, b, 2.0), select(ok, x, 0.5)
    if all(plain_double(v) for v in (a, b, x)):  # a value: rounded once
        a_l, b_l, x_l = (np.asarray(v, np.longdouble) for v in (a_p, b_p, x_p))
        product = narrow(np.power(x_l, a_l - 1) * np.power(1 - x_l, b_l - 1)
                         / np.asarray(beta(a_p, b_p), np.longdouble))
    else:
        product = power(x_p, a_p - 1.0) * power(1.0 - x_p, b_p - 1.0) / beta(a_p, b_p)
    x_e = select(ok, 0.5, x)
    return select(ok, product, exp(xlogy(a - 1.0, x_e) + xlog1py(b - 1.0, -x_e) - log_b))


def _density_da(a: Any, x: Any, n: int) -> Any:
    """d^n/da^n of the gamma density e^g, g = (a - 1) log x - x - log Gamma(a): e^g times the
    complete Bell polynomial of g' = log x - psi(a), g^(k) = -psi^(k-1)(a) (k >= 2), by
    B_(m+1) = sum_i C(m, i) B_(m-i) g^(i+1). In primitives, so it differentiates again."""
    g = [log(x) - polygamma(a, n=0)] + [-polygamma(a, n=k) for k in range(1, n)]
    bell: list[Any] = [1.0]
    for m in range(n):
        bell.append(sum(math.comb(m, i) * bell[m - i] * g[i] for i in range(m + 1)))
    return gamma_density(a, x, k=1) * bell[n]


def _gammainc_da_impl_scipy(a: Any, x: Any, *, n: int) -> Any:
    return _gammainc_da_impl(scipy_special(), a, x, n)


def _gammainc_da_array(xp: Any, a: Any, x: Any, *, n: int) -> Any:
    """JAX's own derivative of its ``gammainc`` in ``a``, n times, entry by entry."""
    if not xp.__name__.startswith("jax"):
        raise DiffkitError(f"gammainc_da has no array-API form for {xp.__name__} (only JAX "
                           "differentiates gammainc in a)")
    import jax  # (deferred: a peer library, optional)

    f = _jax_special(xp, "gammainc")
    for _ in range(n):
        f = jax.grad(f, argnums=0)
    return xp.vectorize(f)(a, x)


gammainc_da = Primitive(  # d^n/da^n gammainc(a, x), n >= 1 (gammaincc's: its negative)
    "gammainc_da", _gammainc_da_impl_scipy,
    jvp=(lambda a_dot, y, a, x, *, n: a_dot * gammainc_da(a, x, n=n + 1),
         lambda x_dot, y, a, x, *, n: x_dot * _density_da(a, x, n)),
    vjp=(lambda y_bar, y, a, x, *, n: y_bar * gammainc_da(a, x, n=n + 1),
         lambda y_bar, y, a, x, *, n: y_bar * _density_da(a, x, n)),
    saves=("a x", "a x"), broadcasts=True, lower=SCIPY, sympy=no_closed_form("gammainc_da"),
    array_api=_gammainc_da_array)
gammainc = partials("gammainc", (lambda y, a, x: gammainc_da(a, x, n=1),
                                 lambda y, a, x: gamma_density(a, x, k=1)),
                    impl=lambda a, x: regularized(scipy_special(), a, x, upper=False))
gammaincc = partials("gammaincc", (lambda y, a, x: -gammainc_da(a, x, n=1),
                                   lambda y, a, x: -gamma_density(a, x, k=1)),
                     impl=lambda a, x: regularized(scipy_special(), a, x, upper=True))
betainc = in_one(  # d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b)
    "betainc", ("a", "b"),
    lambda y, a, b, x: _beta_density(a, b, x))
# B_2j / (2j)!, j = 1 .. 8: the Euler-Maclaurin corrections of Hurwitz zeta
_EULER_MACLAURIN = tuple(float(b / math.factorial(2 * j)) for j, b in enumerate(BERNOULLI[:8], start=1))


def _zeta(x: Any, q: Any) -> Any:
    """Hurwitz zeta(x, q) = sum_k (q + k)^-x: SciPy's, but for x > 1 and 0 < q < 20 by
    Euler-Maclaurin from the 12th term on, w = q + 12: w^(1-x) / (x - 1) + w^-x / 2
    + sum_j B_2j / (2j)! x (x + 1) ... (x + 2j - 2) w^(-x-2j+1) (below 1e-20 by j = 8),
    then the 12 first terms added, the smallest first, by a compensated sum: within 2
    ulps (SciPy's 4.9 near q = 3).

    >>> round(float(_zeta(2.0, 1.0)) * 6 / math.pi**2, 15)
    1.0
    """
    special = scipy_special()
    out = special.zeta(x, q)
    if np.iscomplexobj(x) or np.iscomplexobj(q):
        return out
    with np.errstate(all="ignore"):
        x, q = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(x, q))
        near = (x > 1.0) & (q > 0.0) & (q < 20.0)
        if np.any(near):
            q = np.where(near, q, 1.0)
            w = q + 12.0
            rising, power, total = x, np.power(w, -x - 1.0), 0.0
            for j, c in enumerate(_EULER_MACLAURIN, start=1):
                total = total + c * rising * power
                rising, power = rising * (x + 2 * j - 1) * (x + 2 * j), power / (w * w)
            total, lost = total + np.power(w, 1.0 - x) / (x - 1.0) + 0.5 * np.power(w, -x), 0.0
            for k in range(11, -1, -1):  # (Neumaier's compensated sum: what each sum drops)
                term = np.power(q + k, -x)
                bigger = total + term
                lost = lost + np.where(np.abs(total) >= np.abs(term), (total - bigger) + term,
                                       (term - bigger) + total)
                total = bigger
            out = np.where(near, total + lost, out)
    return out[()] if out.ndim == 0 else out


zeta = in_one(  # Hurwitz zeta(x, q) = sum_k (k + q)^-x; d/dq = -x zeta(x + 1, q)
    "zeta", ("x",), lambda y, x, q: -x * zeta(x + 1.0, q), impl=_zeta)
