"""diffkit.optim: SGD / RMSprop / Adam against hand-computed and plain-numpy textbook
updates, zero_grad, explicit gradients, in-place unrecorded steps, gradient clipping."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import assert_close

import diffkit as dk
import diffkit.numpy as dnp
from diffkit import nn, optim
from diffkit.core import DiffkitError


def scalar_run(make, steps: int = 2) -> list[float]:  # noqa: ANN001
    """Minimise L(w) = w² from w = 1 (gradient 2w), tensor style; w after each step."""
    w = dk.tensor([1.0], requires_grad=True)
    opt = make([w])
    out = []
    for _ in range(steps):
        opt.zero_grad()
        dnp.sum(w * w).backward()
        opt.step()
        out.append(float(w.data[0]))
    return out


# ---------------------------------------------------------------- hand-computed two steps


def test_sgd_momentum_two_steps_by_hand() -> None:
    # b1 = g1 = 2, w1 = 1 - 0.1*2 = 0.8; g2 = 1.6, b2 = 0.9*2 + 1.6 = 3.4, w2 = 0.8 - 0.34
    assert_close(scalar_run(lambda p: optim.SGD(p, lr=0.1, momentum=0.9)), [0.8, 0.46], rtol=1e-15)
    # plain SGD: w <- w - 0.1*2w = 0.8 w
    assert_close(scalar_run(lambda p: optim.SGD(p, lr=0.1)), [0.8, 0.64], rtol=1e-15)
    # Nesterov: g + mu*b; step 1: 2 + 0.9*2 = 3.8 -> 0.62; step 2: g = 1.24, b = 1.8 + 1.24 = 3.04,
    # g + 0.9 b = 1.24 + 2.736 = 3.976 -> 0.62 - 0.3976
    assert_close(scalar_run(lambda p: optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
                 [0.62, 0.2224], rtol=1e-14)


def test_adam_two_steps_by_hand() -> None:
    # textbook formula evaluated at 30 digits (mpmath): step 1 moves by lr*1/(1 + eps/2)
    assert_close(scalar_run(lambda p: optim.Adam(p, lr=0.1)),
                 [0.9000000004999999975, 0.800412228691792145], rtol=0, atol=1e-15)


def test_rmsprop_two_steps_by_hand() -> None:
    # v1 = 0.01*4 = 0.04, w1 = 1 - 0.01*2/(0.2 + 1e-8); then v2 = 0.99 v1 + 0.01 g2²
    assert_close(scalar_run(lambda p: optim.RMSprop(p, lr=0.01)),
                 [0.90000000499999975, 0.832917967970033080], rtol=0, atol=1e-15)


# ---------------------------------------------------------------- vectors, all options


G1 = np.array([[0.5, -2.0], [3.0, 0.01]])
G2 = np.array([[-1.0, 0.25], [2.0, -0.3]])
P0 = np.array([[1.0, -0.5], [0.2, 4.0]])


def run_explicit(opt_cls, **kw) -> np.ndarray:  # noqa: ANN001
    """Two steps with the gradients G1, G2 given explicitly (functional style)."""
    p = dk.tensor(P0.copy(), requires_grad=True)
    opt = opt_cls([p], **kw)
    opt.step([G1])
    opt.step([G2])
    return p.data


def test_sgd_matches_textbook_formula() -> None:
    lr, mu, damp, wd = 0.05, 0.8, 0.1, 0.01
    p = P0.copy()
    g = G1 + wd * p
    b = g.copy()
    p = p - lr * b
    g = G2 + wd * p
    b = mu * b + (1 - damp) * g
    p = p - lr * b
    assert_close(run_explicit(optim.SGD, lr=lr, momentum=mu, dampening=damp, weight_decay=wd), p,
                 rtol=1e-15)


@pytest.mark.parametrize("centered, momentum", [(False, 0.0), (True, 0.0), (False, 0.7), (True, 0.7)])
def test_rmsprop_matches_textbook_formula(centered: bool, momentum: float) -> None:
    lr, a, eps, wd = 0.02, 0.9, 1e-6, 0.05
    p, v, m, b = P0.copy(), np.zeros_like(P0), np.zeros_like(P0), np.zeros_like(P0)
    for G in (G1, G2):
        g = G + wd * p
        v = a * v + (1 - a) * g ** 2
        m = a * m + (1 - a) * g
        denom = np.sqrt(v - m ** 2 if centered else v) + eps
        b = momentum * b + g / denom
        p = p - lr * (b if momentum else g / denom)
    got = run_explicit(optim.RMSprop, lr=lr, alpha=a, eps=eps, weight_decay=wd,
                       momentum=momentum, centered=centered)
    assert_close(got, p, rtol=1e-14)


def test_adam_matches_textbook_formula() -> None:
    lr, (b1, b2), eps, wd = 0.01, (0.8, 0.95), 1e-4, 0.1
    p, m, v = P0.copy(), np.zeros_like(P0), np.zeros_like(P0)
    for t, G in enumerate((G1, G2), start=1):
        g = G + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    got = run_explicit(optim.Adam, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    assert_close(got, p, rtol=1e-14)
    assert np.abs(got - P0).max() > 1e-3


# ---------------------------------------------------------------- bookkeeping


def test_zero_grad_sets_none_or_zeros() -> None:
    model = nn.mlp([2, 3, 1], rng=0)
    opt = optim.SGD(model.parameters(), lr=0.1)
    dnp.sum(model(np.ones((4, 2)))).backward()
    assert all(p.grad is not None for p in model.parameters())
    opt.zero_grad(set_to_none=False)
    assert all(np.array_equal(p.grad, np.zeros_like(p.data)) for p in model.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    before = model.state_dict()
    opt.step()  # no gradients: nothing moves
    assert all(np.array_equal(before[n], p.data) for n, p in model.named_parameters())


def test_step_is_in_place_and_not_recorded() -> None:
    w = dk.tensor([1.0, 2.0], requires_grad=True)
    array = w.data
    opt = optim.Adam([w], lr=0.1)
    dnp.sum(w * w).backward()
    opt.step()
    assert w.data is array and w.is_leaf and w.grad_fn is None and w.requires_grad
    assert_close(w.data, [0.9, 1.9], rtol=1e-8)
    w.grad = None
    dnp.sum(3.0 * w).backward()  # a new graph on the updated leaf: gradient 3, not polluted
    assert_close(w.grad, [3.0, 3.0], rtol=0, atol=0)


def test_parameters_without_grad_keep_their_own_step_count() -> None:
    a = dk.tensor([1.0], requires_grad=True)
    b = dk.tensor([1.0], requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = np.array([2.0])
    opt.step()  # b has no gradient yet: untouched
    assert b.data[0] == 1.0 and opt.state[1] == {}
    a.grad, b.grad = np.array([2.0]), np.array([2.0])
    opt.step()
    assert opt.state[0]["step"] == 2 and opt.state[1]["step"] == 1
    assert_close(b.data, [1.0 - 0.1 / (1 + 0.5e-8)], rtol=1e-15)  # a first Adam step


def test_explicit_gradients_as_list_or_dict() -> None:
    model = nn.Linear(2, 2, rng=0)
    before = model.state_dict()
    grads = {"weight": np.ones((2, 2)), "bias": np.array([1.0, -1.0])}
    optim.SGD(model.named_parameters(), lr=0.5).step(grads)
    assert_close(model.weight.data, before["weight"] - 0.5, rtol=1e-15)
    assert_close(model.bias.data, before["bias"] - [0.5, -0.5], rtol=1e-15)
    optim.SGD(dict(model.named_parameters()), lr=0.5).step({"bias": np.array([1.0, 1.0])})
    assert_close(model.weight.data, before["weight"] - 0.5, rtol=1e-15)  # missing: not moved
    opt = optim.SGD(model.parameters(), lr=0.5)
    opt.step([np.zeros((2, 2)), np.array([2.0, 2.0])])
    assert_close(model.bias.data, before["bias"] - [2.0, 1.0], rtol=1e-15)  # 3 steps so far
    with pytest.raises(DiffkitError, match="named_parameters"):
        opt.step(grads)
    with pytest.raises(DiffkitError, match="2 parameters"):
        opt.step([np.ones((2, 2))])
    with pytest.raises(DiffkitError, match="shape"):
        opt.step([np.ones((2, 2)), np.ones(3)])
    with pytest.raises(DiffkitError, match="unknown"):
        optim.SGD(model.named_parameters(), lr=0.1).step({"wieght": np.ones((2, 2))})


def test_optimizer_argument_checks() -> None:
    w = dk.tensor([1.0], requires_grad=True)
    with pytest.raises(DiffkitError, match="empty"):
        optim.SGD([], lr=0.1)
    with pytest.raises(DiffkitError, match="leaf"):
        optim.SGD([w * 2.0], lr=0.1)
    with pytest.raises(DiffkitError, match="Nesterov"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(DiffkitError, match="betas"):
        optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(DiffkitError):
        optim.RMSprop([w], alpha=1.5)
    assert "lr=0.1" in repr(optim.SGD([w], lr=0.1))


# ---------------------------------------------------------------- clipping


def grads_of(*arrays: np.ndarray) -> list:
    out = []
    for a in arrays:
        t = dk.tensor(np.zeros_like(a), requires_grad=True)
        t.grad = a.copy()
        out.append(t)
    return out


def test_clip_grad_norm_caps_exactly_and_returns_the_norm_before() -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(3, 4)) * 10, rng.normal(size=5) * 10]
    ps = grads_of(*arrays)
    expected = math.sqrt(sum(float(np.sum(a * a)) for a in arrays))
    total = optim.clip_grad_norm_(ps, max_norm=1.5)
    assert total == pytest.approx(expected, rel=1e-15) and total > 1.5
    after = math.sqrt(sum(float(np.sum(p.grad ** 2)) for p in ps))
    assert abs(after - 1.5) <= 1e-12
    for p, a in zip(ps, arrays):  # the direction is kept: one common factor
        assert_close(p.grad, a * 1.5 / expected, rtol=1e-14)
    small = grads_of(np.array([0.3, 0.4]))
    assert optim.clip_grad_norm_(small, 1.0) == pytest.approx(0.5)
    assert_close(small[0].grad, [0.3, 0.4], rtol=0, atol=0)  # below the cap: untouched
    inf_norm = grads_of(np.array([3.0, -7.0]), np.array([5.0]))
    assert optim.clip_grad_norm_(inf_norm, 3.5, norm_type=math.inf) == 7.0
    assert_close(inf_norm[0].grad, [1.5, -3.5], rtol=1e-15)
    bad = grads_of(np.array([np.inf, 1.0]))
    with pytest.raises(DiffkitError, match="inf"):
        optim.clip_grad_norm_(bad, 1.0, error_if_nonfinite=True)
    no_grad_yet = dk.tensor([1.0], requires_grad=True)
    assert optim.clip_grad_norm_([no_grad_yet], 1.0) == 0.0


def test_clip_grad_norm_on_a_model_and_functional_clipping() -> None:
    model = nn.mlp([2, 8, 2], rng=0)
    X, y = np.random.default_rng(1).normal(size=(16, 2)) * 30, np.arange(16) % 2
    nn.cross_entropy(model(X), y).backward()
    before = {n: p.grad.copy() for n, p in model.named_parameters()}
    total = optim.clip_grad_norm_(model.parameters(), 0.1)
    assert total > 0.1
    assert abs(math.sqrt(sum(float(np.sum(p.grad ** 2)) for p in model.parameters())) - 0.1) <= 1e-12
    clipped, norm = optim.clip_by_global_norm(before, 0.1)
    assert norm == pytest.approx(total, rel=1e-15)
    for n, p in model.named_parameters():
        assert_close(clipped[n], p.grad, rtol=1e-15)
    assert np.abs(before["0.weight"]).max() > np.abs(clipped["0.weight"]).max()  # input kept


def test_clip_grad_value() -> None:
    ps = grads_of(np.array([-3.0, 0.2, 5.0]))
    optim.clip_grad_value_(ps, 1.0)
    assert_close(ps[0].grad, [-1.0, 0.2, 1.0], rtol=0, atol=0)


def test_module_doctest() -> None:
    import doctest

    result = doctest.testmod(optim)
    assert result.attempted > 0 and result.failed == 0
