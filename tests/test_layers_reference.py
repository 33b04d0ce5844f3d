"""dk.nn's convolution, pooling and batch-norm layers, and a small CNN's SGD steps, against
plain-numpy references written in this file: no peer library (no torch, no jax) and no
diffkit on the reference side, so these checks stand when no peer is installed.

* The references' forwards are the definitions written out directly (a loop over output
  positions reading one window of an explicitly padded input; tap ``t`` of output ``i``
  reads padded index ``i * stride + t * dilation``), anchored by hand-computed numbers.
* Their backwards are hand-derived (the adjoint loops of the convolution and pooling,
  the batch-norm formula ``dx = γ/(Mσ) (M dy - Σdy - x̂ Σ dy x̂)``), each checked against
  4th-order central differences of the plain-numpy forward (float64, 1e-8).
* diffkit's outputs and gradients (input and every parameter, tensor style
  ``loss.backward()`` and functional style ``dk.grad`` of ``functional_call``) must equal
  the references to 1e-12 (values) and 1e-10 (gradients), relative.
* A small CNN (Conv2d, BatchNorm2d, ReLU, MaxPool2d, Conv2d, ReLU, AvgPool2d, Flatten,
  Linear, cross-entropy) takes 3 SGD steps in both styles and in a hand-written numpy
  forward + backprop: the parameters agree to 1e-10 after every step.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, central_jvp

import diffkit as dk
import diffkit.numpy as dnp
from diffkit import nn, optim

# =========================================================================== plain-numpy references


def _pad(x: np.ndarray, padding: Sequence[int], fill: float = 0.0) -> np.ndarray:
    """``x`` (N, C, *spatial) with ``padding[i]`` entries of ``fill`` on both sides of axis 2+i."""
    shape = x.shape[:2] + tuple(s + 2 * p for s, p in zip(x.shape[2:], padding))
    out = np.full(shape, fill, dtype=float)
    out[(slice(None), slice(None)) + tuple(slice(p, p + s) for s, p in zip(x.shape[2:], padding))] = x
    return out


def _crop(xp: np.ndarray, padding: Sequence[int]) -> np.ndarray:
    return xp[(slice(None), slice(None)) + tuple(slice(p, s - p) for s, p in zip(xp.shape[2:], padding))]


def _out_shape(spatial: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...]:
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))


def _window(pos: tuple[int, ...], kernel: Sequence[int], stride: Sequence[int],
            dilation: Sequence[int]) -> tuple[slice, ...]:
    """The padded-input indices output position ``pos`` reads: ``pos*s + t*d``, t < k."""
    return tuple(slice(i * s, i * s + d * (k - 1) + 1, d)
                 for i, k, s, d in zip(pos, kernel, stride, dilation))


def _tup(v: int | Sequence[int], n: int) -> tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


def conv_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: Any, padding: Any,
             dilation: Any, groups: int) -> np.ndarray:
    """Direct cross-correlation (PyTorch's convolution) of x (N, C, *spatial) with weight
    w (O, C/groups, *kernel): y[n, o, pos] = b[o] + Σ_{c, t} xp[n, g·C/G + c, pos·s + t·d] w[o, c, t]
    with g = o // (O/G)."""
    n = x.ndim - 2
    stride, padding, dilation = _tup(stride, n), _tup(padding, n), _tup(dilation, n)
    N, C = x.shape[:2]
    O, kernel = w.shape[0], w.shape[2:]
    cg, og = C // groups, O // groups
    assert w.shape[1] == cg and C % groups == 0 and O % groups == 0
    xp = _pad(x, padding)
    out = _out_shape(x.shape[2:], kernel, stride, padding, dilation)
    y = np.zeros((N, O) + out)
    for o in range(O):
        g = o // og
        for pos in np.ndindex(*out):
            win = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + _window(pos, kernel, stride, dilation)]
            y[(slice(None), o) + pos] = (win * w[o]).reshape(N, -1).sum(axis=1) + (0.0 if b is None else b[o])
    return y


def conv_ref_vjp(x: np.ndarray, w: np.ndarray, stride: Any, padding: Any, dilation: Any,
                 groups: int, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dw, db) of Σ dy·conv_ref: the adjoint of the loop above, window by window."""
    n = x.ndim - 2
    stride, padding, dilation = _tup(stride, n), _tup(padding, n), _tup(dilation, n)
    C, O, kernel = x.shape[1], w.shape[0], w.shape[2:]
    cg, og = C // groups, O // groups
    xp = _pad(x, padding)
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for o in range(O):
        g = o // og
        for pos in np.ndindex(*dy.shape[2:]):
            idx = (slice(None), slice(g * cg, (g + 1) * cg)) + _window(pos, kernel, stride, dilation)
            d = dy[(slice(None), o) + pos]  # (N,)
            dxp[idx] += d.reshape((-1,) + (1,) * w[o].ndim) * w[o]
            dw[o] += np.tensordot(d, xp[idx], axes=(0, 0))
    return _crop(dxp, padding), dw, dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))


def pool_ref(kind: str, x: np.ndarray, kernel: Any, stride: Any = None, padding: Any = 0) -> np.ndarray:
    """Max (padding -inf) or mean (zero padding counted) of each window of x (N, C, H, W)."""
    kernel = _tup(kernel, 2)
    stride, padding = kernel if stride is None else _tup(stride, 2), _tup(padding, 2)
    xp = _pad(x, padding, -np.inf if kind == "max" else 0.0)
    out = _out_shape(x.shape[2:], kernel, stride, padding, (1, 1))
    y = np.zeros(x.shape[:2] + out)
    for pos in np.ndindex(*out):
        win = xp[(slice(None), slice(None)) + _window(pos, kernel, stride, (1, 1))]
        y[(slice(None), slice(None)) + pos] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return y


def pool_ref_vjp(kind: str, x: np.ndarray, kernel: Any, stride: Any, padding: Any,
                 dy: np.ndarray) -> np.ndarray:
    """dx of Σ dy·pool_ref: max pooling routes each dy to its window's (first) argmax; mean
    pooling spreads it evenly over the kh·kw taps (padding included, then cropped)."""
    kernel = _tup(kernel, 2)
    stride, padding = kernel if stride is None else _tup(stride, 2), _tup(padding, 2)
    xp = _pad(x, padding, -np.inf if kind == "max" else 0.0)
    dxp = np.zeros_like(xp)
    N, C = x.shape[:2]
    nn_, cc = np.meshgrid(np.arange(N), np.arange(C), indexing="ij")
    for pos in np.ndindex(*dy.shape[2:]):
        idx = (slice(None), slice(None)) + _window(pos, kernel, stride, (1, 1))
        d = dy[(slice(None), slice(None)) + pos]  # (N, C)
        if kind == "max":
            flat = xp[idx].reshape(N, C, -1)
            route = np.zeros_like(flat)
            route[nn_, cc, flat.argmax(axis=-1)] = d
            dxp[idx] += route.reshape(xp[idx].shape)
        else:
            dxp[idx] += d[:, :, None, None] / (kernel[0] * kernel[1])
    return _crop(dxp, padding)


def _bn_axes(x: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (0,) + tuple(range(2, x.ndim)), (1, -1) + (1,) * (x.ndim - 2)


def bn_ref(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5,
           mean: np.ndarray | None = None, var: np.ndarray | None = None) -> np.ndarray:
    """γ (x - μ)/sqrt(σ² + eps) + β per channel (axis 1); μ, σ² the batch's mean and biased
    variance over every other axis unless given (evaluation: the running ones)."""
    axes, at = _bn_axes(x)
    if mean is None:
        mean = x.mean(axis=axes)
        var = ((x - mean.reshape(at)) ** 2).mean(axis=axes)
    xhat = (x - mean.reshape(at)) / np.sqrt(var.reshape(at) + eps)
    return gamma.reshape(at) * xhat + beta.reshape(at)


def bn_train_vjp(x: np.ndarray, gamma: np.ndarray, eps: float, dy: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dγ, dβ) with the batch statistics depending on x (hand-derived):
    dx = γ/(Mσ) (M dy - Σdy - x̂ Σ(dy x̂)), dγ = Σ dy x̂, dβ = Σ dy (sums per channel over
    its M = x.size / C entries, σ = sqrt(var + eps))."""
    axes, at = _bn_axes(x)
    M = x.size // x.shape[1]
    mean = x.mean(axis=axes)
    sigma = np.sqrt(((x - mean.reshape(at)) ** 2).mean(axis=axes) + eps)
    xhat = (x - mean.reshape(at)) / sigma.reshape(at)
    s_dy, s_dy_xhat = dy.sum(axis=axes), (dy * xhat).sum(axis=axes)
    dx = (gamma / (M * sigma)).reshape(at) * (M * dy - s_dy.reshape(at) - xhat * s_dy_xhat.reshape(at))
    return dx, s_dy_xhat, s_dy


def bn_eval_vjp(x: np.ndarray, gamma: np.ndarray, eps: float, mean: np.ndarray, var: np.ndarray,
                dy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    axes, at = _bn_axes(x)
    xhat = (x - mean.reshape(at)) / np.sqrt(var.reshape(at) + eps)
    return dy * (gamma / np.sqrt(var + eps)).reshape(at), (dy * xhat).sum(axis=axes), dy.sum(axis=axes)


def cross_entropy_ref(logits: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean softmax cross-entropy and its gradient (softmax - onehot) / N."""
    N = len(labels)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_z = np.log(np.exp(shifted).sum(axis=1))
    loss = float(np.mean(log_z - shifted[np.arange(N), labels]))
    d = np.exp(shifted - log_z[:, None])
    d[np.arange(N), labels] -= 1.0
    return loss, d / N


# =========================================================================== helpers


def _check_vjp_by_fd(f: Callable[..., np.ndarray], args: Sequence[np.ndarray],
                     grads: Sequence[np.ndarray], dy: np.ndarray, seed: int, h: float = 1e-3,
                     directions: int = 2) -> None:
    """Each ``grads[k]`` is d Σ(dy·f(*args)) / d args[k]: its pairing with random directions
    equals the 4th-order central difference of the plain-numpy forward (1e-8)."""
    rng = np.random.default_rng(seed)
    for k, (a, g) in enumerate(zip(args, grads)):
        assert np.shape(g) == np.shape(a)
        for _ in range(directions):
            t = [np.zeros_like(b) for b in args]
            t[k] = rng.standard_normal(np.shape(a))
            fd = central_jvp(lambda *z: np.sum(f(*z) * dy), args, t, h=h)
            assert_close(np.sum(g * t[k]), fd, rtol=1e-8)


def _check_both_styles(module: nn.Module, x: np.ndarray, dy: np.ndarray, want_out: np.ndarray,
                       want: dict[str, np.ndarray]) -> None:
    """module(x) equals want_out (1e-12) and d Σ(dy·module(x)) / d(input, each parameter)
    equals ``want`` (1e-10): tensor style (.grad) and functional style (dk.grad)."""
    names = [n for n, _ in module.named_parameters()]
    assert set(want) == {"input", *names}
    x_t = dk.tensor(x, requires_grad=True)  # tensor style
    out = module(x_t)
    assert_close(out.numpy(), want_out, rtol=1e-12)
    dnp.sum(out * dy).backward()
    assert_close(x_t.grad, want["input"], rtol=1e-10)
    for n, p in module.named_parameters():
        assert_close(p.grad, want[n], rtol=1e-10)

    assert_close(np.asarray(nn.functional_call(module, module.parameters_dict(), x)), want_out,
                 rtol=1e-12)

    def loss(params: dict[str, Any], inp: Any) -> Any:  # functional style
        return dnp.sum(nn.functional_call(module, params, inp) * dy)
    g_params, g_x = dk.grad(loss, argnums=(0, 1))(module.parameters_dict(), x)
    assert_close(g_x, want["input"], rtol=1e-10)
    assert set(g_params) == set(names)
    for n in names:
        assert_close(g_params[n], want[n], rtol=1e-10)


# =========================================================================== the references themselves


def test_references_on_hand_computed_numbers() -> None:
    """The plain-numpy references on cases small enough to work out by hand."""
    x = np.arange(1.0, 8.0).reshape(1, 1, 7)  # 1..7
    # dilation 2, kernel [1, 0, -1]: y_i = x_i - x_{i+4}, i = 0, 1, 2
    assert conv_ref(x, np.array([[[1.0, 0.0, -1.0]]]), None, 1, 0, 2, 1).tolist() == [[[-4.0, -4.0, -4.0]]]
    # stride 2, padding 1, kernel [1, 2]: padded 0 1 2 3 4 5 6 7 0 -> windows at 0, 2, 4, 6, plus bias
    assert conv_ref(x, np.array([[[1.0, 2.0]]]), np.array([0.5]), 2, 1, 1, 1).tolist() == \
        [[[2.5, 8.5, 14.5, 20.5]]]
    # groups 2: output 0 sees channel 0 only, output 1 channel 1 only (kernel 1)
    x2 = np.array([[[1.0, 2.0], [10.0, 20.0]]])
    assert conv_ref(x2, np.array([[[3.0]], [[-1.0]]]), None, 1, 0, 1, 2).tolist() == \
        [[[3.0, 6.0], [-10.0, -20.0]]]
    # 2-d, dilation (2, 1): taps (0,0), (0,1), (2,0), (2,1) of a 3x3 image, kernel of ones
    img = np.arange(9.0).reshape(1, 1, 3, 3)
    assert conv_ref(img, np.ones((1, 1, 2, 2)), None, 1, 0, (2, 1), 1).tolist() == \
        [[[[0 + 1 + 6 + 7, 1 + 2 + 7 + 8]]]]
    # pooling of 0..15 in a 4x4 grid
    grid = np.arange(16.0).reshape(1, 1, 4, 4)
    assert pool_ref("max", grid, 2).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert pool_ref("avg", grid, 2).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    # padding 1, kernel 3, stride 2 on 0..15: avg counts the zeros (corner window 0+1+4+5 over 9)
    assert pool_ref("avg", grid, 3, 2, 1)[0, 0, 0, 0] == pytest.approx(10.0 / 9.0, rel=1e-15)
    assert pool_ref("max", -grid - 1, 3, 2, 1)[0, 0, 0, 0] == -1.0  # -inf padding never wins
    assert pool_ref_vjp("max", grid, 2, 2, 0, np.ones((1, 1, 2, 2)))[0, 0].tolist() == \
        [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]]
    # batch norm of one channel [1, 3]: mean 2, variance 1
    y = bn_ref(np.array([[1.0], [3.0]]), np.array([2.0]), np.array([0.5]), eps=0.0)
    assert y.tolist() == [[-1.5], [2.5]]


# =========================================================================== convolutions

CONV2D = [  # (in, out, kernel, stride, padding, dilation, groups, bias, input shape)
    (3, 4, 3, 1, 0, 1, 1, True, (2, 3, 6, 5)),
    (3, 4, (3, 2), (2, 1), (1, 2), (1, 2), 1, True, (2, 3, 7, 6)),
    (4, 6, 2, 2, 1, 1, 2, True, (1, 4, 5, 5)),
    (4, 4, 3, 1, 1, 2, 4, True, (2, 4, 6, 6)),  # depthwise, dilated
    (6, 4, (2, 3), (1, 2), (0, 1), (2, 1), 2, False, (2, 6, 6, 7)),
    (2, 2, 2, 2, 2, 3, 1, True, (1, 2, 7, 7)),  # dilation 3 with stride 2 and padding
    (4, 8, 3, (2, 1), 2, 2, 2, True, (2, 4, 5, 5)),  # groups with more outputs per group
]

CONV1D = [
    (2, 3, 3, 1, 0, 1, 1, True, (2, 2, 9)),
    (4, 2, 2, 3, 2, 2, 2, False, (3, 4, 10)),
    (3, 6, 3, 2, 1, 2, 3, True, (2, 3, 11)),
    (2, 2, 3, 1, 1, 1, 1, True, (1, 2, 4)),
    (4, 4, 2, 1, 3, 3, 4, True, (2, 4, 5)),  # depthwise, dilation 3, wide padding
]


def _conv_case(cls: type, spec: tuple, seed: int) -> None:
    cin, cout, k, s, p, d, g, bias, shape = spec
    module = cls(cin, cout, k, stride=s, padding=p, dilation=d, groups=g, bias=bias, rng=seed)
    rng = np.random.default_rng(seed + 100)
    x = rng.standard_normal(shape)
    w = module.weight.numpy().copy()
    b = module.bias.numpy().copy() if bias else None
    y = conv_ref(x, w, b, s, p, d, g)
    dy = rng.standard_normal(y.shape)
    dx, dw, db = conv_ref_vjp(x, w, s, p, d, g, dy)

    # the hand-derived adjoint against central differences of the plain-numpy forward
    if bias:
        _check_vjp_by_fd(lambda x_, w_, b_: conv_ref(x_, w_, b_, s, p, d, g), [x, w, b], [dx, dw, db],
                         dy, seed)
    else:
        _check_vjp_by_fd(lambda x_, w_: conv_ref(x_, w_, None, s, p, d, g), [x, w], [dx, dw], dy, seed)

    want = {"input": dx, "weight": dw} | ({"bias": db} if bias else {})
    _check_both_styles(module, x, dy, y, want)


@pytest.mark.parametrize("spec", CONV2D, ids=str)
def test_conv2d_against_direct_loop(spec: tuple) -> None:
    _conv_case(nn.Conv2d, spec, seed=CONV2D.index(spec))


@pytest.mark.parametrize("spec", CONV1D, ids=str)
def test_conv1d_against_direct_loop(spec: tuple) -> None:
    _conv_case(nn.Conv1d, spec, seed=10 + CONV1D.index(spec))


# =========================================================================== pooling

POOLS = [  # (kernel, stride, padding); stride None = kernel
    (2, None, 0),
    (3, 2, 1),
    ((3, 2), (1, 2), (1, 0)),
    (2, 1, 1),
    ((2, 3), (3, 1), (1, 1)),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("args", POOLS, ids=str)
def test_pool2d_against_direct_loop(kind: str, args: tuple) -> None:
    kernel, stride, padding = args
    rng = np.random.default_rng(POOLS.index(args))
    shape = (2, 3, 7, 6)
    # distinct values 0.05 apart (no ties: the max has one argmax, and the finite
    # differences below, steps <= 2e-3 along O(1) directions, never swap two entries)
    x = (rng.permutation(int(np.prod(shape))) * 0.05 - 5.0).reshape(shape)
    y = pool_ref(kind, x, kernel, stride, padding)
    dy = rng.standard_normal(y.shape)
    dx = pool_ref_vjp(kind, x, kernel, stride, padding, dy)
    _check_vjp_by_fd(lambda z: pool_ref(kind, z, kernel, stride, padding), [x], [dx], dy, seed=7)
    if kind == "max":  # every window's dy lands on exactly one input: the totals agree
        assert np.isclose(dx.sum(), dy.sum(), rtol=1e-13)
    cls = nn.MaxPool2d if kind == "max" else nn.AvgPool2d
    module = cls(kernel, padding=padding) if stride is None else cls(kernel, stride, padding)
    _check_both_styles(module, x, dy, y, {"input": dx})


# =========================================================================== batch norm

BN_CASES = [("BatchNorm2d", (4, 3, 5, 4)), ("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)),
            ("BatchNorm2d", (2, 3, 2, 3))]


def _bn_module(kind: str, **kw: Any) -> nn.Module:
    module = getattr(nn, kind)(3, **kw)
    module.weight = dk.tensor([0.5, 1.5, -1.0], requires_grad=True)
    module.bias = dk.tensor([0.1, 0.0, -0.3], requires_grad=True)
    return module


@pytest.mark.parametrize("kind,shape", BN_CASES, ids=str)
def test_batchnorm_training_against_formula(kind: str, shape: tuple) -> None:
    rng = np.random.default_rng(len(shape) + shape[0])
    x = rng.standard_normal(shape) * np.array([2.0, 0.5, 1.0]).reshape((1, 3) + (1,) * (len(shape) - 2)) + 1.0
    gamma, beta = np.array([0.5, 1.5, -1.0]), np.array([0.1, 0.0, -0.3])
    y = bn_ref(x, gamma, beta)
    dy = rng.standard_normal(shape)
    dx, dgamma, dbeta = bn_train_vjp(x, gamma, 1e-5, dy)
    _check_vjp_by_fd(lambda x_, g_, b_: bn_ref(x_, g_, b_), [x, gamma, beta], [dx, dgamma, dbeta], dy,
                     seed=3)
    # the batch statistics' parts of dx are far above the 1e-10 tolerance below: a detached
    # mean would lose the -Σdy term, a detached variance the -x̂Σ(dy x̂) one, in every channel
    axes = _bn_axes(x)[0]
    xhat = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5)
    assert np.min(np.abs(dy.mean(axis=axes))) > 1e-3
    assert np.min(np.abs((dy * xhat).mean(axis=axes))) > 1e-3

    module = _bn_module(kind)
    _check_both_styles(module, x, dy, y, {"input": dx, "weight": dgamma, "bias": dbeta})

    # running statistics after one training forward: momentum 0.1, unbiased variance
    fresh = _bn_module(kind)
    fresh(x)
    M = x.size // 3
    assert_close(fresh.running_mean, 0.1 * x.mean(axis=axes), rtol=1e-13)
    assert_close(fresh.running_var, 0.9 + 0.1 * x.var(axis=axes) * M / (M - 1), rtol=1e-13)


@pytest.mark.parametrize("kind,shape", BN_CASES, ids=str)
def test_batchnorm_evaluation_against_formula(kind: str, shape: tuple) -> None:
    rng = np.random.default_rng(20 + len(shape) + shape[0])
    x = rng.standard_normal(shape) * 1.5 + 0.5
    gamma, beta = np.array([0.5, 1.5, -1.0]), np.array([0.1, 0.0, -0.3])
    mean, var = np.array([0.2, -0.1, 0.3]), np.array([1.5, 0.7, 2.0])
    y = bn_ref(x, gamma, beta, 1e-5, mean, var)
    dy = rng.standard_normal(shape)
    dx, dgamma, dbeta = bn_eval_vjp(x, gamma, 1e-5, mean, var, dy)
    _check_vjp_by_fd(lambda x_, g_, b_: bn_ref(x_, g_, b_, 1e-5, mean, var), [x, gamma, beta],
                     [dx, dgamma, dbeta], dy, seed=4)
    module = _bn_module(kind)
    module.running_mean, module.running_var = mean.copy(), var.copy()
    module.eval()
    _check_both_styles(module, x, dy, y, {"input": dx, "weight": dgamma, "bias": dbeta})
    assert_close(module.running_mean, mean, rtol=0)  # evaluation leaves them alone
    assert_close(module.running_var, var, rtol=0)


def test_batchnorm_without_running_statistics_uses_the_batch_in_evaluation() -> None:
    rng = np.random.default_rng(30)
    x = rng.standard_normal((5, 3, 4)) * 2.0 - 1.0
    gamma, beta = np.array([0.5, 1.5, -1.0]), np.array([0.1, 0.0, -0.3])
    dy = rng.standard_normal(x.shape)
    dx, dgamma, dbeta = bn_train_vjp(x, gamma, 1e-5, dy)
    module = _bn_module("BatchNorm1d", track_running_stats=False).eval()
    _check_both_styles(module, x, dy, bn_ref(x, gamma, beta), {"input": dx, "weight": dgamma,
                                                               "bias": dbeta})


# =========================================================================== a small CNN, trained

# conv1 (stride, padding, dilation, groups), pool1 (kernel, stride, padding), conv2 (...),
# pool2 (kernel, stride, padding), channels of conv1 and conv2, width of the flattened features
ARCHITECTURES = {
    # tests/test_cnn_training.py's cnn()
    "cnn": dict(conv1=(1, 1, 1, 1), pool1=(2, None, 0), conv2=(1, 1, 1, 1), pool2=(4, None, 0),
                c1=4, c2=8, features=8),
    # overlapping padded max pooling, a dilated grouped convolution, a 2x2 mean
    "variant": dict(conv1=(1, 1, 1, 1), pool1=(3, 2, 1), conv2=(1, 2, 2, 2), pool2=(2, None, 0),
                    c1=4, c2=8, features=32),
}


def _make_cnn(cfg: dict[str, Any]) -> nn.Module:
    s1, p1, d1, g1 = cfg["conv1"]
    s2, p2, d2, g2 = cfg["conv2"]
    return nn.Sequential(
        nn.Conv2d(1, cfg["c1"], 3, stride=s1, padding=p1, dilation=d1, groups=g1, rng=0),
        nn.BatchNorm2d(cfg["c1"]), nn.ReLU(), nn.MaxPool2d(*cfg["pool1"]),
        nn.Conv2d(cfg["c1"], cfg["c2"], 3, stride=s2, padding=p2, dilation=d2, groups=g2, rng=1),
        nn.ReLU(), nn.AvgPool2d(*cfg["pool2"]), nn.Flatten(), nn.Linear(cfg["features"], 3, rng=2))


def cnn_ref(P: dict[str, np.ndarray], cfg: dict[str, Any], x: np.ndarray, labels: np.ndarray,
            eps: float = 1e-5) -> tuple[float, dict[str, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The CNN's loss, its gradient in every parameter by hand-written backprop, and the
    batch norm's batch mean and biased variance (for the running statistics)."""
    z1 = conv_ref(x, P["0.weight"], P["0.bias"], *cfg["conv1"])
    a1 = bn_ref(z1, P["1.weight"], P["1.bias"], eps)
    r1 = np.maximum(a1, 0.0)
    q1 = pool_ref("max", r1, *cfg["pool1"])
    z2 = conv_ref(q1, P["4.weight"], P["4.bias"], *cfg["conv2"])
    r2 = np.maximum(z2, 0.0)
    q2 = pool_ref("avg", r2, *cfg["pool2"])
    f = q2.reshape(len(x), -1)
    logits = f @ P["8.weight"].T + P["8.bias"]
    loss, d_logits = cross_entropy_ref(logits, labels)

    G: dict[str, np.ndarray] = {"8.weight": d_logits.T @ f, "8.bias": d_logits.sum(axis=0)}
    d_q2 = (d_logits @ P["8.weight"]).reshape(q2.shape)
    d_z2 = pool_ref_vjp("avg", r2, *cfg["pool2"], d_q2) * (z2 > 0)
    d_q1, G["4.weight"], G["4.bias"] = conv_ref_vjp(q1, P["4.weight"], *cfg["conv2"], d_z2)
    # ReLU zeros can tie inside a max window; their ReLU derivative is 0, so the route is moot
    d_a1 = pool_ref_vjp("max", r1, *cfg["pool1"], d_q1) * (a1 > 0)
    d_z1, G["1.weight"], G["1.bias"] = bn_train_vjp(z1, P["1.weight"], eps, d_a1)
    _, G["0.weight"], G["0.bias"] = conv_ref_vjp(x, P["0.weight"], *cfg["conv1"], d_z1)
    return loss, G, (z1.mean(axis=(0, 2, 3)), z1.var(axis=(0, 2, 3)))


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_cnn_reference_backprop_against_finite_differences(arch: str) -> None:
    """The hand-written backprop is the derivative of the hand-written forward (a random
    direction in all the parameters at once, and one per parameter)."""
    cfg = ARCHITECTURES[arch]
    rng = np.random.default_rng(40)
    x, labels = rng.standard_normal((6, 1, 8, 8)), rng.integers(0, 3, 6)
    P = _make_cnn(cfg).state_dict()
    names = list(P)
    _, G, _ = cnn_ref(P, cfg, x, labels)

    def loss(*values: np.ndarray) -> float:
        return cnn_ref(dict(zip(names, values)), cfg, x, labels)[0]
    # a small step (ReLU and max kinks stay uncrossed); round-off ~ eps/h stays < 1e-9
    t = [rng.standard_normal(P[n].shape) for n in names]
    fd = central_jvp(loss, [P[n] for n in names], t, h=1e-5)
    assert_close(sum(np.sum(G[n] * tn) for n, tn in zip(names, t)), fd, rtol=1e-8)
    for k, n in enumerate(names):
        tk = [np.zeros_like(P[m]) for m in names]
        tk[k] = t[k]
        fd = central_jvp(loss, [P[m] for m in names], tk, h=1e-5)
        assert_close(np.sum(G[n] * t[k]), fd, rtol=1e-8)


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_cnn_sgd_steps_match_numpy_backprop(arch: str) -> None:
    cfg, lr, steps = ARCHITECTURES[arch], 0.2, 3
    rng = np.random.default_rng(41)
    x, labels = rng.standard_normal((6, 1, 8, 8)), np.array([0, 1, 2, 1, 0, 2])
    tensor_style, functional = _make_cnn(cfg), _make_cnn(cfg)
    opt_t = optim.SGD(tensor_style.named_parameters(), lr=lr)
    opt_f = optim.SGD(functional.named_parameters(), lr=lr)
    P = tensor_style.state_dict()
    running_mean, running_var = np.zeros(cfg["c1"]), np.ones(cfg["c1"])
    M = x.shape[0] * 8 * 8  # entries per channel of the batch norm's input

    def f_loss(params: dict[str, Any]) -> Any:
        return nn.cross_entropy(nn.functional_call(functional, params, x), labels)

    moved = 0.0
    for step in range(steps):
        loss, G, (mean, var) = cnn_ref(P, cfg, x, labels)

        opt_t.zero_grad()
        loss_t = nn.cross_entropy(tensor_style(x), labels)
        loss_t.backward()
        assert_close(float(loss_t.numpy()), loss, rtol=1e-12)
        for name, p in tensor_style.named_parameters():
            assert_close(p.grad, G[name], rtol=1e-10)
        opt_t.step()

        loss_f, grads = dk.value_and_grad(f_loss)(functional.parameters_dict())
        assert_close(float(np.asarray(loss_f)), loss, rtol=1e-12)
        for name in P:
            assert_close(grads[name], G[name], rtol=1e-10)
        opt_f.step(grads)

        new = {name: P[name] - lr * G[name] for name in P}
        moved += sum(float(np.max(np.abs(new[n] - P[n]))) for n in P)
        P = new
        running_mean = 0.9 * running_mean + 0.1 * mean
        running_var = 0.9 * running_var + 0.1 * var * M / (M - 1)
        for name, p in tensor_style.named_parameters():
            assert_close(p.numpy(), P[name], rtol=1e-10)
        for name, p in functional.named_parameters():
            assert_close(p.numpy(), P[name], rtol=1e-10)
        assert_close(tensor_style[1].running_mean, running_mean, rtol=1e-12)
        assert_close(tensor_style[1].running_var, running_var, rtol=1e-12)
    assert moved > 0.05  # the steps are not negligible: the comparison above means something
