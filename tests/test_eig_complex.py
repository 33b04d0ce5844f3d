"""eig with complex eigenvalues and complex matrices, sqrtm with complex roots, pinv of
complex matrices: values against numpy/SciPy/JAX, derivatives against JAX (x64) and
central differences in real and imaginary directions.

The eigenvector losses are free of the eigenvectors' phases (``|v|²`` entries), as JAX
documents; the raw eigenvectors are compared too, since both differentiate LAPACK's
normalization (unit 2-norm, largest entry real).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import needs
import scipy.linalg

import diffkit as dk
import diffkit.numpy as dnp
import diffkit.scipy.linalg as dsl

pytestmark = pytest.mark.jax
jax = needs("jax")
jax.config.update("jax_enable_x64", True)
jnp = needs("jax", "jax.numpy")
jsl = needs("jax", "jax.scipy.linalg")

R = np.random.default_rng(27)
REAL = R.standard_normal((4, 4))  # real, with complex eigenvalue pairs (checked below)
CPLX = R.standard_normal((4, 4)) + 1j * R.standard_normal((4, 4))
WEIGHTS = np.arange(16.0).reshape(4, 4) / 8.0
BACKENDS = ["reverse", "forward", "compiled"]


def _jax_eig(a: Any) -> Any:
    w, v = jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w, v


def _loss(xp: Any, eig: Callable) -> Callable:
    """|w|², Re w and |v|² entries: real, and free of the eigenvectors' phases."""
    def loss(a: Any) -> Any:
        w, v = eig(a)
        return (xp.sum(xp.abs(w) ** 2) + xp.sum(xp.real(w) * xp.arange(4.0))
                + xp.sum(xp.abs(v) ** 2 * WEIGHTS))
    return loss


LOSS, JAX_LOSS = _loss(dnp, dnp.linalg.eig), _loss(jnp, _jax_eig)


def _close(got: Any, want: Any, rtol: float = 1e-9) -> None:
    got, want = np.asarray(got), np.asarray(want)
    scale = max(1.0, np.max(np.abs(want)))
    assert np.max(np.abs(got - want), initial=0.0) <= rtol * scale, (got, want)


def test_eig_follows_jax_complex_always_with_numpy_values() -> None:
    assert np.any(np.linalg.eigvals(REAL).imag != 0)
    for a in (REAL, CPLX, np.diag([1.0, 2.0, 3.0, 4.0]), np.stack([REAL, CPLX])):
        w, v = dnp.linalg.eig(a)
        w_np, v_np = np.linalg.eig(a)
        assert w.dtype == v.dtype == np.complex128  # (numpy: float64 for the diagonal one)
        _close(w, w_np, 1e-15)
        _close(v, v_np, 1e-15)
        if a.ndim == 2:
            w_j, v_j = jnp.linalg.eig(a)
            _close(w, w_j, 1e-12)
            _close(np.abs(v), np.abs(v_j), 1e-12)
    assert dnp.linalg.eigvals(REAL).dtype == np.complex128


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a", [REAL, CPLX], ids=["real", "complex"])
def test_eig_gradient_equals_jax(a: np.ndarray, backend: str) -> None:
    _close(dk.grad(LOSS, backend=backend)(a), jax.grad(JAX_LOSS)(a))


@pytest.mark.parametrize("a", [REAL, CPLX], ids=["real", "complex"])
def test_eig_jvp_against_jax_and_differences(a: np.ndarray) -> None:
    """Raw eigenvalues and eigenvectors (LAPACK's normalization, differentiated by both),
    in a real and, for a complex matrix, an imaginary direction."""
    directions = [R.standard_normal(a.shape).astype(a.dtype)]
    if np.iscomplexobj(a):
        directions.append(1j * R.standard_normal(a.shape))
    for d in directions:
        (w, v), (w_dot, v_dot) = dk.jvp(dnp.linalg.eig, (a,), (d,))
        _, (w_dot_j, v_dot_j) = jax.jvp(_jax_eig, (a,), (d,))
        _close(w_dot, w_dot_j)
        _close(v_dot, v_dot_j)
        h = 1e-6
        plus, minus = np.linalg.eig(a + h * d), np.linalg.eig(a - h * d)
        _close(w_dot, (plus[0] - minus[0]) / (2 * h), 1e-6)
        _close(v_dot, (plus[1] - minus[1]) / (2 * h), 1e-6)


def test_eig_vjp_is_the_transpose_and_second_order_equals_jax() -> None:
    y, pull = dk.vjp(dnp.linalg.eig, CPLX)
    u = tuple(R.standard_normal(np.shape(t)) + 1j * R.standard_normal(np.shape(t)) for t in y)
    (a_bar,) = pull(u)
    _, pull_j = jax.vjp(_jax_eig, CPLX)
    _close(a_bar, pull_j(u)[0])
    d = R.standard_normal((4, 4))
    hvp = dk.jvp(dk.grad(LOSS), (REAL,), (d,))[1]
    _close(hvp, jax.jvp(jax.grad(JAX_LOSS), (REAL,), (d,))[1], 1e-8)


def test_eig_batched_and_vmap() -> None:
    stack = np.stack([REAL, REAL.T + 0.5])
    per_matrix = [jax.grad(JAX_LOSS)(m) for m in stack]
    _close(dk.grad(lambda s: LOSS(s[0]) + LOSS(s[1]))(stack), np.stack(per_matrix))
    _close(dk.vmap(dk.grad(LOSS))(stack), np.stack(per_matrix))


def test_eig_repeated_eigenvalues_are_one_clear_error() -> None:
    for a in (np.eye(3), np.array([[1.0, 1.0], [0.0, 1.0]])):  # diagonalizable, defective
        for backend in ("reverse", "forward"):
            with pytest.raises(dk.DiffkitError, match="repeated eigenvalue") as info:
                dk.grad(lambda x: dnp.real(dnp.sum(dnp.linalg.eigvals(x))), backend=backend)(a)
            assert "\n" not in str(info.value)


NEGATIVE = np.array([[1.0, 2.0, 0.5], [2.0, -1.0, 0.3], [0.5, 0.3, 2.0]])  # one eigenvalue < 0


def _sqrtm_loss(xp: Any, sqrtm: Callable) -> Callable:
    return lambda a: xp.sum(xp.abs(sqrtm(a)) ** 2 * WEIGHTS[:3, :3]) + xp.real(xp.sum(sqrtm(a)))


@pytest.mark.parametrize("a", [NEGATIVE, NEGATIVE + 0.4j * np.eye(3)[::-1]],
                         ids=["real", "complex"])
def test_sqrtm_complex_root_as_scipy_with_derivatives(a: np.ndarray) -> None:
    assert np.min(np.linalg.eigvalsh(NEGATIVE)) < 0
    s = dsl.sqrtm(a)
    assert s.dtype == np.complex128
    _close(s, scipy.linalg.sqrtm(a), 1e-12)
    _close(s, jsl.sqrtm(a), 1e-10)  # (JAX: values only, it has no derivative of sqrtm)
    loss, loss_np = _sqrtm_loss(dnp, dsl.sqrtm), _sqrtm_loss(np, scipy.linalg.sqrtm)
    directions = [R.standard_normal(a.shape)] + ([1j * R.standard_normal(a.shape)]
                                                 if np.iscomplexobj(a) else [])
    for backend in ("reverse", "forward"):
        g = dk.grad(loss, backend=backend)(a)
        assert np.iscomplexobj(g) == np.iscomplexobj(a)
        for d in directions:  # JAX's gradient: Re sum(g d) is the directional derivative
            h = 1e-6
            fd = (loss_np(a + h * d) - loss_np(a - h * d)) / (2 * h)
            _close(np.real(np.sum(g * d)), fd, 1e-6)


def test_sqrtm_closed_form_and_compiled() -> None:
    d = np.array([-4.0, 9.0, -0.25])
    def part(take: Callable) -> np.ndarray:  # d sqrt(x)/dx = 1/(2 sqrt x), sqrt(-4) = 2i
        return dk.jacfwd(lambda x: take(dnp.diagonal(dsl.sqrtm(dnp.diag(x)))))(d)

    _close(part(dnp.real) + 1j * part(dnp.imag), np.diag(1 / (2 * np.sqrt(d + 0j))), 1e-12)
    loss = _sqrtm_loss(dnp, dsl.sqrtm)
    with pytest.raises(dk.DiffkitError, match=r"traced for a real root.*sqrtm\(a \+ 0j\)"):
        dk.grad(loss, backend="compiled")(NEGATIVE)
    _close(dk.grad(lambda a: loss(a + 0j), backend="compiled")(NEGATIVE), dk.grad(loss)(NEGATIVE))


def _pinv_loss(xp: Any, weights: np.ndarray) -> Callable:
    return lambda a: (xp.sum(xp.abs(xp.linalg.pinv(a)) ** 2 * weights)
                      + xp.real(xp.sum(1j * weights * xp.linalg.pinv(a))))


def _rank_two() -> np.ndarray:
    x = R.standard_normal((5, 2)) + 1j * R.standard_normal((5, 2))
    return x @ x.conj().T


@pytest.mark.parametrize("a", [CPLX[:, :3], CPLX[:3], _rank_two()], ids=["tall", "wide", "rank2"])
def test_pinv_complex_value_and_gradient_equal_jax(a: np.ndarray) -> None:
    _close(dnp.linalg.pinv(a), np.linalg.pinv(a), 0)
    _close(dnp.linalg.pinv(a), jnp.linalg.pinv(a), 1e-12)
    weights = R.standard_normal(a.shape[::-1])
    expected = jax.grad(_pinv_loss(jnp, weights))(a)
    for backend in BACKENDS:
        _close(dk.grad(_pinv_loss(dnp, weights), backend=backend)(a), expected)
    if np.linalg.matrix_rank(a) == min(a.shape):  # (differences keep the rank: full rank)
        for d in (R.standard_normal(a.shape), 1j * R.standard_normal(a.shape)):
            _, p_dot = dk.jvp(dnp.linalg.pinv, (a,), (d,))
            h = 1e-6
            _close(p_dot, (np.linalg.pinv(a + h * d) - np.linalg.pinv(a - h * d)) / (2 * h), 1e-6)
