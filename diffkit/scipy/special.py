"""``diffkit.scipy.special``: the special functions of ``scipy.special`` that models use,
differentiable by every backend. SciPy is an optional extra (``pip install diffkit[scipy]``):
it is imported when one of these is first evaluated, and its absence is one clear error.

>>> import diffkit as dk
>>> round(float(dk.grad(gammaln)(3.0)), 12)  # digamma(3) = 3/2 - Euler's gamma
0.922784335098
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import primitives as _p
from ..core import DiffkitError, bind, primal
from ..numpy import logsumexp, sigmoid, where

gammaln, erf, erfc, logit, log_ndtr, xlogy = _p.gammaln, _p.erf, _p.erfc, _p.logit, _p.log_ndtr, _p.xlogy
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

__all__ = ["gammaln", "digamma", "psi", "polygamma", "erf", "erfc", "expit", "logit", "xlogy",
           "log_ndtr", "logsumexp"]


def __dir__() -> list[str]:
    return list(__all__)
