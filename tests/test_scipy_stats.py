"""diffkit.scipy.stats: values against scipy.stats, gradients in the point and every
differentiable parameter against jax.scipy.stats (x64), at random points, rtol 1e-9.
Where JAX has no such function (``t.cdf``), the gradient is checked against the density
(d cdf / dx = pdf / scale ...)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import needs, assert_close

import diffkit as dk

import scipy.stats as ss  # noqa: E402

import diffkit.scipy.stats as dst  # noqa: E402

pytestmark = pytest.mark.jax
jax = needs("jax")
jax.config.update("jax_enable_x64", True)
jst = needs("jax", "jax.scipy.stats")

U = Callable[[np.random.Generator], float]


def _u(lo: float, hi: float) -> U:
    return lambda r: float(r.uniform(lo, hi))


# (distribution, method, samplers of the arguments, how many of them are differentiated)
CASES: dict[str, tuple[str, str, list[U], int]] = {
    "norm.logpdf": ("norm", "logpdf", [_u(-3, 3), _u(-1, 1), _u(0.5, 2)], 3),
    "norm.pdf": ("norm", "pdf", [_u(-3, 3), _u(-1, 1), _u(0.5, 2)], 3),
    "norm.cdf": ("norm", "cdf", [_u(-3, 3), _u(-1, 1), _u(0.5, 2)], 3),
    "norm.logcdf": ("norm", "logcdf", [_u(-6, 3), _u(-1, 1), _u(0.5, 2)], 3),
    "norm.sf": ("norm", "sf", [_u(-3, 6), _u(-1, 1), _u(0.5, 2)], 3),
    "norm.logsf": ("norm", "logsf", [_u(-3, 6), _u(-1, 1), _u(0.5, 2)], 3),
    "t.logpdf": ("t", "logpdf", [_u(-3, 3), _u(0.8, 9), _u(-1, 1), _u(0.5, 2)], 4),
    "t.pdf": ("t", "pdf", [_u(-3, 3), _u(0.8, 9), _u(-1, 1), _u(0.5, 2)], 4),
    "gamma.logpdf": ("gamma", "logpdf", [_u(1.1, 5), _u(0.5, 4), _u(-1, 1), _u(0.5, 2)], 4),
    "gamma.pdf": ("gamma", "pdf", [_u(1.1, 5), _u(0.5, 4), _u(-1, 1), _u(0.5, 2)], 4),
    "gamma.cdf": ("gamma", "cdf", [_u(1.1, 5), _u(0.5, 4), _u(-1, 1), _u(0.5, 2)], 2),
    "gamma.logcdf": ("gamma", "logcdf", [_u(1.1, 5), _u(0.5, 4), _u(-1, 1), _u(0.5, 2)], 2),
    "gamma.sf": ("gamma", "sf", [_u(1.1, 5), _u(0.5, 4), _u(-1, 1), _u(0.5, 2)], 2),
    "gamma.logsf": ("gamma", "logsf", [_u(1.1, 5), _u(0.5, 4), _u(-1, 1), _u(0.5, 2)], 2),
    "chi2.logpdf": ("chi2", "logpdf", [_u(1.1, 5), _u(1, 6), _u(-1, 1), _u(0.5, 2)], 4),
    "chi2.cdf": ("chi2", "cdf", [_u(1.1, 5), _u(1, 6), _u(-1, 1), _u(0.5, 2)], 2),
    "chi2.sf": ("chi2", "sf", [_u(1.1, 5), _u(1, 6), _u(-1, 1), _u(0.5, 2)], 2),
    "beta.logpdf": ("beta", "logpdf", [_u(0.1, 0.9), _u(0.5, 4), _u(0.5, 4)], 3),
    "beta.pdf": ("beta", "pdf", [_u(0.1, 0.9), _u(0.5, 4), _u(0.5, 4)], 3),
    "beta.cdf": ("beta", "cdf", [_u(0.1, 0.9), _u(0.5, 4), _u(0.5, 4)], 1),
    "beta.logcdf": ("beta", "logcdf", [_u(0.1, 0.9), _u(0.5, 4), _u(0.5, 4)], 1),
}
# loc and scale of the CDFs: differentiable too (after the point and the shape of gamma and
# chi2: gammainc's derivative in a), checked against JAX
LOC_SCALE_CDFS = {"norm.cdf", "gamma.cdf", "gamma.sf", "chi2.cdf", "chi2.sf"}


def _argnums(name: str, n_args: int, n_diff: int) -> tuple[int, ...]:
    if name in LOC_SCALE_CDFS and n_args > 3:
        return tuple(range(n_diff)) + (n_args - 2, n_args - 1)
    return tuple(range(n_diff))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_values_match_scipy_and_gradients_match_jax(name: str, seed: int) -> None:
    dist, method, samplers, n_diff = CASES[name]
    args = [s(np.random.default_rng(seed)) for s in samplers]
    ours = getattr(getattr(dst, dist), method)
    assert_close(ours(*args), getattr(getattr(ss, dist), method)(*args), rtol=1e-9)
    argnums = _argnums(name, len(args), n_diff)
    want = jax.grad(getattr(getattr(jst, dist), method), argnums=argnums)(*args)
    for backend in ("forward", "reverse"):
        got = dk.grad(ours, argnums=argnums, backend=backend)(*args)
        assert_close(np.array(got, dtype=float), np.array(want, dtype=float), rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_t_cdf_value_and_its_derivatives_are_the_density(seed: int) -> None:
    r = np.random.default_rng(seed)
    x, df, loc, scale = r.uniform(-3, 3), r.uniform(0.8, 9), r.uniform(-1, 1), r.uniform(0.5, 2)
    assert_close(dst.t.cdf(x, df, loc, scale), ss.t.cdf(x, df, loc, scale), rtol=1e-9)
    assert_close(dst.t.logcdf(x, df, loc, scale), ss.t.logcdf(x, df, loc, scale), rtol=1e-9)
    density, z = ss.t.pdf(x, df, loc, scale), (x - loc) / scale
    got = dk.grad(dst.t.cdf, argnums=(0, 2, 3))(x, df, loc, scale)
    assert_close(np.array(got), np.array([density, -density, -z * density]), rtol=1e-9)


def test_poisson_against_scipy_and_jax() -> None:
    k, mu = np.array([0.0, 1.0, 3.0, 7.0]), 2.7
    for method in ("logpmf", "pmf", "cdf"):
        assert_close(getattr(dst.poisson, method)(k, mu), getattr(ss.poisson, method)(k, mu), rtol=1e-9)
        want = jax.grad(lambda m, f=getattr(jst.poisson, method): f(k, m).sum())(mu)
        got = dk.grad(lambda m, f=getattr(dst.poisson, method): f(k, m).sum())(mu)
        assert_close(got, float(want), rtol=1e-9)
    assert dst.poisson.logpmf(np.array([-1.0, 1.5]), mu).tolist() == [-np.inf, -np.inf]
    with pytest.raises(dk.DiffkitError, match="counts k"):
        dk.grad(lambda k: dst.poisson.logpmf(k, mu))(2.0)


def test_multivariate_normal_against_scipy_and_jax() -> None:
    r = np.random.default_rng(3)
    x, mean = r.standard_normal((4, 3)), r.standard_normal(3)
    root = r.standard_normal((3, 3))
    cov = root @ root.T + 3.0 * np.eye(3)
    for method in ("logpdf", "pdf"):
        ours, theirs = getattr(dst.multivariate_normal, method), getattr(jst.multivariate_normal, method)
        assert_close(ours(x, mean, cov), getattr(ss.multivariate_normal, method)(x, mean, cov), rtol=1e-9)
        assert_close(ours(x[0], mean, cov), getattr(ss.multivariate_normal, method)(x[0], mean, cov),
                     rtol=1e-9)
        want = jax.grad(lambda *a: theirs(*a).sum(), argnums=(0, 1, 2))(x, mean, cov)
        got = dk.grad(lambda *a: ours(*a).sum(), argnums=(0, 1, 2))(x, mean, cov)
        for g, w in zip(got, want):
            assert_close(g, np.asarray(w), rtol=1e-9)
    # the entropy, and its gradient in cov: cov^-1 / 2 (symmetric cov)
    assert_close(dst.multivariate_normal.entropy(mean, cov),
                 ss.multivariate_normal.entropy(mean, cov), rtol=1e-12)
    assert_close(dk.grad(lambda c: dst.multivariate_normal.entropy(mean, c))(cov),
                 0.5 * np.linalg.inv(cov).T, rtol=1e-12)


def test_dirichlet_against_scipy_and_jax() -> None:
    r = np.random.default_rng(4)
    alpha = r.uniform(0.5, 3.0, 4)
    x = r.dirichlet(np.ones(4))
    for method in ("logpdf", "pdf"):
        ours, theirs = getattr(dst.dirichlet, method), getattr(jst.dirichlet, method)
        assert_close(ours(x, alpha), getattr(ss.dirichlet, method)(x, alpha), rtol=1e-9)
        want = jax.grad(theirs, argnums=(0, 1))(x, alpha)
        got = dk.grad(ours, argnums=(0, 1))(x, alpha)
        for g, w in zip(got, want):
            assert_close(g, np.asarray(w), rtol=1e-9)


def test_outside_the_support_the_log_density_is_minus_infinity() -> None:
    assert float(dst.gamma.logpdf(-0.5, 2.0)) == -np.inf == ss.gamma.logpdf(-0.5, 2.0)
    assert float(dst.beta.logpdf(1.5, 2.0, 2.0)) == -np.inf
    assert float(dst.gamma.cdf(-0.5, 2.0)) == 0.0


def test_a_shape_parameter_of_a_cdf_is_refused_by_name() -> None:
    """The shapes of beta's and t's CDFs (incomplete beta functions) are still constants;
    gamma's and chi2's are differentiable (CASES above, against JAX)."""
    with pytest.raises(dk.DiffkitError, match="'a'"):
        dk.grad(lambda a: dst.beta.cdf(0.4, a, 2.0))(2.0)
    with pytest.raises(dk.DiffkitError, match="'b'"):
        dk.grad(lambda b: dst.beta.cdf(0.4, 2.0, b))(2.0)
    with pytest.raises(dk.DiffkitError, match="'a'"):  # (t's df is betainc's a)
        dk.grad(lambda df: dst.t.cdf(0.4, df))(2.0)
    got = dk.grad(lambda a: dst.gamma.cdf(1.3, a))(2.0)
    want = jax.grad(lambda a: jst.gamma.cdf(1.3, a))(2.0)
    assert_close(got, float(want), rtol=1e-12)
