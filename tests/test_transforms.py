"""Functional transforms on composite functions: forward vs reverse vs closed forms.

Covers grad / value_and_grad / jvp / vjp / jacobian / hessian / derivative, argnums,
pytrees, has_aux, nesting (perturbation confusion), escaping values, result types and
dtypes, and the numpy protocol (``np.sin(box)``) with its refusals.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, central_diff, central_jvp, gradcheck
from hypothesis import given, settings
from hypothesis import strategies as st

import diffkit as dk
import diffkit.numpy as dnp

BACKENDS = ["forward", "reverse"]
HYP = settings(max_examples=30, deadline=None)


# ================================================================ closed-form test functions


def rosenbrock(x: Any) -> Any:
    return dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def rosenbrock_hessian(x: np.ndarray) -> np.ndarray:
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] = h[i + 1, i] = -400.0 * x[i]
    return h


def beale(x: Any) -> Any:
    a, b = x[0], x[1]
    return ((1.5 - a + a * b) ** 2 + (2.25 - a + a * b ** 2) ** 2
            + (2.625 - a + a * b ** 3) ** 2)


def beale_grad(x: np.ndarray) -> np.ndarray:
    a, b = x
    t1, t2, t3 = 1.5 - a + a * b, 2.25 - a + a * b ** 2, 2.625 - a + a * b ** 3
    return np.array([2 * t1 * (b - 1) + 2 * t2 * (b ** 2 - 1) + 2 * t3 * (b ** 3 - 1),
                     2 * t1 * a + 4 * t2 * a * b + 6 * t3 * a * b ** 2])


def himmelblau(x: Any, y: Any) -> Any:
    return (x ** 2 + y - 11.0) ** 2 + (x + y ** 2 - 7.0) ** 2


def himmelblau_grad(x: float, y: float) -> tuple[float, float]:
    a, b = x ** 2 + y - 11.0, x + y ** 2 - 7.0
    return 4 * x * a + 2 * b, 2 * a + 4 * y * b


def himmelblau_hessian(x: float, y: float) -> np.ndarray:
    a, b = x ** 2 + y - 11.0, x + y ** 2 - 7.0
    return np.array([[4 * a + 8 * x ** 2 + 2, 4 * x + 4 * y],
                     [4 * x + 4 * y, 2 + 4 * b + 8 * y ** 2]])


# ================================================================ composite functions


@pytest.mark.parametrize("backend", BACKENDS)
def test_rosenbrock_gradient_and_hessian(backend: str) -> None:
    x = np.array([-1.2, 1.0, 0.3, 2.0, -0.5])
    assert_close(rosenbrock(x), np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
                 rtol=1e-15)
    assert_close(dk.grad(rosenbrock, backend=backend)(x), rosenbrock_grad(x), rtol=1e-13)
    assert_close(dk.hessian(rosenbrock, backend=backend)(x), rosenbrock_hessian(x), rtol=1e-13)
    # the minimum: gradient exactly zero, Hessian positive definite
    ones = np.ones(4)
    assert np.all(dk.grad(rosenbrock, backend=backend)(ones) == 0.0)
    assert np.all(np.linalg.eigvalsh(dk.hessian(rosenbrock, backend=backend)(ones)) > 0)


def test_rosenbrock_hessian_default_is_forward_over_reverse() -> None:
    x = np.array([0.7, -0.2, 1.3])
    h = dk.hessian(rosenbrock)(x)
    assert h.shape == (3, 3)
    assert_close(h, rosenbrock_hessian(x), rtol=1e-13)
    assert_close(h, dk.hessian(rosenbrock, backend="reverse")(x), rtol=1e-14)
    assert_close(h, dk.hessian(rosenbrock, backend="forward")(x), rtol=1e-14)
    assert_close(h, h.T, rtol=0, atol=0)


@HYP
@given(st.lists(st.floats(-2.0, 2.0), min_size=2, max_size=6))
def test_rosenbrock_gradient_random_points(xs: list[float]) -> None:
    x = np.array(xs)
    g_rev = dk.grad(rosenbrock)(x)
    g_fwd = dk.grad(rosenbrock, backend="forward")(x)
    assert_close(g_rev, rosenbrock_grad(x), rtol=1e-13)
    assert_close(g_fwd, g_rev, rtol=1e-14)


@HYP
@given(st.floats(-4.5, 4.5), st.floats(-4.5, 4.5))
def test_beale_gradient_random_points(a: float, b: float) -> None:
    x = np.array([a, b])
    g_rev = dk.grad(beale)(x)
    g_fwd = dk.grad(beale, backend="forward")(x)
    scale = 1 + 10 * max(1, abs(b)) ** 5  # the terms are polynomials of degree 7
    assert_close(g_rev, beale_grad(x), atol=1e-13 * scale)
    assert_close(g_fwd, g_rev, atol=1e-13 * scale)


def test_beale_minimum_and_value() -> None:
    x = np.array([3.0, 0.5])
    assert beale(x) == 0.0
    for backend in BACKENDS:
        assert_close(dk.grad(beale, backend=backend)(x), [0.0, 0.0], rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_himmelblau(backend: str) -> None:
    for x, y in [(3.0, 2.0), (-2.805118, 3.131312), (0.5, -1.5), (-3.2, -2.1)]:
        gx, gy = dk.grad(himmelblau, argnums=(0, 1), backend=backend)(x, y)
        ex, ey = himmelblau_grad(x, y)
        assert_close(gx, ex, rtol=1e-13)
        assert_close(gy, ey, rtol=1e-13)
    h = dk.hessian(lambda v: himmelblau(v[0], v[1]), backend=backend)(np.array([0.5, -1.5]))
    assert_close(h, himmelblau_hessian(0.5, -1.5), rtol=1e-14)
    # (3, 2) is a minimum: exact zero gradient
    assert dk.grad(himmelblau, argnums=(0, 1), backend=backend)(3.0, 2.0) == (0.0, 0.0)


def speelpenning_loop(x: Any) -> Any:
    p = x[0]
    for i in range(1, len(x)):
        p = p * x[i]
    return p


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [speelpenning_loop, dnp.prod], ids=["loop", "dnp.prod"])
def test_speelpenning(backend: str, f: Any) -> None:
    x = np.array([1.5, -0.5, 2.0, 0.75, -1.25, 3.0])
    assert_close(dk.grad(f, backend=backend)(x), np.prod(x) / x, rtol=1e-14)
    z = np.array([1.5, -0.5, 0.0, 0.75, -1.25, 3.0])  # one zero: exact product of the others
    others = [np.prod(np.delete(z, i)) for i in range(len(z))]
    assert np.all(dk.grad(f, backend=backend)(z) == np.array(others))
    assert others[2] != 0.0


def logistic_map(x: Any, r: Any, k: int = 25) -> Any:
    for _ in range(k):
        x = r * x * (1.0 - x)
    return x


def logistic_map_derivatives(x: float, r: float, k: int = 25) -> tuple[float, float]:
    """d x_k / d x_0 and d x_k / d r by the chain rule, carried by hand."""
    dx, dr = 1.0, 0.0
    for _ in range(k):
        dx, dr = r * (1 - 2 * x) * dx, x * (1 - x) + r * (1 - 2 * x) * dr
        x = r * x * (1 - x)
    return dx, dr


@pytest.mark.parametrize("backend", BACKENDS)
def test_logistic_map(backend: str) -> None:
    for x0, r in [(0.3, 3.7), (0.1, 2.5), (0.6, 3.2)]:
        dx, dr = logistic_map_derivatives(x0, r)
        gx, gr = dk.grad(logistic_map, argnums=(0, 1), backend=backend)(x0, r)
        assert_close(gx, dx, rtol=1e-12)
        assert_close(gr, dr, rtol=1e-12)


def babylonian_sqrt(a: Any) -> Any:
    x = a if a > 1.0 else 1.0   # a branch on the value
    x = x * 1.0
    while abs(x * x - a) > 1e-15 * a:   # a loop whose trip count depends on the value
        x = 0.5 * (x + a / x)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_branches_and_while_loop(backend: str) -> None:
    a = np.array([0.04, 0.5, 2.0, 9.0, 123.0])
    for ai in a:
        assert_close(babylonian_sqrt(ai), np.sqrt(ai), rtol=1e-14)
        assert_close(dk.grad(babylonian_sqrt, backend=backend)(ai), 0.5 / np.sqrt(ai),
                     rtol=1e-12)

    def piecewise(x: Any) -> Any:
        if x > 0:
            return x ** 3 + dnp.sin(x)
        elif x > -1:
            return -2.0 * x
        return dnp.exp(x)

    for x, expected in [(0.7, 3 * 0.49 + np.cos(0.7)), (-0.5, -2.0), (-2.0, np.exp(-2.0))]:
        assert_close(dk.grad(piecewise, backend=backend)(x), expected, rtol=1e-15)


def horner(coeffs: list[float], x: Any) -> Any:
    """Recursive polynomial evaluation: c0 + x (c1 + x (c2 + ...))."""
    if len(coeffs) == 1:
        return coeffs[0] + 0.0 * x
    return coeffs[0] + x * horner(coeffs[1:], x)


def nested_sin(x: Any, depth: int) -> Any:
    return x if depth == 0 else dnp.sin(nested_sin(x, depth - 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_recursive_functions(backend: str) -> None:
    c = [1.0, -2.0, 0.5, 3.0, -1.0]
    x = np.array([-1.5, 0.0, 0.4, 2.0])
    dpoly = sum(k * ck * x ** (k - 1) for k, ck in enumerate(c) if k)
    assert_close(dk.derivative(lambda z: horner(c, z), backend=backend)(x), dpoly, rtol=1e-14)
    # d/dx sin^n(x) = prod over the chain of cos(inner values)
    x0, inner, d = 0.9, 0.9, 1.0
    for _ in range(6):
        d *= np.cos(inner)
        inner = np.sin(inner)
    assert_close(dk.grad(lambda z: nested_sin(z, 6), backend=backend)(x0), d, rtol=1e-14)


def _mlp_data() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    params = {"W1": rng.standard_normal((4, 5)) * 0.5, "b1": rng.standard_normal(5) * 0.1,
              "W2": rng.standard_normal((5, 3)) * 0.5, "b2": rng.standard_normal(3) * 0.1}
    X = rng.standard_normal((8, 4))
    y = rng.integers(0, 3, size=8)
    return params, X, y


def mlp_loss(params: dict[str, Any], X: np.ndarray, y: np.ndarray) -> Any:
    h = dnp.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    picked = logits[np.arange(len(y)), y]
    return dnp.mean(dnp.logsumexp(logits, axis=1) - picked)


def mlp_loss_numpy(params: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray) -> float:
    h = np.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]
    return float(np.mean(lse - logits[np.arange(len(y)), y]))


def test_mlp_cross_entropy_loss() -> None:
    params, X, y = _mlp_data()
    assert_close(mlp_loss(params, X, y), mlp_loss_numpy(params, X, y), rtol=1e-14)
    g_rev = dk.grad(mlp_loss)(params, X, y)
    g_fwd = dk.grad(mlp_loss, backend="forward")(params, X, y)
    assert set(g_rev) == set(params) == set(g_fwd)
    for k, p in params.items():
        assert g_rev[k].shape == p.shape

        def along(v: np.ndarray, k: str = k) -> float:
            return mlp_loss_numpy({**params, k: v}, X, y)

        assert_close(g_rev[k], central_diff(along, p), rtol=1e-8)
        assert_close(g_fwd[k], g_rev[k], rtol=1e-13)


def test_logistic_regression_loss() -> None:
    rng = np.random.default_rng(3)
    X, w = rng.standard_normal((20, 3)), rng.standard_normal(3)
    t = (rng.uniform(size=20) > 0.5).astype(float)

    def loss(w: Any) -> Any:
        z = X @ w
        return dnp.mean(dnp.log1p(dnp.exp(-z)) + (1.0 - t) * z)  # -log-likelihood

    s = 1.0 / (1.0 + np.exp(-(X @ w)))
    expected = X.T @ (s - t) / len(t)
    for backend in BACKENDS:
        assert_close(dk.grad(loss, backend=backend)(w), expected, rtol=1e-14)
    h = dk.hessian(loss)(w)
    assert_close(h, X.T @ np.diag(s * (1 - s)) @ X / len(t), rtol=1e-13)


# ---------------------------------------------------------------- random compositions (hypothesis)

UNARY = {
    "sin": dnp.sin, "cos": dnp.cos, "tanh": dnp.tanh, "arctan": dnp.arctan,
    "sigmoid": dnp.sigmoid, "exp_sin": lambda x: dnp.exp(dnp.sin(x)),
    "log1p_sq": lambda x: dnp.log1p(x * x), "sqrt_1p_sq": lambda x: dnp.sqrt(1.0 + x * x),
    "arcsin_tanh": lambda x: dnp.arcsin(0.9 * dnp.tanh(x)), "square": lambda x: x ** 2,
    "cube_scaled": lambda x: 0.3 * x ** 3, "sinh_half": lambda x: dnp.sinh(0.5 * x),
    "neg": lambda x: -x, "log_cosh": lambda x: dnp.log(dnp.cosh(x)),
    "tan_atan": lambda x: dnp.tan(0.7 * dnp.arctan(x)),
}
BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / (1.5 + dnp.sin(b))}

leaves = st.one_of(st.just(("x",)), st.floats(-2, 2).map(lambda c: ("c", c)))
exprs = st.recursive(
    leaves,
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(sorted(UNARY)), sub),
        st.tuples(st.sampled_from(sorted(BINARY)), sub, sub)),
    max_leaves=5)


def evaluate(e: tuple, x: Any) -> Any:
    if e[0] == "x":
        return x
    if e[0] == "c":
        return e[1]
    if e[0] in UNARY:
        return UNARY[e[0]](evaluate(e[1], x))
    return BINARY[e[0]](evaluate(e[1], x), evaluate(e[2], x))


@HYP
@given(exprs, st.floats(-1.5, 1.5))
def test_random_compositions_forward_reverse_fd(e: tuple, x0: float) -> None:
    def f(x: Any) -> Any:
        return evaluate(e, x) + 0.0 * x  # depends on x even if the tree does not

    value = f(x0)  # on plain numbers dnp is numpy
    assert isinstance(value, (float, np.floating))
    if not np.isfinite(value) or abs(value) > 1e6:
        return
    g_fwd = dk.grad(f, backend="forward")(x0)
    g_rev = dk.grad(f)(x0)
    fd = central_jvp(f, [x0], [1.0])
    assert_close(g_fwd, g_rev, rtol=1e-12)
    assert_close(g_rev, fd, rtol=1e-6)
    # and as an elementwise derivative over a grid containing x0
    xs = np.array([x0, x0 * 0.5, x0 + 0.25])
    assert_close(dk.derivative(f)(xs)[0], g_fwd, rtol=1e-12)


# ================================================================ transforms: calling conventions


def test_argnums_int_tuple_negative() -> None:
    def f(x: Any, y: Any, z: Any) -> Any:
        return x * y ** 2 + dnp.sin(z) * x

    x, y, z = 1.5, -2.0, 0.3
    expected = (y ** 2 + np.sin(z), 2 * x * y, np.cos(z) * x)
    for backend in BACKENDS:
        assert_close(dk.grad(f, backend=backend)(x, y, z), expected[0], rtol=1e-15)
        assert_close(dk.grad(f, 1, backend=backend)(x, y, z), expected[1], rtol=1e-15)
        assert_close(dk.grad(f, argnums=-1, backend=backend)(x, y, z), expected[2], rtol=1e-15)
        g = dk.grad(f, argnums=(2, 0), backend=backend)(x, y, z)
        assert isinstance(g, tuple) and len(g) == 2
        assert_close(g[0], expected[2], rtol=1e-15)
        assert_close(g[1], expected[0], rtol=1e-15)
        g1 = dk.grad(f, argnums=(1,), backend=backend)(x, y, z)
        assert isinstance(g1, tuple) and len(g1) == 1
        assert_close(g1[0], expected[1], rtol=1e-15)
        g3 = dk.grad(f, argnums=(0, -2, 2), backend=backend)(x, y, z)
        for gi, ei in zip(g3, expected):
            assert_close(gi, ei, rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pytree_arguments(backend: str) -> None:
    w, b = np.array([1.0, -2.0, 0.5]), 0.25
    xs = np.array([0.3, 0.1, -0.7])

    def f(p: dict[str, Any]) -> Any:
        return dnp.sum(dnp.tanh(p["w"] * xs + p["b"]) ** 2)

    g = dk.grad(f, backend=backend)({"w": w, "b": b})
    assert isinstance(g, dict) and set(g) == {"w", "b"}
    t = np.tanh(w * xs + b)
    common = 2 * t * (1 - t ** 2)
    assert g["w"].shape == (3,) and np.shape(g["b"]) == ()
    assert_close(g["w"], common * xs, rtol=1e-14)
    assert_close(g["b"], np.sum(common), rtol=1e-14)

    A, v = np.array([[1.0, 2.0], [-0.5, 3.0]]), np.array([0.5, -1.0])

    def h(ps: list[Any]) -> Any:
        return dnp.sum((ps[0] @ ps[1]) ** 2)

    gl = dk.grad(h, backend=backend)([A, v])
    assert isinstance(gl, list) and len(gl) == 2
    r = A @ v
    assert_close(gl[0], 2 * np.outer(r, v), rtol=1e-14)
    assert_close(gl[1], 2 * A.T @ r, rtol=1e-14)

    # nested structure, with a second argument also differentiated
    nested = {"layer": [A, {"bias": v}], "scale": 2.0}

    def k(p: dict[str, Any], s: Any) -> Any:
        return p["scale"] * s * dnp.sum(p["layer"][0] @ p["layer"][1]["bias"])

    gp, gs = dk.grad(k, argnums=(0, 1), backend=backend)(nested, 3.0)
    assert set(gp) == {"layer", "scale"} and isinstance(gp["layer"], list)
    assert_close(gp["layer"][0], 6.0 * np.outer(np.ones(2), v), rtol=1e-15)
    assert_close(gp["layer"][1]["bias"], 6.0 * A.T @ np.ones(2), rtol=1e-15)
    assert_close(gp["scale"], 3.0 * np.sum(A @ v), rtol=1e-15)
    assert_close(gs, 2.0 * np.sum(A @ v), rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_has_aux(backend: str) -> None:
    def f(x: Any) -> Any:
        y = dnp.sin(x)
        return dnp.sum(y ** 2), {"y": y, "n": 3}

    x = np.array([0.2, -1.0, 2.5])
    (value, aux), g = dk.value_and_grad(f, has_aux=True, backend=backend)(x)
    assert_close(value, np.sum(np.sin(x) ** 2), rtol=1e-15)
    assert type(aux["y"]) is np.ndarray and aux["n"] == 3
    assert_close(aux["y"], np.sin(x), rtol=0, atol=0)
    assert_close(g, 2 * np.sin(x) * np.cos(x), rtol=1e-15)
    g2, aux2 = dk.grad(f, has_aux=True, backend=backend)(x)
    assert_close(g2, g, rtol=0, atol=0)
    assert type(aux2["y"]) is np.ndarray
    # without aux: value_and_grad is (value, grad)
    v3, g3 = dk.value_and_grad(lambda z: f(z)[0], backend=backend)(x)
    assert_close(v3, value, rtol=0, atol=0)
    assert_close(g3, g, rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_several_primals(backend: str) -> None:
    def f(x: Any, y: Any) -> Any:
        return x * dnp.sin(y) + y ** 2

    x, y = np.array([1.0, 2.0, -0.5]), np.array([0.3, -1.2, 2.0])
    tx, ty = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.25, -0.75])
    out, tangent = dk.jvp(f, (x, y), (tx, ty), backend=backend)
    assert_close(out, x * np.sin(y) + y ** 2, rtol=1e-15)
    assert_close(tangent, tx * np.sin(y) + (x * np.cos(y) + 2 * y) * ty, rtol=1e-14)
    # a scalar primal and an array primal together
    out2, t2 = dk.jvp(lambda s, v: s * v, (2.0, x), (3.0, tx), backend=backend)
    assert_close(t2, 3.0 * x + 2.0 * tx, rtol=1e-15)


def test_vjp_one_cotangent_per_primal() -> None:
    A, v = np.array([[1.0, 2.0, 0.5], [-1.0, 0.25, 3.0]]), np.array([0.5, -1.0, 2.0])
    out, pull = dk.vjp(lambda A, v: A @ v, A, v)
    assert_close(out, A @ v, rtol=1e-15)
    u = np.array([1.5, -2.0])
    gA, gv = pull(u)
    assert_close(gA, np.outer(u, v), rtol=1e-15)
    assert_close(gv, A.T @ u, rtol=1e-15)
    # pull can be called again with another cotangent (the tape is kept)
    gA2, gv2 = pull(np.array([0.0, 1.0]))
    assert_close(gA2, np.outer([0.0, 1.0], v), rtol=0, atol=0)
    assert_close(gv2, A[1], rtol=0, atol=0)
    (g,) = dk.vjp(dnp.sin, 0.5)[1](2.0)
    assert_close(g, 2 * np.cos(0.5), rtol=1e-15)


JAC_BACKENDS = ["forward", "reverse", None]


@pytest.mark.parametrize("backend", JAC_BACKENDS)
def test_jacobian_shapes_and_values(backend: str | None) -> None:
    def f(x: Any) -> Any:  # R^3 -> R^2
        return dnp.stack([x[0] * x[1] * x[2], dnp.sin(x[0]) + x[1] ** 2])

    x = np.array([0.5, -1.5, 2.0])
    J = dk.jacobian(f, backend=backend)(x)
    expected = np.array([[x[1] * x[2], x[0] * x[2], x[0] * x[1]],
                         [np.cos(x[0]), 2 * x[1], 0.0]])
    assert J.shape == (2, 3)
    assert_close(J, expected, rtol=1e-15)

    def g(t: Any) -> Any:  # R^2 -> R^3 (auto picks the other mode)
        return dnp.stack([t[0] ** 2, t[0] * t[1], dnp.exp(t[1])])

    Jg = dk.jacobian(g, backend=backend)(np.array([1.5, -0.5]))
    assert Jg.shape == (3, 2)
    assert_close(Jg, [[3.0, 0.0], [-0.5, 1.5], [0.0, np.exp(-0.5)]], rtol=1e-15)

    X = np.array([[1.0, 2.0], [-0.5, 0.25]])
    JX = dk.jacobian(lambda X: X @ X, backend=backend)(X)
    assert JX.shape == (2, 2, 2, 2)
    eye = np.eye(2)
    expected_X = (np.einsum("ik,lj->ijkl", eye, X) + np.einsum("ik,jl->ijkl", X, eye))
    assert_close(JX, expected_X, rtol=1e-15)

    M = np.arange(6.0).reshape(2, 3) / 4
    JM = dk.jacobian(lambda M: dnp.sum(M ** 2, axis=1), backend=backend)(M)
    assert JM.shape == (2, 2, 3)
    expected_M = np.zeros((2, 2, 3))
    expected_M[0, 0], expected_M[1, 1] = 2 * M[0], 2 * M[1]
    assert_close(JM, expected_M, rtol=1e-15)

    # scalar in, vector out and vector in, scalar out
    Js = dk.jacobian(lambda s: dnp.stack([s, s ** 2, dnp.sin(s)]), backend=backend)(0.5)
    assert Js.shape == (3,)
    assert_close(Js, [1.0, 1.0, np.cos(0.5)], rtol=1e-15)
    Jv = dk.jacobian(lambda v: dnp.sum(v ** 3), backend=backend)(x)
    assert Jv.shape == (3,)
    assert_close(Jv, 3 * x ** 2, rtol=1e-15)


def test_jacobian_argnums_tuple() -> None:
    def f(x: Any, y: Any) -> Any:
        return x * y

    x, y = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    for backend in JAC_BACKENDS:
        Jx, Jy = dk.jacobian(f, argnums=(0, 1), backend=backend)(x, y)
        assert_close(Jx, np.diag(y), rtol=0, atol=0)
        assert_close(Jy, np.diag(x), rtol=0, atol=0)


@pytest.mark.parametrize("backend", [None, "reverse", "forward"])
def test_hessian_matrix_input(backend: str | None) -> None:
    X = np.array([[1.0, -2.0], [0.5, 3.0]])
    H = dk.hessian(lambda X: dnp.sum(X ** 3) + X[0, 1] * X[1, 0], backend=backend)(X)
    assert H.shape == (2, 2, 2, 2)
    expected = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            expected[i, j, i, j] = 6 * X[i, j]
    expected[0, 1, 1, 0] = expected[1, 0, 0, 1] = 1.0
    assert_close(H, expected, rtol=1e-15)


def test_derivative_vectorized_over_many_points() -> None:
    x = np.linspace(-10.0, 10.0, 10 ** 5)
    for backend in BACKENDS:
        calls = []

        def f(z: Any) -> Any:
            calls.append(1)
            return dnp.sin(z)

        df = dk.derivative(f, backend=backend)
        df(x)  # the first call per shape also probes f 3 times on plain arrays (elementwise?)
        assert len(calls) == 4
        calls.clear()
        d = df(x)
        assert len(calls) == 1, "derivative must be one vectorized pass"
        assert type(d) is np.ndarray and d.shape == x.shape and d.dtype == np.float64
        assert_close(d, np.cos(x), rtol=0, atol=1e-15)

        def g(z: Any) -> Any:
            return dnp.where(z > 0, z ** 2, dnp.sin(3.0 * z))

        dg = dk.derivative(g, backend=backend)(x)
        assert_close(dg, np.where(x > 0, 2 * x, 3 * np.cos(3 * x)), rtol=1e-15)


@pytest.mark.parametrize("outer", BACKENDS)
@pytest.mark.parametrize("inner", BACKENDS)
def test_nested_second_derivative(outer: str, inner: str) -> None:
    x = np.linspace(-3.0, 3.0, 13)
    d2 = dk.derivative(dk.derivative(dnp.sin, backend=inner), backend=outer)(x)
    assert_close(d2, -np.sin(x), rtol=1e-15)
    g2 = dk.grad(dk.grad(lambda t: t ** 4 * dnp.exp(t), backend=inner), backend=outer)(0.7)
    t = 0.7
    assert_close(g2, (12 * t ** 2 + 8 * t ** 3 + t ** 4) * np.exp(t), rtol=1e-14)
    # third derivative, mixing all the way down
    d3 = dk.derivative(dk.derivative(dk.derivative(dnp.sin, backend=inner), backend=outer),
                       backend=inner)(x)
    assert_close(d3, -np.cos(x), rtol=1e-15)


@pytest.mark.parametrize("outer", BACKENDS)
@pytest.mark.parametrize("inner", BACKENDS)
def test_perturbation_confusion(outer: str, inner: str) -> None:
    def f(x: Any) -> Any:  # x * d/dy (x + y) = x, so d/dx = 1 (confusion gives 2)
        return x * dk.derivative(lambda y: x + y, backend=inner)(1.0)

    assert dk.derivative(f, backend=outer)(1.0) == 1.0
    assert dk.grad(lambda x: x * dk.grad(lambda y: x + y, backend=inner)(1.0),
                   backend=outer)(1.0) == 1.0

    def g(x: Any) -> Any:  # x * d/dy (x * y) = x^2, so d/dx = 2x
        return x * dk.grad(lambda y: x * y, backend=inner)(1.0)

    assert dk.grad(g, backend=outer)(1.5) == 3.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_escaped_value_raises(backend: str) -> None:
    leaked: list[Any] = []

    def f(x: Any) -> Any:
        y = dnp.sin(x)
        leaked.append(y)
        return y * 2.0

    assert_close(dk.grad(f, backend=backend)(0.5), 2 * np.cos(0.5), rtol=1e-15)
    with pytest.raises(dk.DiffkitError, match="escaped"):
        leaked[0] + 1.0
    with pytest.raises(dk.DiffkitError, match="escaped"):
        dnp.exp(leaked[0])
    with pytest.raises(dk.DiffkitError, match="escaped"):
        dk.grad(lambda z: z * leaked[0], backend=backend)(1.0)


# ================================================================ types and dtypes


def test_plain_calls_return_plain_numpy() -> None:
    assert type(dnp.sin(1.0)) is np.float64
    assert type(dnp.sum(np.ones(3))) is np.float64
    assert type(dnp.exp(np.ones(2))) is np.ndarray
    assert type(dnp.matmul(np.ones((2, 2)), np.ones(2))) is np.ndarray
    assert type(dnp.logsumexp(np.ones((2, 3)), axis=1)) is np.ndarray
    assert type(np.ones(3)[1:] * 2.0) is np.ndarray
    assert type(rosenbrock(np.ones(3))) is np.float64


def _is_plain(v: Any) -> bool:
    return type(v) in (np.ndarray, np.float64, np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transform_results_are_plain_numpy(backend: str) -> None:
    x = np.array([0.5, 1.5])
    value, g = dk.value_and_grad(rosenbrock, backend=backend)(x)
    assert _is_plain(value) and _is_plain(g)
    out, t = dk.jvp(dnp.sin, (x,), (x,), backend=backend)
    assert _is_plain(out) and _is_plain(t)
    out, pull = dk.vjp(dnp.sin, x, backend="reverse")
    assert _is_plain(out) and all(_is_plain(c) for c in pull(x))
    assert _is_plain(dk.jacobian(dnp.sin, backend=backend)(x))
    assert _is_plain(dk.hessian(rosenbrock, backend=backend)(x))
    assert _is_plain(dk.derivative(dnp.sin, backend=backend)(x))
    assert _is_plain(dk.grad(lambda s: s ** 2, backend=backend)(3.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_dtypes(backend: str) -> None:
    g = dk.grad(lambda x: x * x, backend=backend)(3)
    assert g == 6.0 and np.result_type(g) == np.float64
    gi = dk.grad(lambda x: dnp.sum(x * x), backend=backend)(np.array([1, 2]))
    assert gi.dtype == np.float64
    assert_close(gi, [2.0, 4.0], rtol=0, atol=0)
    g32 = dk.grad(lambda x: dnp.sum(x * x), backend=backend)(np.array([1.0, 2.5], np.float32))
    assert g32.dtype == np.float32
    assert_close(g32, [2.0, 5.0], rtol=0, atol=0)
    d32 = dk.derivative(dnp.sin, backend=backend)(np.array([0.0, 1.0], np.float32))
    assert d32.dtype == np.float32
    assert_close(d32, np.cos(np.array([0.0, 1.0], np.float32)), rtol=0, atol=1e-7)
    gl = dk.grad(lambda x: sum(v ** 2 for v in x), backend=backend)([1, 2, 3])  # list of ints
    assert isinstance(gl, list) and all(g.dtype == np.float64 for g in gl)  # a list: a tree
    assert_close(np.array(gl), [2.0, 4.0, 6.0], rtol=0, atol=0)


# ================================================================ numpy interop


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_ufuncs_and_operators_on_boxes(backend: str) -> None:
    c = np.array([2.0, -1.0, 0.5])
    x = np.array([0.3, 0.6, -0.2])

    def f(x: Any) -> Any:
        return np.sum(np.sin(x) * c + c + np.exp(x) - c / (2.0 + x) + np.ndarray.__add__(c, x))

    g = dk.grad(f, backend=backend)(x)
    assert_close(g, np.cos(x) * c + np.exp(x) + c / (2.0 + x) ** 2 + 1.0, rtol=1e-14)
    gradcheck(lambda v: f(v), x, g)
    assert dk.grad(lambda x: np.tanh(x), backend=backend)(0.0) == 1.0
    assert_close(dk.grad(lambda x: np.sum(c @ np.reshape(x, (3, 1))), backend=backend)(x), c,
                 rtol=0, atol=0)
    # comparisons see the primal values
    assert_close(dk.grad(lambda x: np.sum(np.where(x > 0, x, 0.0)), backend=backend)(x),
                 [1.0, 1.0, 0.0], rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_on_box_runs_diffkits_function_or_is_refused(backend: str) -> None:
    A = np.array([[2.0, 1.0], [1.0, 3.0]])  # lstsq of a square matrix is its solve
    grad = dk.grad(lambda x: np.sum(np.linalg.lstsq(x, np.ones(2))[0]), backend=backend)(A)
    u = np.linalg.solve(A, np.ones(2))
    assert_close(grad, -np.outer(np.linalg.solve(A.T, np.ones(2)), u))  # d(1ᵀA⁻¹b)/dA
    with pytest.raises(dk.DiffkitError, match=r"numpy\.sort_complex") as info:
        dk.grad(lambda x: np.sum(np.sort_complex(x).real), backend=backend)(np.ones(2))
    assert "diffkit.numpy" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_math_functions_on_box_raise_type_error(backend: str) -> None:
    with pytest.raises(TypeError, match=r"\.item\(\)"):
        dk.grad(lambda x: math.sin(x), backend=backend)(1.0)
    with pytest.raises(TypeError, match=r"\.item\(\)"):
        dk.grad(lambda x: float(x) * x, backend=backend)(1.0)
    # .item() on purpose gives a constant: d/dx (x.item() * x) = x
    assert dk.grad(lambda x: x.item() * x, backend=backend)(3.0) == 3.0


# ================================================================ smaller contract points


@pytest.mark.parametrize("backend", BACKENDS)
def test_keyword_arguments_pass_through_and_unused_inputs_get_zeros(backend: str) -> None:
    def f(x: Any, y: Any, *, scale: float = 1.0) -> Any:
        return scale * x ** 2

    gx, gy = dk.grad(f, argnums=(0, 1), backend=backend)(1.5, np.ones(2), scale=3.0)
    assert gx == 9.0
    assert_close(gy, [0.0, 0.0], rtol=0, atol=0)
    g = dk.grad(lambda x: 2.5, backend=backend)(np.ones(3))  # constant function
    assert_close(g, np.zeros(3), rtol=0, atol=0)
    J = dk.jacobian(lambda x: np.ones(2), backend=backend)(np.ones(3))
    assert_close(J, np.zeros((2, 3)), rtol=0, atol=0)
    assert_close(dk.hessian(lambda x: dnp.sum(2.0 * x), backend=backend)(np.ones(3)),
                 np.zeros((3, 3)), rtol=0, atol=0)


def test_jacobian_of_pytree_argument() -> None:
    a, b = np.array([1.0, -2.0]), np.array([3.0, 0.5])
    for backend in JAC_BACKENDS:
        J = dk.jacobian(lambda d: d["a"] * dnp.sin(d["b"]), backend=backend)({"a": a, "b": b})
        assert set(J) == {"a", "b"} and J["a"].shape == J["b"].shape == (2, 2)
        assert_close(J["a"], np.diag(np.sin(b)), rtol=1e-15)
        assert_close(J["b"], np.diag(a * np.cos(b)), rtol=1e-15)


def test_transform_of_tensor_expression_stays_on_the_tape() -> None:
    p = dk.tensor(1.5, requires_grad=True)
    g = dk.grad(lambda s: s * s * p)(2.0)  # 2 s p = 6, itself a function of p
    assert_close(g.data, 6.0, rtol=0, atol=0)
    g.backward()
    assert p.grad == 4.0  # d(2 s p)/dp at s = 2


ARGNUMS_INT_BUG = ("BUG: transforms._Args: `self.single = isinstance(argnums, int)` is False for "
                   "numpy integers, so tuple(np.int64(0)) raises TypeError ('numpy.int64' object "
                   "is not iterable) although the range check and hessian accept np.integer")


def test_numpy_integer_argnums() -> None:
    assert dk.grad(lambda x, y: x * y, argnums=np.int64(1))(2.0, 3.0) == 2.0
    assert dk.hessian(lambda x: x ** 3, argnums=np.int64(0))(2.0) == 12.0


DUPLICATE_ARGNUMS_BUG = ("BUG: transforms._Args.call: with argnums=(0, 0) both parts are written "
                         "to args[0], the second overwriting the first, so the first gradient is "
                         "silently 0 (JAX gives the same gradient twice)")


@pytest.mark.parametrize("backend", BACKENDS)
def test_duplicate_argnums(backend: str) -> None:
    try:
        g = dk.grad(lambda x, y: x * y, argnums=(0, 0), backend=backend)(2.0, 3.0)
    except dk.DiffkitError:
        return  # refusing duplicates is acceptable too
    assert g == (3.0, 3.0)


FRESH_GRAD_BUG = ("BUG: reverse-mode results can alias internal or caller arrays: dk.grad(dnp.sum) "
                  "returns sum's VJP, a read-only stride-0 np.broadcast_to view (so `g -= lr` "
                  "raises 'output array is read-only'), and a vjp whose rule passes the "
                  "cotangent through (x + 0) returns the caller's own array object; "
                  "reverse._pull / transforms should hand back fresh writable arrays")


def test_gradients_are_fresh_writable_arrays() -> None:
    g = dk.grad(dnp.sum)(np.ones(3))
    g -= 0.5  # a gradient step in place
    assert_close(g, [0.5, 0.5, 0.5], rtol=0, atol=0)
    u = np.ones(3)
    (gu,) = dk.vjp(lambda x: x + 0.0, np.zeros(3))[1](u)
    assert gu is not u


DTYPE_BUG = ("BUG: the gradient dtype follows numpy's promotion inside f, not the input: "
             "float32 x with a float64 constant (x * c64) gives a float64 gradient in both "
             "backends (and a float64 .grad on a float32 tensor), unlike JAX/PyTorch where "
             "the gradient has the input's dtype; cast leaf adjoints/tangent seeds to the "
             "input dtype (reverse._pull / Tensor.backward / forward._all_directions)")


@pytest.mark.parametrize("backend", BACKENDS)
def test_float32_gradient_dtype_with_float64_constants(backend: str) -> None:
    x = np.array([1.0, 2.0], np.float32)
    c = np.array([3.0, 4.0])
    g = dk.grad(lambda x: dnp.sum(x * c), backend=backend)(x)
    assert g.dtype == np.float32
    assert_close(g, c, rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_deep_tape(backend: str) -> None:
    def f(x: Any) -> Any:
        for _ in range(5000):
            x = x + 1e-3 * dnp.sin(x)
        return x

    x, d = 0.3, 1.0
    for _ in range(5000):
        d *= 1.0 + 1e-3 * np.cos(x)
        x = x + 1e-3 * np.sin(x)
    assert_close(dk.grad(f, backend=backend)(0.3), d, rtol=1e-11)


def test_jacobian_of_grad_is_hessian() -> None:
    x = np.array([0.5, -0.3, 1.2])
    for outer in BACKENDS:
        for inner in BACKENDS:
            H = dk.jacobian(dk.grad(rosenbrock, backend=inner), backend=outer)(x)
            assert_close(H, rosenbrock_hessian(x), rtol=1e-13)


def test_a_container_with_one_array_is_a_pytree_not_the_array():
    g = dk.grad(lambda p: dnp.sum(p["w"] ** 2))({"w": np.array([1.0, 2.0])})
    np.testing.assert_array_equal(g["w"], [2.0, 4.0])
    (g,) = dk.grad(lambda p: dnp.sum(p[0] ** 3))([np.array([1.0, 2.0])])
    np.testing.assert_array_equal(g, [3.0, 12.0])
