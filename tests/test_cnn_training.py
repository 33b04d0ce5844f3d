"""A small CNN (convolution, batch norm, pooling, flatten) learns to tell generated 8x8
shapes apart (horizontal bars, vertical bars, diagonals, at random places, in noise): the
tensor style (``loss.backward()``) and the functional style (``dk.value_and_grad`` of
``functional_call``) give the same parameters step by step, and the trained network
classifies held-out images with at least 93 % accuracy (95 % measured)."""
from __future__ import annotations

from typing import Any

import numpy as np

import diffkit as dk
from diffkit import nn, optim
from diffkit.data import shapes


def cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, rng=0), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 8, 3, padding=1, rng=1), nn.ReLU(),
                         nn.AvgPool2d(4), nn.Flatten(), nn.Linear(8, 3, rng=2))


def test_cnn_learns_shapes_in_both_styles() -> None:
    X, y = shapes(240, seed=0)
    X_test, y_test = shapes(120, seed=1)
    tensor_style, functional = cnn(), cnn()
    opt_t = optim.Adam(tensor_style.named_parameters(), lr=0.05)
    opt_f = optim.Adam(functional.named_parameters(), lr=0.05)

    def loss(params: dict[str, Any]) -> Any:
        return nn.cross_entropy(nn.functional_call(functional, params, X), y)

    for _ in range(80):
        opt_t.zero_grad()
        nn.cross_entropy(tensor_style(X), y).backward()
        opt_t.step()
        _, grads = dk.value_and_grad(loss)(functional.parameters_dict())
        opt_f.step(grads)
    for (name, p), (_, q) in zip(tensor_style.named_parameters(), functional.named_parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    tensor_style.eval()
    accuracy = float(np.mean(np.argmax(tensor_style(X_test).numpy(), axis=1) == y_test))
    assert accuracy >= 0.93, accuracy  # (measured: 0.95 after 80 steps, 0.96 after 100)
