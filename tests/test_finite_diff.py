"""Tests of diffkit.backends.finite_diff against closed-form derivatives."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from diffkit.backends.finite_diff import (ComplexStepError, FDResult, estimate_derivative,
                                          estimate_gradient, estimate_hessian,
                                          estimate_jacobian)

EPS = np.finfo(float).eps
TARGET = {"forward": 1e-7, "central": 1e-9, "richardson": 1e-12, "complex": 2e-16}
FEVALS = {"forward": 2, "central": 2, "richardson": 14, "complex": 5}


def cbrt(x):
    return x ** (1 / 3)  # NaN for x < 0, unlike np.cbrt: stepping left of 0 leaves the domain


def runge(x):
    return 1 / (1 + 25 * x**2)


def d_runge(x):
    return -50 * x / (1 + 25 * x**2) ** 2


def d_cbrt(x):
    return x ** (-2 / 3) / 3


# (name, f, f', x, factor on TARGET): the brief allows 100x on cbrt'(0.01) and exp'(30)
CASES = [
    ("sin(1)", np.sin, np.cos, 1.0, 1),
    ("cbrt(0.01)", cbrt, d_cbrt, 0.01, 100),
    ("exp(30)", np.exp, np.exp, 30.0, 100),
    ("log(0.5)", np.log, lambda x: 1 / x, 0.5, 1),
    ("atan(0.7)", np.arctan, lambda x: 1 / (1 + x**2), 0.7, 1),
    ("runge(0.3)", runge, d_runge, 0.3, 1),
]


def relerr(value, exact):
    return np.max(np.abs(value - exact) / np.abs(exact))


@pytest.mark.parametrize("method", list(TARGET))
@pytest.mark.parametrize("name, f, df, x, factor", CASES, ids=[c[0] for c in CASES])
def test_targets_on_closed_forms(method, name, f, df, x, factor):
    r = estimate_derivative(f, x, method=method)
    assert isinstance(r, FDResult) and r.method == method and isinstance(r.value, float)
    assert relerr(r.value, df(x)) <= TARGET[method] * factor
    assert r.fevals == FEVALS[method] and r.notes == ()
    if method == "richardson":
        assert abs(r.value - df(x)) <= r.error
    else:
        assert r.error is None


def test_higher_order_central_beats_order_2():
    errs = {p: relerr(estimate_derivative(np.sin, 1.0, order=p).value, np.cos(1.0))
            for p in (2, 4, 6, 8)}
    assert errs[2] <= 1e-9 and max(errs[4], errs[6], errs[8]) <= 1e-12
    assert [estimate_derivative(np.sin, 1.0, order=p).fevals for p in (2, 4, 6, 8)] == [2, 4, 6, 8]


def test_auto_step_follows_error_model_and_is_exact():
    x = np.array([-3e5, -7.3, 0.0, 0.01, 1.0, 2.5, 1e8])
    scale = np.maximum(np.abs(x), 1)
    for method, order, p in [("forward", 2, 1), ("central", 2, 2), ("central", 4, 4),
                             ("central", 8, 8)]:
        h = estimate_derivative(np.sin, x, method=method, order=order).step
        model = EPS ** (1 / (p + 1)) * scale
        assert np.all(((x + h) - x) == h) and np.all((h <= model) & (h > 0.45 * model))


def test_explicit_tiny_step_is_honoured_and_round_off_wins():
    auto = estimate_derivative(np.sin, 1.0, method="forward")
    tiny = estimate_derivative(np.sin, 1.0, method="forward", step=1e-14)
    assert tiny.step == 1e-14 and tiny.notes == ()
    assert tiny.value == (np.sin(1.0 + 1e-14) - np.sin(1.0)) / 1e-14
    assert abs(tiny.value - np.cos(1.0)) > 100 * abs(auto.value - np.cos(1.0))
    assert abs(tiny.value - np.cos(1.0)) > 1e-4  # round-off ~ eps / h
    auto_central = abs(estimate_derivative(np.sin, 1.0).value - np.cos(1.0))
    tiny = estimate_derivative(np.sin, 1.0, step=1e-13).value
    assert abs(tiny - np.cos(1.0)) > 1e3 * auto_central
    assert estimate_derivative(np.sin, 1.0, method="richardson", step=0.1).step == 0.1


@pytest.mark.parametrize("f, df, lo, hi", [
    (np.sin, np.cos, -10, 10),
    (np.exp, np.exp, -20, 40),
    (np.log, lambda x: 1 / x, 1e-3, 100),
    (np.arctan, lambda x: 1 / (1 + x**2), -5, 5),
    (runge, d_runge, -1, 1),
    (cbrt, d_cbrt, 1e-3, 10),
    (lambda x: x**5 - 3 * x, lambda x: 5 * x**4 - 3, -2, 2),
    (lambda x: np.sin(np.exp(x)), lambda x: np.cos(np.exp(x)) * np.exp(x), -2, 2),
])
def test_richardson_error_estimate_bounds_true_error(f, df, lo, hi):
    x = np.random.default_rng(0).uniform(lo, hi, 2000)
    r = estimate_derivative(f, x, method="richardson")
    err = np.abs(r.value - df(x))
    assert np.all(err <= r.error)
    assert np.all(r.error <= 1e-8 * np.maximum(np.abs(df(x)), 1))  # a bound, but not a vacuous one
    assert r.fevals == 14 or "step shrunk" in r.notes[0]


class Counting:
    """Wraps f and records the shape of every call."""

    def __init__(self, f):
        self.f, self.shapes = f, []

    def __call__(self, x):
        self.shapes.append(np.shape(x))
        return self.f(x)


@pytest.mark.parametrize("method, order, calls", [
    ("forward", 2, 2), ("backward", 2, 2), ("central", 2, 2), ("central", 4, 4),
    ("central", 6, 6), ("central", 8, 8), ("richardson", 2, 14), ("complex", 2, 5),
])
def test_derivative_is_one_vectorized_call_per_stencil_point(method, order, calls):
    x = np.linspace(-3, 3, 10**5).reshape(100, 1000)
    f = Counting(np.sin)
    r = estimate_derivative(f, x, method=method, order=order)
    assert f.shapes == [x.shape] * calls and r.fevals == calls
    assert r.value.shape == x.shape and np.max(np.abs(r.value - np.cos(x))) < 1e-6


def rosen(x):  # batch-aware: works on [..., n]
    return np.sum(100 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1 - x[..., :-1]) ** 2, axis=-1)


def rosen_flat(x):  # not batch-aware: sums everything
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] += -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def rosen_hess(x):
    i = np.arange(len(x) - 1)
    H = np.zeros((len(x), len(x)))
    H[i, i] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    H[i + 1, i + 1] += 200
    H[i, i + 1] = H[i + 1, i] = -400 * x[:-1]
    return H


X5 = np.array([-1.2, 1.0, 0.5, 0.8, 1.5])


@pytest.mark.parametrize("method, tol, per_coord", [
    ("forward", 1e-6, 2), ("central", 1e-9, 2), ("richardson", 1e-12, 14), ("complex", 1e-15, 5),
])
def test_gradient_of_rosenbrock_batched_and_looped(method, tol, per_coord):
    exact = rosen_grad(X5)
    variants = [(rosen, True), (rosen, False), (rosen, None), (rosen_flat, None),
                (rosen_flat, False)]
    results = [estimate_gradient(f, X5, method=method, batched=b) for f, b in variants]
    for r in results:
        assert r.value.shape == (5,) and np.max(np.abs(r.value - exact) / np.abs(exact)) <= tol
        np.testing.assert_allclose(r.value, results[0].value, rtol=1e-13, atol=0)
    n = 5 * per_coord  # + 4 evaluations for the batch probe when batched=None
    assert [r.fevals for r in results] == [n, n, n + 4, n + 4, n]
    assert "f accepts a leading batch axis" in results[2].notes[0]
    assert "not batch-aware" in results[3].notes[0]


def test_batched_means_one_call_for_all_points():
    f = Counting(rosen)
    assert estimate_gradient(f, X5, batched=True).fevals == 10 and f.shapes == [(10, 5)]
    f = Counting(rosen)
    assert estimate_hessian(f, X5, batched=True).fevals == 51 and f.shapes == [(51, 5)]
    f = Counting(rosen_flat)
    estimate_gradient(f, X5, batched=False)
    assert f.shapes == [(5,)] * 10


def test_hessian_of_rosenbrock():
    exact = rosen_hess(X5)
    for f, b, fevals in [(rosen, True, 51), (rosen, False, 51), (rosen_flat, None, 55)]:
        r = estimate_hessian(f, X5, batched=b)
        assert r.value.shape == (5, 5) and np.array_equal(r.value, r.value.T)
        assert np.max(np.abs(r.value - exact)) <= 1e-8 * np.max(np.abs(exact))
        assert r.fevals == fevals and r.error is None  # 1 + 2n + 4 n(n-1)/2 (+4 probe)


def test_hessian_of_matrix_argument_and_domain_shrinking():
    x = np.array([[0.5, 2.0], [1.5, 3.0]])
    r = estimate_hessian(lambda v: np.sum(np.log(v) * v[..., ::-1, :], axis=(-2, -1)), x)
    # f = sum_ij log(x_ij) x_kj with k = 1 - i:
    # d2f / dx_ij^2 = -x_kj / x_ij^2 and d2f / dx_ij dx_kj = 1/x_ij + 1/x_kj
    exact = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            exact[i, j, i, j] = -x[1 - i, j] / x[i, j] ** 2
            exact[i, j, 1 - i, j] = 1 / x[i, j] + 1 / x[1 - i, j]
    assert r.value.shape == (2, 2, 2, 2) and np.allclose(r.value, exact, rtol=1e-6, atol=1e-6)
    # only x_0 needs a small step
    near_edge = estimate_hessian(lambda v: np.sum(np.log(v)), [1e-5, 2.0])
    assert np.allclose(near_edge.value, np.diag([-1e10, -0.25]), rtol=1e-4, atol=1e-6)
    assert "step shrunk by up to 1e+03x at 1 of 2 entries" in near_edge.notes[-1]


def test_jacobian_of_vector_function():
    def f(v):
        a, b, c = v[..., 0], v[..., 1], v[..., 2]
        return np.stack([a * b, np.sin(c) * a, np.exp(b) + c**2, a / c], axis=-1)

    x = np.array([1.5, -0.5, 2.0])
    a, b, c = x
    exact = np.array([[b, a, 0], [np.sin(c), 0, a * np.cos(c)], [0, np.exp(b), 2 * c],
                      [1 / c, 0, -a / c**2]])
    for method, tol in [("central", 1e-9), ("richardson", 1e-12), ("complex", 1e-15)]:
        looped = estimate_jacobian(f, x, method=method, batched=False)
        batched = estimate_jacobian(f, x, method=method, batched=True)
        assert looped.value.shape == (4, 3)
        np.testing.assert_allclose(looped.value, exact, rtol=tol, atol=tol)
        np.testing.assert_allclose(batched.value, looped.value, rtol=1e-14, atol=0)
        assert looped.fevals == batched.fevals == 3 * FEVALS[method]


def test_jacobian_layout_is_out_shape_then_x_shape():
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    r = estimate_jacobian(lambda A: A @ A, X, method="richardson")
    eye = np.eye(2)  # d(AA)_ij / dA_kl = d_ik A_lj + A_ik d_jl
    exact = np.einsum("ik,lj->ijkl", eye, X) + np.einsum("ik,jl->ijkl", X, eye)
    assert r.value.shape == (2, 2, 2, 2) and np.allclose(r.value, exact, rtol=0, atol=1e-11)
    assert np.all(np.abs(r.value - exact) <= r.error)
    assert "f accepts a leading batch axis" in r.notes[0]


def test_gradient_and_hessian_need_scalar_output():
    with pytest.raises(ValueError, match=r"scalar-valued f.*shape \(2,\).*jacobian"):
        estimate_gradient(lambda v: v * 2, np.ones(2))
    with pytest.raises(ValueError, match=r"hessian\(\) needs a scalar-valued f"):
        estimate_hessian(lambda v: v * 2, np.ones(2), batched=True)


def test_derivative_needs_elementwise_f():
    with pytest.raises(TypeError, match="elementwise"):
        estimate_derivative(np.sum, np.ones(3))


def test_domain_shrinking_log_near_zero():
    for method, order, tol in [("central", 8, 1e-6), ("richardson", 2, 1e-12)]:
        r = estimate_derivative(np.log, 1e-4, method=method, order=order)
        assert any("step shrunk" in n and "left its domain" in n for n in r.notes)
        assert np.isfinite(r.value) and relerr(r.value, 1e4) < tol
    r = estimate_derivative(np.log, 1e-7)  # order 2: the auto step 3.8e-6 overshoots 0
    assert np.isfinite(r.value) and relerr(r.value, 1e7) < 1e-2
    assert "step shrunk from 3.8e-06 to 3.8e-09" in r.notes[0]
    x = np.array([1e-7, 1e-4, 0.5, 3.0])
    r = estimate_derivative(np.log, x, method="richardson")
    assert relerr(r.value, 1 / x) < 1e-10 and "at 2 of 4 entries" in r.notes[0]


def test_domain_shrinking_when_f_raises_outside_domain():
    def guarded_log(x):
        if np.any(x <= 0):
            raise ValueError("math domain error")
        return np.log(x)

    r = estimate_derivative(guarded_log, 1e-3, method="richardson")
    assert relerr(r.value, 1e3) < 1e-12 and "step shrunk" in r.notes[0]
    g = estimate_gradient(lambda v: guarded_log(v).sum(), [1e-3, 2.0], method="richardson",
                          batched=False)
    assert np.allclose(g.value, [1e3, 0.5], rtol=1e-12) and "step shrunk" in g.notes[-1]


def test_cbrt_beats_first_step_leaving_domain():
    for order in (2, 4, 6, 8):
        r = estimate_derivative(cbrt, 0.01, order=order)
        assert np.isfinite(r.value) and relerr(r.value, d_cbrt(0.01)) < 1e-4


def test_explicit_step_is_not_shrunk_and_nan_is_reported():
    with pytest.warns(RuntimeWarning, match="explicit step"):
        r = estimate_derivative(np.log, 1e-4, step=1e-3)
    assert np.isnan(r.value) and r.step == 1e-3 and "explicit step (not shrunk)" in r.notes[0]


def test_nan_at_x_itself_is_not_a_domain_exit():
    with np.errstate(invalid="ignore"):  # log(-1) warns: x itself is outside the domain
        r = estimate_derivative(np.log, np.array([-1.0, 2.0]))
    assert np.isnan(r.value[0]) and relerr(r.value[1], 0.5) < 1e-9 and r.notes == ()


@pytest.mark.parametrize("f, x", [
    (np.abs, 1.0),
    (lambda x: np.maximum(x, 1.0), 1.0),
    (lambda x: x * np.conj(x), 0.5),
    (lambda x: np.sin(np.real(x)), 0.5),
    (np.cbrt, 2.0),  # no complex loop: TypeError
    (lambda x: np.asarray(x, dtype=float) ** 2, 1.0),  # discards the imaginary part
])
def test_complex_step_rejects_unsafe_functions(f, x):
    with pytest.raises(ComplexStepError, match=r"not complex-step safe.*"
                                               r"method='central' or 'richardson'") as info:
        estimate_derivative(f, x, method="complex")
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)


def test_complex_step_rejects_unsafe_gradient():
    with pytest.raises(ComplexStepError, match="not complex-step safe"):
        estimate_gradient(lambda v: np.sum(np.abs(v) ** 3), [1.0, -2.0], method="complex")


def test_complex_step_on_safe_functions_is_exact_to_rounding():
    def f(x):
        return np.exp(x) * np.sin(x) / (1 + x**2)

    def df(x):
        q = 1 + x**2
        return np.exp(x) * ((np.sin(x) + np.cos(x)) * q - 2 * x * np.sin(x)) / q**2

    x = np.linspace(0.1, 3, 101)
    exact = df(x)  # normwise: f' changes sign in [0.1, 3]
    error = np.abs(estimate_derivative(f, x, method="complex").value - exact)
    assert np.max(error) <= 4 * EPS * np.max(np.abs(exact))
    assert relerr(estimate_derivative(np.sin, 1.0, method="complex").value, np.cos(1.0)) <= 2e-16


@pytest.mark.parametrize("call", [estimate_derivative, estimate_gradient, estimate_jacobian])
def test_bad_method_or_order(call):
    with pytest.raises(ValueError, match=r"unknown method 'spline'; valid methods: 'forward', "
                                         r"'backward', 'central', 'complex', 'richardson'"):
        call(np.sin, np.ones(1), method="spline")
    with pytest.raises(ValueError, match=r"bad order 3; valid orders: 2, 4, 6, 8"):
        call(np.sin, np.ones(1), order=3)


def test_bad_step():
    with pytest.raises(ValueError, match="step must be positive"):
        estimate_derivative(np.sin, 1.0, step=0.0)


def test_result_is_frozen():
    r = estimate_derivative(np.sin, [1.0, 2.0])
    assert r.value.shape == r.step.shape == (2,) and r.notes == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.value = None


@settings(max_examples=200, deadline=None)
@given(coeffs=st.lists(st.floats(-10, 10), min_size=1, max_size=4), x=st.floats(-2, 2))
def test_central_order_4_is_exact_on_cubics(coeffs, x):
    p = np.polynomial.Polynomial(coeffs)
    exact = p.deriv()(x)
    error = abs(estimate_derivative(p, x, order=4).value - exact)
    assert error <= 1e-7 * abs(exact) + 1e-9 * (1 + sum(map(abs, coeffs)))
