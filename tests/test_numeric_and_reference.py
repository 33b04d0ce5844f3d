"""The numeric backend behind the transforms, and the high-precision references."""

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.backends.finite_diff import ComplexStepError
from diffkit.bench.reference import reference


def rosenbrock(x):
    return dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


X = np.array([1.2, 0.8, -0.5, 2.0])


@pytest.mark.parametrize("method, tol", [("forward", 1e-6), ("backward", 1e-6), ("central", 1e-9),
                                         ("richardson", 1e-11), ("complex", 1e-15)])
def test_numeric_gradients_meet_their_method_tolerance(method, tol):
    backend = dk.backend("numeric", method=method)
    g = dk.grad(rosenbrock, backend=backend)(X)
    exact = rosenbrock_grad(X)
    assert np.max(np.abs(g - exact)) / np.max(np.abs(exact)) < tol
    assert backend.last.fevals >= len(X)


def test_numeric_hessian_jvp_vjp_and_derivative():
    num = dk.backend("numeric", method="central", order=4)
    H = dk.hessian(rosenbrock, backend="numeric")(X)
    np.testing.assert_allclose(H, dk.hessian(rosenbrock)(X), rtol=1e-5, atol=1e-4)
    v = np.array([1.0, -1.0, 0.5, 0.25])
    _, t = dk.jvp(rosenbrock, (X,), (v,), backend=num)
    assert t == pytest.approx(rosenbrock_grad(X) @ v, rel=1e-9)
    _, pull = dk.vjp(lambda x: dnp.sin(x) * 2.0, X, backend=num)
    np.testing.assert_allclose(pull(np.ones(4))[0], 2 * np.cos(X), rtol=1e-9)
    pts = np.linspace(0.1, 3.0, 1000)
    np.testing.assert_allclose(dk.derivative(dnp.log, backend=num)(pts), 1 / pts, rtol=1e-9)


def test_explicit_tiny_step_shows_round_off():
    auto = dk.derivative(dnp.sin, backend=dk.backend("numeric", method="forward"))(1.0)
    tiny = dk.derivative(dnp.sin, backend=dk.backend("numeric", method="forward",
                                                     step=1e-14))(1.0)
    exact = np.cos(1.0)
    assert abs(tiny - exact) > 100 * abs(auto - exact)


def test_complex_step_refuses_a_function_that_is_not_complex_safe():
    with pytest.raises(ComplexStepError, match="complex"):
        dk.derivative(lambda x: dnp.maximum(x, 1.0),
                      backend=dk.backend("numeric", method="complex"))(1.0)


def test_bad_options_are_one_clear_error():
    with pytest.raises(ValueError, match="unknown method 'spline'"):
        dk.backend("numeric", method="spline")
    with pytest.raises(dk.DiffkitError, match="no option 'stepsize'"):
        dk.backend("numeric", stepsize=1e-3)


def test_reference_closed_form_is_exact_to_double_precision():
    ref = reference(rosenbrock, X)
    assert ref.method == "closed form" and ref.dps >= 30
    np.testing.assert_allclose(ref.derivative, rosenbrock_grad(X), rtol=4e-16)  # float formula
    r = reference(lambda x: dnp.exp(dnp.sin(x)), 0.7, kind="derivative")
    assert r.derivative == pytest.approx(np.exp(np.sin(0.7)) * np.cos(0.7), rel=4e-16)
    H = reference(rosenbrock, X, kind="hessian").derivative
    np.testing.assert_allclose(H, dk.hessian(rosenbrock)(X), rtol=1e-14)


def test_reference_local_closed_form_for_branching_code():
    def babylonian(a):
        y = a
        while abs(y * y - a) > 1e-15 * a:
            y = 0.5 * (y + a / y)
        return y

    ref = reference(babylonian, 2.0, kind="derivative")
    assert ref.method == "local closed form"
    assert ref.derivative == pytest.approx(1 / (2 * np.sqrt(2.0)), rel=1e-15)
    piecewise = lambda x: x ** 2 if x < 1 else 3 * x  # noqa: E731
    assert reference(piecewise, 0.5, kind="derivative").derivative == 1.0
    assert reference(piecewise, 2.0, kind="derivative").derivative == 3.0


def test_reference_jacobian_and_elementwise_points():
    A = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]])
    x = np.array([0.3, -0.2])
    J = reference(lambda v: dnp.tanh(A @ v), x, kind="jacobian").derivative
    np.testing.assert_allclose(J, (1 - np.tanh(A @ x) ** 2)[:, None] * A, rtol=1e-15)
    pts = np.array([0.1, 1.0, 2.0])
    r = reference(dnp.sin, pts, kind="derivative")
    np.testing.assert_allclose(r.derivative, np.cos(pts), rtol=1e-16)
