"""diffkit.nn and diffkit.data: modules, losses, initializers, the functional path,
gradient checks against finite differences and the symbolic backend, training targets
and gradient accumulation in both styles."""
from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import pytest
from conftest import assert_close

import diffkit as dk
from diffkit import data, nn, optim
from diffkit.core import DiffkitError

# ---------------------------------------------------------------- helpers


def loss_value(fn: Callable[[], object]) -> float:
    with dk.no_grad():
        return fn().item()


def fd_parameter_grads(model: nn.Module, loss: Callable[[], object], h: float = 1e-6
                       ) -> dict[str, np.ndarray]:
    """Central differences: perturb every entry of every parameter, in place."""
    out = {}
    for name, p in model.named_parameters():
        g = np.zeros_like(p.data)
        for idx in np.ndindex(*p.data.shape):
            old = p.data[idx]
            p.data[idx] = old + h
            up = loss_value(loss)
            p.data[idx] = old - h
            down = loss_value(loss)
            p.data[idx] = old
            g[idx] = (up - down) / (2 * h)
        out[name] = g
    return out


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- modules


def test_linear_shapes_init_bounds_and_seed() -> None:
    lin = nn.Linear(50, 7, rng=3)
    assert lin.weight.shape == (7, 50) and lin.bias.shape == (7,)
    assert lin.weight.requires_grad and lin.weight.is_leaf
    bound = 1 / math.sqrt(50)
    assert np.abs(lin.weight.data).max() <= bound and np.abs(lin.bias.data).max() <= bound
    assert np.abs(lin.weight.data).max() > 0.9 * bound  # really uses the whole range
    again = nn.Linear(50, 7, rng=3)
    assert np.array_equal(again.weight.data, lin.weight.data)
    assert not np.array_equal(nn.Linear(50, 7, rng=4).weight.data, lin.weight.data)
    nn.manual_seed(11)
    a = nn.Linear(3, 2).weight.data.copy()
    nn.manual_seed(11)
    assert np.array_equal(nn.Linear(3, 2).weight.data, a)
    x = np.arange(100.0).reshape(2, 50)
    assert_close(lin(x).numpy(), x @ lin.weight.data.T + lin.bias.data, rtol=1e-14)
    assert nn.Linear(3, 2, bias=False, rng=0).bias is None
    assert [n for n, _ in nn.Linear(3, 2, bias=False, rng=0).named_parameters()] == ["weight"]


def test_named_parameters_repr_and_counts() -> None:
    model = nn.Sequential(nn.Linear(2, 4, rng=0), nn.Tanh(),
                          nn.Residual(nn.Sequential(nn.LayerNorm(4), nn.Linear(4, 4, rng=1))),
                          nn.Linear(4, 2, rng=2))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.module.0.weight", "2.module.0.bias",
                     "2.module.1.weight", "2.module.1.bias", "3.weight", "3.bias"]
    assert model.num_parameters() == 8 + 4 + 4 + 4 + 16 + 4 + 8 + 2
    text = repr(model)
    assert text.startswith("Sequential(\n  (0): Linear(in_features=2, out_features=4, bias=True)")
    assert "(2): Residual(\n    (module): Sequential(\n      (0): LayerNorm((4,), eps=1e-05" in text
    assert repr(nn.Tanh()) == "Tanh()" and repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss(reduction='mean')"
    assert len(model) == 4 and isinstance(model[1], nn.Tanh) and len(model[1:3]) == 2


def test_custom_module_registration_and_shared_parameters() -> None:
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(3, 3, rng=0)
            self.b = nn.Linear(3, 3, rng=1)
            self.b.weight = self.a.weight  # tied: listed once
            self.scale = dk.tensor(2.0, requires_grad=True)
            self.note = "not a parameter"
            self.mask = dk.tensor([1.0, 0.0, 1.0])  # a constant tensor: not a parameter either

        def forward(self, x):  # noqa: ANN001, ANN201
            return self.scale * self.b(self.a(x))

    m = Tied()
    assert [n for n, _ in m.named_parameters()] == ["scale", "a.weight", "a.bias", "b.bias"]
    x = np.array([[0.5, -1.0, 2.0]])
    dk.numpy.sum(m(x)).backward()
    g = dk.grad(lambda p: dk.numpy.sum(nn.functional_call(m, p, x)))(m.parameters_dict())
    for name, p in m.named_parameters():  # the tied weight gets both uses, both ways
        assert_close(g[name], p.grad, rtol=1e-14)
    m.scale = None  # re-assigned to a non-tensor: no longer listed
    assert "scale" not in dict(m.named_parameters())

    class Forgot(nn.Module):
        def __init__(self) -> None:
            self.w = dk.tensor(1.0, requires_grad=True)

    with pytest.raises(DiffkitError, match="super"):
        Forgot()


def test_zero_grad_really_zeroes_and_grads_accumulate() -> None:
    X, y = data.two_moons(40, 0.1, seed=1)
    model = nn.mlp([2, 5, 2], nn.Tanh, rng=0)
    nn.cross_entropy(model(X), y).backward()
    first = {n: p.grad.copy() for n, p in model.named_parameters()}
    nn.cross_entropy(model(X), y).backward()
    for n, p in model.named_parameters():
        assert np.array_equal(p.grad, 2 * first[n])
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    nn.cross_entropy(model(X), y).backward()
    for n, p in model.named_parameters():
        assert np.array_equal(p.grad, first[n])


def test_train_eval_flags_recurse() -> None:
    model = nn.Sequential(nn.Linear(2, 2, rng=0), nn.Residual(nn.Tanh()))
    assert all(m.training for m in model.modules())
    assert model.eval() is model and not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_numpy_list_and_tensor_inputs() -> None:
    model = nn.mlp([3, 4, 2], nn.Sigmoid, rng=0)
    X = np.random.default_rng(0).normal(size=(5, 3))
    ref = model(X).numpy()
    assert_close(model(X.tolist()).numpy(), ref, rtol=0, atol=0)
    x = dk.tensor(X, requires_grad=True)
    out = model(x)
    assert_close(out.numpy(), ref, rtol=0, atol=0)
    dk.numpy.sum(out * out).backward()
    W1, b1, W2, b2 = (p.data for p in model.parameters())

    def f(X: np.ndarray) -> float:
        o = (1 / (1 + np.exp(-(X @ W1.T + b1)))) @ W2.T + b2
        return float(np.sum(o * o))

    g = np.zeros_like(X)
    for idx in np.ndindex(*X.shape):
        e = np.zeros_like(X)
        e[idx] = 1e-6
        g[idx] = (f(X + e) - f(X - e)) / 2e-6
    assert_close(x.grad, g, rtol=1e-7)


# ---------------------------------------------------------------- gradient checks


def small_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(3, 4, rng=0), nn.Tanh(),
        nn.Residual(nn.Sequential(nn.LayerNorm(4), nn.Linear(4, 4, rng=1), nn.Sigmoid())),
        nn.Linear(4, 3, rng=2))


@pytest.mark.parametrize("loss_name", ["cross_entropy", "mse", "hinge"])
def test_parameter_gradients_match_central_differences(loss_name: str) -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(8, 3))
    model = small_model()
    for p in model.parameters():  # move LayerNorm's affine parameters off ones/zeros
        p.data[...] = p.data + 0.3 * rng.normal(size=p.data.shape)
    targets = {"cross_entropy": rng.integers(0, 3, 8), "mse": rng.normal(size=(8, 3)),
               "hinge": rng.choice([-1.0, 1.0], size=(8, 3))}
    losses = {"cross_entropy": nn.CrossEntropyLoss(), "mse": nn.MSELoss(),
              "hinge": nn.HingeEmbeddingLoss(margin=0.5)}

    def loss():  # noqa: ANN202
        return losses[loss_name](model(X), targets[loss_name])

    loss().backward()
    fd = fd_parameter_grads(model, loss)
    assert len(fd) == 8
    for name, p in model.named_parameters():
        assert np.abs(p.grad).max() > 1e-4, name  # every parameter takes part
        assert_close(p.grad, fd[name], rtol=1e-7)


def test_symbolic_reverse_and_tensor_gradients_agree_on_a_tiny_model() -> None:
    X, y = data.regression_curve(6, noise=0.1, seed=0)
    X = np.hstack([X, X ** 2 / 3])
    model = nn.mlp([2, 3, 1], nn.Tanh, rng=0)
    z, unravel = nn.ravel_parameters(model)
    assert z.shape == (13,)

    def f(z):  # noqa: ANN001, ANN202  (the loss as a function of ONE flat vector)
        return nn.mse_loss(nn.functional_call(model, unravel(z), X), y)

    g_sym = dk.grad(f, backend="symbolic")(z)
    g_rev = dk.grad(f)(z)
    nn.mse_loss(model(X), y).backward()
    g_tensor = np.concatenate([p.grad.ravel() for p in model.parameters()])
    assert np.abs(g_sym).min() > 1e-6
    assert_close(g_rev, g_sym, rtol=1e-12)
    assert_close(g_tensor, g_sym, rtol=1e-12)


def test_functional_path_returns_dict_and_leaves_grad_alone() -> None:
    X, y = data.two_moons(60, 0.1, seed=2)
    model = nn.mlp([2, 6, 2], nn.Tanh, rng=0)
    params = model.parameters_dict()
    own = list(model.parameters())
    value, grads = dk.value_and_grad(lambda p: nn.cross_entropy(nn.functional_call(model, p, X), y))(params)
    assert set(grads) == set(params) and all(grads[k].shape == params[k].shape for k in params)
    assert all(p.grad is None for p in model.parameters())
    assert list(model.parameters()) == own  # the module's own tensors are back
    loss = nn.cross_entropy(model(X), y)
    loss.backward()
    assert_close(value, loss.item(), rtol=1e-15)
    for name, p in model.named_parameters():
        assert_close(grads[name], p.grad, rtol=1e-13)
    # arguments after the parameters, a partial dict, and errors
    vg = dk.value_and_grad(lambda p, X: nn.cross_entropy(nn.functional_call(model, p, X), y))
    _, g0 = vg({"0.weight": params["0.weight"], "2.bias": params["2.bias"]}, X)
    assert set(g0) == {"0.weight", "2.bias"}
    assert_close(g0["0.weight"], grads["0.weight"], rtol=1e-13)
    with pytest.raises(DiffkitError, match="not parameters"):
        nn.functional_call(model, {"0.wieght": params["0.weight"]}, X)
    with pytest.raises(ValueError):
        nn.functional_call(model, {"0.weight": np.zeros((3, 3))}, X)
    assert list(model.parameters()) == own  # restored after an exception too


def test_ravel_parameters_round_trip() -> None:
    model = small_model()
    z, unravel = nn.ravel_parameters(model)
    back = unravel(z)
    for name, p in model.named_parameters():
        assert np.array_equal(back[name], p.data)
    assert z.size == model.num_parameters()


# ---------------------------------------------------------------- losses and layers


def test_cross_entropy_values_gradient_and_stability() -> None:
    rng = np.random.default_rng(0)
    logits, y = rng.normal(size=(6, 4)), rng.integers(0, 4, 6)
    ref = np.mean(-np.log(softmax(logits)[np.arange(6), y]))
    assert_close(nn.cross_entropy(logits, y), ref, rtol=1e-14)
    t = dk.tensor(logits, requires_grad=True)
    nn.CrossEntropyLoss()(t, y).backward()
    assert_close(t.grad, (softmax(logits) - np.eye(4)[y]) / 6, rtol=1e-14)
    big = np.array([[1000.0, 0.0, -1000.0], [0.0, 1000.0, 999.0]])
    assert_close(nn.cross_entropy(big, np.array([0, 2])), (0.0 + 1.0 + np.log1p(np.exp(-1))) / 2,
                 rtol=1e-14)
    assert_close(nn.cross_entropy(logits, y, reduction="sum"), 6 * ref, rtol=1e-14)
    for bad in (np.array([0, 1, 2, 3, 4, 0]), np.array([0.0, 1, 2, 3, 0, 0]), np.array([0, 1])):
        with pytest.raises(DiffkitError):
            nn.cross_entropy(logits, bad)


def test_mse_and_hinge_embedding_values() -> None:
    pred, target = np.array([[1.0], [2.0], [4.0]]), np.array([[0.0], [2.0], [1.0]])
    assert nn.MSELoss()(pred, target) == pytest.approx(10 / 3, rel=1e-15)
    assert nn.mse_loss(pred, target, reduction="sum") == 10.0
    with pytest.raises(DiffkitError, match="shape"):
        nn.mse_loss(pred, target.ravel())
    x = np.array([0.3, -0.2, 0.3, 2.0, -1.0])
    t = np.array([1, 1, -1, -1, -1])
    # y = 1: x itself; y = -1: max(0, margin - x)
    assert_close(nn.hinge_embedding_loss(x, t, reduction="none"), [0.3, -0.2, 0.7, 0.0, 2.0], rtol=1e-15)
    assert nn.HingeEmbeddingLoss()(x, t) == pytest.approx(2.8 / 5, rel=1e-15)
    assert nn.HingeEmbeddingLoss(margin=2.0)(x, t) == pytest.approx((0.1 + 1.7 + 0 + 3) / 5, rel=1e-14)
    with pytest.raises(DiffkitError, match="1 or -1"):
        nn.hinge_embedding_loss(x, np.array([1, 0, 1, 1, 1]))
    with pytest.raises(DiffkitError, match="reduction"):
        nn.mse_loss(pred, target, reduction="avg")


def test_layernorm_matches_formula_and_residual_adds() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(3.0, 2.0, size=(5, 6))
    ln = nn.LayerNorm(6, eps=1e-5)
    ln.weight.data[...] = rng.normal(size=6)
    ln.bias.data[...] = rng.normal(size=6)
    mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    assert_close(ln(x).numpy(), (x - mu) / np.sqrt(var + 1e-5) * ln.weight.data + ln.bias.data,
                 rtol=1e-14)
    plain = nn.LayerNorm((6,), elementwise_affine=False)(x)
    assert_close(plain.mean(1), np.zeros(5), atol=1e-14)
    assert_close(plain.var(1), var.ravel() / (var.ravel() + 1e-5), rtol=1e-12)
    assert list(nn.LayerNorm(6, elementwise_affine=False).parameters()) == []
    with pytest.raises(DiffkitError, match="normalized shape"):
        ln(np.ones((2, 5)))
    block = nn.Residual(nn.Tanh())
    assert_close(block(x), x + np.tanh(x), rtol=1e-15)  # no parameters: numpy in, numpy out
    assert_close(nn.ReLU()(x - 3), np.maximum(x - 3, 0), rtol=0, atol=0)
    assert_close(nn.Sigmoid()(dk.tensor(x)).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-15)


# ---------------------------------------------------------------- initializers


def test_initializers_statistics() -> None:
    w = nn.Linear(400, 300, rng=0).weight  # fan_in 400, fan_out 300
    nn.init.xavier_uniform_(w, rng=1)
    bound = math.sqrt(6 / 700)
    assert np.abs(w.data).max() <= bound and np.abs(w.data).max() > 0.99 * bound
    nn.xavier_normal_(w, gain=2.0, rng=2)
    assert w.data.std() == pytest.approx(2.0 * math.sqrt(2 / 700), rel=0.02)
    nn.kaiming_uniform_(w, rng=3)
    assert np.abs(w.data).max() <= math.sqrt(6 / 400) and np.abs(w.data).max() > 0.99 * math.sqrt(6 / 400)
    nn.kaiming_normal_(w, rng=4)
    assert w.data.std() == pytest.approx(math.sqrt(2 / 400), rel=0.02)
    assert w.data.mean() == pytest.approx(0.0, abs=0.002)
    nn.kaiming_normal_(w, mode="fan_out", nonlinearity="tanh", rng=4)
    assert w.data.std() == pytest.approx(5 / 3 / math.sqrt(300), rel=0.02)
    assert nn.calculate_gain("relu") == math.sqrt(2) and nn.calculate_gain("sigmoid") == 1.0
    assert nn.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    a = nn.xavier_uniform_(nn.Linear(4, 4).weight, rng=9).data.copy()
    assert np.array_equal(nn.xavier_uniform_(nn.Linear(4, 4).weight, rng=9).data, a)
    b = nn.Linear(4, 3).bias
    with pytest.raises(DiffkitError, match="2 dimensions"):
        nn.kaiming_normal_(b)
    nn.zeros_(b)
    assert np.array_equal(b.data, np.zeros(3)) and b.is_leaf and b.grad_fn is None


def test_deepcopy_and_state_dict() -> None:
    X, y = data.two_moons(30, 0.1, seed=0)
    model = nn.mlp([2, 4, 2], nn.Tanh, rng=0)
    twin = copy.deepcopy(model)
    for (n, p), (m, q) in zip(model.named_parameters(), twin.named_parameters()):
        assert n == m and p is not q and np.array_equal(p.data, q.data)
    nn.cross_entropy(twin(X), y).backward()  # the copy's leaves are real leaves of the tape
    assert all(q.grad is not None for q in twin.parameters())
    assert all(p.grad is None for p in model.parameters())
    state = model.state_dict()
    model[0].weight.data[...] = 0.0
    model.load_state_dict(state)
    assert np.array_equal(model[0].weight.data, twin[0].weight.data)
    with pytest.raises(DiffkitError, match="shape"):
        model.load_state_dict({**state, "0.bias": np.zeros(5)})


# ---------------------------------------------------------------- data


def test_datasets_are_seeded_and_shaped() -> None:
    X, y = data.two_moons(1001, noise=0.1, seed=7)
    assert X.shape == (1001, 2) and y.shape == (1001,) and set(np.unique(y)) == {0, 1}
    assert abs(int(y.sum()) - 500) <= 1 and y.dtype.kind == "i"
    X2, y2 = data.two_moons(1001, noise=0.1, seed=7)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert not np.array_equal(X, data.two_moons(1001, noise=0.1, seed=8)[0])
    Xc, _ = data.two_moons(200, noise=0.0, seed=0)
    on_arc = np.isclose(np.hypot(*Xc.T), 1.0) | np.isclose(np.hypot(Xc[:, 0] - 1, Xc[:, 1] - 0.5), 1.0)
    assert on_arc.all()
    S, c = data.spirals(301, classes=3, noise=0.1, seed=0)
    assert S.shape == (301, 2) and np.bincount(c).tolist() == [101, 100, 100]
    assert np.hypot(*S.T).max() <= 1.0 + 1e-12
    R, t = data.regression_curve(50, noise=0.0, seed=1)
    assert R.shape == t.shape == (50, 1) and np.allclose(t, np.sin(1.5 * R) + 0.3 * R)
    idx = list(data.batches(10, 4, shuffle=True, seed=0))
    assert [len(i) for i in idx] == [4, 4, 2] and sorted(np.concatenate(idx)) == list(range(10))
    with pytest.raises(DiffkitError):
        data.two_moons(0)


# ---------------------------------------------------------------- training targets


@pytest.mark.parametrize("name, make, steps", [
    ("sgd-momentum", lambda p: optim.SGD(p, lr=0.5, momentum=0.9), 60),
    ("adam", lambda p: optim.Adam(p, lr=0.02), 60),
    ("rmsprop", lambda p: optim.RMSprop(p, lr=0.003), 100),
])
def test_mlp_learns_two_moons(name: str, make: Callable, steps: int) -> None:
    """2-32-32-2 tanh MLP, 1,000 points, full batch, seeded: >= 95% training accuracy.

    Seeded runs first reach 95% after about 20 (SGD), 30 (Adam) and 64 (RMSprop) steps."""
    X, y = data.two_moons(1000, noise=0.1, seed=0)
    model = nn.mlp([2, 32, 32, 2], nn.Tanh, rng=0)
    opt = make(model.parameters())
    with dk.no_grad():
        before = float(np.mean(model(X).numpy().argmax(1) == y))
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.cross_entropy(model(X), y)
        loss.backward()
        opt.step()
    with dk.no_grad():
        acc = float(np.mean(model(X).numpy().argmax(1) == y))
    assert acc >= 0.95, f"{name}: accuracy {acc:.3f} (loss {loss.item():.4f})"
    assert before < 0.9 and loss.item() < 0.25


# ---------------------------------------------------------------- gradient accumulation


def test_gradient_accumulation_equals_full_batch_in_both_styles() -> None:
    X, y = data.two_moons(1000, noise=0.1, seed=0)
    k = 4
    parts = np.array_split(np.arange(1000), k)  # equal sizes: mean of means == mean

    def fresh() -> tuple[nn.Module, optim.SGD]:
        model = nn.mlp([2, 32, 32, 2], nn.Tanh, rng=0)
        return model, optim.SGD(model.named_parameters(), lr=0.5, momentum=0.9)

    full, opt_full = fresh()
    tens, opt_tens = fresh()
    func, opt_func = fresh()
    vg = dk.value_and_grad(lambda p, Xb, yb: nn.cross_entropy(nn.functional_call(func, p, Xb), yb))
    for _ in range(2):  # two updates: momentum state must agree too
        opt_full.zero_grad()
        nn.cross_entropy(full(X), y).backward()
        opt_full.step()

        opt_tens.zero_grad()
        for idx in parts:  # tensor style: .grad accumulates, loss scaled by 1/k
            (nn.cross_entropy(tens(X[idx]), y[idx]) / k).backward()
        accumulated = {n: p.grad.copy() for n, p in tens.named_parameters()}
        opt_tens.step()

        total = None  # functional style: an explicit accumulator, .grad untouched
        for idx in parts:
            _, g = vg(func.parameters_dict(), X[idx], y[idx])
            total = g if total is None else {n: total[n] + g[n] for n in g}
        assert all(p.grad is None for p in func.parameters())
        opt_func.step({n: v / k for n, v in total.items()})

        for n, p in full.named_parameters():
            assert_close(accumulated[n], p.grad, rtol=0, atol=1e-12)
            assert_close(total[n] / k, p.grad, rtol=0, atol=1e-12)
    moved = 0.0
    for (n, p), q, r in zip(full.named_parameters(), tens.parameters(), func.parameters()):
        assert_close(q.data, p.data, rtol=0, atol=1e-12)
        assert_close(r.data, p.data, rtol=0, atol=1e-12)
        moved = max(moved, float(np.abs(p.data - nn.mlp([2, 32, 32, 2], rng=0).state_dict()[n]).max()))
    assert moved > 1e-2  # the updates were not trivially small


# ---------------------------------------------------------------- the examples run


ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def load_example(name: str):  # noqa: ANN201
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_moons_example_runs(tmp_path, capsys) -> None:  # noqa: ANN001
    pytest.importorskip("matplotlib")
    example = load_example("train_moons")
    example.main(["--optimizer", "sgd", "--epochs", "3", "--style", "functional",
                  "--batch-size", "500", "--accumulate", "2", "--plot", str(tmp_path / "m.png")])
    out = capsys.readouterr().out
    assert "training accuracy" in out and "x the forward pass" in out
    diffs = [float(line.split("=")[-1]) for line in out.splitlines() if "max |Δθ|" in line]
    assert len(diffs) == 2 and max(diffs) < 1e-12
    assert (tmp_path / "m.png").stat().st_size > 10_000


def test_gradient_flow_spec_and_a_small_run(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("matplotlib")
    import json

    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")

    from diffkit.reporting import gradient_flow as example

    spec = tomllib.loads((ROOT / "reports" / "gradients.toml").read_text(encoding="utf-8"))
    for fig in spec["figure"]:  # every figure of the committed spec is well formed
        assert fig["kind"] in example.FIGURE_KINDS and fig["title"]
        assert "{" not in example.caption_text(fig, spec["setup"])
        if fig["kind"] != "clipping":
            example.grid(fig)
    small = tmp_path / "small.toml"
    small.write_text("""
[setup]
seed = 0
width = 8
batch = 32
noise = 0.1
seeds = 2
[[figure]]
name = "inits"
kind = "layer_profile"
title = "t"
caption = "depth {depth}"
depth = 6
panels = "architecture"
lines = "init"
activations = ["tanh"]
architectures = ["residual+layernorm"]
inits = ["default", "kaiming_uniform", "normal(3.0)"]
[[figure]]
name = "clip"
kind = "clipping"
title = "c"
caption = "c"
depth = 4
activation = "relu"
architecture = "plain"
init = "normal(4.0)"
lr = 0.01
momentum = 0.9
steps = 5
max_norms = ["none", 1.0]
clip_values = [0.1]
""", encoding="utf-8")
    example.main([str(small), "-o", str(tmp_path / "out")])
    result = json.loads((tmp_path / "out" / "gradients.json").read_text())
    assert len(result["inits"]["residual+layernorm/default"]) == 6 + 1  # one norm per Linear
    assert all(n > 0 for n in result["inits"]["residual+layernorm/normal(3.0)"])
    assert {r["overflow_at"] is None for r in result["clip"]["clip_grad_norm_ 1"]} == {True}
    for r in result["clip"]["clip_grad_norm_ 1"]:  # the returned norm is the one before clipping
        assert len(r["grad_norm"]) == 5 and r["grad_norm"][0] > 1.0
    assert (tmp_path / "out" / "inits.png").exists() and (tmp_path / "out" / "clip.png").exists()
    assert "depth 6" in (tmp_path / "out" / "captions.md").read_text(encoding="utf-8")


def test_module_doctests() -> None:
    import doctest

    for module in (nn, data):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_gradient_flow_through_a_cnn_vanishes_unless_normalized_or_residual() -> None:
    from diffkit.bench.training import make_cnn, mean_norms

    X, y = data.shapes(16, seed=0)
    setup = {"seed": 0, "seeds": 2, "channels": 4}
    ratio = {a: (lambda n: n[0] / n[-1])(mean_norms(setup, 8, "tanh", a, "default", X, y, "cnn"))
             for a in ("plain", "batchnorm", "residual")}
    assert ratio["plain"] < 0.01 and ratio["batchnorm"] > 1 and ratio["residual"] > 0.1
    model = make_cnn(3, 2, "relu", "batchnorm", np.random.default_rng(0))
    kinds = [type(m).__name__ for m in model.modules()]
    assert kinds.count("Conv2d") == 3 and kinds.count("BatchNorm2d") == 3
    with pytest.raises(dk.DiffkitError, match="unknown CNN architecture 'layernorm'"):
        make_cnn(3, 2, "relu", "layernorm", np.random.default_rng(0))
