"""The gradient-flow report's CNN (diffkit.bench.training.make_cnn): its per-layer gradient
norms equal PyTorch's for the same weights and images, in every architecture, and the
report's figure of them is drawn from a spec."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import needs

from diffkit import data, nn
from diffkit.bench.training import layer_norms, make_cnn
from diffkit.reporting.gradient_flow import run


@pytest.mark.torch
@pytest.mark.parametrize("architecture", ["plain", "batchnorm", "residual", "residual+batchnorm"])
def test_layer_norms_equal_torchs(architecture: str) -> None:
    torch = needs("torch")
    X, y = data.shapes(16, seed=3)
    model = make_cnn(3, 2, "tanh", architecture, np.random.default_rng(1))
    ours = layer_norms(model, X, y)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    head = [m for m in model.modules() if isinstance(m, nn.Linear)][0]
    t = {k: torch.tensor(v, requires_grad=True) for k, v in
         [(f"w{i}", c.weight.numpy()) for i, c in enumerate(convs)]
         + [(f"b{i}", c.bias.numpy()) for i, c in enumerate(convs)]
         + [("W", head.weight.numpy()), ("B", head.bias.numpy())]}
    h = torch.tensor(X)
    for i in range(len(convs)):
        z = torch.nn.functional.conv2d(h, t[f"w{i}"], t[f"b{i}"], padding=1)
        if "batchnorm" in architecture:  # a fresh BatchNorm2d: batch statistics, weight 1
            z = torch.nn.functional.batch_norm(z, None, None, training=True, eps=1e-5)
        z = torch.tanh(z)
        h = h + z if architecture.startswith("residual") and i > 0 else z
    logits = h.mean(dim=(2, 3)) @ t["W"].T + t["B"]
    torch.nn.functional.cross_entropy(logits, torch.tensor(y)).backward()
    theirs = [float(t[f"w{i}"].grad.norm()) for i in range(len(convs))] + [float(t["W"].grad.norm())]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_the_cnn_profile_figure(tmp_path: Path) -> None:
    spec = {"setup": {"seed": 0, "width": 4, "channels": 3, "batch": 16, "noise": 0.1,
                      "seeds": 1},
            "figure": [{"name": "cnn", "kind": "layer_profile", "network": "cnn", "title": "t",
                        "caption": "c {depth}", "depth": 6, "batch": 24,
                        "panels": "architecture", "lines": "activation",
                        "activations": ["sigmoid"], "inits": ["default"],
                        "architectures": ["plain", "batchnorm", "residual"]}]}
    made = run(spec, tmp_path, log=lambda line: None)
    assert [p.name for p in made] == ["cnn.png"] and made[0].stat().st_size > 10_000
    norms = json.loads((tmp_path / "gradients.json").read_text())["cnn"]
    ratio = {k: v[0] / v[-1] for k, v in norms.items()}
    assert len(norms["plain/sigmoid"]) == 6 + 1  # six convolutions and the Linear head
    assert ratio["plain/sigmoid"] < 1e-3 < ratio["batchnorm/sigmoid"]  # the vanishing, a cure
    assert ratio["plain/sigmoid"] < ratio["residual/sigmoid"]
