"""vmap: JAX's semantics (in_axes / out_axes / nesting / per-example gradients), checked
against closed forms, Python loops of plain numpy, and JAX where installed."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp

rng = np.random.default_rng(7)
X = rng.normal(size=(5, 3))
W = rng.normal(size=(3, 4))


def test_in_axes_and_out_axes_move_the_batch_axis() -> None:
    out = dk.vmap(lambda w, x: x @ w, in_axes=(None, 1), out_axes=1)(W, X.T)
    np.testing.assert_allclose(out, (X @ W).T, rtol=1e-15)
    pair = dk.vmap(lambda a: (a * 2.0, dnp.sum(a)), out_axes=(1, 0))(X)
    np.testing.assert_allclose(pair[0], 2.0 * X.T)
    np.testing.assert_allclose(pair[1], X.sum(axis=1))


def test_pytree_in_axes_dict_and_keyword_arguments() -> None:
    params = {"w": W, "b": np.arange(4.0)}
    f = lambda p, x: x @ p["w"] + p["b"]  # noqa: E731
    out = dk.vmap(f, in_axes=({"w": None, "b": None}, 0))(params, X)
    np.testing.assert_allclose(out, X @ W + np.arange(4.0), rtol=1e-14)
    kw = dk.vmap(lambda a, *, b: a - b, in_axes=(None,))(1.0, b=np.arange(3.0))
    np.testing.assert_allclose(kw, 1.0 - np.arange(3.0))


def test_nested_vmap_is_an_outer_product() -> None:
    a, b = np.arange(3.0), np.arange(1.0, 3.0)
    table = dk.vmap(dk.vmap(lambda u, v: u * v, in_axes=(0, None)), in_axes=(None, 0))(a, b)
    np.testing.assert_allclose(table, np.outer(b, a))


def test_unbatched_result_is_repeated_and_out_axes_none_keeps_one() -> None:
    np.testing.assert_allclose(dk.vmap(lambda x: 3.0)(np.ones(4)), np.full(4, 3.0))
    assert dk.vmap(lambda x, c: (x, c), in_axes=(0, None), out_axes=(0, None))(np.ones(2), 5.0)[1] == 5.0


def loss(w: np.ndarray, x: np.ndarray) -> object:
    return dnp.sum(dnp.tanh(x @ w) ** 2)


def loss_grad_closed_form(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.tanh(x @ w)
    return np.outer(x, 2.0 * t * (1.0 - t * t))


def test_per_example_gradients_equal_the_closed_form() -> None:
    per = dk.vmap(dk.grad(loss), in_axes=(None, 0))(W, X)
    assert per.shape == (5,) + W.shape
    for i in range(5):
        np.testing.assert_allclose(per[i], loss_grad_closed_form(W, X[i]), rtol=1e-13, atol=1e-15)


def test_grad_of_vmap_equals_the_summed_closed_form() -> None:
    g = dk.grad(lambda w: dnp.sum(dk.vmap(loss, in_axes=(None, 0))(w, X)))(W)
    np.testing.assert_allclose(g, sum(loss_grad_closed_form(W, x) for x in X), rtol=1e-13, atol=1e-15)


def test_forward_mode_inside_vmap_and_vmap_of_jacobian() -> None:
    f = lambda v: dnp.sin(v) * v[0]  # noqa: E731
    jac = dk.vmap(dk.jacobian(f, backend="forward"))(X)
    for i, x in enumerate(X):
        expect = np.diag(np.cos(x) * x[0])
        expect[:, 0] += np.sin(x)
        np.testing.assert_allclose(jac[i], expect, rtol=1e-14)
    np.testing.assert_allclose(dk.vmap(dk.jacobian(f, backend="reverse"))(X), jac, rtol=1e-14)


def test_where_on_a_batched_condition_chooses_per_example() -> None:
    g = dk.vmap(dk.grad(lambda x: dnp.where(x > 0, x ** 2, -x)))(np.array([-1.0, 2.0, 0.5]))
    np.testing.assert_allclose(g, [-1.0, 4.0, 1.0])
    relu = dk.vmap(dk.grad(lambda v: dnp.sum(dnp.relu(v))))(np.array([[1.0, -1.0], [-2.0, 3.0]]))
    np.testing.assert_allclose(relu, [[1.0, 0.0], [0.0, 1.0]])


def test_ties_of_max_and_maximum_are_per_example() -> None:
    x = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0]])
    np.testing.assert_allclose(dk.vmap(dk.grad(lambda v: dnp.max(v)))(x),
                               [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]])
    m = dk.vmap(dk.grad(lambda v: dnp.sum(dnp.maximum(v, 1.0))))(x)
    np.testing.assert_allclose(m, [[0.5, 0.5, 0.0], [0.0, 1.0, 0.5]])


def test_reverse_jacobian_is_one_batched_sweep() -> None:
    f = lambda v: dnp.exp(v[:2]) * v[2]  # noqa: E731
    x = np.array([0.1, 0.2, 0.3])
    expect = np.array([[np.exp(0.1) * 0.3, 0.0, np.exp(0.1)], [0.0, np.exp(0.2) * 0.3, np.exp(0.2)]])
    np.testing.assert_allclose(dk.jacobian(f, backend="reverse")(x), expect, rtol=1e-15)


@pytest.mark.parametrize("call, words", [
    (lambda: dk.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4)),
     "argument 0 has 3 along axis 0, argument 1 has 4"),
    (lambda: dk.vmap(lambda a: a, in_axes=2)(np.ones(3)), "in_axes=2 for argument 0"),
    (lambda: dk.vmap(lambda a, b: a, in_axes=(0,))(1.0, 2.0), "in_axes has 1 entries"),
    (lambda: dk.vmap(lambda a: a, in_axes=None)(np.ones(2)), "maps no argument"),
    (lambda: dk.vmap(lambda a: a, out_axes=None)(np.ones(2)), "out_axes is None for result 0"),
    (lambda: dk.vmap(lambda a: 1.0 if a > 0 else 0.0)(np.ones(3)), "use dnp.where"),
    (lambda: dk.vmap(lambda a: a, in_axes={"x": 0})(np.ones(3)), "does not fit"),
])
def test_mistakes_are_one_clear_line(call, words: str) -> None:
    with pytest.raises(dk.DiffkitError, match=words) as err:
        call()
    assert "\n" not in str(err.value)


@pytest.mark.jax
def test_matches_jax() -> None:
    jax = needs("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    fj = lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)  # noqa: E731
    np.testing.assert_allclose(dk.vmap(dk.grad(loss), in_axes=(None, 0))(W, X),
                               jax.vmap(jax.grad(fj), in_axes=(None, 0))(W, X), rtol=1e-13, atol=1e-15)
    h = lambda x: dnp.where(x > 0.1, dnp.sin(x) * x, dnp.maximum(x, -0.2))  # noqa: E731
    hj = lambda x: jnp.where(x > 0.1, jnp.sin(x) * x, jnp.maximum(x, -0.2))  # noqa: E731
    xs = np.array([-1.0, -0.2, 0.05, 0.3, 2.0])
    np.testing.assert_allclose(dk.vmap(dk.grad(h))(xs), jax.vmap(jax.grad(hj))(xs), rtol=1e-14)
    np.testing.assert_allclose(dk.vmap(h, in_axes=0, out_axes=0)(X), jax.vmap(hj)(X), rtol=1e-15)


def test_rules_that_read_values_are_per_example_under_vmap() -> None:
    """prod's derivative at zeros and pow's at zero base/exponent decide per example."""
    x = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    np.testing.assert_allclose(dk.vmap(dk.grad(dnp.prod))(x),
                               [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]])
    v = np.array([[0.0, 2.0], [2.0, 3.0], [1.5, 0.0]])
    with np.errstate(all="ignore"):
        g = dk.vmap(dk.grad(lambda p: p[0] ** p[1]))(v)
    np.testing.assert_allclose(g, [[0.0, 0.0], [12.0, 8.0 * np.log(2.0)], [0.0, np.log(1.5)]])


def test_indexing_with_a_batched_index_is_a_clear_error() -> None:
    with pytest.raises(dk.DiffkitError, match="a mask or None there is not supported"):
        dk.vmap(lambda v: dnp.sum(v[v > 0]))(np.ones((2, 3)))
