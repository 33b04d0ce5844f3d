"""Containers are trees, as in JAX and autograd: tuples, lists, dicts and namedtuples of
leaves in and out, a list of floats a list (never an array); outputs that are not floats
are one clear error in every transform. Checked against closed forms and, where JAX is
installed, against JAX itself."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp

BACKENDS = ["reverse", "forward", "compiled"]
Point = collections.namedtuple("Point", "a b")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tuple_list_dict_or_namedtuple_in_gives_the_same_container_out(backend):
    g = dk.grad(lambda t: t[0] * t[1] ** 2, backend=backend)
    assert g((2.0, 3.0)) == (9.0, 12.0) and type(g((2.0, 3.0))) is tuple
    assert g([2.0, 3.0]) == [9.0, 12.0]
    p = dk.grad(lambda q: q.a * q.b ** 2, backend=backend)(Point(2.0, 3.0))
    assert p == Point(9.0, 12.0) and type(p) is Point
    d = dk.grad(lambda q: q["a"] * q["b"] ** 2, backend=backend)({"a": 2.0, "b": 3.0})
    assert d == {"a": 9.0, "b": 12.0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_ragged_list_is_a_tree_of_its_leaves(backend):
    f = lambda t: t[0][0] * t[1] + t[2] * dnp.sum(t[3])  # noqa: E731
    x = [[1.0], 2.0, 1.5, np.array([1.0, 2.0])]
    g = dk.grad(f, backend=backend)(x)
    assert g[0] == [2.0] and g[1] == 1.0 and g[2] == 3.0
    np.testing.assert_array_equal(g[3], [1.5, 1.5])


def test_argnums_over_containers_and_jacobians_keep_both_structures():
    f = lambda a, b: {"s": a[0] * b, "t": (a[1] ** 2, b)}  # noqa: E731
    jac = dk.jacobian(f, argnums=(0, 1))((1.0, 2.0), 3.0)
    assert jac["s"] == ((3.0, 0.0), 1.0)
    assert jac["t"] == (((0.0, 4.0), 0.0), ((0.0, 0.0), 1.0))


@pytest.mark.jax
def test_agrees_with_jax_on_trees():
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    f = lambda p: p["w"][0] * jnp.sin(p["w"][1]) + p["b"] ** 3  # noqa: E731
    g = lambda p: p["w"][0] * dnp.sin(p["w"][1]) + p["b"] ** 3  # noqa: E731
    params = {"w": [0.7, (1.3)], "b": 0.4}
    ours, theirs = dk.grad(g)(params), jax.grad(f)(params)
    assert type(ours["w"]) is list and len(ours["w"]) == 2
    np.testing.assert_allclose(ours["w"], theirs["w"], rtol=1e-14)
    np.testing.assert_allclose(ours["b"], theirs["b"], rtol=1e-14)
    h_ours = dk.hessian(lambda t: t[0] ** 2 * t[1])((1.5, 2.0))
    h_jax = jax.hessian(lambda t: t[0] ** 2 * t[1])((1.5, 2.0))
    np.testing.assert_allclose(np.array(h_ours, dtype=float), np.array(h_jax), rtol=1e-14)


def test_vmap_in_axes_trees():
    xs = (np.arange(3.0), np.ones(3))
    out = dk.vmap(lambda t, c: t[0] * c + t[1], in_axes=((0, 0), None))(xs, 2.0)
    np.testing.assert_array_equal(out, np.arange(3.0) * 2.0 + 1.0)


def test_a_list_given_to_a_numpy_function_says_to_stack_it():
    with pytest.raises(dk.DiffkitError, match=r"sin got a list .*dnp\.stack\(x\)"):
        dk.grad(lambda x: dnp.sum(dnp.sin(x)))([0.0, 1.0])
    g = dk.grad(lambda x: dnp.sum(dnp.sin(dnp.stack(x))))([0.0, 1.0])
    np.testing.assert_allclose(g, np.cos([0.0, 1.0]), rtol=1e-15)


BAD_OUTPUTS = [(lambda x: x > 0, "bool"), (lambda x: np.allclose(x, 1.0), "bool")]


@pytest.mark.parametrize("backend", ["reverse", "forward", "compiled", "symbolic", "numeric"])
@pytest.mark.parametrize("f, dtype", BAD_OUTPUTS, ids=["comparison", "allclose"])
def test_a_bool_output_is_one_line_naming_its_dtype_in_every_backend(backend, f, dtype):
    if backend in ("symbolic", "compiled") and f is BAD_OUTPUTS[1][0]:
        pytest.skip("np.allclose asks a symbol or a traced value for a number: n/a, said so")
    with pytest.raises(dk.DiffkitError, match=f"float output, but the function returned {dtype}"):
        dk.grad(f, backend=backend)(1.0)


@pytest.mark.parametrize("transform", [
    lambda f: dk.grad(f)(1.0), lambda f: dk.value_and_grad(f)(1.0),
    lambda f: dk.jacobian(f)(np.ones(2)), lambda f: dk.jvp(f, (1.0,), (1.0,)),
    lambda f: dk.vjp(f, 1.0), lambda f: dk.hessian(f)(1.0),
    lambda f: dk.jacobian(f, backend="forward")(np.ones(2))],
    ids=["grad", "value_and_grad", "jacobian", "jvp", "vjp", "hessian", "jacfwd"])
def test_a_non_float_output_is_refused_in_every_transform(transform):
    with pytest.raises(dk.DiffkitError, match="requires a float output, but the function "
                                              "returned (bool|int64)"):
        transform(lambda x: x > 0)
    with pytest.raises(dk.DiffkitError, match="returned int64"):
        transform(lambda x: 3)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_pull_backs_of_container_outputs_are_differentiable_to_any_order(backend):
    """The cotangent of a tuple/dict output may itself depend on x: its derivative flows."""
    f = lambda x: (x ** 2, dnp.sin(x))  # noqa: E731
    g = dk.grad(lambda x: dk.vjp(f, x)[1]((x, x))[0], backend=backend)(0.5)
    assert g == pytest.approx(4 * 0.5 + np.cos(0.5) - 0.5 * np.sin(0.5), rel=1e-14)
    h = dk.hessian(lambda x: dk.vjp(lambda z: {"a": z ** 3, "b": (dnp.sin(z),)}, x)[1](
        {"a": x, "b": (x * x,)})[0], backend=backend)(0.7)
    x = 0.7  # d²/dx² [3x³ + x² cos x]
    assert h == pytest.approx(18 * x + 2 * np.cos(x) - 4 * x * np.sin(x) - x * x * np.cos(x),
                              rel=1e-13)


@pytest.mark.jax
def test_second_derivatives_through_eigh_and_split_agree_with_jax():
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def ours(x):
        m = dnp.reshape(x, (2, 2))
        w, v = dnp.linalg.eigh(m + m.T)
        return dnp.sum(w ** 3) + dnp.sum(dnp.split(x ** 3, 2)[1])

    def theirs(x):
        m = jnp.reshape(x, (2, 2))
        w, v = jnp.linalg.eigh(m + m.T)
        return jnp.sum(w ** 3) + jnp.sum(jnp.split(x ** 3, 2)[1])

    x = np.array([1.0, 0.5, 0.2, 2.0])
    np.testing.assert_allclose(dk.hessian(ours)(x), jax.hessian(theirs)(x), rtol=1e-10,
                               atol=1e-12)
