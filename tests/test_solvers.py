"""dk.fixed_point, dk.root, dk.custom_root: implicit and unrolled derivatives against closed
forms (Cardano's cubic, √, linear fixed points) and JAX's custom_root."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp

MODES = ("implicit", "unrolled")
BACKENDS = ("reverse", "forward")


def _cubic(x, p, q):
    return x ** 3 + p * x - q


def _cardano(p: float, q: float) -> float:
    """The real root of x³ + p x − q (p > 0)."""
    s = np.sqrt(q * q / 4 + p ** 3 / 27)
    return float(np.cbrt(q / 2 + s) + np.cbrt(q / 2 - s))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_newton_on_a_cubic_matches_cardano(mode: str, backend: str) -> None:
    p, q = 2.0, 3.0
    x = _cardano(p, q)
    g = 3 * x * x + p  # ∂F/∂x; dx/dq = 1/g, dx/dp = −x/g
    solve = lambda p, q: dk.root(_cubic, 0.0, p, q, mode=mode, tol=1e-15)  # noqa: E731
    assert abs(float(solve(p, q)) - x) < 1e-14
    dp, dq = dk.grad(solve, argnums=(0, 1), backend=backend)(p, q)
    np.testing.assert_allclose([dp, dq], [-x / g, 1 / g], rtol=1e-10, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_second_derivative_of_a_root(mode: str) -> None:
    p, q = 2.0, 5.0
    x = _cardano(p, q)
    h = dk.hessian(lambda q: dk.root(_cubic, 0.0, p, q, mode=mode, tol=1e-15))(q)
    assert abs(float(h) - (-6 * x / (3 * x * x + p) ** 3)) < 1e-10


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_square_root_fixed_point_matches_closed_form(mode: str, backend: str) -> None:
    # x = √(a + x): x* = (1 + √(1 + 4a)) / 2, dx*/da = 1/√(1 + 4a)
    solve = lambda a: dk.fixed_point(lambda x, a: dnp.sqrt(a + x), 1.0, a,  # noqa: E731
                                     mode=mode, tol=1e-15)
    a = np.array([0.5, 2.0, 6.0])
    np.testing.assert_allclose(dk.vmap(solve)(a), (1 + np.sqrt(1 + 4 * a)) / 2, rtol=1e-14)
    grads = [dk.grad(solve, backend=backend)(ai) for ai in a]
    np.testing.assert_allclose(grads, 1 / np.sqrt(1 + 4 * a), rtol=1e-10, atol=0)


@pytest.mark.parametrize("linear", ("dense", "iterative"))
@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_fixed_point_of_a_tree_of_parameters(linear: str, backend: str) -> None:
    """x = M x + b: x* = (I − M)⁻¹ b; ∂x*/∂b = (I − M)⁻¹, ∂(c·x*)/∂M = λ x*ᵀ, λ = (I − M)⁻ᵀ c."""
    rng = np.random.default_rng(0)
    n = 5
    params = {"M": 0.3 * rng.standard_normal((n, n)) / np.sqrt(n), "b": rng.standard_normal(n)}
    c = rng.standard_normal(n)
    inverse = np.linalg.inv(np.eye(n) - params["M"])
    x_star = inverse @ params["b"]

    def loss(ps):
        x = dk.fixed_point(lambda x, ps: ps["M"] @ x + ps["b"], np.zeros(n), ps,
                           linear=linear, tol=1e-15)
        return dnp.sum(c * x)

    g = dk.grad(loss, backend=backend)(params)
    lam = inverse.T @ c
    np.testing.assert_allclose(g["b"], lam, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g["M"], np.outer(lam, x_star), rtol=1e-10, atol=1e-12)
    jac = dk.jacobian(lambda b: dk.fixed_point(lambda x, b: params["M"] @ x + b, np.zeros(n), b,
                                               linear=linear, tol=1e-15))(params["b"])
    np.testing.assert_allclose(jac, inverse, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("linear", ("dense", "iterative"))
def test_vector_root_and_vjp(linear: str) -> None:
    # x0² + x1² = a, x0 = x1  →  x0 = x1 = √(a/2)
    F = lambda x, a: dnp.stack([x[0] ** 2 + x[1] ** 2 - a, x[0] - x[1]])  # noqa: E731
    a = 3.0
    y, pull = dk.vjp(lambda a: dk.root(F, np.array([1.0, 0.5]), a, linear=linear), a)
    np.testing.assert_allclose(y, [np.sqrt(a / 2)] * 2, rtol=1e-14)
    (a_bar,) = pull(np.array([1.0, 2.0]))
    assert abs(float(a_bar) - 3.0 / (2 * np.sqrt(2 * a))) < 1e-12


def test_unrolled_gradient_follows_the_iterations_implicit_the_answer() -> None:
    """Stopped early, the unrolled derivative is that of the iterate; the implicit one is the
    answer's derivative at the point reached (off only by how far x is from x*)."""
    solve = lambda a, mode, n: dk.fixed_point(lambda x, a: dnp.sqrt(a + x), 1.0, a,  # noqa: E731
                                              mode=mode, tol=0.0, max_iter=n)
    exact = 1 / np.sqrt(1 + 4 * 2.0)
    unrolled = [abs(float(dk.grad(solve)(2.0, "unrolled", n)) - exact) for n in (3, 6, 12)]
    assert unrolled[0] > unrolled[1] > unrolled[2] > 0
    assert abs(float(dk.grad(solve)(2.0, "implicit", 40)) - exact) < 1e-14


@pytest.mark.jax
def test_custom_root_matches_jax() -> None:
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def bisect(f, x0):
        lo, hi = 0.0, 2.0
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return 0.5 * (lo + hi)

    scalar = lambda g, y: y / g(1.0)  # noqa: E731
    ours = lambda a: dk.custom_root(lambda x: x ** 3 + a * x - 2.0, 1.0, bisect, scalar)
    def jax_newton(f, x):  # JAX traces its solve: no branches on values
        x0_shape = jnp.shape(x)
        for _ in range(12):
            step = jnp.linalg.solve(jnp.atleast_2d(jax.jacobian(f)(x)), jnp.atleast_1d(f(x)))
            x = x - step.reshape(x0_shape)
        return x

    theirs = lambda a: jax.lax.custom_root(lambda x: x ** 3 + a * x - 2.0, 1.0,  # noqa: E731
                                           jax_newton, scalar)
    for a in (0.5, 1.0, 3.0):
        np.testing.assert_allclose(dk.grad(ours)(a), jax.grad(theirs)(a), rtol=1e-12)
        np.testing.assert_allclose(dk.grad(ours, backend="forward")(a), jax.grad(theirs)(a),
                                   rtol=1e-12)

    # a vector root, Newton as the user's solver, a dense tangent solve
    def newton(f, x):
        for _ in range(30):
            x = x - np.linalg.solve(dk.jacobian(f)(x), f(x))
        return x

    def ours_vec(w):
        f = lambda x: dnp.tanh(x) + w * x - np.array([1.0, 2.0])  # noqa: E731
        return dnp.sum(dk.custom_root(f, np.zeros(2), newton,
                                      lambda g, y: dnp.linalg.solve(dk.jacobian(g)(y), y)) ** 2)

    def theirs_vec(w):
        f = lambda x: jnp.tanh(x) + w * x - jnp.array([1.0, 2.0])  # noqa: E731
        x = jax.lax.custom_root(f, jnp.zeros(2), jax_newton,
                                lambda g, y: jnp.linalg.solve(jax.jacobian(g)(y), y))
        return jnp.sum(x ** 2)

    w = np.array([0.5, 1.5])
    np.testing.assert_allclose(dk.grad(ours_vec)(w), jax.grad(theirs_vec)(w), rtol=1e-12)


def test_custom_root_with_aux_hessian_and_hidden_values() -> None:
    solve = lambda f, x0: (x0 - f(x0) / 2.0, "one step")  # noqa: E731  (f is linear: exact)
    y, aux = dk.custom_root(lambda x: 2.0 * x - 3.0, 0.0, solve, lambda g, y: y / g(1.0),
                            has_aux=True)
    assert (float(y), aux) == (1.5, "one step")
    f = lambda a: dk.custom_root(lambda x: x * x - a, 1.0,  # noqa: E731
                                 lambda f, x: np.sqrt(f(0.0) * -1.0), lambda g, y: y / g(1.0))
    assert abs(float(dk.grad(f)(4.0)) - 0.25) < 1e-14
    assert abs(float(dk.hessian(f)(4.0)) - (-0.25 / 8.0)) < 1e-14  # −¼ a^(−3/2)
    class Hidden:  # a value behind an attribute is not found in f's closure
        a = None

    def g(a):
        Hidden.a = a
        return dk.custom_root(lambda x: x * x - Hidden.a, 1.0, lambda f, x: 2.0,
                              lambda g, y: y / g(1.0))
    with pytest.raises(dk.NotApplicable, match="not in its closure") as err:
        dk.grad(g)(4.0)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("call, words", [
    (lambda: dk.fixed_point(lambda x: x, 1.0, mode="sideways"), "mode must be one of"),
    (lambda: dk.root(lambda x: x, 1.0, linear="cholesky"), "linear must be one of"),
    (lambda: dk.root(lambda x: x, 1.0, method="bisection"), "method must be 'newton'"),
    (lambda: dk.fixed_point(lambda x: 2.0 * x + 1.0, 1.0, max_iter=50), "did not converge"),
    (lambda: dk.root(lambda x: x * x + 1.0, 0.3, max_iter=5), "did not converge"),
    (lambda: dk.root(lambda x: x * x + 1.0, 1.0), "Jacobian of F is singular"),
    (lambda: dk.grad(lambda a: dk.fixed_point(lambda x, a: x + (x - a) ** 2, 1.0, a))(1.0),
     "not locally unique"),
    (lambda: dk.grad(lambda a: dk.root(lambda x, a: x ** 3 - a, 1.0, a),
                     backend="compiled")(8.0), "compiled backend"),
])
def test_mistakes_are_one_clear_line(call, words: str) -> None:
    with pytest.raises(dk.DiffkitError, match=words) as err:
        call()
    assert "\n" not in str(err.value)


def _peaks(calls: dict) -> dict:
    """Peak traced memory of each call above what was live before it, in one tracing session
    warmed up by a first round (Python's free lists filled, so they are not counted)."""
    tracemalloc.start()
    try:
        peaks = {}
        for _ in range(2):
            for key, call in calls.items():
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
                call()
                peaks[key] = tracemalloc.get_traced_memory()[1] - base
        return peaks
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("solver", ("fixed_point", "root"))
def test_implicit_memory_does_not_grow_with_iterations(solver: str) -> None:
    n = 200 if solver == "fixed_point" else 40
    b = np.linspace(0.1, 1.0, n)
    if solver == "fixed_point":
        run = lambda b, k, mode: dk.fixed_point(lambda x, b: 0.5 * dnp.tanh(x) + b,  # noqa: E731
                                                np.zeros(n), b, tol=0.0, max_iter=k, mode=mode)
    else:
        run = lambda b, k, mode: dk.root(lambda x, b: x + 0.5 * dnp.tanh(x) - b,  # noqa: E731
                                         np.zeros(n), b, tol=0.0, max_iter=k, mode=mode,
                                         linear="iterative")
    peaks = _peaks({(k, mode): lambda k=k, mode=mode: dk.grad(lambda b: dnp.sum(run(b, k, mode)))(b)
                    for k in (10, 100) for mode in MODES})
    assert peaks[100, "implicit"] <= 1.3 * peaks[10, "implicit"]
    assert peaks[100, "unrolled"] >= 3 * peaks[10, "unrolled"]  # the tape keeps every step


def test_custom_root_with_a_differentiating_solver_composes() -> None:
    """JAX's documented example: Newton inside solve differentiates f in x (on plain
    parameters); the root's derivatives of orders 1 and 2, forward, reverse and vmapped."""
    def newton_raphson(f, x0):
        x = x0
        for _ in range(30):
            x = x - f(x) / dk.grad(f)(x)
        return x

    def sqrt_cubed(x):  # y² = x³: y = x^(3/2)
        return dk.custom_root(lambda y: y ** 2 - x ** 3, 1.0, newton_raphson,
                              lambda g, y: y / g(1.0))

    xs = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(dk.vmap(sqrt_cubed)(xs), xs ** 1.5, rtol=1e-14)
    np.testing.assert_allclose(dk.vmap(dk.grad(sqrt_cubed))(xs), 1.5 * xs ** 0.5, rtol=1e-13)
    assert abs(dk.grad(sqrt_cubed, backend="forward")(2.0) - 1.5 * 2 ** 0.5) < 1e-13
    assert abs(dk.hessian(sqrt_cubed)(2.0) - 0.75 * 2 ** -0.5) < 1e-13
    dk.check_grads(sqrt_cubed, (2.0,), order=2)

    def through_a_helper(x):  # the value in the closure of a function f calls
        def rhs():
            return x ** 3
        return dk.custom_root(lambda y: y ** 2 - rhs(), 1.0, newton_raphson,
                              lambda g, y: y / g(1.0))

    assert abs(dk.grad(through_a_helper)(2.0) - 1.5 * 2 ** 0.5) < 1e-13
