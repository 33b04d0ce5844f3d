"""The gradient-flow experiment's convolutional network: ``depth`` 3x3 convolutions of
``channels`` channels on small generated images (a horizontal or a vertical bar in
noise), averaged and classified by one Linear layer; plain, with BatchNorm after each
convolution, or residual (``x + act(conv(x))``). The figure kind ``cnn_profile`` of
:mod:`diffkit.reporting.gradient_flow` draws its per-convolution gradient norms at
initialization.

>>> model = make_cnn(4, 4, "relu", "residual", np.random.default_rng(0))
>>> len(convolutions(model))
4
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import nn
from ..core import DiffkitError
from .training import ACTIVATIONS

CNN_ARCHITECTURES = ("plain", "batchnorm", "residual")


def bars(n: int, size: int = 8, noise: float = 0.3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images ``(n, 1, size, size)``: class 0 a horizontal bar, class 1 a vertical
    one, at random places, in Gaussian noise."""
    rng = np.random.default_rng(seed)
    X = noise * rng.standard_normal((n, 1, size, size))
    y = rng.integers(0, 2, n)
    at = rng.integers(0, size, n)
    for k in range(n):
        if y[k]:
            X[k, 0, :, at[k]] += 1.0
        else:
            X[k, 0, at[k], :] += 1.0
    return X, y


def make_cnn(depth: int, channels: int, activation: str, architecture: str,
             rng: np.random.Generator, size: int = 8) -> nn.Sequential:
    """1 -> channels (``depth`` 3x3 convolutions, padding 1) -> average -> Linear -> 2."""
    if architecture not in CNN_ARCHITECTURES:
        raise DiffkitError(f"unknown CNN architecture {architecture!r}; use one of "
                           f"{', '.join(CNN_ARCHITECTURES)}")
    act = ACTIVATIONS[activation]

    def conv(c_in: int) -> nn.Conv2d:
        return nn.Conv2d(c_in, channels, 3, padding=1, rng=rng)

    norm = [nn.BatchNorm2d(channels)] if architecture == "batchnorm" else []
    layers: list[nn.Module] = [conv(1), *norm, act()]
    for _ in range(depth - 1):
        if architecture == "residual":
            layers.append(nn.Residual(nn.Sequential(conv(channels), act())))
        else:
            layers += [conv(channels), *([nn.BatchNorm2d(channels)] if norm else []), act()]
    layers += [nn.AvgPool2d(size), nn.Flatten(), nn.Linear(channels, 2, rng=rng)]
    return nn.Sequential(*layers)


def convolutions(model: nn.Module) -> list[nn.Conv2d]:
    return [m for m in model.modules() if isinstance(m, nn.Conv2d)]


def conv_norms(model: nn.Module, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """||dL/dW_l|| of every convolution, input side first (one backward pass)."""
    layers = convolutions(model)
    norms = np.zeros(len(layers))

    def watch(k: int) -> Any:
        def hook(g: np.ndarray) -> None:
            norms[k] = np.linalg.norm(g)
        return hook

    handles = [conv.weight.register_hook(watch(k)) for k, conv in enumerate(layers)]
    try:
        nn.cross_entropy(model(X), y).backward()
    finally:
        for h in handles:
            h.remove()
    return norms


def mean_conv_norms(setup: dict, depth: int, activation: str, architecture: str,
                    X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Geometric mean of the per-convolution norms over ``setup['seeds']`` initializations."""
    logs = []
    for s in range(setup["seeds"]):
        rng = np.random.default_rng((setup["seed"], s, depth, 1))
        model = make_cnn(depth, setup.get("channels", 4), activation, architecture, rng,
                         size=X.shape[-1])
        with np.errstate(divide="ignore"):
            logs.append(np.log(conv_norms(model, X, y)))
    return np.exp(np.mean(logs, axis=0))
