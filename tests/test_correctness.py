"""Issue 17, "correct everywhere": every reproducer of the outside differential run.

Each test checks diffkit against a closed form or an independent method (central
differences of plain numpy code, numpy/SciPy's own values), and, where a peer's behaviour
is the reference, against JAX (x64) when it is installed. The soak's seven bugs (B4-B19)
have their regression tests in tests/test_differential.py.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp
from conftest import needs, assert_close, central_diff

AD = ["forward", "reverse", "compiled"]  # compiled: reverse mode on a traced graph
BACKENDS = ["reverse", "forward", "symbolic", "numeric", "compiled"]


# ----------------------------------------------------------------- 1. forward mode, broadcast scalar


@pytest.mark.parametrize("backend", ["forward", "reverse", "compiled"])
def test_gradient_of_a_scalar_broadcast_against_an_array(backend: str) -> None:
    assert dk.grad(lambda b: dnp.sum(np.ones(3) - b), backend=backend)(2.0) == -3.0


def test_hessian_of_a_scalar_broadcast_against_an_array() -> None:
    # d²/db² Σ (1 - b³) over 3 entries = -18 b
    for backend in [None, *AD]:
        assert dk.hessian(lambda b: dnp.sum(np.ones(3) - b ** 3), backend=backend)(2.0) == -36.0


@pytest.mark.jax
def test_jacobian_and_jvp_of_a_scalar_broadcast_to_a_vector(jax: Any) -> None:
    jnp = jax.numpy
    j = dk.jacobian(lambda t: dnp.sin(t) + np.zeros(3))(0.5)
    assert_close(j, np.full(3, math.cos(0.5)), rtol=1e-15)
    y, t = dk.jvp(lambda b: np.ones(3) - b, (2.0,), (1.0,))
    np.testing.assert_array_equal(t, [-1.0, -1.0, -1.0])
    assert_close(j, jax.jacobian(lambda t: jnp.sin(t) + jnp.zeros(3))(0.5), rtol=1e-15)
    np.testing.assert_array_equal(t, jax.jvp(lambda b: jnp.ones(3) - b, (2.0,), (1.0,))[1])


# ----------------------------------------------------------------- 2. pow at y = 0


def test_mixed_second_derivative_of_a_power_at_exponent_zero() -> None:
    # x**y: d²/dx dy = x^(y-1) (1 + y log x) = 1/x at y = 0; d²/dy² = x^y log² x
    expected = [[0.0, 1 / 1.7], [1 / 1.7, math.log(1.7) ** 2]]
    for backend in [None, *AD]:
        h = dk.hessian(lambda v: v[0] ** v[1], backend=backend)(np.array([1.7, 0.0]))
        assert_close(h, expected, rtol=1e-15)
    nested = dk.grad(lambda y: dk.grad(lambda x: x ** y)(1.7))(0.0)
    assert nested == pytest.approx(1 / 1.7, rel=1e-15)
    # an independent method: central differences of the exact first derivative
    d_dx = lambda v: v[1] * v[0] ** (v[1] - 1.0)  # noqa: E731
    assert_close(central_diff(d_dx, [1.7, 0.0]), expected[0], rtol=1e-9)


def test_power_at_zero_base_and_exponent_is_zero_and_symmetric() -> None:
    """The documented convention at x = y = 0 (docs/edge-cases.md): every derivative 0."""
    for backend in [None, *AD]:
        h = dk.hessian(lambda v: v[0] ** v[1], backend=backend)(np.array([0.0, 0.0]))
        np.testing.assert_array_equal(h, np.zeros((2, 2)))
    for backend in AD:
        np.testing.assert_array_equal(dk.grad(lambda v: v[0] ** v[1], backend=backend)(
            np.array([0.0, 0.0])), [0.0, 0.0])


@pytest.mark.jax
def test_power_second_derivatives_match_jax(jax: Any) -> None:
    for v in ([1.7, 0.0], [0.0, 2.0], [1.3, 2.5]):
        ours = dk.hessian(lambda v: v[0] ** v[1])(np.array(v))
        assert_close(ours, jax.hessian(lambda v: v[0] ** v[1])(np.array(v)), rtol=1e-14)


# ----------------------------------------------------------------- 3. zero-size outputs


@pytest.mark.jax
def test_zero_size_jacobian_and_hessian_in_reverse_mode(jax: Any) -> None:
    jac = dk.jacobian(lambda x: x[:0], backend="reverse")(np.ones(2))
    hes = dk.hessian(dnp.sum, backend="reverse")(np.zeros(0))
    assert jac.shape == (0, 2) and hes.shape == (0, 0)
    assert jax.jacobian(lambda x: x[:0])(np.ones(2)).shape == jac.shape
    assert jax.hessian(jax.numpy.sum)(np.zeros(0)).shape == hes.shape


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_size_jvp(backend: str) -> None:
    y, t = dk.jvp(lambda x: x[:0], (np.ones(2),), (np.ones(2),), backend=backend)
    assert y.shape == (0,) and t.shape == (0,)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_of_a_function_of_nothing_is_empty(backend: str) -> None:
    assert dk.grad(lambda p: 1.0, backend=backend)({}) == {}
    assert dk.grad(lambda p, q: 2.0 * q, argnums=(0, 1), backend=backend)({}, 3.0) == ({}, 2.0)


ZERO_SIZE = {  # name: (diffkit call, the same call in JAX); every derivative is empty
    "grad-sum": (lambda be, x: dk.grad(dnp.sum, backend=be)(x), lambda j, x: j.grad(j.numpy.sum)(x)),
    "grad-logsumexp": (lambda be, x: dk.grad(dnp.logsumexp, backend=be)(x),
                       lambda j, x: j.grad(j.scipy.special.logsumexp)(x)),
    "jacobian-sum-axis0": (lambda be, x: dk.jacobian(lambda v: dnp.sum(v, axis=0), backend=be)(x),
                           lambda j, x: j.jacobian(lambda v: j.numpy.sum(v, axis=0))(x)),
    "jacobian-elementwise": (lambda be, x: dk.jacobian(lambda v: 2.0 * v, backend=be)(x),
                             lambda j, x: j.jacobian(lambda v: 2.0 * v)(x)),
    "hessian-sum": (lambda be, x: dk.hessian(dnp.sum, backend=be)(x),
                    lambda j, x: j.hessian(j.numpy.sum)(x)),
    "derivative": (lambda be, x: dk.derivative(dnp.sin, backend=be)(x),
                   lambda j, x: j.vmap(j.grad(j.numpy.sin))(x.ravel()).reshape(x.shape)),
    "vjp": (lambda be, x: dk.vjp(lambda v: 2.0 * v, x, backend=be)[1](x)[0],
            lambda j, x: j.vjp(lambda v: 2.0 * v, x)[1](x)[0]),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ZERO_SIZE)
def test_derivatives_at_a_zero_size_input_are_empty(backend: str, name: str) -> None:
    ours, theirs = ZERO_SIZE[name]
    for x in (np.zeros(0), np.zeros((0, 3))):
        d = ours(backend, x)
        assert d.size == 0 and d.dtype == np.float64, (x.shape, d.shape)
        if name.startswith("jacobian"):  # out.shape + in.shape
            assert d.shape == np.shape(2.0 * x if "elementwise" in name else x.sum(axis=0)) + x.shape
        else:
            assert d.shape == x.shape * (2 if name.startswith("hessian") else 1)


@pytest.mark.jax
@pytest.mark.parametrize("name", ZERO_SIZE)
def test_zero_size_shapes_match_jax(jax: Any, name: str) -> None:
    ours, theirs = ZERO_SIZE[name]
    for x in (np.zeros(0), np.zeros((0, 3))):
        expected = np.shape(theirs(jax, x))
        for backend in BACKENDS:
            assert np.shape(ours(backend, x)) == expected, (backend, x.shape)


def test_logsumexp_over_no_entries_is_minus_infinity() -> None:
    import scipy.special as scipy_special
    assert dnp.logsumexp(np.zeros(0)) == -np.inf == scipy_special.logsumexp(np.zeros(0))
    np.testing.assert_array_equal(dnp.logsumexp(np.zeros((0, 3)), axis=0),
                                  scipy_special.logsumexp(np.zeros((0, 3)), axis=0))
    assert dk.grad(dnp.logsumexp)(np.zeros(0)).shape == (0,)


def test_forward_matmul_with_an_empty_inner_dimension() -> None:
    j = dk.jacobian(lambda x: dnp.matmul(np.ones((2, 0)), x[:0]), backend="forward")(np.ones(2))
    np.testing.assert_array_equal(j, np.zeros((2, 2)))


# ----------------------------------------------------------------- 4. expand_dims


def test_expand_dims_checks_its_axis_as_numpy_does() -> None:
    for axis in (3, -4, 5, -5):
        with pytest.raises(np.exceptions.AxisError):
            np.expand_dims(np.ones((2, 3)), axis)
        with pytest.raises(dk.DiffkitError, match="out of bounds"):
            dnp.expand_dims(np.ones((2, 3)), axis)
    for axis in (0, 2, -1, -3, (0, 3), (-1, 1)):
        assert dnp.expand_dims(np.ones((2, 3)), axis).shape == np.expand_dims(
            np.ones((2, 3)), axis).shape
    with pytest.raises(dk.DiffkitError, match="twice"):
        dnp.expand_dims(np.ones(2), (0, -3))


# ----------------------------------------------------------------- 5. jvp arguments


def test_jvp_refuses_bare_arrays_as_primals() -> None:
    a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    with pytest.raises(dk.DiffkitError, match="tuple or list"):
        dk.jvp(lambda a, b: a * b, a, b)
    y, t = dk.jvp(lambda a, b: a * b, (a, a), (b, b))  # d(a*a) = 2 a da
    np.testing.assert_array_equal(t, 2 * a * b)


# ----------------------------------------------------------------- 6. numpy spellings


M = np.array([[0.3, -1.2, 2.0], [0.7, 1.1, -0.4]])

SPELLINGS = {
    "reshape-shape=": lambda x: np.reshape(x, shape=(3, 2)),
    "reshape-order=F": lambda x: np.reshape(x, (3, 2), order="F"),
    "ravel-order=F": lambda x: np.ravel(x, order="F"),
    "clip-min=": lambda x: np.clip(x, min=0.0),
    "clip-max=": lambda x: np.clip(x, max=0.5),
    "clip-a_min=": lambda x: np.clip(x, a_min=-0.5, a_max=None),
    "sum-dtype=": lambda x: np.sum(x, dtype=np.float64),
    "sum-positional-keepdims": lambda x: np.sum(x, 0, None, None, True),
    "mean-dtype=": lambda x: np.mean(x, axis=1, dtype=np.float64),
    "expand_dims-tuple": lambda x: np.expand_dims(x, (0, 3)),
}


@pytest.mark.parametrize("name", SPELLINGS)
def test_numpy_spellings_on_traced_values(name: str) -> None:
    f = SPELLINGS[name]
    for backend in [*AD, "symbolic", "numeric"]:
        assert_close(dk.jacobian(f, backend=backend)(M), central_diff(f, M),
                     rtol=1e-6 if backend == "numeric" else 1e-9)


def test_unsupported_numpy_arguments_name_the_argument() -> None:
    with pytest.raises(dk.DiffkitError, match="initial="):
        dk.grad(lambda x: np.max(x, initial=0.0))(M)
    with pytest.raises(dk.DiffkitError, match="dtype=float32"):
        dk.grad(lambda x: np.sum(x, dtype=np.float32))(M)
    with pytest.raises(dk.DiffkitError, match="a_min/a_max or as min/max"):
        dk.grad(lambda x: dnp.sum(np.clip(x, 0.0, 1.0, min=0.0)))(M)


# ----------------------------------------------------------------- 7. detach


def test_detach_under_forward_mode_and_automatic_jacobian() -> None:
    x = np.array([1.0, 2.0, 3.0])
    # d/dx Σ x · stop(x) = stop(x) = x
    np.testing.assert_array_equal(dk.grad(lambda x: dnp.sum(x * x.detach()), backend="forward")(x), x)
    calls = []

    def f(z: Any) -> Any:
        calls.append(type(z))
        return z * z.detach()

    np.testing.assert_array_equal(dk.jacobian(f)(x), np.diag(x))
    assert len(calls) == 2 and np.ndarray not in calls  # one recording + forward: no plain call


# ----------------------------------------------------------------- PyTorch idioms


def test_manual_sgd_step_keeps_a_leaf_that_requires_grad() -> None:
    w = dk.tensor([1.0, -2.0], requires_grad=True)
    expected = np.array([1.0, -2.0])
    for _ in range(3):  # loss = Σ w², grad 2w, w <- w - 0.1 · 2w = 0.8 w
        (w * w).sum().backward()
        with dk.no_grad():
            w -= 0.1 * w.grad
        w.grad.zero_()
        expected = 0.8 * expected
        assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert_close(w.data, expected, rtol=1e-15)
    np.testing.assert_array_equal(w.grad, [0.0, 0.0])
    w.grad = None  # (was: "this tensor does not require grad")


def test_in_place_operator_on_a_leaf_requiring_grad_is_an_error() -> None:
    w = dk.tensor([1.0], requires_grad=True)
    with pytest.raises(dk.DiffkitError, match="leaf tensor that requires grad.*in-place"):
        w += 1.0
    c = dk.tensor([1.0])  # no grad required: changes in place, as in PyTorch
    c *= 3.0
    np.testing.assert_array_equal(c.data, [3.0])


def test_in_place_operator_on_a_non_leaf_is_recorded() -> None:
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    y += x  # y = 3x
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])


def test_tensor_copies_as_tensor_and_from_numpy_share_memory() -> None:
    a = np.array([1.0, 2.0])
    copied, shared, numpy_view = dk.tensor(a), dk.as_tensor(a), dk.from_numpy(a)
    a[0] = 9.0
    assert copied.data[0] == 1.0 and shared.data[0] == 9.0 and numpy_view.data[0] == 9.0
    with dk.no_grad():
        numpy_view += 1.0
    np.testing.assert_array_equal(a, [10.0, 3.0])
    assert dk.as_tensor(copied) is copied
    with pytest.raises(dk.DiffkitError, match="float numpy array"):
        dk.from_numpy(np.arange(3))


def test_grad_accumulates_in_place() -> None:
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    (x * x).sum().backward()
    np.testing.assert_array_equal(first, [4.0, 8.0])  # the older reference sees the sum
    s = dk.tensor(3.0, requires_grad=True)
    (s * s).backward()
    assert s.grad == 6.0
    s.grad.zero_()
    assert s.grad == 0.0


# ----------------------------------------------------------------- documented conventions


@pytest.mark.jax
def test_abs_at_zero_is_pytorchs_convention_not_jaxs(jax: Any) -> None:
    """docs/edge-cases.md: abs'(0) = sign(0) = 0 (PyTorch); JAX gives 1."""
    for backend in AD:
        assert dk.grad(dnp.abs, backend=backend)(0.0) == 0.0
    assert jax.grad(jax.numpy.abs)(0.0) == 1.0


@pytest.mark.jax
def test_clip_at_a_bound_is_jaxs_convention(jax: Any) -> None:
    """docs/edge-cases.md: clip at a bound shares the tie, 1/2 (JAX); torch.clamp gives 1."""
    for backend in AD:
        for at in (-1.0, 1.0):
            assert dk.grad(lambda x: dnp.clip(x, -1.0, 1.0), backend=backend)(at) == 0.5
            assert jax.grad(lambda x: jax.numpy.clip(x, -1.0, 1.0))(at) == 0.5


@pytest.mark.torch
def test_clip_at_a_bound_differs_from_torch() -> None:
    torch = needs("torch")
    x = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    torch.clamp(x, -1.0, 1.0).backward()
    assert x.grad.item() == 1.0 and dk.grad(lambda x: dnp.clip(x, -1.0, 1.0))(1.0) == 0.5


@pytest.mark.jax
def test_hessian_with_argnums_and_pytrees(jax: Any) -> None:
    f = lambda x, y: x * x * y + dnp.sin(y)  # noqa: E731  # H = [[2y, 2x], [2x, -sin y]]
    h = dk.hessian(f, argnums=(0, 1))(1.5, 0.5)
    expected = ((1.0, 3.0), (3.0, -math.sin(0.5)))
    assert_close(np.array(h, dtype=float), expected, rtol=1e-15)
    assert_close(np.array(h, dtype=float), np.array(jax.hessian(
        lambda x, y: x * x * y + jax.numpy.sin(y), argnums=(0, 1))(1.5, 0.5)), rtol=1e-15)
    g = lambda p: dnp.sum(p["w"] ** 2) * p["b"]  # noqa: E731
    p = {"w": np.array([1.0, 2.0]), "b": 3.0}
    h = dk.hessian(g)(p)
    assert_close(h["w"]["w"], 6.0 * np.eye(2), rtol=1e-15)
    assert_close(h["w"]["b"], [2.0, 4.0], rtol=1e-15)
    assert_close(h["b"]["w"], [2.0, 4.0], rtol=1e-15)
    assert h["b"]["b"] == 0.0
    theirs = jax.hessian(lambda p: jax.numpy.sum(p["w"] ** 2) * p["b"])(p)
    for i in p:
        for j in p:
            assert_close(h[i][j], theirs[i][j], rtol=1e-15)


@pytest.mark.parametrize("backend", [None, *BACKENDS])
def test_jacobian_of_tuple_and_dict_outputs(backend: str | None) -> None:
    f = lambda x: (2.0 * x, {"s": dnp.sum(x ** 2), "h": dnp.sin(x[:1])})  # noqa: E731
    x = np.array([1.0, 2.0, 3.0])
    j = dk.jacobian(f, backend=backend)(x)
    rtol = 1e-7 if backend == "numeric" else 1e-15
    assert_close(j[0], 2.0 * np.eye(3), rtol=rtol)
    assert_close(j[1]["s"], 2.0 * x, rtol=rtol)
    assert_close(j[1]["h"], [[math.cos(1.0), 0.0, 0.0]], rtol=rtol)


@pytest.mark.jax
def test_jacobian_vjp_and_jvp_of_pytree_outputs_match_jax(jax: Any) -> None:
    jnp = jax.numpy
    ours = lambda x: {"a": x * x, "b": (dnp.sum(x), dnp.exp(x[0]))}  # noqa: E731
    theirs = lambda x: {"a": x * x, "b": (jnp.sum(x), jnp.exp(x[0]))}  # noqa: E731
    x = np.array([0.5, -1.0])
    u = {"a": np.array([1.0, 2.0]), "b": (3.0, 0.5)}
    j, jj = dk.jacobian(ours)(x), jax.jacobian(theirs)(x)
    for mine, ref in zip(jax.tree_util.tree_leaves(j), jax.tree_util.tree_leaves(jj)):
        assert_close(mine, ref, rtol=1e-15)
    y, pull = dk.vjp(ours, x)
    y_ref, pull_ref = jax.vjp(theirs, x)
    assert_close(pull(u)[0], pull_ref(u)[0], rtol=1e-15)
    assert_close(y["a"], y_ref["a"], rtol=1e-15)
    _, t = dk.jvp(ours, (x,), (np.ones(2),))
    _, t_ref = jax.jvp(theirs, (x,), (np.ones(2),))
    assert_close(t["b"][0], t_ref["b"][0], rtol=1e-15)
    assert_close(t["a"], t_ref["a"], rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_derivative_of_a_function_that_is_not_elementwise_is_an_error(backend: str) -> None:
    x = np.array([1.0, 2.0, 3.0])
    for f in (lambda x: x * dnp.sum(x), lambda x: x[::-1], lambda x: dnp.sum(x) + 0.0 * x[0]):
        with pytest.raises(dk.DiffkitError, match="elementwise"):
            dk.derivative(f, backend=backend)(x)
    elementwise = lambda x: dnp.where(x > 1.5, dnp.log(x), 2.0 * x)  # noqa: E731
    assert_close(dk.derivative(elementwise, backend=backend)(x), [2.0, 0.5, 1 / 3],
                 rtol=1e-7 if backend == "numeric" else 1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vjp_fn_outlives_the_function_it_pulls_back(backend: str) -> None:
    """A pytree output's vjp_fn keeps f alive (the compiled backend traces f at the first
    pull; the inline lambda was gone by then): uᵀJ = 2 x·u_a + u_b."""
    import gc

    x = np.array([1.0, 2.0, 3.0])
    y, pull = dk.vjp(lambda x: {"a": x * x, "b": dnp.sum(x)}, x, backend=backend)
    gc.collect()
    (g,) = pull({"a": np.ones(3), "b": 2.0})
    assert_close(g, 2.0 * x + 2.0, rtol=1e-7 if backend == "numeric" else 1e-15)
    assert_close(y["a"], x * x, rtol=1e-15)
