"""The gradient-flow experiment's measuring: networks of a named depth, width, activation,
architecture and initialization; their per-layer gradient norms at initialization; and
training runs with gradient clipping. The figures are drawn by
:mod:`diffkit.reporting.gradient_flow`.

>>> import numpy as np
>>> model = make_model(3, 8, "tanh", "plain", "default", np.random.default_rng(0))
>>> len(linears(model))
4
>>> len(weighted(make_cnn(3, 4, "relu", "residual", np.random.default_rng(0))))
4
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .. import nn, optim
from ..core import DiffkitError
from ..interpreters.tensor import no_grad

ACTIVATIONS = {"sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "relu": nn.ReLU}
ARCHITECTURES = ("plain", "layernorm", "residual", "residual+layernorm")


# --------------------------------------------------------------------------- models


def make_model(depth: int, width: int, activation: str, architecture: str, init: str,
          rng: np.random.Generator) -> nn.Sequential:
    """2 -> width (x depth hidden layers) -> 2, as named in the spec's vocabulary."""
    act = ACTIVATIONS[activation]
    if architecture not in ARCHITECTURES:
        raise DiffkitError(f"unknown architecture {architecture!r}; use one of "
                           f"{', '.join(ARCHITECTURES)}")
    norm = "layernorm" in architecture
    layers: list[nn.Module] = [nn.Linear(2, width, rng=rng)]
    layers += [nn.LayerNorm(width)] if norm and architecture == "layernorm" else []
    layers.append(act())
    for _ in range(depth - 1):
        if architecture.startswith("residual"):
            inner = [nn.LayerNorm(width)] if norm else []
            layers.append(nn.Residual(nn.Sequential(*inner, nn.Linear(width, width, rng=rng), act())))
        else:
            layers += [nn.Linear(width, width, rng=rng)] + ([nn.LayerNorm(width)] if norm else []) \
                + [act()]
    layers.append(nn.Linear(width, 2, rng=rng))
    model = nn.Sequential(*layers)
    initialize(model, init, rng)
    return model


CNN_ARCHITECTURES = ("plain", "batchnorm", "residual", "residual+batchnorm")


def make_cnn(depth: int, channels: int, activation: str, architecture: str,
             rng: np.random.Generator) -> nn.Sequential:
    """8x8 images, 1 channel -> ``depth`` 3x3 convolutions of ``channels`` channels ->
    global average pool -> 3 classes: plain (conv, act), batchnorm (conv, BatchNorm2d,
    act), residual (x + act(conv(x)) after the first) or both (x + act(BN(conv(x))))."""
    act = ACTIVATIONS[activation]
    if architecture not in CNN_ARCHITECTURES:
        raise DiffkitError(f"unknown CNN architecture {architecture!r}; use one of "
                           f"{', '.join(CNN_ARCHITECTURES)}")
    norm = [nn.BatchNorm2d(channels)] if "batchnorm" in architecture else []
    layers: list[nn.Module] = [nn.Conv2d(1, channels, 3, padding=1, rng=rng), *norm, act()]
    for _ in range(depth - 1):
        norm = [nn.BatchNorm2d(channels)] if "batchnorm" in architecture else []
        block = [nn.Conv2d(channels, channels, 3, padding=1, rng=rng), *norm, act()]
        layers += [nn.Residual(nn.Sequential(*block))] if architecture.startswith("residual") \
            else block
    layers += [nn.AvgPool2d(8), nn.Flatten(), nn.Linear(channels, 3, rng=rng)]
    return nn.Sequential(*layers)


def linears(model: nn.Module) -> list[nn.Linear]:
    return [m for m in model.modules() if isinstance(m, nn.Linear)]


def weighted(model: nn.Module) -> list[nn.Module]:
    """The layers with a weight (Linear, convolutions), input side first."""
    return [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d))]


def initialize(model: nn.Module, init: str, rng: np.random.Generator) -> None:
    """Apply a named initialization to every Linear weight (biases zero unless 'default')."""
    if init == "default":
        return
    scaled = re.fullmatch(r"normal\(([0-9.]+)\)", init)
    for lin in linears(model):
        if scaled:
            nn.normal_(lin.weight, 0.0, float(scaled.group(1)) / math.sqrt(lin.in_features), rng=rng)
        elif init in ("xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal"):
            getattr(nn, init + "_")(lin.weight, rng=rng)
        else:
            raise DiffkitError(f"unknown init {init!r}: default, xavier_uniform, xavier_normal, "
                               "kaiming_uniform, kaiming_normal or normal(g)")
        nn.zeros_(lin.bias)


def layer_norms(model: nn.Module, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """||dL/dW_l|| for every layer with a weight (Linear, convolution), input side first
    (one backward pass), seen by gradient hooks on the weights as the gradients flow back."""
    layers = weighted(model)
    norms = np.zeros(len(layers))

    def watch(k: int) -> Any:
        def hook(g: np.ndarray) -> None:
            norms[k] = np.linalg.norm(g)
        return hook

    handles = [lin.weight.register_hook(watch(k)) for k, lin in enumerate(layers)]
    try:
        nn.cross_entropy(model(X), y).backward()
    finally:
        for h in handles:
            h.remove()
    return norms


def mean_norms(setup: dict, depth: int, activation: str, architecture: str, init: str,
               X: np.ndarray, y: np.ndarray, network: str = "mlp") -> np.ndarray:
    """Geometric mean of the per-layer norms over ``setup['seeds']`` initializations
    (``network``: "mlp" of ``setup['width']``, or "cnn" of ``setup['channels']``, default
    init)."""
    logs = []
    for s in range(setup["seeds"]):
        rng = np.random.default_rng((setup["seed"], s, depth))
        model = (make_cnn(depth, setup["channels"], activation, architecture, rng)
                 if network == "cnn" else
                 make_model(depth, setup["width"], activation, architecture, init, rng))
        with np.errstate(divide="ignore"):
            logs.append(np.log(layer_norms(model, X, y)))
    return np.exp(np.mean(logs, axis=0))


def train_clipped(fig_spec: dict, setup: dict, X: np.ndarray, y: np.ndarray, seed: int,
                  max_norm: float | None, clip_value: float | None) -> dict:
    """One training run; stops when the loss overflows."""
    rng = np.random.default_rng((setup["seed"], seed, fig_spec["depth"]))
    model = make_model(fig_spec["depth"], setup["width"], fig_spec["activation"],
                  fig_spec["architecture"], fig_spec["init"], rng)
    opt = optim.SGD(model.parameters(), lr=fig_spec["lr"], momentum=fig_spec["momentum"])
    losses, norms = [], []
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(fig_spec["steps"]):
            opt.zero_grad()
            loss = nn.cross_entropy(model(X), y)
            if not math.isfinite(loss.item()):
                break
            loss.backward()
            # max_norm=inf only measures the norm; otherwise it rescales all .grad together
            norms.append(optim.clip_grad_norm_(model.parameters(),
                                               math.inf if max_norm is None else max_norm))
            if clip_value is not None:
                optim.clip_grad_value_(model.parameters(), clip_value)
            losses.append(loss.item())
            opt.step()
        with no_grad():
            acc = float(np.mean(model(X).numpy().argmax(1) == y))
    return {"loss": losses, "grad_norm": norms, "accuracy": acc,
            "overflow_at": len(losses) if len(losses) < fig_spec["steps"] else None}
