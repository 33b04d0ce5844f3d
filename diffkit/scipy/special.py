"""``diffkit.scipy.special``: the special functions of ``scipy.special`` that models use,
differentiable by every backend. Orders and shapes (``n`` of ``jn``, ``v`` of ``iv``, ``a, b``
of ``betainc``) and zeta's exponent are constants: differentiating one is an error naming
it. The shape ``a`` of ``gammainc``/``gammaincc`` is differentiable (as in JAX, and to every
order: :mod:`diffkit.primitives.incomplete_gamma`). SciPy is an optional extra (``pip install diffkit[scipy]``):
it is imported when one of these is first evaluated, and its absence is one clear error.

>>> import diffkit as dk
>>> round(float(dk.grad(gammaln)(3.0)), 12)  # digamma(3) = 3/2 - Euler's gamma
0.922784335098
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import primitives as _p
from ..primitives.special import exp_square as _exp_square
from ..core import Box, DiffkitError, bind, primal
from ..numpy import (abs, exp, floor, inf, isfinite, isnan, logsumexp, mod, nan,  # noqa: A004
                     sigmoid, signbit, where)

gammaln, erf, erfc, logit, log_ndtr, xlogy = _p.gammaln, _p.erf, _p.erfc, _p.logit, _p.log_ndtr, _p.xlogy
gamma, rgamma, beta, betaln, spence, xlog1py = _p.gamma, _p.rgamma, _p.beta, _p.betaln, _p.spence, _p.xlog1py
erfinv, erfcinv, erfcx, ndtri = _p.erfinv, _p.erfcinv, _p.erfcx, _p.ndtri
gammainc, gammaincc, betainc, jv, yv, iv, ive = (_p.gammainc, _p.gammaincc, _p.betainc, _p.jv,
                                                 _p.yv, _p.iv, _p.ive)
expit = sigmoid


def polygamma(n: Any, x: Any) -> Any:
    """The n-th derivative of digamma, ``polygamma(n, x)`` as in SciPy: ``n`` a constant
    order, or an array of them broadcast against ``x``.

    >>> polygamma(np.array([0, 1]), np.array([1.0, 1.0])).round(6)  # -gamma, pi^2/6
    array([-0.577216,  1.644934])
    """
    orders = np.asarray(primal(n))
    if orders.dtype.kind not in "iu" and not np.all(orders == np.round(orders)) or np.any(orders < 0):
        raise DiffkitError(f"polygamma: the order n must be a non-negative integer, got {n!r}")
    if orders.ndim == 0:
        return bind(_p.polygamma, x, n=int(orders))
    out = None
    for k in np.unique(orders):  # one primitive call per distinct order
        term = bind(_p.polygamma, x, n=int(k))
        out = term if out is None else where(orders == k, term, out)
    return out + np.zeros(orders.shape)


def digamma(x: Any) -> Any:
    """d/dx log Gamma(x)."""
    return bind(_p.polygamma, x, n=0)


psi = digamma


def ndtr(x: Any) -> Any:
    """The standard normal CDF, ``erfc(-x / sqrt 2) / 2``; for |x| > 1 from
    ``erfcx(|x| / sqrt 2) exp(-x^2 / 2) / 2``, the tail beyond |x| (1 minus it for x > 1):
    erfc at the rounded -x / sqrt 2, and its derivative, are x^2 / 2 ulps off (1300 by
    x = -35); erfcx barely moves with its argument, and exp(-x^2 / 2) is taken without
    rounding x^2 (:func:`diffkit.primitives.special.exp_square`).

    >>> float(ndtr(0.0))
    0.5
    """
    far = abs(x) > 1.0
    x_far = where(far, x, 2.0)
    tail = 0.5 * erfcx(abs(x_far) * np.sqrt(0.5)) * _exp_square(x_far, -0.5)
    return where(far, where(x < 0.0, tail, 1.0 - tail),
                 0.5 * erfc(where(far, 0.0, x) * -np.sqrt(0.5)))


def zeta(x: Any, q: Any = None) -> Any:
    """Hurwitz zeta ``sum_k (k + q)^-x`` (Riemann's with ``q=None``); differentiable in ``q``
    (``-x zeta(x + 1, q)``), the exponent ``x`` is a constant.

    >>> round(float(zeta(2.0)), 12)  # pi^2 / 6
    1.644934066848
    """
    return bind(_p.zeta, x, 1.0 if q is None else q)


def _integer_order(name: str, n: Any) -> Any:
    if isinstance(n, Box):
        raise DiffkitError(f"{name}: the order n is an integer, not differentiable: pass it as a "
                           "constant (a number or numpy array)")
    if not np.all(np.asarray(n) == np.round(n)):
        raise DiffkitError(f"{name}: the order n must be an integer, got {n!r} (use "
                           f"{name[0]}v for real orders)")
    return n


def jn(n: Any, x: Any) -> Any:
    """The Bessel function of the first kind of integer order ``n`` (a constant)."""
    return jv(_integer_order("jn", n), x)


def yn(n: Any, x: Any) -> Any:
    """The Bessel function of the second kind of integer order ``n`` (a constant)."""
    return yv(_integer_order("yn", n), x)


def j0(x: Any) -> Any:
    """Bessel J0; its derivative is -J1.

    >>> round(float(j0(1.0)), 12)
    0.765197686558
    """
    return jv(0.0, x)


def j1(x: Any) -> Any:
    """Bessel J1."""
    return jv(1.0, x)


def y0(x: Any) -> Any:
    """Bessel Y0 (x > 0)."""
    return yv(0.0, x)


def y1(x: Any) -> Any:
    """Bessel Y1 (x > 0)."""
    return yv(1.0, x)


def i0(x: Any) -> Any:
    """Modified Bessel I0; its derivative is I1."""
    return iv(0.0, x)


def i1(x: Any) -> Any:
    """Modified Bessel I1."""
    return iv(1.0, x)


def i0e(x: Any) -> Any:
    """``i0(x) exp(-|x|)``, without overflow."""
    return ive(0.0, x)


def i1e(x: Any) -> Any:
    """``i1(x) exp(-|x|)``, without overflow."""
    return ive(1.0, x)


def _outside(x: Any, y: Any, value: Any) -> Any:
    """``value``, and +inf where x < 0 or y < 0 (the entropies' convention, as SciPy)."""
    return where(x < 0, inf, where(y < 0, inf, value))


def entr(x: Any) -> Any:
    """``-x log x``, 0 at x = 0, -inf for x < 0; its derivative ``-(log x + 1)`` keeps its
    digits next to its zero x = 1/e.

    >>> float(entr(1.0))
    -0.0
    """
    return _p.entr(x)


def rel_entr(x: Any, y: Any) -> Any:
    """``x log(x / y)``, 0 at x = 0 (y >= 0), +inf outside the domain."""
    return _outside(x, y, xlogy(x, x) - xlogy(x, y))


def kl_div(x: Any, y: Any) -> Any:
    """``x log(x / y) - x + y``, ``y`` at x = 0 (y >= 0), +inf outside the domain."""
    return _outside(x, y, xlogy(x, x) - xlogy(x, y) - x + y)


def log_softmax(x: Any, axis: int | tuple[int, ...] | None = None) -> Any:
    """``x - logsumexp(x, axis)``: the log of :func:`softmax`, without overflow."""
    return x - logsumexp(x, axis=axis, keepdims=True)


def softmax(x: Any, axis: int | tuple[int, ...] | None = None) -> Any:
    """``exp(x) / sum(exp(x), axis)`` (over all entries with ``axis=None``, as SciPy).

    >>> softmax(np.log([1.0, 3.0])).round(12).tolist()
    [0.25, 0.75]
    """
    return exp(log_softmax(x, axis))


def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function of dimension ``d`` (a constant integer):
    ``d (d - 1) / 4 log pi + sum_j gammaln(a - j / 2)``, j = 0 .. d - 1."""
    if isinstance(d, Box) or int(d) != d or d < 1:
        raise DiffkitError(f"multigammaln: the dimension d must be a constant integer >= 1, got {d!r}")
    out = d * (d - 1) / 4.0 * np.log(np.pi)
    for j in range(int(d)):
        out = out + gammaln(a - 0.5 * j)
    return out


def gammasgn(x: Any) -> Any:
    """The sign of gamma(x), as SciPy's: 1 for x > 0, then -1 and 1 in turn between the
    poles 0, -1, -2 ... (NaN at them and at -inf; gammasgn(-0.0) = -1). It is constant
    between the poles: its derivative is 0 (no gamma is evaluated, so none overflows).

    >>> gammasgn(np.array([2.5, -0.5, -1.5, -2.0, -0.0])).tolist()
    [1.0, -1.0, 1.0, nan, -1.0]
    """
    finite = where(isfinite(x), x, 0.5)
    k = floor(finite)
    between_poles = where(k == finite, nan, where(mod(k, 2.0) == 0.0, 1.0, -1.0))
    at_zero = where(signbit(x), -1.0, 1.0)
    signs = where(x > 0, 1.0, where(x == 0, at_zero, between_poles))
    return where(isnan(x), nan, where(x == -inf, nan, signs))


__all__ = ["gammaln", "digamma", "psi", "polygamma", "erf", "erfc", "expit", "logit", "xlogy",
           "log_ndtr", "logsumexp", "gamma", "rgamma", "beta", "betaln", "betainc", "gammainc",
           "gammaincc", "multigammaln", "erfinv", "erfcinv", "erfcx", "ndtr", "ndtri", "i0", "i0e",
           "i1", "i1e", "iv", "ive", "j0", "j1", "jn", "jv", "y0", "y1", "yn", "yv", "zeta",
           "spence", "xlog1py", "entr", "kl_div", "rel_entr", "softmax", "log_softmax", "gammasgn"]


def __dir__() -> list[str]:
    return list(__all__)
