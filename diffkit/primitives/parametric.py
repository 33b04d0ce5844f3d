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

from ..core import DiffkitError, Primitive
from .elementwise import exp, log, no_closed_form, sign
from .incomplete_gamma import gammainc_da as _gammainc_da_impl
from .lowering import SCIPY
from .special import _jax_special, _sp, betaln, gammaln, polygamma, scipy_special, xlog1py, xlogy


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
           array_api: Any = None) -> Primitive:
    """A primitive differentiable in its last argument, with derivative ``d(y, *args)``
    there; the arguments before it, named in ``refused``, are refused by name when
    differentiated."""
    return partials(name, (*refused, d), array_api)


def partials(name: str, each: tuple[str | Callable[..., Any], ...],
             array_api: Any = None) -> Primitive:
    """A SciPy function of several arguments with one entry of ``each`` per argument: its
    partial derivative ``d(y, *args)``, or the argument's name where it has none (then
    differentiating it is an error that names it)."""
    rules = tuple(_refused(name, d) if isinstance(d, str) else _times(d) for d in each)
    return Primitive(name, _sp(name), jvp=rules, vjp=rules, broadcasts=True, lower=SCIPY,
                     sympy=no_closed_form(name), array_api=array_api or (lambda xp, *args: _jax_special(xp, name)(*args)))


def _jv_array(xp: Any, v: Any, x: Any) -> Any:
    """``jv`` in JAX, which has integer orders only (``bessel_jn`` gives orders 0 .. v)."""
    return _jax_special(xp, "bessel_jn")(x, v=int(v))[-1]


jv = in_one("jv", ("v",), lambda y, v, x: 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x)),
            array_api=_jv_array)
yv = in_one("yv", ("v",), lambda y, v, x: 0.5 * (yv(v - 1.0, x) - yv(v + 1.0, x)))
iv = in_one("iv", ("v",), lambda y, v, x: 0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x)))
ive = in_one(  # iv(v, x) exp(-|x|)
    "ive", ("v",), lambda y, v, x: 0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x)) - sign(x) * y)


def _gamma_density(a: Any, x: Any) -> Any:
    """x^(a-1) e^-x / Gamma(a): d/dx of the regularized lower incomplete gamma function."""
    return exp(xlogy(a - 1.0, x) - x - gammaln(a))


def _density_da(a: Any, x: Any, n: int) -> Any:
    """d^n/da^n of the gamma density e^g, g = (a - 1) log x - x - log Gamma(a): e^g times the
    complete Bell polynomial of g' = log x - psi(a), g^(k) = -psi^(k-1)(a) (k >= 2), by
    B_(m+1) = sum_i C(m, i) B_(m-i) g^(i+1). In primitives, so it differentiates again."""
    g = [log(x) - polygamma(a, n=0)] + [-polygamma(a, n=k) for k in range(1, n)]
    bell: list[Any] = [1.0]
    for m in range(n):
        bell.append(sum(math.comb(m, i) * bell[m - i] * g[i] for i in range(m + 1)))
    return _gamma_density(a, x) * bell[n]


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
                                 lambda y, a, x: _gamma_density(a, x)))
gammaincc = partials("gammaincc", (lambda y, a, x: -gammainc_da(a, x, n=1),
                                   lambda y, a, x: -_gamma_density(a, x)))
betainc = in_one(  # d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b)
    "betainc", ("a", "b"),
    lambda y, a, b, x: exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b)))
zeta = in_one(  # Hurwitz zeta(x, q) = sum_k (k + q)^-x; d/dq = -x zeta(x + 1, q)
    "zeta", ("x",), lambda y, x, q: -x * zeta(x + 1.0, q))
