"""The race's CNN rows: the gradient of a small convolutional network's loss in its
parameters (conv 3x3, ReLU, max-pool, conv 3x3, ReLU, average-pool, flatten, linear,
softmax cross-entropy on 8x8 images), by diffkit's eager reverse mode and its compiled
backend, against ``jax.jit`` and PyTorch (eager, and ``torch.compile`` in the full race: its
compilation takes longer than the quick race's whole budget). The same parameters and
images go to every library; each gradient is checked against diffkit's eager reverse
(1e-10) before it is timed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import diffkit as dk
from diffkit import nn
from diffkit.bench import probes
from diffkit.bench.race_rows import Row, have, interleaved


def model() -> nn.Module:
    """The raced network (8x8 single-channel images, 3 classes)."""
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, rng=0), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 8, 3, padding=1, rng=1), nn.ReLU(), nn.AvgPool2d(4),
                         nn.Flatten(), nn.Linear(8, 3, rng=2))


def _jax_grad(params: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray) -> tuple[Callable, str]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def conv(x: Any, w: Any, b: Any) -> Any:
        out = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))
        return out + b[None, :, None, None]

    def loss(p: dict[str, Any]) -> Any:
        h = jax.nn.relu(conv(X, p["0.weight"], p["0.bias"]))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = jax.nn.relu(conv(h, p["3.weight"], p["3.bias"]))
        h = jax.lax.reduce_window(h, 0.0, jax.lax.add, (1, 1, 4, 4), (1, 1, 4, 4), "VALID") / 16.0
        logits = h.reshape(h.shape[0], -1) @ p["7.weight"].T + p["7.bias"]
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - logits[jnp.arange(len(y)), y])

    jp = {k: jnp.asarray(v) for k, v in params.items()}
    compiled, seconds = probes.first_call(lambda: jax.jit(jax.grad(loss)).lower(jp).compile())
    note = f"compile {seconds:.2f} s"
    return (lambda: jax.block_until_ready(compiled(jp))), note


def _torch_grad(params: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray,
                compile_: bool) -> tuple[Callable, str]:
    import torch
    import torch.nn.functional as F

    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

    def loss(p: dict[str, Any]) -> Any:
        h = F.max_pool2d(F.relu(F.conv2d(Xt, p["0.weight"], p["0.bias"], padding=1)), 2)
        h = F.avg_pool2d(F.relu(F.conv2d(h, p["3.weight"], p["3.bias"], padding=1)), 4)
        return F.cross_entropy(F.linear(h.flatten(1), p["7.weight"], p["7.bias"]), yt)

    tp = {k: torch.from_numpy(v) for k, v in params.items()}
    grad = torch.func.grad(loss)
    if not compile_:
        return (lambda: grad(tp)), ""
    compiled = torch.compile(grad)
    _, seconds = probes.first_call(lambda: compiled(tp))
    return (lambda: compiled(tp)), f"compile {seconds:.2f} s"


def cnn_rows(batch: int, repeat: int, full: bool) -> list[Any]:
    """diffkit compiled / eager reverse (target 1.0), and for information each against
    jax.jit and torch."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((batch, 1, 8, 8)), rng.integers(0, 3, batch)
    net = model()
    params = net.parameters_dict()

    def loss(p: dict[str, Any]) -> Any:
        return nn.cross_entropy(nn.functional_call(net, p, X), y)

    eager, compiled = dk.grad(loss), dk.grad(loss, backend="compiled")
    want = eager(params)
    fns: dict[str, Callable[[], Any]] = {"diffkit reverse": lambda: eager(params),
                                         "diffkit compiled": lambda: compiled(params)}
    notes: dict[str, str] = {}
    if have("jax"):
        fns["jax.jit"], notes["jax.jit"] = _jax_grad(params, X, y)
    if have("torch"):
        fns["torch eager"], notes["torch eager"] = _torch_grad(params, X, y, compile_=False)
        if full:
            fns["torch.compile"], notes["torch.compile"] = _torch_grad(params, X, y, compile_=True)
    for name, fn in fns.items():  # every gradient equals eager reverse before it is timed
        got = {k: np.asarray(v) for k, v in fn().items()}
        if any(not np.allclose(got[k], want[k], rtol=1e-10, atol=1e-14) for k in want):
            raise AssertionError(f"the CNN gradient of {name} differs from diffkit's eager reverse")
    t = dict(zip(fns, interleaved(list(fns.values()), repeat)))
    tag = f"CNN grad, batch {batch} of 8x8"
    rows = [Row(f"{tag}: compiled / reverse", t["diffkit compiled"], t["diffkit reverse"], 1.0)]
    for peer in ("jax.jit", "torch eager", "torch.compile"):
        for ours in ("diffkit reverse", "diffkit compiled"):
            rows.append(Row(f"{tag}: {ours.split()[1]} / {peer}", t[ours], t.get(peer),
                            note=notes.get(peer, "full race only" if peer == "torch.compile" else "")))
    return rows
