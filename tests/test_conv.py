"""dk.nn's convolution, pooling, flattening and batch-norm layers against PyTorch (float64):
outputs, and gradients in the input and every parameter, in the tensor style
(``loss.backward()``) and the functional style (``dk.grad`` of ``functional_call``), and
the compiled backend's gradient against eager reverse mode (1e-10)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import needs, assert_close

import diffkit as dk
import diffkit.numpy as dnp
from diffkit import nn

pytestmark = pytest.mark.torch
torch = needs("torch")
torch.set_default_dtype(torch.float64)


def _copy_params(ours: nn.Module, theirs: Any) -> None:
    with torch.no_grad():
        for name, p in ours.named_parameters():
            getattr(theirs, name).copy_(torch.tensor(p.numpy()))


def _compare(ours: nn.Module, theirs: Any, x: np.ndarray, seed: int = 0) -> None:
    """Outputs, then d(sum(out * w))/d(input, parameters) both ways, against torch."""
    x_t = torch.tensor(x, requires_grad=True)
    out_t = theirs(x_t)
    w = np.random.default_rng(seed).standard_normal(tuple(out_t.shape))
    (out_t * torch.tensor(w)).sum().backward()
    names = [n for n, _ in ours.named_parameters()]
    want = {"input": x_t.grad.numpy()} | {n: getattr(theirs, n).grad.numpy() for n in names}

    x_ours = dk.tensor(x, requires_grad=True)  # tensor style
    out = ours(x_ours)
    assert_close(np.asarray(out.numpy()), out_t.detach().numpy(), rtol=1e-12)
    dnp.sum(out * w).backward()
    assert_close(x_ours.grad, want["input"], rtol=1e-10)
    for n, p in ours.named_parameters():
        assert_close(p.grad, want[n], rtol=1e-10)

    def loss(params: dict[str, Any], inp: Any) -> Any:  # functional style
        return dnp.sum(nn.functional_call(ours, params, inp) * w)
    grads = dk.grad(loss, argnums=(0, 1))(ours.parameters_dict(), x)
    assert_close(grads[1], want["input"], rtol=1e-10)
    for n in names:
        assert_close(grads[0][n], want[n], rtol=1e-10)


CONV2D = [  # (in, out, kernel, stride, padding, dilation, groups, input shape)
    (3, 4, 3, 1, 0, 1, 1, (2, 3, 6, 5)),
    (3, 4, (3, 2), (2, 1), (1, 2), (1, 2), 1, (2, 3, 7, 6)),
    (4, 6, 2, 2, 1, 1, 2, (1, 4, 5, 5)),
    (4, 4, 3, 1, 1, 2, 4, (2, 4, 6, 6)),  # depthwise
]


@pytest.mark.parametrize("spec", CONV2D, ids=str)
def test_conv2d_matches_torch(spec: tuple) -> None:
    cin, cout, k, s, p, d, g, shape = spec
    ours = nn.Conv2d(cin, cout, k, stride=s, padding=p, dilation=d, groups=g, rng=0)
    theirs = torch.nn.Conv2d(cin, cout, k, stride=s, padding=p, dilation=d, groups=g)
    _copy_params(ours, theirs)
    _compare(ours, theirs, np.random.default_rng(1).standard_normal(shape))


@pytest.mark.parametrize("spec", [(2, 3, 3, 1, 0, 1, 1, (2, 2, 9)), (4, 2, 2, 3, 2, 2, 2, (3, 4, 10)),
                                  (2, 2, 3, 1, 1, 1, 1, (1, 2, 4))], ids=str)
def test_conv1d_matches_torch(spec: tuple) -> None:
    cin, cout, k, s, p, d, g, shape = spec
    ours = nn.Conv1d(cin, cout, k, stride=s, padding=p, dilation=d, groups=g, bias=cout != 2, rng=0)
    theirs = torch.nn.Conv1d(cin, cout, k, stride=s, padding=p, dilation=d, groups=g, bias=cout != 2)
    _copy_params(ours, theirs)
    _compare(ours, theirs, np.random.default_rng(2).standard_normal(shape))


@pytest.mark.parametrize("kind", ["MaxPool2d", "AvgPool2d"])
@pytest.mark.parametrize("args", [(2,), (3, 2, 1), ((3, 2), (1, 2), (1, 0))], ids=str)
def test_pooling_matches_torch(kind: str, args: tuple) -> None:
    _compare(getattr(nn, kind)(*args), getattr(torch.nn, kind)(*args),
             np.random.default_rng(3).standard_normal((2, 3, 7, 6)))


@pytest.mark.parametrize("kind,shape", [("BatchNorm2d", (4, 3, 5, 4)), ("BatchNorm1d", (6, 3)),
                                        ("BatchNorm1d", (4, 3, 5))])
def test_batchnorm_matches_torch_in_training_and_evaluation(kind: str, shape: tuple) -> None:
    ours, theirs = getattr(nn, kind)(3), getattr(torch.nn, kind)(3)
    ours.weight = dk.tensor([0.5, 1.5, -1.0], requires_grad=True)
    ours.bias = dk.tensor([0.1, 0.0, -0.3], requires_grad=True)
    _copy_params(ours, theirs)
    x = np.random.default_rng(4).standard_normal(shape) * 2.0 + 1.0
    theirs(torch.tensor(x))  # one training step of running statistics
    ours(x)
    assert_close(ours.running_mean, theirs.running_mean.numpy(), rtol=1e-12)
    assert_close(ours.running_var, theirs.running_var.numpy(), rtol=1e-12)
    _compare(ours, theirs, x)  # (training: the batch's statistics)
    mean, var = np.array([0.2, -0.1, 0.3]), np.array([1.5, 0.7, 2.0])
    with torch.no_grad():
        theirs.running_mean.copy_(torch.tensor(mean)), theirs.running_var.copy_(torch.tensor(var))
    ours.running_mean, ours.running_var = mean, var
    ours.eval(), theirs.eval()
    theirs.weight.grad = theirs.bias.grad = None
    ours.zero_grad()
    _compare(ours, theirs, x + 0.5)


def test_flatten_matches_torch() -> None:
    x = np.random.default_rng(5).standard_normal((2, 3, 4, 5))
    for args in [(), (0, -1), (1, 2), (2,)]:
        assert_close(np.asarray(nn.Flatten(*args)(x)), torch.nn.Flatten(*args)(torch.tensor(x)).numpy(),
                     rtol=0)


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, rng=0), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, groups=2, rng=1), nn.ReLU(),
                         nn.AvgPool2d(2), nn.Flatten(), nn.Linear(4, 3, rng=2))


def test_compiled_cnn_gradient_equals_eager_reverse() -> None:
    model, x = _cnn(), np.random.default_rng(6).standard_normal((5, 1, 8, 8))
    y = np.array([0, 1, 2, 1, 0])

    def loss(params: dict[str, Any]) -> Any:
        return nn.cross_entropy(nn.functional_call(model, params, x), y)
    eager = dk.grad(loss, backend="reverse")(model.parameters_dict())
    compiled = dk.grad(loss, backend="compiled")(model.parameters_dict())
    for name, g in eager.items():
        assert_close(compiled[name], g, rtol=1e-10)


def test_errors_name_what_was_wrong() -> None:
    with pytest.raises(dk.DiffkitError, match="groups=3 must divide"):
        nn.Conv2d(4, 6, 3, groups=3)
    with pytest.raises(dk.DiffkitError, match="expected 3 channels"):
        nn.Conv2d(3, 2, 3)(np.ones((1, 2, 5, 5)))
    with pytest.raises(dk.DiffkitError, match="smaller than the kernel"):
        nn.Conv2d(1, 1, 5)(np.ones((1, 1, 3, 3)))
    with pytest.raises(dk.DiffkitError, match=r"shape \(N, C, H, W\)"):
        nn.MaxPool2d(2)(np.ones((4, 4)))
