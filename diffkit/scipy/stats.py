"""``diffkit.scipy.stats``: the log-densities people fit by gradient, as functions of the
point and of the parameters, written with the primitives (so every backend and every order
of derivative runs them).

Each distribution is an object with SciPy's methods and signatures: ``norm.logpdf(x, loc,
scale)``, ``gamma.cdf(x, a, loc, scale)``, ``poisson.logpmf(k, mu, loc)`` ... Densities are
differentiable in the point and in every parameter. The CDFs of ``t``, ``gamma``, ``beta``,
``chi2`` and ``poisson`` are incomplete beta and gamma functions, differentiable in the point,
``loc``, ``scale`` and ``mu``, and those of ``gamma`` and ``chi2`` (``cdf``, ``logcdf``, ``sf``,
``logsf``) in their shape (``a``, ``df``) too, through ``gammainc``'s derivative in ``a``;
the shapes of ``t`` and ``beta`` (``df``, ``a``, ``b``) are constants there, and
differentiating one is an error naming it. Outside the support a log-density is ``-inf``
(as SciPy).

>>> import diffkit as dk
>>> round(float(dk.grad(lambda mu: norm.logpdf(1.5, loc=mu))(0.5)), 12)  # (x - mu) / sigma^2
1.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, primal
from ..numpy import (asarray, exp, floor, inf, linalg, log, log1p, matmul, sum, swapaxes,
                     where)
from . import special as sc

LOG_2PI = float(np.log(2.0 * np.pi))


class _Continuous:
    """``pdf = exp(logpdf)`` and ``logcdf = log(cdf)`` for a distribution defining the others."""

    def logpdf(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def cdf(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def pdf(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        """The density."""
        return exp(self.logpdf(x, *args, **kwargs))

    def logcdf(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        """The log of the CDF."""
        return log(self.cdf(x, *args, **kwargs))


class _Norm(_Continuous):
    """The normal distribution ``N(loc, scale^2)``."""

    def logpdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        z = (x - loc) / scale
        return -0.5 * z * z - log(scale) - 0.5 * LOG_2PI

    def cdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        return sc.ndtr((x - loc) / scale)

    def logcdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        return sc.log_ndtr((x - loc) / scale)

    def sf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        """The survival function 1 - cdf, without the cancellation in the upper tail."""
        return sc.ndtr((loc - x) / scale)

    def logsf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        return sc.log_ndtr((loc - x) / scale)


class _T(_Continuous):
    """Student's t with ``df`` degrees of freedom."""

    def logpdf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        z = (x - loc) / scale
        return (sc.gammaln(0.5 * (df + 1.0)) - sc.gammaln(0.5 * df) - 0.5 * log(np.pi * df)
                - log(scale) - 0.5 * (df + 1.0) * log1p(z * z / df))

    def cdf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        """``I(df / (df + z^2); df/2, 1/2) / 2`` on the far side of 0, one minus it on the near."""
        z = (x - loc) / scale
        tail = 0.5 * sc.betainc(0.5 * df, 0.5, df / (df + z * z))
        return where(z > 0, 1.0 - tail, tail)


class _Gamma(_Continuous):
    """The gamma distribution of shape ``a``."""

    def logpdf(self, x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        z = (x - loc) / scale
        inside = sc.xlogy(a - 1.0, z) - z - sc.gammaln(a) - log(scale)
        return where(z < 0, -inf, inside)

    def cdf(self, x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        z = (x - loc) / scale
        return sc.gammainc(a, where(z < 0, 0.0, z))

    def sf(self, x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        """The survival function 1 - cdf, as ``gammaincc`` (no cancellation in the tail)."""
        z = (x - loc) / scale
        return sc.gammaincc(a, where(z < 0, 0.0, z))

    def logsf(self, x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        return log(self.sf(x, a, loc, scale))


class _Chi2(_Continuous):
    """The chi-squared distribution: ``gamma(a=df/2, scale=2 scale)``."""

    def logpdf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        return gamma.logpdf(x, 0.5 * df, loc, 2.0 * scale)

    def cdf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        return gamma.cdf(x, 0.5 * df, loc, 2.0 * scale)

    def sf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        """The survival function 1 - cdf."""
        return gamma.sf(x, 0.5 * df, loc, 2.0 * scale)

    def logsf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        return gamma.logsf(x, 0.5 * df, loc, 2.0 * scale)


class _Beta(_Continuous):
    """The beta distribution on ``[loc, loc + scale]``."""

    def logpdf(self, x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        z = (x - loc) / scale
        inside = sc.xlogy(a - 1.0, z) + sc.xlog1py(b - 1.0, -z) - sc.betaln(a, b) - log(scale)
        return where(z < 0, -inf, where(z > 1, -inf, inside))

    def cdf(self, x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        z = (x - loc) / scale
        return sc.betainc(a, b, where(z < 0, 0.0, where(z > 1, 1.0, z)))


class _Poisson:
    """The Poisson distribution of mean ``mu``; the counts ``k`` are constants."""

    def logpmf(self, k: Any, mu: Any, loc: Any = 0.0) -> Any:
        k = _counts(k) - primal(loc)
        inside = sc.xlogy(k, mu) - mu - sc.gammaln(k + 1.0)
        return where((k < 0) | (k != np.floor(k)), -inf, inside)

    def pmf(self, k: Any, mu: Any, loc: Any = 0.0) -> Any:
        """The probability of ``k``."""
        return exp(self.logpmf(k, mu, loc))

    def cdf(self, k: Any, mu: Any, loc: Any = 0.0) -> Any:
        """``P(K <= k) = gammaincc(floor(k) + 1, mu)``."""
        k = floor(_counts(k) - primal(loc))
        return where(k < 0, 0.0, sc.gammaincc(np.maximum(k, 0.0) + 1.0, mu))


def _counts(k: Any) -> np.ndarray:
    if primal(k) is not k:
        raise DiffkitError("poisson: the counts k are data, not differentiable: pass them as "
                           "a constant (a number or numpy array)")
    return np.asarray(k, dtype=float)


class _MultivariateNormal:
    """The normal distribution of mean vector ``mean`` and covariance matrix ``cov``."""

    def logpdf(self, x: Any, mean: Any = 0.0, cov: Any = 1.0, allow_singular: bool = False) -> Any:
        """Over the last axis of ``x``; ``cov`` symmetric positive definite (a number is
        a multiple of the identity). With ``allow_singular=True`` a constant ``cov`` may be
        singular (:func:`_singular_logpdf`)."""
        diff = asarray(x) - mean
        d = diff.shape[-1] if diff.ndim else 1
        if np.ndim(primal(cov)) < 2:
            cov = cov * np.eye(d)
        if allow_singular:
            w, v = np.linalg.eigh(primal(cov))
            cutoff = 1e6 * np.finfo(float).eps * np.max(np.abs(w))  # SciPy's
            if np.any(w <= cutoff):
                if primal(cov) is not cov:
                    raise DiffkitError("multivariate_normal: a singular cov is a constant "
                                       "here (its pseudo-determinant has no derivative where "
                                       "eigenvalues meet at 0); pass cov as a plain array")
                return _singular_logpdf(diff, w, v, cutoff)
        _, logdet = linalg.slogdet(cov)
        solved = swapaxes(linalg.solve(cov, swapaxes(diff[..., None, :], -1, -2)), -1, -2)
        maha = sum(matmul(solved, diff[..., :, None]), axis=(-2, -1))
        return -0.5 * (d * LOG_2PI + logdet + maha)

    def pdf(self, x: Any, mean: Any = 0.0, cov: Any = 1.0, allow_singular: bool = False) -> Any:
        """The density."""
        return exp(self.logpdf(x, mean, cov, allow_singular))

    def entropy(self, mean: Any = None, cov: Any = 1.0) -> Any:
        """(d (1 + log 2 pi) + log det cov) / 2, of a positive definite ``cov``."""
        d = np.shape(primal(cov))[-1] if np.ndim(primal(cov)) else 1
        logdet = linalg.slogdet(cov)[1] if np.ndim(primal(cov)) == 2 else d * log(cov)
        return 0.5 * (d * (1.0 + LOG_2PI) + logdet)


def _singular_logpdf(diff: Any, w: np.ndarray, v: np.ndarray, cutoff: float) -> Any:
    """SciPy's density on the support of a singular covariance ``v diag(w) v^T``: with
    the r eigenvalues above ``cutoff``, ``-(r log 2 pi + log pdet + |diff|^2_pinv) / 2``;
    ``-inf`` where ``diff`` leaves the support (the span of their eigenvectors)."""
    kept = w > cutoff
    whiten = v[:, kept] / np.sqrt(w[kept])
    maha = sum(matmul(diff, whiten) ** 2, axis=-1)
    value = -0.5 * (int(kept.sum()) * LOG_2PI + np.sum(np.log(w[kept])) + maha)
    plain = np.asarray(primal(diff))
    off = np.linalg.norm(plain - plain @ v[:, kept] @ v[:, kept].T, axis=-1)
    return where(off > 1e-8 * max(1.0, float(np.max(np.abs(plain), initial=0.0))), -inf, value)


class _Dirichlet:
    """The Dirichlet distribution of concentrations ``alpha`` (a point ``x`` of the simplex,
    over its first axis as SciPy)."""

    def logpdf(self, x: Any, alpha: Any) -> Any:
        alpha = asarray(alpha)
        shape = (-1,) + (1,) * (np.ndim(primal(x)) - 1)
        a = alpha.reshape(shape)
        log_norm = sum(sc.gammaln(alpha)) - sc.gammaln(sum(alpha))
        return sum(sc.xlogy(a - 1.0, x), axis=0) - log_norm

    def pdf(self, x: Any, alpha: Any) -> Any:
        """The density."""
        return exp(self.logpdf(x, alpha))


norm, t, gamma, chi2, beta = _Norm(), _T(), _Gamma(), _Chi2(), _Beta()
poisson, multivariate_normal, dirichlet = _Poisson(), _MultivariateNormal(), _Dirichlet()

__all__ = ["norm", "t", "gamma", "chi2", "beta", "poisson", "multivariate_normal", "dirichlet"]
