"""PyTorch-style tensors on the reverse tape: .grad accumulation, retain_grad, detach,
no_grad, grad_fn, backward(gradient=...), dk.gradients, retain_graph."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close

import diffkit as dk
import diffkit.numpy as dnp

X0 = np.array([0.5, -1.0, 2.0])


def leaf(value=X0):  # noqa: ANN001, ANN201
    return dk.tensor(value, requires_grad=True)


def test_leaf_grad_accumulates_until_zeroed() -> None:
    x = leaf()
    assert x.grad is None
    y = dnp.sum(dnp.sin(x) * x)
    y.backward()
    first = x.grad.copy()
    assert_close(first, np.cos(X0) * X0 + np.sin(X0), rtol=1e-15)
    dnp.sum(dnp.sin(x) * x).backward()  # a second graph, same leaf
    assert np.array_equal(x.grad, 2 * first)  # exactly doubled
    x.grad = None
    assert x.grad is None
    dnp.sum(x ** 2).backward()
    assert np.array_equal(x.grad, 2 * X0)


def test_backward_does_not_alias_the_accumulated_grad() -> None:
    x = leaf()
    seed = np.ones(3)
    (x + 0.0).backward(gradient=seed)  # add passes the seed straight through
    seed[:] = 7.0  # the caller reuses its array
    assert np.array_equal(x.grad, np.ones(3)), ".grad must not alias the caller's gradient"
    g = x.grad
    (x + 0.0).backward(gradient=np.ones(3))
    assert np.array_equal(x.grad, 2 * np.ones(3))
    assert np.array_equal(g, 2 * np.ones(3)), ".grad accumulates in place, as in PyTorch"


def test_retain_grad_on_non_leaf() -> None:
    x = leaf()
    h = dnp.exp(x)
    h.retain_grad()
    k = h * 3.0  # no retain_grad
    loss = dnp.sum(k * k)
    loss.backward()
    assert_close(h.grad, 18.0 * np.exp(X0), rtol=1e-15)  # d/dh sum(9 h^2) = 18 h
    assert k.grad is None
    assert loss.grad is None
    assert_close(x.grad, 18.0 * np.exp(2 * X0), rtol=1e-14)


def test_detach_stops_gradient() -> None:
    x = leaf()
    y = dnp.sum(x * x.detach())  # d/dx = x (not 2x)
    y.backward()
    assert_close(x.grad, X0, rtol=0, atol=0)
    d = x.detach()
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    assert_close(d.data, X0, rtol=0, atol=0)


def test_no_grad_block() -> None:
    x = leaf()
    with dk.no_grad():
        y = dnp.sin(x) * 2.0 + x
    assert y.requires_grad is False and y.grad_fn is None
    assert_close(y.data, 2 * np.sin(X0) + X0, rtol=1e-15)
    z = x * 2.0  # recording resumes after the block
    assert z.requires_grad is True and z.grad_fn is not None
    with pytest.raises(RuntimeError):
        with dk.no_grad():
            raise RuntimeError("boom")
    assert (x * 2.0).requires_grad  # restored after an exception too


def test_grad_fn_is_leaf_requires_grad() -> None:
    x = leaf()
    c = dk.tensor([1.0, 2.0, 3.0])
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad and c.grad_fn is None
    m = x * c
    s = dnp.sum(m)
    assert not m.is_leaf and m.requires_grad
    assert m.grad_fn.name() == "MulBackward" and "MulBackward" in repr(m.grad_fn)
    assert s.grad_fn.name() == "SumBackward"
    assert (x + c).grad_fn.name() == "AddBackward"
    assert dnp.sin(x).grad_fn.name() == "SinBackward"
    assert x[0:2].grad_fn.name() == "GetitemBackward"
    assert dnp.broadcast_to(x, (2, 3)).grad_fn.name() == "BroadcastToBackward"
    # an operation on constants only does not require grad
    k = c * 2.0
    assert not k.requires_grad and k.grad_fn is None


def test_backward_with_gradient_on_non_scalar() -> None:
    x = leaf()
    y = dnp.sin(x) * x  # shape (3,)
    g = np.array([2.0, -1.0, 0.5])
    y.backward(gradient=g)
    assert_close(x.grad, g * (np.cos(X0) * X0 + np.sin(X0)), rtol=1e-15)
    # equals the gradient of sum(g * y)
    x2 = leaf()
    dnp.sum(g * (dnp.sin(x2) * x2)).backward()
    assert_close(x.grad, x2.grad, rtol=1e-15)
    # a matrix output with a matrix gradient
    A = leaf(np.array([[1.0, 2.0], [3.0, -4.0]]))
    G = np.array([[1.0, 0.0], [0.5, 2.0]])
    (A @ A).backward(gradient=G)
    assert_close(A.grad, G @ A.data.T + A.data.T @ G, rtol=1e-15)


def test_gradients_does_not_touch_grad() -> None:
    a, b = dk.tensor(2.0, requires_grad=True), dk.tensor(3.0, requires_grad=True)
    unused = dk.tensor([1.0, 2.0], requires_grad=True)
    out = a * b + dnp.sin(a)
    ga, gb, gu = dk.gradients(out, [a, b, unused], retain_graph=True)
    assert_close(ga, 3.0 + np.cos(2.0), rtol=1e-15)
    assert_close(gb, 2.0, rtol=0, atol=0)
    assert_close(gu, [0.0, 0.0], rtol=0, atol=0)
    assert a.grad is None and b.grad is None and unused.grad is None
    out.backward()  # the graph was retained: .grad now gets the same values
    assert a.grad == ga and b.grad == gb


def test_gradients_with_grad_outputs_and_single_input() -> None:
    x = leaf()
    y = x * x
    (g,) = dk.gradients(y, x, grad_outputs=np.array([1.0, 2.0, 3.0]))
    assert_close(g, 2 * X0 * np.array([1.0, 2.0, 3.0]), rtol=0, atol=0)
    assert x.grad is None


def test_tensor_used_twice_accumulates_in_one_pass() -> None:
    x = leaf()
    y = dnp.sum(x * x + x)
    y.backward()
    assert_close(x.grad, 2 * X0 + 1.0, rtol=0, atol=0)
    # fan-out through a shared intermediate
    x.grad = None
    s = dnp.sin(x)
    dnp.sum(s * s + s * x + s).backward()
    c, sn = np.cos(X0), np.sin(X0)
    assert_close(x.grad, 2 * sn * c + c * X0 + sn + c, rtol=1e-15)


def test_backward_twice_needs_retain_graph() -> None:
    x = leaf()
    y = dnp.sum(dnp.exp(x))
    y.backward()
    with pytest.raises(dk.DiffkitError, match="retain_graph"):
        y.backward()
    x.grad = None
    y = dnp.sum(dnp.exp(x))
    y.backward(retain_graph=True)
    y.backward()
    assert_close(x.grad, 2 * np.exp(X0), rtol=1e-15)


def test_dnp_functions_and_operators_accept_tensors() -> None:
    x = leaf()
    W = dk.tensor(np.array([[1.0, 0.5, -1.0], [2.0, 0.0, 0.25]]), requires_grad=True)
    out = dnp.sum(dnp.tanh(W @ x) ** 2) + dnp.logsumexp(x) - dnp.mean(abs(x)) + (x / 2.0)[1]
    out = out + dnp.sum(dnp.maximum(x, 0.0)) + dnp.sum(dnp.where(x > 0, x, -x) ** 2)
    out.backward()
    Wv = W.data
    t = np.tanh(Wv @ X0)
    sm = np.exp(X0) / np.sum(np.exp(X0))
    gx = (Wv.T @ (2 * t * (1 - t ** 2)) + sm - np.sign(X0) / 3 + np.array([0, 0.5, 0])
          + (X0 > 0) + 2 * X0)
    assert_close(x.grad, gx, rtol=1e-14)
    assert_close(W.grad, np.outer(2 * t * (1 - t ** 2), X0), rtol=1e-14)
    # numpy calls on tensors go through the protocol too
    y = dk.tensor(0.3, requires_grad=True)
    np.sin(y).backward()
    assert_close(y.grad, np.cos(0.3), rtol=1e-15)


def test_repr_shows_grad_fn() -> None:
    x = leaf(np.array([1.0, 2.0]))
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert "grad_fn=<MulBackward>" in repr(x * 3.0)
    assert repr(dk.tensor(1.5)) == "tensor(1.5)"


def test_tensor_creation() -> None:
    t = dk.tensor([1, 2, 3], requires_grad=True)  # ints become float64
    assert t.data.dtype == np.float64
    t32 = dk.tensor(np.ones(2, np.float32), requires_grad=True)
    dnp.sum(t32 * t32).backward()
    assert t32.grad.dtype == np.float32
    assert t.shape == (3,) and t.ndim == 1 and len(t) == 3
    c = dk.tensor(2.0)
    with pytest.raises(dk.DiffkitError):
        c.backward()


def test_broadcasting_gradients_are_summed_back() -> None:
    x = leaf()
    W = dk.tensor(np.ones((2, 3)), requires_grad=True)
    b = dk.tensor(0.5, requires_grad=True)
    dnp.sum((x + W * 2.0) * b).backward()
    assert_close(x.grad, [1.0, 1.0, 1.0], rtol=0, atol=0)  # broadcast over 2 rows, times b
    assert_close(W.grad, np.ones((2, 3)), rtol=0, atol=0)
    assert_close(b.grad, 2 * np.sum(X0) + 12.0, rtol=1e-15)  # sum over (2, 3) of x + 2W


def test_gradients_of_several_outputs() -> None:
    u = dk.tensor([1.0, 2.0], requires_grad=True)
    (g,) = dk.gradients([dnp.sum(u * u), dnp.sum(u * 3.0)], [u])
    assert_close(g, 2 * u.data + 3.0, rtol=0, atol=0)
    (g2,) = dk.gradients([u * u, u * 3.0], [u],
                         grad_outputs=[np.ones(2), np.array([1.0, 0.0])])
    assert_close(g2, [5.0, 4.0], rtol=0, atol=0)


def test_retained_non_leaf_grad_accumulates_like_leaves() -> None:
    a = dk.tensor(2.0, requires_grad=True)
    b = a * a
    b.retain_grad()
    c = b * b
    c.backward(retain_graph=True)
    c.backward()
    assert a.grad == 2 * 4 * 2.0 ** 3 and b.grad == 2 * 2 * 4.0


def test_requires_grad_switches() -> None:
    z = dk.tensor(1.5)
    assert z.requires_grad_() is z and z.requires_grad
    (z * z).backward()
    assert z.grad == 3.0
    y = z * 2.0
    with pytest.raises(dk.DiffkitError, match="leaf"):
        y.requires_grad = False
    with pytest.raises(dk.DiffkitError, match="does not require grad"):
        dk.tensor(1.0).grad = np.ones(1)


GRADIENTS_NON_LEAF_BUG = (
    "BUG: reverse.gradients returns zeros for a non-leaf input: backprop only reports leaves "
    "and retain_grad() nodes in `found`, so found.get(x.node, zeros) silently gives 0 "
    "(torch.autograd.grad differentiates w.r.t. intermediate tensors)")


def test_gradients_with_respect_to_a_non_leaf() -> None:
    x = leaf()
    h = dnp.sin(x)
    y = dnp.sum(h * h)
    gh, gx = dk.gradients(y, [h, x])
    assert_close(gx, 2 * np.sin(X0) * np.cos(X0), rtol=1e-15)
    assert_close(gh, 2 * np.sin(X0), rtol=1e-15)
    assert h.grad is None


def test_float32_tensor_grad_dtype_with_float64_constant() -> None:
    t = dk.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    dnp.sum(t * np.array([3.0, 4.0])).backward()
    assert t.grad.dtype == np.float32


def test_deepcopy_keeps_a_leaf_on_the_tensor_tape():
    import copy

    w = dk.tensor([1.0, 2.0], requires_grad=True)
    w2 = copy.deepcopy(w)
    (dnp.sum(w2 * 3.0) + dnp.sum(w * 1.0)).backward()
    np.testing.assert_array_equal(w.grad, [1.0, 1.0])
    np.testing.assert_array_equal(w2.grad, [3.0, 3.0])
    with dk.no_grad():
        assert not (w2 * 2.0).requires_grad
    with pytest.raises(dk.DiffkitError, match="leaf"):
        copy.deepcopy(w * 2.0)


def test_nn_and_optim_load_lazily_from_the_package() -> None:
    """``import diffkit as dk; dk.nn.Linear`` works as ``torch.nn`` does, without importing
    training code (or sympy) at ``import diffkit``."""
    import subprocess
    import sys

    code = ("import sys, diffkit as dk; before = 'diffkit.nn' in sys.modules or 'sympy' in "
            "sys.modules; print(before, dk.nn.Linear(2, 1).weight.shape, dk.optim.Adam.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "(1,", "2)", "Adam"], out.stderr
