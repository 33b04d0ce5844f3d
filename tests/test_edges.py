"""The edges of issue 31: wrong values and crashes where numpy, JAX or TensorFlow answer.

Each value is judged against numpy, a closed form, or JAX/torch when installed."""

from __future__ import annotations

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp

A = np.array([[1.0, 2.0], [3.0, 4.0]])


# ------------------------------------------------------------------ concatenate(axis=None)

def test_concatenate_axis_none_flattens_as_numpy() -> None:
    np.testing.assert_array_equal(dnp.concatenate([A, A], axis=None),
                                  np.concatenate([A, A], axis=None))
    v = np.array([5.0, 6.0, 7.0])
    np.testing.assert_array_equal(dnp.concatenate([A, v], axis=None),
                                  np.concatenate([A, v], axis=None))


def test_concatenate_axis_none_gradient_closed_form() -> None:
    """d/dA sum(concat([A, A**2]) * w) = w[:4] + 2 A w[4:], entry by entry."""
    w = np.arange(8.0)
    g = dk.grad(lambda a: dnp.sum(dnp.concatenate([a, a * a], axis=None) * w))(A)
    np.testing.assert_allclose(g, (w[:4] + 2.0 * A.ravel() * w[4:]).reshape(2, 2), rtol=1e-15)


def test_concatenate_of_different_ranks_is_one_line() -> None:
    with pytest.raises(dk.DiffkitError, match="axis=None"):
        dnp.concatenate([A, np.ones(3)])


# ------------------------------------------------------------------ tape-scoped gradients

def test_tape_gradient_of_several_targets_is_their_sum() -> None:
    """TensorFlow: gradient([y1, y2], x) = d(y1 + y2)/dx."""
    x0 = np.array([1.0, 2.0])
    with dk.record() as tape:
        x = tape.watch(x0)
        y1, y2 = dnp.sum(x * x), dnp.sum(dnp.sin(x))
    np.testing.assert_allclose(tape.gradient([y1, y2], x), 2 * x0 + np.cos(x0), rtol=1e-15)


def test_tape_gradient_of_several_targets_with_output_gradients() -> None:
    x0 = np.array([1.0, 2.0])
    with dk.record(persistent=True) as tape:
        x = tape.watch(x0)
        y1, y2 = x * x, dnp.exp(x)
    g = tape.gradient([y1, y2], x, output_gradients=[np.array([1.0, -1.0]), np.array([2.0, 0.5])])
    np.testing.assert_allclose(g, np.array([1.0, -1.0]) * 2 * x0
                               + np.array([2.0, 0.5]) * np.exp(x0), rtol=1e-15)
    with pytest.raises(dk.DiffkitError, match="one per target"):
        tape.gradient([y1, y2], x, output_gradients=[np.ones(2)])


def test_tape_several_targets_match_torch() -> None:
    torch = pytest.importorskip("torch")
    x0 = np.array([0.3, -1.2, 2.0])
    t = torch.tensor(x0, requires_grad=True)
    (torch.sum(torch.tanh(t) * t) + torch.sum(t ** 3)).backward()
    with dk.record() as tape:
        x = tape.watch(x0)
        targets = [dnp.sum(dnp.tanh(x) * x), dnp.sum(x ** 3)]
    np.testing.assert_allclose(tape.gradient(targets, x), t.grad.numpy(), rtol=1e-14)


def test_recorded_value_used_after_the_block_computes_unrecorded() -> None:
    """TensorFlow computes with a recorded tensor after the tape closed; so does diffkit."""
    with dk.record() as tape:
        x = tape.watch(2.0)
        y = x * x
    z = dnp.sin(y) + 3.0 * y
    assert float(z) == pytest.approx(np.sin(4.0) + 12.0, rel=1e-15)
    assert float(tape.gradient(y, x)) == 4.0
