"""Special functions (SciPy's ``scipy.special``): log-gamma, polygamma, error functions,
logit and the log of the normal CDF.

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
from .elementwise import exp, log, unary

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
