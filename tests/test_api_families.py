"""The three families of autodiff APIs: tape-scoped recording (dk.record), MindSpore's
value_and_grad(weights=...) with optim.Accumulator, the tensor style; one model trained in
all three against a hand-written numpy backpropagation; set_mode; their errors."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close

import diffkit as dk
import diffkit.numpy as dnp
from diffkit import data, nn, optim
from diffkit.interpreters.tensor import AMBIENT

ROOT = Path(__file__).resolve().parents[1]


def load_example():  # noqa: ANN201
    spec = importlib.util.spec_from_file_location("three_families",
                                                  ROOT / "examples" / "three_families.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- one model, three families


def numpy_mlp_training(X: np.ndarray, y: np.ndarray, steps: list, init: list[np.ndarray],
                       lr: float = 0.5, mu: float = 0.9) -> tuple[list[float], list[np.ndarray]]:
    """2-32-32-2 tanh MLP, softmax cross-entropy, momentum SGD: backpropagation derived by
    hand in plain numpy (no diffkit), micro-batch gradients summed before each update."""
    W1, b1, W2, b2, W3, b3 = [p.copy() for p in init]
    buf, losses = None, []
    for parts in steps:
        grads, total = [np.zeros_like(p) for p in (W1, b1, W2, b2, W3, b3)], 0.0
        for idx in parts:
            Xb, yb, k = X[idx], y[idx], len(parts)
            h1 = np.tanh(Xb @ W1.T + b1)
            h2 = np.tanh(h1 @ W2.T + b2)
            z = h2 @ W3.T + b3
            lse = np.logaddexp(z[:, 0], z[:, 1])
            total += np.mean(lse - z[np.arange(len(yb)), yb]) / k
            dz = np.exp(z - lse[:, None])
            dz[np.arange(len(yb)), yb] -= 1.0
            dz /= len(yb) * k
            da2 = (dz @ W3) * (1.0 - h2 ** 2)
            da1 = (da2 @ W2) * (1.0 - h1 ** 2)
            for g, d in zip(grads, (da1.T @ Xb, da1.sum(0), da2.T @ h1, da2.sum(0),
                                    dz.T @ h2, dz.sum(0))):
                g += d
        buf = grads if buf is None else [mu * b + g for b, g in zip(buf, grads)]
        W1, b1, W2, b2, W3, b3 = [p - lr * b for p, b in zip((W1, b1, W2, b2, W3, b3), buf)]
        losses.append(total)
    return losses, [W1, b1, W2, b2, W3, b3]


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_three_families_train_to_the_same_parameters_as_hand_written_backprop(mode) -> None:  # noqa: ANN001
    """The issue's bar: 50 steps, 4 micro-batches, the same data and initialization; all
    three families agree with backpropagation derived by hand to 1e-12, in both modes, and
    graph mode compiles once per program for all 50 steps (the data are its arguments)."""
    ex = load_example()
    X, y = data.two_moons(400, noise=0.1, seed=0)
    steps = ex.plan(400, 50, 64, 4)
    init = [p.data.copy() for p in nn.mlp([2, 32, 32, 2], nn.Tanh, rng=0).parameters()]
    ref_losses, ref_params = numpy_mlp_training(X, y, steps, init)
    assert ref_losses[-1] < 0.5 * ref_losses[0]  # it learned something
    dk.set_mode(mode)
    try:
        runs = {family: ex.train(family, X, y, steps) for family in ex.FAMILIES}
    finally:
        dk.set_mode("eager")
    for family, run in runs.items():
        assert_close(run.losses, ref_losses, rtol=0, atol=1e-12)
        for p, q in zip(run.params, ref_params):
            assert_close(p, q, rtol=0, atol=1e-12)
    # programs compiled in 50 steps: none when eager; in graph mode one per program for
    # the one micro-batch shape (the model's forward and adjoint; one gradient function)
    assert {f: r.programs for f, r in runs.items()} == (
        {f: 0 for f in runs} if mode == "eager" else
        {"tensor-centred": 2, "functional": 1, "tape-scoped": 2})


def test_graph_mode_compiles_once_per_shape() -> None:
    """Micro-batches of 17, 17, 16 and 16 points: two shapes, so two compiles of each
    program over all steps, however many steps; the gradients stay the hand-written ones."""
    ex = load_example()
    X, y = data.two_moons(200, noise=0.1, seed=0)
    steps = ex.plan(200, 6, 66, 4)
    init = [p.data.copy() for p in nn.mlp([2, 32, 32, 2], nn.Tanh, rng=0).parameters()]
    ref_losses, ref_params = numpy_mlp_training(X, y, steps, init)
    dk.set_mode("graph")
    try:
        runs = {family: ex.train(family, X, y, steps) for family in ex.FAMILIES}
    finally:
        dk.set_mode("eager")
    assert {f: r.programs for f, r in runs.items()} == \
        {"tensor-centred": 4, "functional": 2, "tape-scoped": 4}
    for run in runs.values():
        assert_close(run.losses, ref_losses, rtol=0, atol=1e-12)
        for p, q in zip(run.params, ref_params):
            assert_close(p, q, rtol=0, atol=1e-12)


def test_graph_mode_model_is_one_compiled_node_with_closed_form_gradients() -> None:
    """A linear model in graph mode: loss = mean(r²), r = XWᵀ + b - t; .grad of W, b and
    of an input that requires grad are the closed forms, and the tape holds one node for
    the whole model."""
    from diffkit.nn.graph_mode import graph_call

    model, X, t = linear_problem()
    W, b = model.weight.data.copy(), model.bias.data.copy()
    r = X @ W.T + b - t
    Xt = dk.tensor(X, requires_grad=True)
    dk.set_mode("graph")
    try:
        out = model(Xt)
        nn.mse_loss(out, t).backward()
        with dk.no_grad():
            plain = model(X)  # the forward program alone, nothing recorded
    finally:
        dk.set_mode("eager")
    assert out.grad_fn.name() == "CompiledLinearBackward" and out.grad_fn.parents[0][1].prim is None
    assert_close(model.weight.grad, 2 * r.T @ X / 6, rtol=1e-14)
    assert_close(model.bias.grad, [2 * r.mean()], rtol=1e-14)
    assert_close(Xt.grad, 2 * r @ W / 6, rtol=1e-14)
    assert_close(plain.data, X @ W.T + b, rtol=1e-15) and not plain.requires_grad
    assert graph_call(model).cache_info().misses == 2  # forward; adjoint for (W, b, X)


def test_graph_mode_inside_a_transform_and_errors() -> None:
    """Inside dk.grad the model is differentiated through (not a tape node), as in eager
    mode; a forward that returns a tuple cannot be one compiled operation: one line."""
    model, X, t = linear_problem()
    r = X @ model.weight.data.T + model.bias.data - t
    dk.set_mode("graph")
    try:
        gX = dk.grad(lambda X: nn.mse_loss(model(X), t), backend="reverse")(X).data

        class Pair(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.w = dk.tensor(1.0, requires_grad=True)

            def forward(self, x):  # noqa: ANN001, ANN202
                return self.w * x, x
        with pytest.raises(dk.DiffkitError, match="returned a tuple") as e:
            Pair()(np.ones(2))
    finally:
        dk.set_mode("eager")
    assert_close(gX, 2 * r @ model.weight.data / 6, rtol=1e-14)
    assert "\n" not in str(e.value)


def test_graph_mode_gradient_with_data_arguments_is_one_program_and_nests() -> None:
    """f(x, data) = Σ sin(x·data): f' = Σ data·cos(x·data), f'' = -Σ data²·sin(x·data).
    The data argument is an input of the program: new data, no new compile; inside
    another transform the staged gradient is differentiated through."""
    d1, d2 = np.arange(3.0), np.array([0.5, -2.0, 4.0])
    dk.set_mode("graph")
    try:
        g = dk.grad(lambda x, data: dnp.sum(dnp.sin(x * data)))
        first = [g(0.5, d) for d in (d1, d2)]
        second = dk.grad(lambda x: g(x, d2))(0.5)
    finally:
        dk.set_mode("eager")
    for got, d in zip(first, (d1, d2)):
        assert got == pytest.approx(np.sum(d * np.cos(0.5 * d)), rel=1e-15)
    assert second == pytest.approx(-np.sum(d2 ** 2 * np.sin(0.5 * d2)), rel=1e-14)
    assert g.cache_info().misses == 1 and g.setup_s() > 0


def test_graph_mode_bakes_in_ints_and_options_and_takes_floats_and_arrays() -> None:
    """d/dx Σ reshape(x, (n, -1))² · c = 2 c x: n (a size) and the option string are
    baked into the program, the array c is an input; three values of c, one compile."""
    dk.set_mode("graph")
    try:
        g = dk.grad(lambda x, n, how, c: dnp.sum(dnp.reshape(x, (n, -1)) ** 2 * c)
                    if how == "square" else dnp.sum(x))
        got = [g(np.arange(4.0), 2, "square", np.full((2, 2), c)) for c in (1.0, 2.0, 0.5)]
        plain = g(np.arange(4.0), 2, "sum", np.ones((2, 2)))
    finally:
        dk.set_mode("eager")
    for c, grad_c in zip((1.0, 2.0, 0.5), got):
        assert_close(grad_c, 2 * c * np.arange(4.0), rtol=0)
    assert_close(plain, np.ones(4), rtol=0)
    assert g.cache_info().misses == 2  # one per option string


def test_graph_mode_cannot_print_values_or_branch_on_them() -> None:
    ex = load_example()
    eager, graph = ex.cannot("eager"), ex.cannot("graph")
    assert "tensor([3.]" in eager[0] and eager[1].endswith("the branch on a value ran")
    assert "GraphTracer(f64[1])" in graph[0]  # a placeholder: no number while tracing
    assert "truth value of a traced array" in graph[1] and "dnp.where" in graph[1]
    assert dk.get_mode() == "eager"


def test_the_example_prints_the_table(capsys) -> None:  # noqa: ANN001
    load_example().main(["--steps", "3", "--n", "200", "--batch", "40"])
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["eager"], ["graph"])
            and len(line.split()) > 5]
    assert [r[:2] for r in rows] == [[m, f] for m in ("eager", "graph")
                                     for f in ("tensor-centred", "functional", "tape-scoped")]
    assert all(float(r[-1]) < 1e-12 for r in rows)
    assert [int(r[-3]) for r in rows] == [0, 0, 0, 2, 1, 2]  # programs compiled
    assert all(float(r[-2]) > 0 for r in rows[3:])  # their one-off cost, in ms
    assert "GraphTracer" in out


# ---------------------------------------------------------------- tape-scoped recording

X0 = np.array([0.5, -1.0, 2.0])


def test_record_returns_gradients_and_leaves_grad_alone() -> None:
    w = dk.tensor([1.5, -0.5, 2.0], requires_grad=True)
    with dk.record() as tape:
        x = tape.watch(X0)
        loss = dnp.sum(dnp.sin(x) * w * w)
    gx, gw = tape.gradient(loss, [x, w])
    assert_close(gx, np.cos(X0) * w.data ** 2, rtol=1e-15)
    assert_close(gw, 2 * np.sin(X0) * w.data, rtol=1e-15)
    assert w.grad is None and w._interp is AMBIENT  # back on the tensors' level
    assert loss.item() == pytest.approx(np.sum(np.sin(X0) * w.data ** 2), rel=1e-15)


def test_record_non_scalar_target_intermediate_source_and_persistent() -> None:
    w = dk.tensor(2.0, requires_grad=True)
    with dk.record(persistent=True) as tape:
        h = w * w  # u = (3w², w⁴)
        u = dnp.stack([h * 3.0, h * h])
    assert tape.gradient(u, [h, w]) == [pytest.approx(3.0 + 2 * 4.0), pytest.approx(6 * 2 + 4 * 8)]
    weighted = tape.gradient(u, w, output_gradients=np.array([1.0, 0.0]))
    assert weighted == pytest.approx(6.0 * 2.0)
    assert tape.gradient(u, w) == pytest.approx(6 * 2 + 4 * 8)  # still there: persistent


def test_record_sees_only_its_block() -> None:
    w = dk.tensor([1.0, 2.0], requires_grad=True)
    before = w * 3.0  # on the tensors' own tape
    with dk.record() as tape:
        inside = dnp.sum(before * w)  # `before` is a constant here
    after = dnp.sum(w * w)
    with pytest.raises(dk.DiffkitError, match="recorded on the tensors' own tape"):
        tape.gradient(after, w)
    assert_close(tape.gradient(inside, w), 3.0 * w.data, rtol=1e-15)


def test_unused_source_gets_zeros() -> None:
    a, b = dk.tensor([1.0, 2.0], requires_grad=True), dk.tensor([5.0], requires_grad=True)
    with dk.record() as tape:
        y = dnp.sum(a * a)
    ga, gb = tape.gradient(y, (a, b))
    assert_close(ga, [2.0, 4.0], rtol=0) and assert_close(gb, [0.0], rtol=0)


def test_mxnet_spelling_fills_grad() -> None:
    x = dk.tensor([1.0, 2.0])
    x.attach_grad()
    assert_close(x.grad, [0.0, 0.0], rtol=0)
    with dk.record():
        y = dnp.sum(x * x * x)
    y.backward()
    assert_close(x.grad, 3 * np.array([1.0, 2.0]) ** 2, rtol=1e-15)


def test_record_errors_are_one_clear_line() -> None:
    w = dk.tensor(1.0, requires_grad=True)
    with dk.record() as tape:
        y = w * w
    tape.gradient(y, w)
    with pytest.raises(dk.DiffkitError, match=r"already called.*persistent=True") as e:
        tape.gradient(y, w)
    assert "\n" not in str(e.value)

    def nested(v):  # noqa: ANN001, ANN202
        with dk.record():
            return v * v
    with pytest.raises(dk.DiffkitError, match="inside another transform"):
        dk.grad(nested)(1.0)
    with dk.record():
        with pytest.raises(dk.DiffkitError, match="inside another transform"):
            dk.record().__enter__()
    with pytest.raises(dk.DiffkitError, match="outside its block"):
        tape.watch(np.ones(2))
    with dk.record() as tape:
        y = w * 2.0
    with pytest.raises(dk.DiffkitError, match="not a value this tape watched"):
        tape.gradient(y, np.ones(2))
    with pytest.raises(dk.DiffkitError, match="already recorded a block"):
        with tape:
            pass


def test_the_bars_bad_inputs_each_give_one_clear_line() -> None:
    """tape.gradient twice without persistent=True, record() inside another transform,
    weights= holding a non-parameter, set_mode("nonsense"): one line each, saying what
    to do."""
    w = dk.tensor(1.0, requires_grad=True)
    with dk.record() as tape:
        y = w * w
    tape.gradient(y, w)

    def nested(v):  # noqa: ANN001, ANN202
        with dk.record():
            return v * v
    cases = [(lambda: tape.gradient(y, w), "persistent=True"),
             (lambda: dk.grad(nested)(1.0), "outermost level: open it outside"),
             (lambda: dk.jvp(nested, (1.0,), (1.0,)), "outermost level"),
             (lambda: dk.grad(lambda x: x * w, None, weights=[np.ones(1)])(1.0),
              "not a parameter; weights= takes a model's parameters"),
             (lambda: dk.set_mode("nonsense"), "the modes are 'eager'")]
    for call, says in cases:
        with pytest.raises(dk.DiffkitError, match=says) as e:
            call()
        assert "\n" not in str(e.value) and len(str(e.value)) < 300
    assert dk.get_mode() == "eager"


# ---------------------------------------------------------------- MindSpore's signature


def linear_problem():  # noqa: ANN201
    rng = np.random.default_rng(3)
    X, t = rng.normal(size=(6, 3)), rng.normal(size=(6, 1))
    model = nn.Linear(3, 1, rng=1)
    return model, X, t


def test_weights_give_closed_form_gradients_in_params_order() -> None:
    model, X, t = linear_problem()
    W, b = model.weight.data, model.bias.data
    r = X @ W.T + b - t  # loss = mean(r²): dW = 2/n rᵀX, db = 2 mean r, dX = 2/n r W

    def forward_fn(X, t):  # noqa: ANN001, ANN202
        out = model(X)
        return nn.mse_loss(out, t), out
    for backend in ("reverse", "forward"):
        (loss, out), (gW, gb) = dk.value_and_grad(forward_fn, None, weights=model.parameters(),
                                                  has_aux=True, backend=backend)(X, t)
        assert_close(gW, 2 * r.T @ X / 6, rtol=1e-14)
        assert_close(gb, [2 * r.mean()], rtol=1e-14)
        assert_close(out, X @ W.T + b, rtol=1e-15) and loss == pytest.approx(np.mean(r ** 2))
    (_, _), (gX, (gW2, _)) = dk.value_and_grad(forward_fn, grad_position=0,
                                               weights=model.trainable_params(), has_aux=True)(X, t)
    assert_close(gX, 2 * r @ W / 6, rtol=1e-14) and assert_close(gW2, gW, rtol=0)
    assert model.weight.grad is None and model.bias.grad is None  # nothing stored
    g_b = dk.grad(lambda X: nn.mse_loss(model(X), t), None, model.bias)(X)  # one tensor: one grad
    assert_close(g_b, [2 * r.mean()], rtol=1e-14)


def test_weights_subset_and_nesting() -> None:
    model, X, t = linear_problem()
    loss, (gb,) = dk.value_and_grad(lambda: nn.mse_loss(model(X), t), None, [model.bias])()
    r = X @ model.weight.data.T + model.bias.data - t
    assert type(gb) is np.ndarray and type(loss) is not dk.Tensor  # the frozen weight: a constant
    assert_close(gb, [2 * r.mean()], rtol=1e-14)
    w = dk.tensor([1.0, 2.0], requires_grad=True)  # d/dx Σ_i d/dw_i (x Σ w³) = 3 Σ w²
    inner = lambda x: dnp.sum(dk.grad(lambda: x * dnp.sum(w ** 3), None, [w])()[0])  # noqa: E731
    assert dk.grad(inner)(2.0) == pytest.approx(15.0)


def test_argnums_and_grad_position_spellings() -> None:
    f = lambda x, y: x * dnp.sin(y)  # noqa: E731
    assert dk.grad(f, grad_position=1)(2.0, 0.0) == pytest.approx(2.0)
    assert dk.grad(f, argnums=1)(2.0, 0.0) == pytest.approx(2.0)
    assert dk.grad(f, (0, 1))(2.0, 0.0) == (pytest.approx(0.0), pytest.approx(2.0))


def test_weights_errors_are_one_clear_line() -> None:
    model, X, t = linear_problem()
    f = lambda X: nn.mse_loss(model(X), t)  # noqa: E731
    frozen = dk.tensor([1.0])
    cases = [(dict(argnums=0, grad_position=0), "say the same thing"),
             (dict(weights=[model.weight, np.ones(3)]), r"weights\[1\] is a ndarray, not a parameter"),
             (dict(weights=[frozen]), "does not require grad, not a parameter"),
             (dict(weights=[model.weight, model.weight]), "twice"),
             (dict(grad_position=None), "nothing to differentiate")]
    for kwargs, message in cases:
        with pytest.raises(dk.DiffkitError, match=message) as e:
            dk.value_and_grad(f, **kwargs)(X)
        assert "\n" not in str(e.value)
    with pytest.raises(dk.DiffkitError, match="out of range"):
        dk.value_and_grad(f, 2, model.parameters())(X)
    with dk.record():
        model(X)  # the block records on the parameters now
        with pytest.raises(dk.DiffkitError, match="in use by a dk.record"):
            dk.value_and_grad(f, None, model.parameters())(X)


# ---------------------------------------------------------------- Accumulator, aliases


def test_accumulator_sums_then_one_step() -> None:
    w = dk.tensor([1.0, 2.0], requires_grad=True)
    opt, acc = optim.SGD([w], lr=0.1), optim.Accumulator()
    with pytest.raises(dk.DiffkitError, match="nothing added yet"):
        acc.value  # noqa: B018
    for scale in (1.0, 2.0, 3.0):
        acc.add((np.array([scale, -scale]),))
    assert acc.count == 3 and len(acc.value) == 1
    assert_close(acc.value[0], [6.0, -6.0], rtol=0)
    opt.step(acc.value)
    assert_close(w.data, [0.4, 2.6], rtol=1e-15)
    with pytest.raises(dk.DiffkitError, match="same parameters each time"):
        acc.add((np.ones(3),))
    acc.reset()
    acc.add({"a": np.ones(2)})
    assert list(acc.value) == ["a"] and acc.count == 1


def test_paddle_and_mindspore_aliases() -> None:
    model = nn.mlp([2, 3, 1], rng=0)
    model[0].bias.requires_grad_(False)
    assert [p.shape for p in model.trainable_params()] == [(3, 2), (1, 3), (1,)]
    opt = optim.SGD(model.trainable_params(), lr=0.1)
    nn.mse_loss(model(np.ones((2, 2))), np.zeros((2, 1))).backward()
    assert model[0].weight.grad is not None
    opt.clear_grad()
    assert all(p.grad is None for p in model.trainable_params())


# ---------------------------------------------------------------- modes


def test_set_mode() -> None:
    assert dk.get_mode() == "eager"
    with pytest.raises(dk.DiffkitError, match="the modes are 'eager'") as e:
        dk.set_mode("nonsense")
    assert "\n" not in str(e.value)
    if "compiled" not in dk.backends():
        with pytest.raises(dk.DiffkitError, match="not available"):
            dk.set_mode("graph")
        assert dk.get_mode() == "eager"
    else:
        try:
            dk.set_mode("graph")
            assert dk.grad(lambda x: x ** 3)(2.0) == pytest.approx(12.0)
        finally:
            dk.set_mode("eager")


# ---------------------------------------------------------------- the vocabulary map


def test_styles_command_and_the_docs_page_agree(capsys) -> None:  # noqa: ANN001
    from diffkit_cli.main import main

    main(["styles", "--format", "markdown"])
    table = capsys.readouterr().out.strip()
    assert table in (ROOT / "docs" / "api-families.md").read_text()  # the page shows it whole
    for name in ("nn.Cell", "nn.Module", "paddle.nn.Layer", "nn.Dense", "nn.SequentialCell",
                 "trainable_params()", "clear_grad()", "zero_grad()", "tape.gradient",
                 "optim.Accumulator", "dk.set_mode('graph')"):
        assert name in table
    main(["styles", "-f", "MindSpore"])
    out = capsys.readouterr().out
    assert "construct(self, x)" in out and "PyTorch" not in out
    assert "weights=params" in out and "tape.gradient" not in out  # the family's spelling
    main(["styles"])
    out = capsys.readouterr().out
    assert all(f in out for f in ("tensor-centred", "functional", "tape-scoped"))
    with pytest.raises(SystemExit) as e:
        main(["styles", "-f", "caffe"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "caffe" in err
