"""A kernel between ``X @ w`` and ``Xᵀ @ g`` takes both products over (one pass over X):
values against closed forms, on both kernel routes, at sizes that are not whole blocks."""

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench import workloads as wl
from diffkit.compiler import driver

pytestmark = pytest.mark.jit
needs("jit")


def _data(m: int, d: int, order: str = "C") -> tuple:
    rng = np.random.default_rng(m + d)
    X = np.asarray(rng.standard_normal((m, d)), order=order)
    return 0.1 * rng.standard_normal(d), X, np.sign(rng.standard_normal(m))


def _logistic_closed_form(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple:
    """Value and gradient of mean log(1 + exp(−y Xw)), in numpy."""
    z = -y * (X @ w)
    return np.mean(np.logaddexp(0.0, z)), X.T @ (-y / (1.0 + np.exp(-z))) / len(y)


@pytest.mark.parametrize("m, d", [(10**4, 30), (10007, 33), (2**15 + 3, 8), (5, 3)])
def test_logistic_gradient_in_one_pass_is_the_closed_form(m, d):
    w, X, y = _data(m, d)
    f = dk.jit(dk.value_and_grad(wl.logistic_loss))
    value, grad = f(w, X, y)
    assert "with X @ " in f.program(w, X, y).fusion
    v_ref, g_ref = _logistic_closed_form(w, X, y)
    assert value == pytest.approx(v_ref, rel=1e-13)
    np.testing.assert_allclose(grad, g_ref, rtol=1e-12, atol=1e-15)


def test_least_squares_with_a_constant_matrix_and_its_folded_transpose():
    _, X, y = _data(4001, 70)
    w = np.linspace(-1.0, 1.0, 70)
    grad = dk.jit(dk.grad(lambda w: dnp.mean((X @ w - y) ** 2)))
    np.testing.assert_allclose(grad(w), 2.0 * X.T @ (X @ w - y) / len(y), rtol=1e-12)
    assert "with const @ " in grad.program(w).fusion


def test_the_report_names_the_pair_also_for_a_matrix_in_the_cache():
    for m in (10**4, 1000):
        w, X, y = _data(m, 30)
        f = dk.jit(dk.grad(wl.logistic_loss))
        np.testing.assert_allclose(f(w, X, y), _logistic_closed_form(w, X, y)[1], rtol=1e-12)
        assert f"k0 = 8 ops over ({m},) with X @ v2 and its transpose" in f.program(w, X, y).fusion


def test_numba_route_and_fortran_order_and_threads_give_the_same_gradient(monkeypatch):
    w, X, y = _data(9001, 40, order="F")
    expected = _logistic_closed_form(w, X, y)[1]
    np.testing.assert_allclose(dk.jit(dk.grad(wl.logistic_loss))(w, X, y), expected,
                               rtol=1e-12)
    threaded = dk.jit(dk.grad(wl.logistic_loss), parallel=True)
    np.testing.assert_allclose(threaded(w, X, y), expected, rtol=1e-12)
    assert "[llvm]" in threaded.program(w, X, y).fusion  # a pair stays on one thread
    monkeypatch.setattr(driver, "lower", lambda *args: None)  # Numba renders it
    numba_f = dk.jit(dk.grad(wl.logistic_loss))
    np.testing.assert_allclose(numba_f(w, X, y), expected, rtol=1e-12)
    assert "[numba]" in numba_f.program(w, X, y).fusion


def test_a_gradient_that_is_also_an_output_is_kept():
    w, X, y = _data(10**4, 30)

    def loss_and_residuals(w):
        r = dnp.tanh(X @ w) - y
        return dnp.sum(r ** 2), r

    f = dk.jit(dk.value_and_grad(loss_and_residuals, has_aux=True))
    (value, r), grad = f(w)
    t = np.tanh(X @ w)
    np.testing.assert_allclose(r, t - y, rtol=1e-13)
    np.testing.assert_allclose(grad, X.T @ (2.0 * (t - y) * (1.0 - t ** 2)), rtol=1e-11)


@pytest.mark.parametrize("m, d", [(4001, 70), (9, 5), (3000, 8)])
def test_both_routes_add_the_pair_in_one_order_to_the_bit(monkeypatch, m, d):
    """MatvecLoops fixes the summation order: the LLVM route and the Numba source give the
    same bits (a loss whose kernel is arithmetic only, so the products are all that could
    differ), and both equal the closed form to rounding."""
    _, X, y = _data(m, d)
    w = np.linspace(-1.0, 1.0, d)
    loss = lambda w: dnp.sum((X @ w - y) ** 2)  # noqa: E731
    llvm = dk.jit(dk.grad(loss))
    g_llvm = llvm(w)
    assert "[llvm]" in llvm.program(w).fusion and "with const @ " in llvm.program(w).fusion
    monkeypatch.setattr(driver, "lower", lambda *args: None)  # Numba renders it
    numba_f = dk.jit(dk.grad(lambda w: dnp.sum((X @ w - y) ** 2)))
    g_numba = numba_f(w)
    assert "[numba]" in numba_f.program(w).fusion
    assert np.array_equal(g_llvm, g_numba)
    np.testing.assert_allclose(g_llvm, 2.0 * X.T @ (X @ w - y), rtol=1e-11)
