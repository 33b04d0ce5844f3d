"""``diffkit.scipy.special``: the special functions of ``scipy.special`` that models use,
differentiable by every backend. SciPy is an optional extra (``pip install diffkit[scipy]``):
it is imported when one of these is first evaluated, and its absence is one clear error.

>>> import diffkit as dk
>>> round(float(dk.grad(gammaln)(3.0)), 12)  # digamma(3) = 3/2 - Euler's gamma
0.922784335098
"""

from __future__ import annotations

from typing import Any

from .. import primitives as _p
from ..core import bind
from ..numpy import logsumexp, sigmoid

gammaln, erf, erfc, logit, log_ndtr, xlogy = _p.gammaln, _p.erf, _p.erfc, _p.logit, _p.log_ndtr, _p.xlogy
expit = sigmoid


def polygamma(n: int, x: Any) -> Any:
    """The n-th derivative of digamma, ``polygamma(n, x)`` as in SciPy (``n`` a constant)."""
    return bind(_p.polygamma, x, n=int(n))


def digamma(x: Any) -> Any:
    """d/dx log Gamma(x)."""
    return bind(_p.polygamma, x, n=0)


psi = digamma

__all__ = ["gammaln", "digamma", "psi", "polygamma", "erf", "erfc", "expit", "logit", "xlogy",
           "log_ndtr", "logsumexp"]


def __dir__() -> list[str]:
    return list(__all__)
