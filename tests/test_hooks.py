"""Tensor hooks (PyTorch semantics), checked against the same computation by hand."""
from __future__ import annotations

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp


def test_hooks_see_the_summed_gradient_and_may_replace_it() -> None:
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    y = 3.0 * x
    seen = []
    handle = y.register_hook(lambda g: (seen.append(g.copy()), 10.0 * g)[1])
    x.register_hook(lambda g: seen.append(g.copy()))
    (y * y + y).sum().backward()
    # dL/dy = 2y + 1 = [7, 13]; replaced by 10x; dL/dx = 3 * that, seen before .grad
    np.testing.assert_allclose(seen[0], [7.0, 13.0])
    np.testing.assert_allclose(seen[1], [210.0, 390.0])
    np.testing.assert_allclose(x.grad, [210.0, 390.0])
    handle.remove()
    x.grad = None
    z = 3.0 * x
    (z * z + z).sum().backward()
    np.testing.assert_allclose(x.grad, [21.0, 39.0])


def test_hooks_inside_functional_grad_and_clear_errors() -> None:
    norms = []

    def f(w):
        w.register_hook(lambda g: norms.append(float(np.linalg.norm(g))))
        return dnp.sum(w ** 2)

    dk.grad(f)(np.array([3.0, 4.0]))
    assert norms == [10.0]
    with pytest.raises(dk.DiffkitError, match="does not require grad"):
        dk.tensor([1.0]).register_hook(print)
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g[:1])
    with pytest.raises(dk.DiffkitError, match="returned shape"):
        (x * x).sum().backward()


def test_gradient_flow_norms_come_from_hooks() -> None:
    from diffkit import nn
    from diffkit.bench.training import layer_norms, make_model

    rng = np.random.default_rng(0)
    model = make_model(3, 4, "tanh", "plain", "default", rng)
    X, y = rng.normal(size=(8, 2)), rng.integers(0, 2, size=8)
    norms = layer_norms(model, X, y)
    model.zero_grad()
    nn.cross_entropy(model(X), y).backward()
    by_hand = [np.linalg.norm(m.weight.grad) for m in model.modules() if isinstance(m, nn.Linear)]
    np.testing.assert_allclose(norms, by_hand, rtol=1e-15)
