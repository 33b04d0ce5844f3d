"""dk.nn modules inside every functional transform (issue 41, part 1).

A module's parameters are leaves of the tensors' own tape; called on a value of a
functional transform (grad, jvp, vjp, jacobian, hessian, vmap, jit, checkpoint, the
compiled backend) the module computes with their arrays, as constants of that transform:
the results are plain arrays, nothing is recorded on the parameters' tape, no ``.grad``
moves, whatever ran before in the process (one test starts a fresh process). The
parameters are differentiated when they are passed: ``functional_call`` or ``weights=``.

Every derivative here is checked against a reference without diffkit: hand-derived
formulas (the convolution, pooling and batch-norm adjoints and the CNN backprop of
``test_layers_reference.py``, which checks them against finite differences; the others
below, checked here against 4th-order central differences of their plain-numpy forwards).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import assert_close
from test_layers_reference import (_check_vjp_by_fd, bn_eval_vjp, bn_ref, bn_train_vjp, conv_ref,
                                   conv_ref_vjp, cross_entropy_ref, pool_ref, pool_ref_vjp)

import diffkit as dk
import diffkit.numpy as dnp
from diffkit import nn
from diffkit.core import Box

pytestmark = pytest.mark.fused  # (run again with numba's fused kernels: conftest.py)

# =========================================================================== references


def linear_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return x @ w.T + b


def linear_vjp(x: np.ndarray, w: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, ...]:
    """(dx, dW, db) of Σ dy·(x Wᵀ + b)."""
    return dy @ w, dy.T @ x, dy.sum(axis=0)


def layernorm_ref(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    return g * (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps) + b


def layernorm_vjp(x: np.ndarray, g: np.ndarray, dy: np.ndarray, eps: float = 1e-5
                  ) -> tuple[np.ndarray, ...]:
    """dx = (d - mean(d) - x̂ mean(d x̂)) / σ with d = γ dy (means over the last axis),
    dγ = Σ dy x̂, dβ = Σ dy (sums over the rows)."""
    mu = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    xhat, d = (x - mu) / sigma, g * dy
    dx = (d - d.mean(axis=-1, keepdims=True) - xhat * (d * xhat).mean(axis=-1, keepdims=True)) / sigma
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def residual_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return x + np.tanh(x @ w.T + b)


def residual_vjp(x: np.ndarray, w: np.ndarray, b: np.ndarray, dy: np.ndarray
                 ) -> tuple[np.ndarray, ...]:
    """x + tanh(x Wᵀ + b): dz = dy (1 - tanh²), dx = dy + dz W, dW = dzᵀ x, db = Σ dz."""
    dz = dy * (1.0 - np.tanh(x @ w.T + b) ** 2)
    return dy + dz @ w, dz.T @ x, dz.sum(axis=0)


def dropout_mask(p: float, key: int, shape: tuple[int, ...]) -> np.ndarray:
    """Inverted dropout's factors from a seed: keep where a uniform draw is >= p."""
    return (np.random.default_rng(key).random(shape) >= p) / (1.0 - p)


CNN_SHAPE = (1, 8, 8)


def small_cnn() -> nn.Module:
    """Conv2d -> ReLU -> MaxPool2d -> Linear (through Flatten)."""
    return nn.Sequential(nn.Conv2d(1, 4, 3, rng=0), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(36, 3, rng=1))


def cnn_ref(P: dict[str, np.ndarray], x: np.ndarray, labels: np.ndarray
            ) -> tuple[float, dict[str, np.ndarray]]:
    """The small CNN's mean cross-entropy and its gradient in every parameter and in the
    input (``"input"``), by hand-written backprop."""
    z = conv_ref(x, P["0.weight"], P["0.bias"], 1, 0, 1, 1)
    r = np.maximum(z, 0.0)
    q = pool_ref("max", r, 2)
    f = q.reshape(len(x), -1)
    loss, d_logits = cross_entropy_ref(linear_ref(f, P["4.weight"], P["4.bias"]), labels)
    d_f, dw4, db4 = linear_vjp(f, P["4.weight"], d_logits)
    d_z = pool_ref_vjp("max", r, 2, None, 0, d_f.reshape(q.shape)) * (z > 0)
    d_x, dw0, db0 = conv_ref_vjp(x, P["0.weight"], 1, 0, 1, 1, d_z)
    return loss, {"0.weight": dw0, "0.bias": db0, "4.weight": dw4, "4.bias": db4, "input": d_x}


def cnn_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # distinct values (no ties inside a pooling window, no zero before a ReLU)
    x = (rng.permutation(n * 64) * 0.013 - 0.41 * n).reshape((n,) + CNN_SHAPE)
    return x, rng.integers(0, 3, n)


def plain(value: Any) -> bool:
    """A plain numpy result: no box of any level, in any leaf."""
    leaves = value if isinstance(value, (tuple, list)) else [value]
    return all(isinstance(v, (np.ndarray, np.generic, float)) and not isinstance(v, Box)
               for v in leaves)


def untouched(module: nn.Module) -> bool:
    return all(p.grad is None for p in module.parameters())


# =========================================================================== a fresh process

FRESH = """
import json, numpy as np, diffkit as dk, diffkit.numpy as dnp
lin = dk.nn.Linear(4, 2)
conv = dk.nn.Conv2d(1, 2, 3)
out = {}
x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
g = dk.grad(lambda v: dnp.sum(lin(v) ** 2))(x)
W, b = lin.weight.numpy(), lin.bias.numpy()
out["linear"] = [type(g).__name__, float(np.max(np.abs(g - 2 * (x @ W.T + b) @ W)))]
img = np.linspace(-1.0, 1.0, 50).reshape(2, 1, 5, 5)
g = dk.grad(lambda v: dnp.sum(conv(v) ** 2))(img)
out["conv"] = [type(g).__name__, g.tolist(), conv.weight.numpy().tolist(), conv.bias.numpy().tolist()]
out["grads"] = [p.grad is None for p in (*lin.parameters(), *conv.parameters())]
print(json.dumps(out))
"""


def test_a_module_in_grad_from_a_fresh_process() -> None:
    """The issue's example, first thing in a new interpreter: plain arrays, the hand-derived
    gradient, and no .grad filled."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(FRESH)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["linear"][0] == "ndarray" and out["linear"][1] < 1e-12
    kind, g, w, b = out["conv"]
    img = np.linspace(-1.0, 1.0, 50).reshape(2, 1, 5, 5)
    y = conv_ref(img, np.array(w), np.array(b), 1, 0, 1, 1)
    assert kind == "ndarray"
    assert_close(np.array(g), conv_ref_vjp(img, np.array(w), 1, 0, 1, 1, 2 * y)[0], rtol=1e-10)
    assert all(out["grads"])


# =========================================================================== every transform


def _linear_case() -> tuple[nn.Module, np.ndarray, Callable, Callable]:
    """Linear(4, 2), x (3, 4); f(x) = module(x) and L = Σ f²: (module, x, f_ref, dL_ref)."""
    lin = nn.Linear(4, 2, rng=3)
    W, b = lin.weight.numpy().copy(), lin.bias.numpy().copy()
    x = np.linspace(-1.0, 1.5, 12).reshape(3, 4)
    return lin, x, lambda z: linear_ref(z, W, b), lambda z: linear_vjp(z, W, 2 * linear_ref(z, W, b))[0]


def _conv_case() -> tuple[nn.Module, np.ndarray, Callable, Callable]:
    conv = nn.Conv2d(1, 2, 2, padding=1, rng=4)
    W, b = conv.weight.numpy().copy(), conv.bias.numpy().copy()
    x = np.linspace(-1.0, 1.0, 9).reshape(1, 1, 3, 3)

    def f_ref(z: np.ndarray) -> np.ndarray:
        return conv_ref(z, W, b, 1, 1, 1, 1)
    return conv, x, f_ref, lambda z: conv_ref_vjp(z, W, 1, 1, 1, 1, 2 * f_ref(z))[0]


CASES = {"Linear": _linear_case, "Conv2d": _conv_case}

TRANSFORMS = ["grad", "grad-forward", "grad-compiled", "value_and_grad", "jvp", "vjp", "jacobian",
              "jacfwd", "hessian", "hessian-reverse", "vmap", "vmap-grad", "jit", "checkpoint"]


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("case", list(CASES))
def test_a_module_inside_every_transform(case: str, transform: str) -> None:
    module, x, f_ref, grad_ref = CASES[case]()
    f = lambda z: module(z)  # noqa: E731
    L = lambda z: dnp.sum(module(z) ** 2)  # noqa: E731
    y = f_ref(x)
    n_in, n_out = x.size, y.size
    # the Jacobian of the (affine) layer, column by column: f_ref(e_k) - f_ref(0)
    J = np.stack([(f_ref(e.reshape(x.shape)) - f_ref(np.zeros_like(x))).ravel()
                  for e in np.eye(n_in)], axis=1)
    t = np.cos(np.arange(n_in)).reshape(x.shape)  # a direction
    if transform in ("grad", "grad-forward", "grad-compiled"):
        backend = {"grad": None, "grad-forward": "forward", "grad-compiled": "compiled"}[transform]
        got, want = dk.grad(L, backend=backend)(x), grad_ref(x)
    elif transform == "value_and_grad":
        got, want = dk.value_and_grad(L)(x), (np.sum(y ** 2), grad_ref(x))
    elif transform == "jvp":
        got, want = dk.jvp(f, (x,), (t,)), (y, (J @ t.ravel()).reshape(y.shape))
    elif transform == "vjp":
        u = np.sin(np.arange(n_out)).reshape(y.shape)
        value, pull = dk.vjp(f, x)
        got, want = (value, *pull(u)), (y, (u.ravel() @ J).reshape(x.shape))
    elif transform in ("jacobian", "jacfwd"):
        got = (dk.jacobian if transform == "jacobian" else dk.jacfwd)(f)(x)
        want = J.reshape(y.shape + x.shape)
    elif transform in ("hessian", "hessian-reverse"):
        got = dk.hessian(L, backend=None if transform == "hessian" else "reverse")(x)
        want = (2 * J.T @ J).reshape(x.shape + x.shape)  # L = |J x + c|²
    elif transform == "vmap":  # one example at a time: module(x[None])[0]
        got = dk.vmap(lambda v: module(v[None])[0])(x)
        want = y
    elif transform == "vmap-grad":
        got = dk.vmap(dk.grad(lambda v: dnp.sum(module(v[None]) ** 2)))(x)
        want = np.stack([grad_ref(x[i:i + 1])[0] for i in range(len(x))])
    elif transform == "jit":
        got, want = dk.jit(L)(x), np.sum(y ** 2)
    else:  # checkpoint, inside grad
        got, want = dk.grad(lambda z: dnp.sum(dk.checkpoint(module)(z) ** 2))(x), grad_ref(x)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert plain(got), [type(g) for g in got]
    for g, w in zip(got, want):
        assert_close(g, w, rtol=1e-10)
    assert untouched(module)


@pytest.mark.parametrize("backend", ["numeric", "symbolic"])
def test_a_module_under_the_other_backends(backend: str) -> None:
    module, x, _, grad_ref = _linear_case()
    got = dk.grad(lambda z: dnp.sum(module(z) ** 2), backend=backend)(x)
    assert plain(got) and untouched(module)
    assert_close(got, grad_ref(x), rtol=1e-6 if backend == "numeric" else 1e-10)


# =========================================================================== process state


def test_the_answer_does_not_depend_on_what_ran_before() -> None:
    """What once decided the outcome (the parameters' tape recording or not, a dk.record
    block, graph mode, earlier backward passes, weights=) no longer matters."""
    module, x, _, grad_ref = _linear_case()
    L = lambda z: dnp.sum(module(z) ** 2)  # noqa: E731
    want = grad_ref(x)

    def check() -> None:
        g = dk.grad(L)(x)
        assert plain(g)
        assert_close(g, want, rtol=1e-12)

    check()
    with dk.no_grad():
        check()
    with dk.record() as tape:
        check()
        loss = dnp.sum(module(x))  # the block's own recording still sees the parameters
    assert_close(tape.gradient(loss, module.weight), np.ones((3, 2)).T @ x, rtol=1e-12)
    dnp.sum(module(x)).backward()  # tensor style: .grad filled ...
    filled = module.weight.grad.copy()
    check()
    assert_close(module.weight.grad, filled, rtol=0)  # ... and left alone by dk.grad
    module.zero_grad()
    dk.grad(lambda z: dnp.sum(module(z)), weights=module.parameters())(x)
    check()
    dk.set_mode("graph")
    try:
        check()  # (the compiled backend, the default in graph mode)
        dnp.sum(module(x)).backward()  # graph mode's compiled node on the tape
    finally:
        dk.set_mode("eager")
    check()


def test_the_tensor_style_still_records_the_parameters() -> None:
    """Outside a functional transform nothing changes: backward() (through a checkpoint,
    whose replay re-enters the tensors' own tape, too) fills .grad."""
    module, x, _, _ = _linear_case()
    W, b = module.weight.numpy(), module.bias.numpy()
    dy = 2 * linear_ref(x, W, b)
    for call in (module, dk.checkpoint(module)):
        module.zero_grad()
        dnp.sum(call(x) ** 2).backward()
        _, dW, db = linear_vjp(x, W, dy)
        assert_close(module.weight.grad, dW, rtol=1e-12)
        assert_close(module.bias.grad, db, rtol=1e-12)


def test_batchnorm_keeps_no_traced_value_after_a_compiled_call() -> None:
    """Training-mode batch norm updated its running statistics with whatever the batch
    statistics were: a compiled trace left an abstract value there, and every later call
    failed. They move only with numbers now, one per channel."""
    model = nn.Sequential(nn.Conv2d(1, 2, 3, rng=0), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                          nn.Linear(72, 2, rng=1))
    x, _ = cnn_data(3, seed=5)
    dk.grad(lambda z: dnp.sum(model(z) ** 2), backend="compiled")(x)
    dk.jit(lambda z: dnp.sum(model(z)))(x)
    dk.vmap(lambda v: model(v[None])[0])(x)
    assert type(model[1].running_mean) is np.ndarray and model[1].running_mean.shape == (2,)
    assert np.all(model[1].running_mean == 0.0)  # (untouched so far)
    dk.grad(lambda z: dnp.sum(model(z) ** 2))(x)  # eager: real numbers, one update
    z1 = conv_ref(x, model[0].weight.numpy(), model[0].bias.numpy(), 1, 0, 1, 1)
    assert_close(model[1].running_mean, 0.1 * z1.mean(axis=(0, 2, 3)), rtol=1e-12)
    dk.set_mode("graph")
    try:
        nn.mse_loss(model(x), np.zeros((3, 2))).backward()  # graph mode's compiled node
    finally:
        dk.set_mode("eager")
    model.eval()
    assert plain(dk.grad(lambda z: dnp.sum(model(z) ** 2), backend="compiled")(x))


# =========================================================================== the small CNN


def test_cnn_input_gradient_on_every_backend() -> None:
    model = small_cnn()
    x, labels = cnn_data(4, seed=1)
    P = model.state_dict()
    loss, G = cnn_ref(P, x, labels)
    # the hand-written backprop is the derivative of the hand-written forward
    t = np.sin(np.arange(x.size)).reshape(x.shape)
    fd = (8 * (cnn_ref(P, x + 1e-4 * t, labels)[0] - cnn_ref(P, x - 1e-4 * t, labels)[0])
          - (cnn_ref(P, x + 2e-4 * t, labels)[0] - cnn_ref(P, x - 2e-4 * t, labels)[0])) / 12e-4
    assert_close(np.sum(G["input"] * t), fd, rtol=1e-8)

    x_t = dk.tensor(x, requires_grad=True)  # tensor style
    nn.cross_entropy(model(x_t), labels).backward()
    assert_close(x_t.grad, G["input"], rtol=1e-10)
    model.zero_grad()
    for backend in ("reverse", "forward", "compiled"):
        g = dk.grad(lambda z: nn.cross_entropy(model(z), labels), backend=backend)(x)
        assert plain(g), backend
        assert_close(g, G["input"], rtol=1e-10)
        assert_close(g, x_t.grad, rtol=1e-12)
    assert untouched(model)


@pytest.mark.parametrize("backend", ["reverse", "forward", "compiled"])
def test_per_example_gradients_of_a_cnn(backend: str) -> None:
    """vmap(grad) over functional_call: 32 examples' gradients in one call, equal to 32
    backward() calls (1e-12) and to the hand-written backprop of each example (1e-10)."""
    model = small_cnn()
    X, y = cnn_data(32, seed=2)
    params = model.parameters_dict()

    def loss(p: dict[str, Any], x: Any, t: Any) -> Any:
        return nn.cross_entropy(nn.functional_call(model, p, x[None]), t[None])

    per = dk.vmap(dk.grad(loss, backend=backend), in_axes=(None, 0, 0))(params, X, y)
    assert set(per) == set(params) and all(plain(v) for v in per.values())
    assert untouched(model)
    for i in range(32):
        model.zero_grad()
        nn.cross_entropy(model(X[i:i + 1]), y[i:i + 1]).backward()
        _, G = cnn_ref(model.state_dict(), X[i:i + 1], y[i:i + 1])
        for name, p in model.named_parameters():
            assert per[name].shape == (32,) + p.data.shape
            assert_close(per[name][i], p.grad, rtol=1e-12, atol=1e-12)
            assert_close(per[name][i], G[name], rtol=1e-10)


# =========================================================================== every layer, three styles


def _layers() -> dict[str, tuple[nn.Module, np.ndarray, Callable, Callable]]:
    """name: (module, x, forward reference of (x, *params), vjp reference (x, *params, dy)
    -> (dx, *dparams)), parameters in named_parameters() order."""
    rng = np.random.default_rng(9)
    out: dict[str, tuple] = {}
    out["Linear"] = (nn.Linear(4, 3, rng=1), rng.standard_normal((5, 4)),
                     linear_ref, lambda x, w, b, dy: linear_vjp(x, w, dy))
    for name, cls, shape, k in [("Conv1d", nn.Conv1d, (2, 2, 7), 3), ("Conv2d", nn.Conv2d, (2, 2, 5, 4), 2)]:
        conv = cls(2, 4, k, stride=2, padding=1, dilation=1, groups=2, rng=2)
        out[name] = (conv, rng.standard_normal(shape),
                     lambda x, w, b: conv_ref(x, w, b, 2, 1, 1, 2),
                     lambda x, w, b, dy: conv_ref_vjp(x, w, 2, 1, 1, 2, dy))
    grid = (rng.permutation(2 * 3 * 6 * 5) * 0.05 - 4.0).reshape(2, 3, 6, 5)  # no ties
    out["MaxPool2d"] = (nn.MaxPool2d(3, 2, 1), grid, lambda x: pool_ref("max", x, 3, 2, 1),
                        lambda x, dy: (pool_ref_vjp("max", x, 3, 2, 1, dy),))
    out["AvgPool2d"] = (nn.AvgPool2d(2, 1, 1), grid, lambda x: pool_ref("avg", x, 2, 1, 1),
                        lambda x, dy: (pool_ref_vjp("avg", x, 2, 1, 1, dy),))
    bn_x = rng.standard_normal((4, 3, 3, 2)) * 1.5 + 0.5
    for mode in ("train", "eval"):
        bn = nn.BatchNorm2d(3)
        bn.weight = dk.tensor([0.5, 1.5, -1.0], requires_grad=True)
        bn.bias = dk.tensor([0.1, 0.0, -0.3], requires_grad=True)
        if mode == "eval":
            mean, var = np.array([0.2, -0.1, 0.3]), np.array([1.5, 0.7, 2.0])
            bn.running_mean, bn.running_var = mean.copy(), var.copy()
            bn.eval()
            out["BatchNorm2d-eval"] = (bn, bn_x, lambda x, g, b: bn_ref(x, g, b, 1e-5, mean, var),
                                       lambda x, g, b, dy: bn_eval_vjp(x, g, 1e-5, mean, var, dy))
        else:
            out["BatchNorm2d-train"] = (bn, bn_x, bn_ref, lambda x, g, b, dy: bn_train_vjp(x, g, 1e-5, dy))
    bn1 = nn.BatchNorm1d(3)
    out["BatchNorm1d-train"] = (bn1, rng.standard_normal((6, 3)) + 1.0, bn_ref,
                                lambda x, g, b, dy: bn_train_vjp(x, g, 1e-5, dy))
    ln = nn.LayerNorm(5)
    ln.weight = dk.tensor(rng.standard_normal(5), requires_grad=True)
    ln.bias = dk.tensor(rng.standard_normal(5), requires_grad=True)
    out["LayerNorm"] = (ln, rng.standard_normal((4, 5)) * 2.0, layernorm_ref,
                        lambda x, g, b, dy: layernorm_vjp(x, g, dy))
    out["Residual"] = (nn.Residual(nn.Sequential(nn.Linear(4, 4, rng=5), nn.Tanh())),
                       rng.standard_normal((3, 4)), residual_ref, residual_vjp)
    drop_x = rng.standard_normal((4, 6))
    mask = dropout_mask(0.3, 7, drop_x.shape)
    out["Dropout"] = (nn.Dropout(0.3, key=7), drop_x, lambda x: x * mask,
                      lambda x, dy: (dy * mask,))
    out["Dropout-eval"] = (nn.Dropout(0.3, key=7).eval(), drop_x, lambda x: x,
                           lambda x, dy: (dy,))
    return out


LAYERS = list(_layers())


@pytest.mark.parametrize("name", LAYERS)
def test_every_layer_in_three_styles(name: str) -> None:
    """Tensor style, functional_call and weights= give the same gradients (1e-12), equal
    to the hand-derived reference (1e-10), itself checked against central differences;
    dk.grad of the input alone (the parameters as constants) gives the input's."""
    module, x, f_ref, vjp_ref = _layers()[name]
    names = [n for n, _ in module.named_parameters()]
    values = [p.numpy().copy() for p in module.parameters()]
    y = f_ref(x, *values)
    dy = np.cos(np.arange(y.size) * 0.7).reshape(y.shape)
    want = dict(zip(["input", *names], vjp_ref(x, *values, dy)))
    if name in ("Linear", "LayerNorm", "Residual", "Dropout"):  # the references written here
        _check_vjp_by_fd(f_ref, [x, *values], [want[k] for k in ["input", *names]], dy, seed=3)

    x_t = dk.tensor(x, requires_grad=True)  # tensor style
    out = module(x_t)
    assert_close(out.numpy(), y, rtol=1e-12)
    dnp.sum(out * dy).backward()
    tensor_style = {"input": np.array(x_t.grad)} | {n: np.array(p.grad) for n, p in module.named_parameters()}
    module.zero_grad()

    def loss(params: dict[str, Any], z: Any) -> Any:  # functional_call
        return dnp.sum(nn.functional_call(module, params, z) * dy)
    g_p, g_x = dk.grad(loss, argnums=(0, 1))(module.parameters_dict(), x)
    functional = {"input": g_x, **g_p}

    only_x = dk.grad(lambda z: dnp.sum(module(z) * dy))(x)  # the parameters as constants
    styles = {"tensor": tensor_style, "functional_call": functional}
    if names:  # MindSpore's weights=: (input gradient, parameters' gradients)
        g_x, g_w = dk.grad(lambda z: dnp.sum(module(z) * dy), weights=module.parameters())(x)
        styles["weights="] = {"input": g_x, **dict(zip(names, g_w))}
    assert untouched(module)
    for style, grads in styles.items():
        assert set(grads) == {"input", *names}, style
        for k in grads:
            assert plain(grads[k]), (style, k)
            assert_close(grads[k], want[k], rtol=1e-10)
            assert_close(grads[k], tensor_style[k], rtol=1e-12)
    assert plain(only_x)
    assert_close(only_x, want["input"], rtol=1e-10)


def test_dropout_masks() -> None:
    drop = nn.Dropout(0.25, key=11)
    x = np.ones((50, 40))
    a, b = drop(x), drop(x)
    assert np.array_equal(a, b)  # a fixed key: one mask
    assert np.array_equal(a, dropout_mask(0.25, 11, x.shape))
    assert abs(np.mean(a == 0.0) - 0.25) < 0.03 and set(np.unique(a)) == {0.0, 1 / 0.75}
    assert not np.array_equal(drop(x, key=12), a)  # a key per call overrides it
    fresh = nn.Dropout(0.25, key=np.random.default_rng(0))
    assert not np.array_equal(fresh(x), fresh(x))  # a generator: a new mask each call
    assert np.array_equal(nn.Dropout(1.0)(x), np.zeros_like(x))
    assert np.array_equal(nn.Dropout(0.25).eval()(x), x)
    with pytest.raises(dk.DiffkitError, match="probability"):
        nn.Dropout(1.5)


# =========================================================================== errors name diffkit's code


def _from_diffkit(where: types.ModuleType, qualname: str) -> Callable:
    """``forward(self, x)`` that converts ``x`` with numpy, compiled as if it were written
    in ``where`` (a diffkit module) under ``qualname``: a stand-in for a bug of ours."""
    source = "def forward(self, x):\n    return np.asarray(x) @ np.ones((np.shape(x)[-1], 1))\n"
    namespace: dict[str, Any] = {"__name__": where.__name__, "np": np}
    exec(compile(source, where.__file__, "exec"), namespace)  # noqa: S102
    fn = namespace["forward"]
    fn.__code__ = fn.__code__.replace(co_qualname=qualname)
    return fn


@pytest.mark.parametrize("cls,qualname,named", [
    (nn.Linear, "Linear.forward", "dk.nn.Linear.forward"),
    (nn.Conv2d, "_ConvNd.forward", "dk.nn.Conv2d.forward"),  # the class called, not the base
])
def test_a_conversion_inside_diffkit_names_the_diffkit_function(monkeypatch, cls: type,
                                                                qualname: str, named: str) -> None:
    from diffkit.nn import conv, modules

    home = modules if cls is nn.Linear else conv
    owner = cls if cls is nn.Linear else conv._ConvNd
    monkeypatch.setattr(owner, "forward", _from_diffkit(home, qualname))
    module = cls(1, 1, 1) if cls is nn.Conv2d else cls(3, 1)
    x = np.ones((2, 1, 1, 3)) if cls is nn.Conv2d else np.ones((2, 3))
    with pytest.raises(TypeError) as info:
        dk.grad(lambda z: dnp.sum(module(z)))(x)
    msg = str(info.value)
    assert msg.startswith(f"{named} converted a value being differentiated to a plain numpy "
                          "array"), msg
    assert "not yours" in msg and "\n" not in msg
    # the user's own numpy call is still the user's
    with pytest.raises(TypeError, match="this numpy call would convert"):
        dk.grad(lambda z: np.asarray(z).sum())(x)


# =========================================================================== PyTorch, a second reference


@pytest.mark.torch
def test_per_example_and_input_gradients_against_torch_func() -> None:
    """torch.func's recipe (vmap of grad of functional_call) on the same CNN in float64:
    every example's parameter gradients, and the batch loss's input gradient."""
    from conftest import needs

    torch = needs("torch")
    from torch.func import functional_call, grad, vmap

    model = small_cnn()
    X, y = cnn_data(32, seed=3)
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                 torch.nn.Flatten(), torch.nn.Linear(36, 3)).double()
    params = {n: torch.tensor(v) for n, v in model.state_dict().items()}

    def their_loss(p: dict, x: Any, t: Any) -> Any:
        return torch.nn.functional.cross_entropy(functional_call(theirs, p, (x[None],)), t[None])
    want = vmap(grad(their_loss), in_dims=(None, 0, 0))(params, torch.tensor(X), torch.tensor(y))

    def loss(p: dict[str, Any], x: Any, t: Any) -> Any:
        return nn.cross_entropy(nn.functional_call(model, p, x[None]), t[None])
    got = dk.vmap(dk.grad(loss), in_axes=(None, 0, 0))(model.parameters_dict(), X, y)
    for name in params:
        assert_close(got[name], want[name].numpy(), rtol=1e-10)

    x_t = torch.tensor(X, requires_grad=True)
    torch.nn.functional.cross_entropy(functional_call(theirs, params, (x_t,)), torch.tensor(y)).backward()
    for backend in ("reverse", "forward", "compiled"):
        g = dk.grad(lambda z: nn.cross_entropy(model(z), y), backend=backend)(X)
        assert_close(g, x_t.grad.numpy(), rtol=1e-10)
