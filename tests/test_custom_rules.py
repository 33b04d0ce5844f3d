"""Custom rules (custom_jvp, custom_vjp, dk.Function), stop_gradient, hvp, jacfwd/jacrev and
check_grads: against closed forms, hand computation, finite differences and JAX."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp


@dk.custom_jvp
def safe_norm(x):
    return dnp.sqrt(dnp.sum(x * x))


@safe_norm.defjvp
def _safe_norm_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    y = safe_norm(x)
    return y, dnp.sum(x * x_dot) / dnp.where(y == 0.0, 1.0, y)


@dk.custom_vjp
def log1pexp(x):
    return dnp.log1p(dnp.exp(x))


def _log1pexp_fwd(x):
    return log1pexp(x), x


def _log1pexp_bwd(x, g):
    return (g * dnp.sigmoid(x),)


log1pexp.defvjp(_log1pexp_fwd, _log1pexp_bwd)


class Cube(dk.Function):
    calls = 0

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        ctx.save_for_backward(x)
        return k * x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        Cube.calls += 1
        return 3.0 * ctx.k * x ** 2 * g, None


BACKENDS = ["forward", "reverse"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_safe_norm_at_zero_where_the_body_gives_nan(backend: str) -> None:
    with np.errstate(all="ignore"):
        naive = dk.grad(lambda x: dnp.sqrt(dnp.sum(x * x)), backend=backend)(np.zeros(3))
    assert np.isnan(naive).all()
    np.testing.assert_array_equal(dk.grad(safe_norm, backend=backend)(np.zeros(3)), np.zeros(3))
    x = np.array([3.0, 4.0])
    np.testing.assert_allclose(dk.grad(safe_norm, backend=backend)(x), x / 5.0, rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_vjp_in_forward_reverse_and_nested(backend: str) -> None:
    x = np.array([-800.0, 0.0, 2.0, 800.0])
    sig = 1.0 / (1.0 + np.exp(-np.clip(x, -700, 700)))
    g = dk.grad(lambda v: dnp.sum(log1pexp(v)), backend=backend)(x)
    np.testing.assert_allclose(g, sig, rtol=1e-15, atol=1e-300)
    h = dk.hessian(lambda v: dnp.sum(log1pexp(v)), backend=backend)(x[1:3])
    np.testing.assert_allclose(h, np.diag(sig[1:3] * (1 - sig[1:3])), rtol=1e-14)


def test_custom_rules_under_vmap_and_grad_of_vmap() -> None:
    x = np.array([0.0, 1.0, -2.0])
    sig = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(dk.vmap(dk.grad(log1pexp))(x), sig, rtol=1e-15)
    np.testing.assert_allclose(dk.grad(lambda v: dnp.sum(dk.vmap(log1pexp)(v)))(x), sig, rtol=1e-15)
    pts = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(dk.vmap(dk.grad(safe_norm))(pts), [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(dk.grad(lambda p: dnp.sum(dk.vmap(safe_norm)(p)))(pts),
                               [[0.6, 0.8], [0.0, 0.0]])


def test_function_in_the_tensor_api_against_hand_computation() -> None:
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    Cube.calls = 0
    y = Cube.apply(x, 2.0)
    assert y.grad_fn is not None and y.grad_fn.name() == "CubeBackward"
    (y * np.array([1.0, 10.0])).sum().backward()
    np.testing.assert_allclose(x.grad, [6.0 * 1.0, 10.0 * 6.0 * 4.0])
    assert Cube.calls == 1
    np.testing.assert_allclose(dk.grad(lambda v: dnp.sum(Cube.apply(v, 2.0)), backend="forward")(
        np.array([1.0, 2.0])), [6.0, 24.0])


def test_symbolic_differentiates_the_body_and_numeric_ignores_rules() -> None:
    x = np.array([0.5, 1.5])
    expect = 1.0 / (1.0 + np.exp(-x))
    for backend in ("symbolic", "numeric"):
        np.testing.assert_allclose(dk.grad(lambda v: dnp.sum(log1pexp(v)), backend=backend)(x),
                                   expect, rtol=1e-7)


def test_check_grads_accepts_right_rules_and_catches_a_wrong_one() -> None:
    dk.check_grads(log1pexp, (np.array([0.3, -1.0]),), order=2)
    dk.check_grads(safe_norm, (np.array([0.3, -1.0]),), order=2)
    wrong = dk.custom_vjp(lambda x: dnp.sin(x), lambda x: (dnp.sin(x), x),
                          lambda x, g: (g * dnp.sin(x),))
    with pytest.raises(AssertionError, match="reverse mode .* order 1"):
        dk.check_grads(wrong, (0.4,), modes=("rev",))
    with pytest.raises(AssertionError, match="forward mode .* order 1"):
        dk.check_grads(wrong, (0.4,), modes=("fwd",))


def test_rule_mistakes_are_one_line() -> None:
    bad = dk.custom_vjp(lambda x: x * 2.0, lambda x: (x * 2.0, None), lambda r, g: (g, g))
    with pytest.raises(dk.DiffkitError, match="returned 2 cotangents for 1 arguments"):
        dk.grad(bad)(1.0)
    with pytest.raises(dk.DiffkitError, match="has no rule yet"):
        dk.grad(dk.custom_jvp(lambda x: x))(1.0)


@pytest.mark.parametrize("backend", ["reverse", "forward", "compiled", "compiled[fuse=false]"])
def test_stop_gradient_cuts_the_derivative_on_every_backend(backend: str) -> None:
    """A graph being traced is differentiated after tracing: the cut must be an equation
    of it (it was lost there once, and x * stop_gradient(x) had derivative 2x)."""
    assert dk.grad(lambda x: x * dk.stop_gradient(x), backend=backend)(3.0) == 3.0
    x = np.linspace(-1.0, 1.0, 2000)  # (large enough to fuse)
    g = dk.grad(lambda v: dnp.sum(dnp.exp(v) * dk.stop_gradient(dnp.sin(v))), backend=backend)(x)
    np.testing.assert_allclose(g, np.exp(x) * np.sin(x), rtol=1e-15, atol=0)
    assert dk.hessian(lambda v: v ** 3 * dk.stop_gradient(v), backend=backend)(2.0) == 24.0
    if backend.startswith("compiled"):
        assert "stop_gradient(v)" in str(dk.make_graph(lambda v: v * dk.stop_gradient(v))(3.0))
        assert dk.jit(dk.grad(lambda v: v * dk.stop_gradient(v)))(3.0) == 3.0


def test_stop_gradient_hvp_jacfwd_jacrev_closed_forms() -> None:
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(dk.grad(lambda v: dnp.sum(dk.stop_gradient(v) * v))(x), x)
    assert dk.hessian(lambda v: dk.stop_gradient(v) * v ** 2)(3.0) == 6.0
    f = lambda v: dnp.sum(dnp.sin(v) * v[0])  # noqa: E731
    hess = np.diag(-np.sin(x) * x[0])
    hess[0, :] += np.cos(x)
    hess[:, 0] += np.cos(x)
    v = np.array([0.3, -0.7])
    np.testing.assert_allclose(dk.hvp(f)(x, v), hess @ v, rtol=1e-14)
    jac = np.diag(np.exp(x))
    np.testing.assert_allclose(dk.jacfwd(dnp.exp)(x), jac)
    np.testing.assert_allclose(dk.jacrev(dnp.exp)(x), jac)


@pytest.mark.jax
def test_against_jax() -> None:
    jax = needs("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)

    @jax.custom_vjp
    def log1pexp_j(x):
        return jnp.log1p(jnp.exp(x))
    log1pexp_j.defvjp(lambda x: (log1pexp_j(x), x), lambda x, g: (g * jax.nn.sigmoid(x),))
    x = np.array([-3.0, 0.0, 0.5, 40.0])
    np.testing.assert_allclose(dk.grad(lambda v: dnp.sum(log1pexp(v) ** 2))(x),
                               jax.grad(lambda v: jnp.sum(log1pexp_j(v) ** 2))(x), rtol=1e-14)
    f = lambda v: dnp.sum(dnp.tanh(v) * dk.stop_gradient(v) ** 2)  # noqa: E731
    fj = lambda v: jnp.sum(jnp.tanh(v) * jax.lax.stop_gradient(v) ** 2)  # noqa: E731
    # (at x = 40 JAX's tanh′ = 1 − y² rounds to 0; diffkit's 1/cosh² gives 1600·sech²(40))
    np.testing.assert_allclose(dk.grad(f)(x), jax.grad(fj)(x), rtol=1e-13, atol=2e-31)
    assert dk.grad(f)(x)[3] == pytest.approx(1600 / np.cosh(40.0) ** 2, rel=1e-14)
    g = lambda v: dnp.sum(dnp.exp(v[0] * v) * dnp.sin(v))  # noqa: E731
    gj = lambda v: jnp.sum(jnp.exp(v[0] * v) * jnp.sin(v))  # noqa: E731
    y, t = np.array([0.1, 0.2, -0.3]), np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(dk.hvp(g)(y, t), jax.jvp(jax.grad(gj), (y,), (t,))[1], rtol=1e-13)


def test_stop_gradient_is_not_applicable_to_the_symbolic_backend() -> None:
    with pytest.raises(dk.DiffkitError, match="n/a on the symbolic backend"):
        dk.grad(lambda x: x * dk.stop_gradient(x), backend="symbolic")(3.0)
