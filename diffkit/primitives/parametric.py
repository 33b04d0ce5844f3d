"""Special functions of an order or a shape (SciPy's ``scipy.special``): Bessel functions
``jv``/``yv``/``iv``/``ive``, the regularized incomplete gamma and beta functions and the
Hurwitz zeta function.

Each is differentiable in one argument only: the Bessel functions and the incomplete
integrals in ``x`` (their last argument), zeta in ``q``. Their derivative there is again a
function of this table (``jv'(v, x) = (jv(v-1, x) - jv(v+1, x)) / 2``,
``gammainc'(a, x) = x^(a-1) e^-x / Gamma(a)``), so higher derivatives come for free. The
derivative in an order or shape (``v``, ``a``, ``b``) or in zeta's exponent has no such
form: differentiating one is an error that names the argument, as a constant it is fine.

>>> import diffkit as dk
>>> round(float(dk.grad(lambda x: jv(0.0, x))(1.0)), 12)  # -J1(1)
-0.440050585745
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import DiffkitError, Primitive
from .elementwise import exp, no_closed_form, sign
from .special import _jax_special, _sp, betaln, gammaln, xlog1py, xlogy


def _refused(name: str, arg: str) -> Callable[..., Any]:
    def rule(t: Any, y: Any, *args: Any) -> Any:
        raise DiffkitError(f"{name} is not differentiable in its argument {arg!r}: pass it as a "
                           f"constant (a number or numpy array) and differentiate in the other")
    return rule


def in_one(name: str, refused: tuple[str, ...], d: Callable[..., Any],
           array_api: Any = None) -> Primitive:
    """A primitive differentiable in its last argument, with derivative ``d(y, *args)``
    there; the arguments before it, named in ``refused``, are refused by name when
    differentiated."""
    def jvp(t: Any, y: Any, *args: Any) -> Any:
        return t * d(y, *args)

    rules = [_refused(name, arg) for arg in refused] + [jvp]
    return Primitive(name, _sp(name), jvp=tuple(rules), vjp=tuple(rules), broadcasts=True,
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


gammainc = in_one("gammainc", ("a",), lambda y, a, x: _gamma_density(a, x))
gammaincc = in_one("gammaincc", ("a",), lambda y, a, x: -_gamma_density(a, x))
betainc = in_one(  # d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b)
    "betainc", ("a", "b"),
    lambda y, a, b, x: exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b)))
zeta = in_one(  # Hurwitz zeta(x, q) = sum_k (k + q)^-x; d/dq = -x zeta(x + 1, q)
    "zeta", ("x",), lambda y, x, q: -x * zeta(x + 1.0, q))
