"""Special functions (SciPy's ``scipy.special``): gamma and its relatives (log-gamma,
polygamma, beta), error functions and their inverses, logit, the normal CDF's log and
inverse, Spence's function and ``x log(1 + y)``.

Their numpy implementations come from SciPy, an optional extra: SciPy is imported when
one of them is first evaluated, and its absence is one clear error saying how to install
it. Each derivative is again a special function of this table (``gammaln' = polygamma(0)``,
``polygamma(n)' = polygamma(n + 1)``), so second derivatives come for free. The
user-facing names live in :mod:`diffkit.scipy.special`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, Primitive
from .compare import mask, select
from .elementwise import abs, cos, exp, log, log1p, no_closed_form, sin, unary  # noqa: A004

SQRT_2PI = float(np.sqrt(2.0 * np.pi))


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


def _jax_special(xp: Any, name: str) -> Any:
    """The same function in another array library (JAX and PyTorch name their modules)."""
    if xp.__name__.startswith("jax"):
        import jax.scipy.special as mod  # (deferred: a peer library, optional)
    elif xp.__name__.startswith("torch"):
        import torch.special as mod  # (deferred: a peer library, optional)
    else:
        raise DiffkitError(f"{name} has no array-API form for {xp.__name__}")
    return getattr(mod, name)


gammaln = unary("gammaln", _sp("gammaln"), lambda y, x: polygamma(x, n=0), "x",
                lambda sp, x: sp.loggamma(x), lambda xp, x: _jax_special(xp, "gammaln")(x))


def _polygamma_array(xp: Any, x: Any, *, n: int) -> Any:
    if n == 0:
        return _jax_special(xp, "digamma")(x)
    return _jax_special(xp, "polygamma")(n, x)


polygamma = Primitive(  # polygamma(x, n=k) is the k-th derivative of digamma (k = 0: digamma)
    "polygamma", lambda x, *, n: scipy_special().polygamma(n, x),
    jvp=(lambda x_dot, y, x, *, n: x_dot * polygamma(x, n=n + 1),),
    vjp=(lambda y_bar, y, x, *, n: y_bar * polygamma(x, n=n + 1),),
    saves=("x",), broadcasts=True,
    sympy=lambda sp, x, *, n: sp.polygamma(n, x),
    array_api=_polygamma_array,
)
erf = unary("erf", _sp("erf"), lambda y, x: (2.0 / np.sqrt(np.pi)) * exp(-x * x), "x",
            lambda sp, x: sp.erf(x), lambda xp, x: _jax_special(xp, "erf")(x))
erfc = unary("erfc", _sp("erfc"), lambda y, x: (-2.0 / np.sqrt(np.pi)) * exp(-x * x), "x",
             lambda sp, x: sp.erfc(x), lambda xp, x: _jax_special(xp, "erfc")(x))
logit = unary("logit", _sp("logit"), lambda y, x: 1.0 / (x * (1.0 - x)), "x",
              lambda sp, x: sp.log(x / (1 - x)), lambda xp, x: xp.log(x / (1.0 - x)))
log_ndtr = unary(  # log Phi(x); d = phi(x) / Phi(x), taken in logs (no 0 / 0 far left)
    "log_ndtr", _sp("log_ndtr"), lambda y, x: exp(-0.5 * x * x - y) / SQRT_2PI, "y x",
    lambda sp, x: sp.log((1 + sp.erf(x / sp.sqrt(2))) / 2),
    lambda xp, x: _jax_special(xp, "log_ndtr")(x))


def _xlogy(x: Any, y: Any) -> Any:
    return scipy_special().xlogy(x, y)


xlogy = Primitive(  # x log y, 0 where x == 0
    "xlogy", _xlogy,
    jvp=(lambda x_dot, z, x, y: x_dot * log(y), lambda y_dot, z, x, y: y_dot * x / y),
    vjp=(lambda z_bar, z, x, y: z_bar * log(y), lambda z_bar, z, x, y: z_bar * x / y),
    saves=("y", "x y"), broadcasts=True,
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
    """d/dx 1/Gamma(x) = -psi(x) / Gamma(x). At the poles x = -k of Gamma, where 1/Gamma is 0
    and psi infinite, the derivative of the reflection ``sin(pi x) Gamma(1 - x) / pi`` is taken
    (exact at x <= 0, to every order). Each formula is evaluated only where it is finite
    (elsewhere at x = 1/2), so no NaN reaches a higher derivative."""
    pole = mask(np.equal, y, 0.0)  # (1/Gamma has no other zeros)
    x_pole, x_regular = select(pole, x, 0.5), select(pole, 0.5, x)
    w = 1.0 - x_pole
    reflected = cos(np.pi * x_pole) * gamma(w) - sin(np.pi * x_pole) * gamma(w) * polygamma(w, n=0) / np.pi
    return select(pole, reflected, -y * polygamma(x_regular, n=0))


rgamma = unary("rgamma", _sp("rgamma"), _rgamma_d, "y x", lambda sp, x: 1 / sp.gamma(x),
               lambda xp, x: 1.0 / _jax_special(xp, "gamma")(x))
erfinv = unary("erfinv", _sp("erfinv"), lambda y, x: SQRT_PI_2 * exp(y * y), "y",
               lambda sp, x: sp.erfinv(x), _peer("erfinv"))
erfcinv = unary("erfcinv", _sp("erfcinv"), lambda y, x: -SQRT_PI_2 * exp(y * y), "y",
                lambda sp, x: sp.erfinv(1 - x), lambda xp, x: _jax_special(xp, "erfinv")(1.0 - x))
erfcx = unary("erfcx", _sp("erfcx"), lambda y, x: 2.0 * x * y - 1.0 / SQRT_PI_2, "y x",
              lambda sp, x: sp.exp(x * x) * sp.erfc(x), _peer("erfcx"))
ndtri = unary("ndtri", _sp("ndtri"), lambda y, x: SQRT_2PI * exp(0.5 * y * y), "y",
              lambda sp, x: sp.sqrt(2) * sp.erfinv(2 * x - 1), _peer("ndtri"))


# log(z) / (1 - z) = -sum_k w^k / (k + 1) with w = 1 - z: used for |w| < 0.1, where the
# quotient loses digits (and at z = 1 divides 0 by 0); 16 terms leave an error below 1e-17.
_SPENCE_SERIES = tuple(-1.0 / (k + 1) for k in range(16))


def _spence_d(y: Any, x: Any) -> Any:
    """d/dz spence(z) = log(z) / (1 - z), and its Taylor series about z = 1."""
    w = 1.0 - x
    near_one = mask(np.less, abs(w), 0.1)
    w_near, w_far = select(near_one, w, 0.5), select(near_one, 0.5, w)
    series = 0.0
    for c in reversed(_SPENCE_SERIES):  # Horner's rule
        series = series * w_near + c
    return select(near_one, series, log(1.0 - w_far) / w_far)


spence = unary("spence", _sp("spence"), _spence_d, "x", no_closed_form("spence"), _peer("spence"))


def _digamma_gap(a: Any, b: Any) -> Any:
    """psi(a) - psi(a + b): d/da log B(a, b)."""
    return polygamma(a, n=0) - polygamma(a + b, n=0)


beta = Primitive(  # B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)
    "beta", _sp("beta"),
    jvp=(lambda a_dot, y, a, b: a_dot * y * _digamma_gap(a, b),
         lambda b_dot, y, a, b: b_dot * y * _digamma_gap(b, a)),
    vjp=(lambda y_bar, y, a, b: y_bar * y * _digamma_gap(a, b),
         lambda y_bar, y, a, b: y_bar * y * _digamma_gap(b, a)),
    saves=("y a b", "y a b"), broadcasts=True, sympy=lambda sp, a, b: sp.beta(a, b),
    array_api=_peer("beta"))
betaln = Primitive(  # log |B(a, b)|
    "betaln", _sp("betaln"),
    jvp=(lambda a_dot, y, a, b: a_dot * _digamma_gap(a, b),
         lambda b_dot, y, a, b: b_dot * _digamma_gap(b, a)),
    vjp=(lambda y_bar, y, a, b: y_bar * _digamma_gap(a, b),
         lambda y_bar, y, a, b: y_bar * _digamma_gap(b, a)),
    saves=("a b", "a b"), broadcasts=True, sympy=lambda sp, a, b: sp.log(sp.beta(a, b)),
    array_api=_peer("betaln"))
xlog1py = Primitive(  # x log(1 + y), 0 where x == 0
    "xlog1py", _sp("xlog1py"),
    jvp=(lambda x_dot, z, x, y: x_dot * log1p(y), lambda y_dot, z, x, y: y_dot * x / (1.0 + y)),
    vjp=(lambda z_bar, z, x, y: z_bar * log1p(y), lambda z_bar, z, x, y: z_bar * x / (1.0 + y)),
    saves=("y", "x y"), broadcasts=True, sympy=lambda sp, x, y: x * sp.log(1 + y),
    array_api=_peer("xlog1py"))
