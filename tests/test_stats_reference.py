"""diffkit.scipy.stats against an independent reference, no peer library: the log-densities,
densities and CDFs written again with mpmath (30 digits), their derivatives by
``mpmath.diff``, at random points, in the point and in every differentiable parameter
(``loc``, ``scale`` and the shapes; the CDFs of t and beta keep theirs constant, those of
gamma and chi2 differentiate theirs through gammainc's derivative in a). Values are checked
against scipy.stats as well as against mpmath, and the mpmath formulas against scipy.stats
at every point (so a reference cannot drift from SciPy's convention unnoticed).

Gradients by both forward and reverse mode, each component relative to itself, with a
floor for components at or near 0: ``|g - r| <= 1e-10 max(|r|, 1e-3 max|r_all|)``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import pytest

import diffkit as dk

import scipy.stats as ss  # noqa: E402

import diffkit.scipy.stats as dst  # noqa: E402

DPS = 30
RTOL = 1e-10
M = mpmath


# ---------------------------------------------------------------- the mpmath references


def _norm_logpdf(x: Any, loc: Any, scale: Any) -> Any:
    z = (x - loc) / scale
    return -z * z / 2 - M.log(scale) - M.log(2 * M.pi) / 2


def _t_logpdf(x: Any, df: Any, loc: Any, scale: Any) -> Any:
    z = (x - loc) / scale
    return (M.loggamma((df + 1) / 2) - M.loggamma(df / 2) - M.log(M.pi * df) / 2 - M.log(scale)
            - (df + 1) / 2 * M.log(1 + z * z / df))


def _t_cdf(x: Any, df: Any, loc: Any, scale: Any) -> Any:
    z = (x - loc) / scale
    tail = M.betainc(df / 2, M.mpf(1) / 2, 0, df / (df + z * z), regularized=True) / 2
    return 1 - tail if z > 0 else tail


def _gamma_logpdf(x: Any, a: Any, loc: Any, scale: Any) -> Any:
    z = (x - loc) / scale
    return (a - 1) * M.log(z) - z - M.loggamma(a) - M.log(scale)


def _gamma_cdf(x: Any, a: Any, loc: Any, scale: Any) -> Any:
    return M.gammainc(a, 0, (x - loc) / scale, regularized=True)


def _gamma_sf(x: Any, a: Any, loc: Any, scale: Any) -> Any:
    return M.gammainc(a, (x - loc) / scale, M.inf, regularized=True)


def _beta_logpdf(x: Any, a: Any, b: Any, loc: Any, scale: Any) -> Any:
    z = (x - loc) / scale
    return (a - 1) * M.log(z) + (b - 1) * M.log(1 - z) - M.log(M.beta(a, b)) - M.log(scale)


def _beta_cdf(x: Any, a: Any, b: Any, loc: Any, scale: Any) -> Any:
    return M.betainc(a, b, 0, (x - loc) / scale, regularized=True)


def _chi2(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, df, loc, scale: f(x, df / 2, loc, 2 * scale)


def _exp(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *a: M.exp(f(*a))


def _log(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *a: M.log(f(*a))


def _norm_cdf(x: Any, loc: Any, scale: Any) -> Any:
    return M.ncdf((x - loc) / scale)


def _norm_sf(x: Any, loc: Any, scale: Any) -> Any:
    return M.ncdf((loc - x) / scale)


# samplers of the arguments (x last: beta's point is drawn inside [loc, loc + scale])
def _draw(dist: str, r: np.random.Generator, far: bool = False) -> list[float]:
    if dist == "norm":
        return [r.uniform(-6 if far else -3, 6 if far else 3), r.uniform(-1, 1), r.uniform(0.5, 2)]
    if dist == "t":
        return [r.uniform(-3, 3), r.uniform(0.8, 9), r.uniform(-1, 1), r.uniform(0.5, 2)]
    if dist in ("gamma", "chi2"):  # x > loc
        shape = r.uniform(0.5, 4) if dist == "gamma" else r.uniform(1, 6)
        return [r.uniform(1.1, 5), shape, r.uniform(-1, 1), r.uniform(0.5, 2)]
    if dist == "beta":
        a, b, loc, scale, z = (r.uniform(0.5, 4), r.uniform(0.5, 4), r.uniform(-1, 1),
                               r.uniform(0.5, 2), r.uniform(0.1, 0.9))
        return [loc + z * scale, a, b, loc, scale]
    raise KeyError(dist)


# name -> (mpmath function of all the arguments, the differentiable ones)
# (densities: every argument; CDFs: the point, loc and scale, and the shape of gamma and chi2;
# t's and beta's shapes are constants there)
CASES: dict[str, tuple[Callable[..., Any], tuple[int, ...]]] = {
    "norm.logpdf": (_norm_logpdf, (0, 1, 2)),
    "norm.pdf": (_exp(_norm_logpdf), (0, 1, 2)),
    "norm.cdf": (_norm_cdf, (0, 1, 2)),
    "norm.logcdf": (_log(_norm_cdf), (0, 1, 2)),
    "norm.sf": (_norm_sf, (0, 1, 2)),
    "norm.logsf": (_log(_norm_sf), (0, 1, 2)),
    "t.logpdf": (_t_logpdf, (0, 1, 2, 3)),
    "t.pdf": (_exp(_t_logpdf), (0, 1, 2, 3)),
    "t.cdf": (_t_cdf, (0, 2, 3)),
    "t.logcdf": (_log(_t_cdf), (0, 2, 3)),
    "gamma.logpdf": (_gamma_logpdf, (0, 1, 2, 3)),
    "gamma.pdf": (_exp(_gamma_logpdf), (0, 1, 2, 3)),
    "gamma.cdf": (_gamma_cdf, (0, 1, 2, 3)),
    "gamma.logcdf": (_log(_gamma_cdf), (0, 1, 2, 3)),
    "gamma.sf": (_gamma_sf, (0, 1, 2, 3)),
    "gamma.logsf": (_log(_gamma_sf), (0, 1, 2, 3)),
    "chi2.logpdf": (_chi2(_gamma_logpdf), (0, 1, 2, 3)),
    "chi2.pdf": (_exp(_chi2(_gamma_logpdf)), (0, 1, 2, 3)),
    "chi2.cdf": (_chi2(_gamma_cdf), (0, 1, 2, 3)),
    "chi2.logcdf": (_log(_chi2(_gamma_cdf)), (0, 1, 2, 3)),
    "chi2.sf": (_chi2(_gamma_sf), (0, 1, 2, 3)),
    "beta.logpdf": (_beta_logpdf, (0, 1, 2, 3, 4)),
    "beta.pdf": (_exp(_beta_logpdf), (0, 1, 2, 3, 4)),
    "beta.cdf": (_beta_cdf, (0, 3, 4)),
    "beta.logcdf": (_log(_beta_cdf), (0, 3, 4)),
}
SEEDS = [0, 1, 2, 3, 4]


def _grad_ref(f: Callable[..., Any], args: list[float], argnums: tuple[int, ...]) -> list[float]:
    """d f / d args[i] for i in argnums, to 30 digits (and the value)."""
    with mpmath.workdps(DPS):
        point = [mpmath.mpf(a) for a in args]

        def along(i: int) -> Callable[[Any], Any]:
            return lambda v: f(*point[:i], v, *point[i + 1:])
        return [float(mpmath.diff(along(i), point[i])) for i in argnums]


def _value_ref(f: Callable[..., Any], args: list[float]) -> float:
    with mpmath.workdps(DPS):
        return float(f(*(mpmath.mpf(a) for a in args)))


def _assert_grad(got: Any, want: Any, what: str) -> None:
    got, want = np.asarray(got, dtype=float).ravel(), np.asarray(want, dtype=float).ravel()
    assert got.shape == want.shape, what
    floor = 1e-3 * float(np.max(np.abs(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= RTOL * max(abs(w), floor), f"{what}: component {i}: {g!r} vs {w!r}"


def _assert_value(got: Any, want: float, what: str, rtol: float = RTOL) -> None:
    got = float(np.asarray(got))
    assert abs(got - want) <= rtol * abs(want) + 1e-300, f"{what}: {got!r} vs {want!r}"


# ---------------------------------------------------------------- the one-dimensional families


def test_the_cases_cover_test_scipy_stats() -> None:
    """Every distribution and method whose gradient test_scipy_stats checks against JAX
    (its CASES, and t.cdf by the density) is checked here, with loc and scale too."""
    theirs = {"norm.logpdf", "norm.pdf", "norm.cdf", "norm.logcdf", "norm.sf", "norm.logsf",
              "t.logpdf", "t.pdf", "gamma.logpdf", "gamma.pdf", "gamma.cdf", "gamma.logcdf",
              "chi2.logpdf", "chi2.cdf", "beta.logpdf", "beta.pdf", "beta.cdf", "beta.logcdf",
              "t.cdf"}
    assert theirs <= set(CASES) and len(CASES) == 25
    assert sum(len(argnums) for _, argnums in CASES.values()) == 92  # partial derivatives


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_in_every_parameter_match_mpmath(name: str, seed: int) -> None:
    dist, method = name.split(".")
    ref_f, argnums = CASES[name]
    far = method in ("logcdf", "logsf")  # into the tail where the log matters
    args = _draw(dist, np.random.default_rng(seed), far)
    ours = getattr(getattr(dst, dist), method)
    scipy_value = getattr(getattr(ss, dist), method)(*args)
    ref_value = _value_ref(ref_f, args)
    _assert_value(scipy_value, ref_value, f"{name}{args}: scipy vs the mpmath formula")
    _assert_value(ours(*args), ref_value, f"{name}{args}: value")
    _assert_value(ours(*args), float(scipy_value), f"{name}{args}: value vs scipy")
    want = _grad_ref(ref_f, args, argnums)
    for backend in ("forward", "reverse"):
        got = dk.grad(ours, argnums=argnums, backend=backend)(*args)
        _assert_grad(got, want, f"{name}{args} argnums={argnums} ({backend})")


def test_a_shape_parameter_of_a_cdf_is_refused_not_silently_zero() -> None:
    """What the CDF cases leave out (the shapes of t and beta) is refused by name, so no
    gradient there is a silent 0; gamma's and chi2's shapes are differentiated, against
    mpmath (besides CASES: in the far tails too, where the CDF or the SF is tiny)."""
    for call, name in ((lambda df: dst.t.cdf(0.4, df), "'a'"),
                       (lambda a: dst.beta.cdf(0.4, a, 2.0), "'a'"),
                       (lambda b: dst.beta.cdf(0.4, 2.0, b), "'b'")):
        with pytest.raises(dk.DiffkitError, match=name):
            dk.grad(call)(2.0)
    for method, ref_f in (("cdf", _gamma_cdf), ("sf", _gamma_sf), ("logcdf", _log(_gamma_cdf)),
                          ("logsf", _log(_gamma_sf))):
        for x, a in ((0.01, 6.0), (1.3, 2.0), (40.0, 3.0)):
            want = _grad_ref(ref_f, [x, a, 0.0, 1.0], (1,))[0]
            for backend in ("forward", "reverse"):
                got = dk.grad(lambda s: getattr(dst.gamma, method)(x, s), backend=backend)(a)
                _assert_grad(got, want, f"gamma.{method}({x}, a={a}) ({backend})")
    want = _grad_ref(_chi2(_gamma_cdf), [1.3, 3.0, 0.0, 1.0], (1,))[0]
    _assert_grad(dk.grad(lambda df: dst.chi2.cdf(1.3, df))(3.0), want, "chi2.cdf in df")


# ---------------------------------------------------------------- poisson, multivariate


def _poisson_refs() -> dict[str, Callable[..., Any]]:
    def logpmf(k: Any, mu: Any) -> Any:
        return k * M.log(mu) - mu - M.loggamma(k + 1)

    def cdf(k: Any, mu: Any) -> Any:  # P(K <= k) = Q(k + 1, mu)
        return M.gammainc(k + 1, mu, M.inf, regularized=True)

    return {"logpmf": logpmf, "pmf": _exp(logpmf), "cdf": cdf}


@pytest.mark.parametrize("mu", [0.4, 2.7, 9.5])
def test_poisson_value_and_gradient_in_mu_match_mpmath(mu: float) -> None:
    k = np.array([0.0, 1.0, 3.0, 7.0, 12.0])
    for method, ref_f in _poisson_refs().items():
        ours, theirs = getattr(dst.poisson, method), getattr(ss.poisson, method)
        values = np.asarray(ours(k, mu))
        for i, kk in enumerate(k):
            want = _value_ref(ref_f, [kk, mu])
            _assert_value(theirs(kk, mu), want, f"poisson.{method}({kk}, {mu}): scipy vs mpmath")
            _assert_value(values[i], want, f"poisson.{method}({kk}, {mu})")
            for backend in ("forward", "reverse"):
                got = dk.grad(lambda m: ours(kk, m), backend=backend)(mu)
                _assert_grad(got, _grad_ref(ref_f, [kk, mu], (1,)),
                             f"poisson.{method}({kk}, {mu}) d/dmu ({backend})")


def _mp_partials(f: Callable[[list], Any], flat: np.ndarray) -> np.ndarray:
    """The gradient of f(list of mpf) in every entry of ``flat``, by mpmath.diff."""
    with mpmath.workdps(DPS):
        point = [mpmath.mpf(float(v)) for v in flat]

        def along(i: int) -> Callable[[Any], Any]:
            return lambda v: f(point[:i] + [v] + point[i + 1:])
        return np.array([float(mpmath.diff(along(i), point[i])) for i in range(len(point))])


def _mvn_logpdf_mp(x: Any, mean: Any, cov: Any) -> Any:
    """Sum over the rows of x of the log-density, every entry of cov on its own (so its
    gradient is the unsymmetrized one, as of any function of a full matrix)."""
    d = cov.rows
    inv, logdet = M.inverse(cov), M.log(M.det(cov))
    total = 0
    for r in range(x.rows):
        diff = M.matrix([x[r, j] - mean[j] for j in range(d)])
        total += -(d * M.log(2 * M.pi) + logdet + (diff.T * inv * diff)[0, 0]) / 2
    return total


def test_multivariate_normal_values_and_gradients_match_mpmath() -> None:
    r = np.random.default_rng(3)
    x, mean = r.standard_normal((4, 3)), r.standard_normal(3)
    root = r.standard_normal((3, 3))
    cov = root @ root.T + 3.0 * np.eye(3)
    sizes = (x.size, mean.size, cov.size)

    def split(v: list) -> tuple[Any, Any, Any]:
        a, b = sizes[0], sizes[0] + sizes[1]
        return (M.matrix([v[3 * i:3 * i + 3] for i in range(4)]), v[a:b],
                M.matrix([v[b + 3 * i:b + 3 * i + 3] for i in range(3)]))

    flat = np.concatenate([x.ravel(), mean, cov.ravel()])
    for method in ("logpdf", "pdf"):
        def ref(v: list, method: str = method) -> Any:
            xs, m, c = split(v)
            if method == "logpdf":
                return _mvn_logpdf_mp(xs, m, c)
            return sum(M.exp(_mvn_logpdf_mp(xs[i:i + 1, :], m, c)) for i in range(4))

        with mpmath.workdps(DPS):
            want_value = float(ref([mpmath.mpf(float(v)) for v in flat]))
        ours = getattr(dst.multivariate_normal, method)
        _assert_value(np.sum(ours(x, mean, cov)), want_value, f"mvn.{method}")
        _assert_value(np.sum(getattr(ss.multivariate_normal, method)(x, mean, cov)), want_value,
                      f"mvn.{method}: scipy vs mpmath")
        want = _mp_partials(ref, flat)
        for backend in ("forward", "reverse"):
            got = dk.grad(lambda *a: ours(*a).sum(), argnums=(0, 1, 2), backend=backend)(
                x, mean, cov)
            ends = np.cumsum(sizes)
            for part, g, lo, hi in zip(("x", "mean", "cov"), got, ends - sizes, ends):
                _assert_grad(g, want[lo:hi], f"mvn.{method} d/d{part} ({backend})")

    # the entropy (d (1 + log 2 pi) + log det cov) / 2, and its gradient in cov
    def entropy(v: list) -> Any:
        c = M.matrix([v[3 * i:3 * i + 3] for i in range(3)])
        return (3 * (1 + M.log(2 * M.pi)) + M.log(M.det(c))) / 2

    with mpmath.workdps(DPS):
        want_value = float(entropy([mpmath.mpf(float(v)) for v in cov.ravel()]))
    _assert_value(dst.multivariate_normal.entropy(mean, cov), want_value, "mvn.entropy")
    _assert_grad(dk.grad(lambda c: dst.multivariate_normal.entropy(mean, c))(cov),
                 _mp_partials(entropy, cov.ravel()), "mvn.entropy d/dcov")


def test_dirichlet_values_and_gradients_match_mpmath() -> None:
    r = np.random.default_rng(4)
    for _ in range(2):
        alpha, x = r.uniform(0.5, 3.0, 4), r.dirichlet(np.ones(4))

        def logpdf(v: list) -> Any:
            xs, al = v[:4], v[4:]
            return (sum((a - 1) * M.log(xi) for a, xi in zip(al, xs))
                    - sum(M.loggamma(a) for a in al) + M.loggamma(sum(al)))

        flat = np.concatenate([x, alpha])
        for method, ref in (("logpdf", logpdf), ("pdf", lambda v: M.exp(logpdf(v)))):
            with mpmath.workdps(DPS):
                want_value = float(ref([mpmath.mpf(float(v)) for v in flat]))
            ours = getattr(dst.dirichlet, method)
            _assert_value(ours(x, alpha), want_value, f"dirichlet.{method}")
            _assert_value(getattr(ss.dirichlet, method)(x, alpha), want_value,
                          f"dirichlet.{method}: scipy vs mpmath")
            want = _mp_partials(ref, flat)
            for backend in ("forward", "reverse"):
                gx, ga = dk.grad(ours, argnums=(0, 1), backend=backend)(x, alpha)
                _assert_grad(gx, want[:4], f"dirichlet.{method} d/dx ({backend})")
                _assert_grad(ga, want[4:], f"dirichlet.{method} d/dalpha ({backend})")


def test_the_reference_harness_catches_a_one_in_1e8_error() -> None:
    x, a, loc, scale = 1.7, 2.2, 0.3, 1.4
    want = _grad_ref(_gamma_logpdf, [x, a, loc, scale], (3,))
    exact = ((x - loc) / scale - a) / scale  # d/dscale of the gamma log-density: (z - a) / scale
    assert abs(want[0] - exact) <= 1e-14 * abs(exact)
    with pytest.raises(AssertionError, match="component 0"):
        _assert_grad([exact * (1 + 1e-8)], want, "harness")
