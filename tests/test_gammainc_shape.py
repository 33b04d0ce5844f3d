"""The derivative of gammainc / gammaincc in the shape a, against mpmath (30 digits).

The reference is ``mpmath.diff`` of mpmath's regularized incomplete gamma function at the
exact double input: of the lower one ``P(a, x)`` where ``P < 1/2``, of the upper one
``Q = 1 - P`` (negated) where ``P >= 1/2``. The two have the same derivative up to sign,
but where P is within 1e-40 of 1 (x = 100, a = 0.1) a difference quotient of P in 30-digit
arithmetic has no digit of it left, while Q keeps them all (checked below where both do).
The bar: within 1e-12 relative on a in [0.1, 50], x in [1e-3, 100] (every derivative there
is above 1e-300), by forward, reverse and compiled mode; JAX's derivative in a as a second
reference where it is installed.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp

mpmath = pytest.importorskip("mpmath")
import diffkit.scipy.special as dsp  # noqa: E402

M = mpmath
DPS = 30
RTOL = 1e-12

A = np.geomspace(0.1, 50.0, 12)
X = np.geomspace(1e-3, 100.0, 15)


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """The product grid, and the diagonal x = a and its neighbours (where the series and
    the continued fraction meet), and x = 1 (the other boundary for a < 1)."""
    a, x = (v.ravel() for v in np.meshgrid(A, X, indexing="ij"))
    near = np.concatenate([A, A * (1 + 1e-9), A * 0.97, A * 1.03, A + 1.0])
    a = np.concatenate([a, np.tile(A, 5), A])
    x = np.concatenate([x, near, np.ones_like(A)])
    return a, x


def _P(a: Any, x: Any) -> Any:
    return M.gammainc(a, 0, x, regularized=True)


def _Q(a: Any, x: Any) -> Any:
    return M.gammainc(a, x, M.inf, regularized=True)


def d_da(a: float, x: float, n: int = 1) -> Any:
    """d^n/da^n P(a, x) to 30 digits (see the module's docstring)."""
    with M.workdps(DPS):
        a_, x_ = M.mpf(float(a)), M.mpf(float(x))
        if _P(a_, x_) < 0.5:
            return M.diff(lambda s: _P(s, x_), a_, n)
        return -M.diff(lambda s: _Q(s, x_), a_, n)


_REF: dict[str, np.ndarray] = {}


def _reference() -> np.ndarray:
    if "grid" not in _REF:
        a, x = _grid()
        _REF["grid"] = np.array([float(d_da(ai, xi)) for ai, xi in zip(a, x)])
    return _REF["grid"]


def _max_rel(got: Any, want: np.ndarray) -> tuple[float, int]:
    rel = np.abs(np.asarray(got, dtype=float) - want) / np.abs(want)
    i = int(np.argmax(rel))
    return float(rel[i]), i


@pytest.mark.parametrize("backend", ["forward", "reverse", "compiled"])
def test_derivative_in_a_within_1e_12_of_mpmath_on_the_grid(backend: str) -> None:
    a, x = _grid()
    want = _reference()
    assert np.all(np.abs(want) > 1e-300)
    got = dk.grad(lambda s: dnp.sum(dsp.gammainc(s, x)), backend=backend)(a)
    err, i = _max_rel(got, want)
    assert err <= RTOL, f"{backend}: {err:.2e} at a={a[i]!r}, x={x[i]!r}: {got[i]!r} vs {want[i]!r}"
    got_q = dk.grad(lambda s: dnp.sum(dsp.gammaincc(s, x)), backend=backend)(a)
    err, i = _max_rel(got_q, -want)
    assert err <= RTOL, f"gammaincc {backend}: {err:.2e} at a={a[i]!r}, x={x[i]!r}"


def test_the_reference_agrees_with_itself_where_both_forms_are_accurate() -> None:
    """Where P is not close to 0 or 1, mpmath's derivative of P and that of -Q agree."""
    for a, x in [(0.5, 0.3), (2.0, 2.0), (10.0, 12.0), (30.0, 25.0)]:
        with M.workdps(DPS):
            a_, x_ = M.mpf(a), M.mpf(x)
            p = M.diff(lambda s: _P(s, x_), a_)
            q = -M.diff(lambda s: _Q(s, x_), a_)
            assert abs(p - q) <= M.mpf(10) ** -25 * abs(p), (a, x, p, q)


def test_scalar_calls_and_the_gradient_in_both_arguments() -> None:
    a, x = 2.7, 1.9
    with M.workdps(DPS):
        da = d_da(a, x)
        dx = M.diff(lambda t: _P(M.mpf(a), t), M.mpf(x))
    for backend in ("forward", "reverse", "compiled"):
        ga, gx = dk.grad(lambda s, t: dsp.gammainc(s, t), argnums=(0, 1), backend=backend)(a, x)
        assert abs(ga - float(da)) <= RTOL * abs(float(da)), backend
        assert abs(gx - float(dx)) <= RTOL * abs(float(dx)), backend


@pytest.mark.parametrize("a,x", [(0.3, 0.05), (2.3, 0.8), (0.7, 3.1), (7.5, 7.5), (20.0, 35.0)])
def test_second_derivatives_match_mpmath(a: float, x: float) -> None:
    """The Hessian in (a, x): d2/da2 by the primitive's own rule (gammainc_da at n = 2), the
    mixed one by the density's derivative in a, both in forward-over-reverse and
    reverse-over-reverse; scaled by the largest entry (d2/da2 may cross 0)."""
    with M.workdps(DPS):
        a_, x_ = M.mpf(a), M.mpf(x)
        f = (lambda s, t: _P(s, t)) if _P(a_, x_) < 0.5 else (lambda s, t: -_Q(s, t))
        want = np.array([[float(M.diff(f, (a_, x_), (2, 0))), float(M.diff(f, (a_, x_), (1, 1)))],
                         [float(M.diff(f, (a_, x_), (1, 1))), float(M.diff(f, (a_, x_), (0, 2)))]])
    scale = np.max(np.abs(want))
    for backend in (None, "reverse", "forward"):
        h = dk.hessian(lambda v: dsp.gammainc(v[0], v[1]), backend=backend)(np.array([a, x]))
        assert np.max(np.abs(h - want)) <= 1e-11 * scale, (backend, h, want)


@pytest.mark.parametrize("a,x", [(2.3, 0.8), (0.7, 3.1), (12.0, 10.0)])
def test_taylor_mode_to_order_5_matches_mpmath(a: float, x: float) -> None:
    """dk.derivatives (one Taylor pass): d^k/da^k P for k = 0..5, each order a gammainc_da."""
    got = dk.derivatives(lambda s: dsp.gammainc(s, x), 5)(a)
    want = [float(_P(M.mpf(a), M.mpf(x)))] + [float(d_da(a, x, k)) for k in range(1, 6)]
    scale = max(abs(w) for w in want[1:])
    for k, (g, w) in enumerate(zip(got, want)):
        assert abs(float(g) - w) <= 1e-10 * max(abs(w), 1e-3 * scale), (k, g, w)


def test_edges_zero_at_x_0_and_infinity_nan_outside_the_domain() -> None:
    """P(a, 0) = 0 and P(a, inf) = 1 for every a: derivative 0. Where SciPy's value is NaN
    (a <= 0, x < 0, a NaN), so is the derivative."""
    a = np.array([0.5, 3.0, 0.5, 3.0, 0.0, -1.0, 2.0, np.nan])
    x = np.array([0.0, 0.0, np.inf, np.inf, 1.0, 1.0, -1.0, 1.0])
    with np.errstate(invalid="ignore"):
        g = dk.grad(lambda s: dnp.sum(dsp.gammainc(s, x)))(a)
    assert g[:4].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert np.isnan(g[4:]).all()


def test_a_far_underflowing_derivative_is_0_not_nan() -> None:
    """x^a e^-x / Gamma(a + 1) below the smallest double: the derivative is 0 (to within
    what a double holds), as the value is."""
    g = dk.grad(lambda s: dsp.gammainc(s, 1e-3))(1000.0)
    assert g == 0.0


def test_under_vmap_and_jacobian_per_entry() -> None:
    a = np.array([0.5, 2.0, 9.0])
    x = np.array([1.5, 0.1, 12.0])
    want = np.array([float(d_da(ai, xi)) for ai, xi in zip(a, x)])
    per = dk.vmap(dk.grad(lambda s, t: dsp.gammainc(s, t)))(a, x)
    np.testing.assert_allclose(per, want, rtol=RTOL)
    jac = dk.jacobian(lambda s: dsp.gammainc(s, x))(a)
    np.testing.assert_allclose(jac, np.diag(want), rtol=RTOL, atol=0)


def test_numeric_backend_agrees_within_its_own_tolerance() -> None:
    a, x = 2.7, 1.9
    want = float(d_da(a, x))
    got = dk.grad(lambda s: dsp.gammainc(s, x), backend="numeric")(a)
    assert abs(got - want) <= 1e-7 * abs(want)


def test_the_symbolic_backend_says_n_a() -> None:
    with pytest.raises(dk.NotApplicable):
        dk.grad(lambda s: dsp.gammainc(s, 1.5), backend="symbolic")(2.0)


def test_p_plus_q_is_one_so_its_derivative_is_exactly_0() -> None:
    for backend in ("forward", "reverse"):
        assert dk.grad(lambda s: dsp.gammainc(s, 2.0) + dsp.gammaincc(s, 2.0),
                       backend=backend)(1.5) == 0.0


@pytest.mark.jax
def test_against_jax_on_the_grid() -> None:
    """JAX differentiates gammainc in a (first order only: its second derivative in a is
    not implemented); its derivative agrees with diffkit's and with mpmath."""
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    jsp = needs("jax", "jax.scipy.special")
    a, x = _grid()
    theirs = np.asarray(jax.vmap(jax.grad(jsp.gammainc))(a, x))
    ours = dk.grad(lambda s: dnp.sum(dsp.gammainc(s, x)))(a)
    err, i = _max_rel(ours, theirs)
    assert err <= 1e-11, (err, a[i], x[i])
    err_jax, _ = _max_rel(theirs, _reference())
    assert err_jax <= 1e-11, err_jax
    theirs_q = np.asarray(jax.vmap(jax.grad(jsp.gammaincc))(a, x))
    np.testing.assert_allclose(dk.grad(lambda s: dnp.sum(dsp.gammaincc(s, x)))(a), theirs_q,
                               rtol=1e-11)
