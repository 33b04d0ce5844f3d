"""Names autograd's users call that diffkit now has, each against an independent reference:
``scipy.signal.convolve`` with autograd's ``axes``/``dot_axes`` (SciPy's 1-D convolutions
and ``numpy.tensordot``), ``scipy.special.gammasgn`` (SciPy), ``scipy.linalg.solve_banded``
(SciPy, and the closed form of the derivative of a solve), ``scipy.integrate.odeint``
(SciPy's LSODA and the closed form of a linear ODE), ``multivariate_normal`` with a singular
``cov`` (SciPy), and ``append`` of lists holding values being differentiated.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats
from conftest import assert_close

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.scipy import linalg, signal, special, stats
from diffkit.transforms import scipy_odeint as integrate

R = np.random.default_rng(7)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve_along_some_axes_matches_scipy(mode: str) -> None:
    a, b = R.normal(size=(3, 5)), R.normal(size=(3, 4, 2))
    # a's axis 1 (5) convolved with b's axis 1 (4), summed along their axes 0
    got = signal.convolve(a, b, axes=([1], [1]), dot_axes=([0], [0]), mode=mode)
    expected = np.stack([sum(scipy.signal.convolve(a[i], b[i, :, k], mode) for i in range(3))
                         for k in range(2)])                        # (b's others, convolved)
    assert_close(got, expected, rtol=1e-13)
    outer = signal.convolve(a, b[0], axes=([1], [0]), mode=mode)  # (a's 3, b's 2, convolved)
    expected = np.array([[scipy.signal.convolve(a[i], b[0, :, k], mode) for k in range(2)]
                         for i in range(3)])
    assert_close(outer, expected, rtol=1e-13)
    assert_close(signal.convolve(a, b[:, 0], axes=([], []), dot_axes=([0], [0])),
                 np.tensordot(a, b[:, 0], axes=([0], [0])), rtol=1e-13)


def test_convolve_along_axes_gradient_is_the_correlation() -> None:
    """The gradient of a bilinear function: checked by central differences of SciPy's
    convolution (exact up to rounding)."""
    a, b = R.normal(size=(2, 4)), R.normal(size=(2, 3))
    w = R.normal(size=6)

    def reference(a):  # convolved along axis 1, summed along axis 0
        return np.sum(w * sum(scipy.signal.convolve(a[i], b[i]) for i in range(2)))

    g = dk.grad(lambda a: dnp.sum(w * signal.convolve(a, b, axes=([1], [1]),
                                                      dot_axes=([0], [0]))))(a)
    h = 1e-6
    fd = np.array([(reference(a + h * e) - reference(a - h * e)) / (2 * h)
                   for e in np.eye(a.size).reshape(a.size, *a.shape)]).reshape(a.shape)
    assert_close(g, fd, rtol=1e-8)


def test_convolve_axes_errors_are_one_line() -> None:
    with pytest.raises(dk.DiffkitError, match="pairs of equally long lists"):
        signal.convolve(np.ones((2, 3)), np.ones((2, 3)), axes=([0, 1], [0]))
    with pytest.raises(dk.DiffkitError, match="dot_axes"):
        signal.convolve(np.ones((2, 3)), np.ones((4, 3)), axes=([1], [1]), dot_axes=([0], [0]))


def test_gammasgn_matches_scipy_and_has_zero_derivative() -> None:
    x = np.array([-3.5, -2.5, -1.5, -0.5, -0.0, 0.0, 0.3, 2.0, 200.0, -200.5, -1.0, -np.inf,
                  np.inf, np.nan])
    assert_close(np.nan_to_num(special.gammasgn(x), nan=7.0),
                 np.nan_to_num(scipy.special.gammasgn(x), nan=7.0), rtol=0)
    assert_close(dk.grad(lambda v: dnp.sum(special.gammasgn(v) * v))(x[:10]),
                 scipy.special.gammasgn(x[:10]), rtol=0)          # d(sgn * v) = sgn


def test_solve_banded_matches_scipy_and_the_derivative_of_a_solve() -> None:
    lower, upper, n = 1, 2, 5
    ab = R.normal(size=(lower + upper + 1, n)) + np.r_[0, 0, 4, 0][:, None]  # diagonal-heavy
    b, w = R.normal(size=n), R.normal(size=n)
    x = scipy.linalg.solve_banded((lower, upper), ab, b)
    assert_close(linalg.solve_banded((lower, upper), ab, b), x, rtol=1e-12)
    dense = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - lower), min(n, i + upper + 1)):
            dense[i, j] = ab[upper + i - j, j]
    adjoint = np.linalg.solve(dense.T, w)                            # d(w.x) = adjoint.(db - dA x)
    g_ab, g_b = dk.grad(lambda ab, b: dnp.sum(w * linalg.solve_banded((lower, upper), ab, b)),
                        argnums=(0, 1))(ab, b)
    assert_close(g_b, adjoint, rtol=1e-12)
    expected = np.zeros_like(ab)
    for i in range(n):
        for j in range(max(0, i - lower), min(n, i + upper + 1)):
            expected[upper + i - j, j] = -adjoint[i] * x[j]
    assert_close(g_ab, expected, rtol=1e-12)                         # outside the band: 0


def test_odeint_with_scipy_s_signature() -> None:
    def rhs(y, t, a, c):
        return -np.sqrt(t) - y * a + c

    t = np.linspace(0.1, 0.6, 4)
    y0, a, c = R.normal(size=3), np.abs(R.normal(size=3)) + 0.5, R.normal(size=3)
    ys = integrate.odeint(lambda y, t, a, c: -dnp.sqrt(t) - y * a + c, y0, t, args=(a, c))
    assert_close(ys, scipy.integrate.odeint(rhs, y0, t, args=(a, c), rtol=1e-12, atol=1e-12),
                 rtol=1e-7)
    # y' = -a y + c (t-free): y(T) = y0 e^{-aT} + c/a (1 - e^{-aT}), so dy(T)/dy0 = e^{-aT}
    g = dk.grad(lambda y0: dnp.sum(integrate.odeint(lambda y, t: -a * y + c, y0, t,
                                                     tfirst=False)[-1]))(y0)
    assert_close(g, np.exp(-a * (t[-1] - t[0])), rtol=1e-7)
    g_c = dk.grad(lambda c: dnp.sum(integrate.odeint(lambda s, y, c: -a * y + c, y0, t,
                                                     args=(c,), tfirst=True)[-1]))(c)
    assert_close(g_c, (1 - np.exp(-a * (t[-1] - t[0]))) / a, rtol=1e-7)
    with pytest.raises(dk.DiffkitError, match="full_output"):
        integrate.odeint(lambda y, t: -y, y0, t, full_output=1)


def test_append_takes_lists_holding_values_being_differentiated() -> None:
    def f(a, b):
        return dnp.sum(dnp.append([[a, 2.0 * a], [b, 1.0]], [[b * b, a]], axis=0) ** 2)

    a, b = 0.7, -1.3                                    # entries a, 2a, b, 1, b^2, a
    expected = (2 * a + 8 * a + 2 * a, 2 * b + 4 * b ** 3)
    assert_close(np.array(dk.grad(f, argnums=(0, 1))(a, b)), np.array(expected), rtol=1e-14)
    assert_close(dnp.append([1.0, 2.0], 3.0), np.append([1.0, 2.0], 3.0), rtol=0)


def test_multivariate_normal_with_a_singular_cov_matches_scipy() -> None:
    cov = np.diag([2.0, 0.5, 0.0, 0.0])
    cov[0, 1] = cov[1, 0] = 0.3
    mean = np.array([0.1, -0.2, 0.3, 0.0])
    xs = np.array([[1.0, 0.5, 0.3, 0.0], [0.2, 0.1, 0.3, 0.0], [1.0, 0.5, 0.3, 1.0]])  # last: off
    got = stats.multivariate_normal.logpdf(xs, mean, cov, allow_singular=True)
    assert_close(np.nan_to_num(got, neginf=-9.0), np.nan_to_num(
        scipy.stats.multivariate_normal.logpdf(xs, mean, cov, allow_singular=True), neginf=-9.0),
        rtol=1e-13)
    g = dk.grad(lambda m: stats.multivariate_normal.logpdf(xs[0], m, cov, allow_singular=True))(
        mean)
    assert_close(g, np.linalg.pinv(cov) @ (xs[0] - mean), rtol=1e-12)   # d/dmean: pinv diff
    with pytest.raises(dk.DiffkitError, match="singular cov is a constant"):
        dk.grad(lambda c: stats.multivariate_normal.logpdf(xs[0], mean, c,
                                                           allow_singular=True))(cov)
