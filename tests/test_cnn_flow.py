"""The gradient-flow report's CNN (diffkit/bench/cnn_flow.py): its per-convolution gradient
norms equal PyTorch's for the same weights, and the report's cnn_profile figure draws them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from diffkit.bench import cnn_flow
from diffkit.reporting.gradient_flow import run


@pytest.mark.parametrize("architecture", ["plain", "batchnorm", "residual"])
def test_conv_norms_equal_torchs(architecture: str) -> None:
    torch = pytest.importorskip("torch", reason="the reference gradients need torch")
    X, y = cnn_flow.bars(16, seed=3)
    model = cnn_flow.make_cnn(3, 2, "tanh", architecture, np.random.default_rng(1))
    ours = cnn_flow.conv_norms(model, X, y)
    convs = cnn_flow.convolutions(model)
    head = [m for m in model.modules() if type(m).__name__ == "Linear"][0]
    t = {k: torch.tensor(v, requires_grad=True) for k, v in
         [(f"w{i}", c.weight.numpy()) for i, c in enumerate(convs)]
         + [(f"b{i}", c.bias.numpy()) for i, c in enumerate(convs)]
         + [("W", head.weight.numpy()), ("B", head.bias.numpy())]}
    h = torch.tensor(X)
    for i in range(len(convs)):
        z = torch.nn.functional.conv2d(h, t[f"w{i}"], t[f"b{i}"], padding=1)
        if architecture == "batchnorm":
            z = torch.nn.functional.batch_norm(z, None, None, training=True, eps=1e-5)
        z = torch.tanh(z)
        h = h + z if architecture == "residual" and i > 0 else z
    logits = h.mean(dim=(2, 3)) @ t["W"].T + t["B"]
    torch.nn.functional.cross_entropy(logits, torch.tensor(y)).backward()
    theirs = [float(t[f"w{i}"].grad.norm()) for i in range(len(convs))]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_the_cnn_profile_figure(tmp_path: Path) -> None:
    spec = {"setup": {"seed": 0, "width": 4, "batch": 16, "noise": 0.1, "seeds": 1},
            "figure": [{"name": "cnn", "kind": "cnn_profile", "title": "t", "caption": "c {depth}",
                        "depth": 6, "channels": 3, "images": 24, "panels": "architecture",
                        "lines": "activation", "activations": ["sigmoid"],
                        "architectures": ["plain", "batchnorm", "residual"], "inits": ["default"]}]}
    made = run(spec, tmp_path, log=lambda line: None)
    assert [p.name for p in made] == ["cnn.png"] and made[0].stat().st_size > 10_000
    norms = json.loads((tmp_path / "gradients.json").read_text())["cnn"]
    ratio = {k: v[0] / v[-1] for k, v in norms.items()}
    assert len(norms["plain/sigmoid"]) == 6
    assert ratio["plain/sigmoid"] < 1e-3 < ratio["batchnorm/sigmoid"]  # the vanishing, and a cure
    assert ratio["plain/sigmoid"] < ratio["residual/sigmoid"]
