"""Per-example gradients of a small CNN, one run (run on demand, not a test): ratios are
the result.

    python benchmarks/per_example.py

A CNN (Conv2d 1->4, 3x3 -> ReLU -> MaxPool2d 2 -> Flatten -> Linear 36->3, cross-entropy)
on a batch of 32 8x8 images: the gradient of every example's loss in every parameter,

* functional: ``dk.vmap(dk.grad(loss, backend=b), in_axes=(None, 0, 0))(params, X, y)``
  with ``loss(p, x, t) = cross_entropy(functional_call(model, p, x[None]), t[None])``,
  on the reverse, forward and compiled backends;
* tensor style: 32 calls of ``loss.backward()``, one example each (``zero_grad`` first,
  ``.grad`` copied out).

Printed: the largest difference from the backward() calls (target <= 1e-12) and the time
ratio vmap / 32 backward() calls (target < 1), medians of interleaved runs on this
process's CPU clock, BLAS on one thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
from diffkit import nn  # noqa: E402
from diffkit.bench.probes import interleaved  # noqa: E402

BATCH = 32


def cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3, rng=0), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(36, 3, rng=1))


def main() -> None:
    model = cnn()
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((BATCH, 1, 8, 8)), rng.integers(0, 3, BATCH)
    params = model.parameters_dict()

    def loss(p: dict[str, Any], x: Any, t: Any) -> Any:
        return nn.cross_entropy(nn.functional_call(model, p, x[None]), t[None])

    def backward_calls() -> list[dict[str, np.ndarray]]:
        out = []
        for i in range(BATCH):
            model.zero_grad()
            nn.cross_entropy(model(X[i:i + 1]), y[i:i + 1]).backward()
            out.append({name: np.array(p.grad) for name, p in model.named_parameters()})
        return out

    want = backward_calls()
    ways = {be: dk.vmap(dk.grad(loss, backend=be), in_axes=(None, 0, 0))
            for be in ("reverse", "forward", "compiled")}
    runs = {be: (lambda f=f: f(params, X, y)) for be, f in ways.items()}
    for be, run in runs.items():
        got = run()  # (and the compiled backend's program, built once, outside the timing)
        err = max(float(np.max(np.abs(got[n][i] - want[i][n]))) for n in got for i in range(BATCH))
        print(f"{be:>8}: vmap(grad) of {BATCH} examples, max |difference| from {BATCH} "
              f"backward() calls {err:.1e} (target <= 1e-12)")
    names = list(runs)
    times = interleaved([backward_calls, *runs.values()], 15, min_time=0.0,
                        clock=time.process_time)
    t_back = times[0][0]
    print(f"{BATCH} backward() calls: {t_back * 1e3:.2f} ms (median of 15)")
    for be, (t, *_) in zip(names, times[1:]):
        print(f"{be:>8}: vmap(grad) {t * 1e3:.2f} ms, ratio vmap / {BATCH} backward() calls "
              f"{t / t_back:.2f} (target < 1)")


if __name__ == "__main__":
    main()
