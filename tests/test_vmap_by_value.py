"""vmap over functions decided by the values (argsort, argmax, sort, gathers by them) and
per-example indices, judged against JAX (x64) and closed forms."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.core import DiffkitError

X = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
R = np.random.default_rng(7)
CUBE = R.normal(size=(4, 3, 5))
W = np.arange(3.0)

# each case: f(xp, a) written once for diffkit.numpy and jax.numpy, and its input batch
CASES: dict[str, tuple[Callable[[Any, Any], Any], np.ndarray]] = {
    "sort": (lambda xp, a: xp.sort(a), X),
    "weighted-sort": (lambda xp, a: xp.sum(xp.sort(a) * W), X),
    "at-argmax": (lambda xp, a: a[xp.argmax(a)], X),
    "at-argmin-times-sum": (lambda xp, a: a[xp.argmin(a)] * xp.sum(a * a), X),
    "sort-axis0": (lambda xp, a: xp.sort(a, axis=0), CUBE),
    "sort-flat": (lambda xp, a: xp.sort(a, axis=None)[:4], CUBE),
    "take-along-argsort": (lambda xp, a: xp.take_along_axis(a, xp.argsort(a, axis=1), axis=1)
                           * xp.arange(5.0), CUBE),
    "column-at-argmax": (lambda xp, a: a[:, xp.argmax(a[0])], CUBE),
    "rows-at-argmax": (lambda xp, a: a[xp.argmax(a, axis=0)] ** 2, CUBE),
    "take": (lambda xp, a: xp.take(a, xp.argmax(a, axis=1), axis=1), CUBE),
    "argmax-keepdims": (lambda xp, a: xp.take_along_axis(
        a, xp.argmax(a, axis=-1, keepdims=True), axis=-1), CUBE),
}


@pytest.fixture(scope="module")
def jnp() -> Any:
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    return jax.numpy


@pytest.mark.jax
@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_by_value_matches_jax(name: str, jnp: Any) -> None:
    import jax
    f, batch = CASES[name]
    want = jax.vmap(lambda a: f(jnp, a))(batch)
    got = dk.vmap(lambda a: f(dnp, a))(batch)
    assert np.shape(got) == want.shape
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-15)


@pytest.mark.jax
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_per_example_gradient_matches_jax(name: str, backend: str, jnp: Any) -> None:
    import jax
    f, batch = CASES[name]
    want = jax.vmap(jax.grad(lambda a: jnp.sum(f(jnp, a))))(batch)
    got = dk.vmap(dk.grad(lambda a: dnp.sum(f(dnp, a)), backend=backend))(batch)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-14)


@pytest.mark.jax
@pytest.mark.parametrize("name", ["sort", "at-argmax", "column-at-argmax", "take"])
def test_gradient_through_vmap_matches_jax(name: str, jnp: Any) -> None:
    """grad of vmap: the gather's batching rule inside a reverse sweep."""
    import jax
    f, batch = CASES[name]
    want = jax.grad(lambda b: jnp.sum(jax.vmap(lambda a: f(jnp, a))(b) ** 2))(batch)
    got = dk.grad(lambda b: dnp.sum(dk.vmap(lambda a: f(dnp, a))(b) ** 2))(batch)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-14)


def test_issue_examples_closed_form() -> None:
    """The three lines of the issue, against their written-out answers."""
    np.testing.assert_array_equal(dk.vmap(dnp.sort)(X), [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]])
    per_example = dk.vmap(dk.grad(lambda a: dnp.sum(dnp.sort(a) * W)))(X)
    np.testing.assert_array_equal(per_example, [[2.0, 0.0, 1.0], [0.0, 2.0, 1.0]])
    np.testing.assert_array_equal(dk.vmap(lambda a: a[dnp.argmax(a)])(X), [3.0, 5.0])


def test_integer_results_are_per_example() -> None:
    np.testing.assert_array_equal(dk.vmap(dnp.argsort)(X), np.argsort(X, axis=1))
    np.testing.assert_array_equal(dk.vmap(dnp.argmax)(X), [0, 1])
    np.testing.assert_array_equal(dk.vmap(dnp.argmin)(X), [1, 0])
    np.testing.assert_array_equal(dk.vmap(lambda a: dnp.any(a > 4.0))(X), [False, True])
    np.testing.assert_array_equal(dk.vmap(lambda a: dnp.all(a > 0.5))(X), [True, False])
    np.testing.assert_array_equal(dk.vmap(lambda a: dnp.argmax(a, axis=0))(CUBE),
                                  np.argmax(CUBE, axis=1))


def test_nested_vmap_indexes_each_example() -> None:
    stack = np.stack([X, X + 1.0, X[::-1]])
    got = dk.vmap(dk.vmap(lambda a: a[dnp.argmin(a)]))(stack)
    np.testing.assert_array_equal(got, stack.min(axis=2))


def test_sort_with_in_axes() -> None:
    got = dk.vmap(dnp.sort, in_axes=1, out_axes=1)(X.T)
    np.testing.assert_array_equal(got, np.sort(X, axis=1).T)


def test_nonzero_under_vmap_is_one_line() -> None:
    with pytest.raises(DiffkitError, match="nonzero under vmap"):
        dk.vmap(dnp.nonzero)(X)


def test_mask_from_another_example_is_refused() -> None:
    with pytest.raises(DiffkitError, match="computed index"):
        dk.vmap(lambda a: a[a > 1.0])(X)


@pytest.mark.jax
def test_an_index_from_the_outer_vmap_gathers_inside_the_inner_one(jnp: Any) -> None:
    """The index is batched at one level, the values at another: both gathers' rules meet."""
    import jax
    A, B = R.normal(size=(3, 5)), R.normal(size=(4, 5))

    def f(xp: Any, vmap: Any) -> Any:
        return vmap(lambda a: vmap(lambda b: b[xp.argmax(a)] * a[xp.argmin(b)])(B))

    np.testing.assert_allclose(f(dnp, dk.vmap)(A), np.asarray(f(jnp, jax.vmap)(A)), rtol=1e-15)
    want = jax.grad(lambda a: jnp.sum(f(jnp, jax.vmap)(a)))(A)
    got = dk.grad(lambda a: dnp.sum(f(dnp, dk.vmap)(a)))(A)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-15)
