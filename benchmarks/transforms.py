"""Transform benchmarks, one run each (run on demand, not a test): ratios are the result.

    python benchmarks/transforms.py

1. Per-example gradients: ``vmap(grad(loss))`` over 256 examples of a small MLP against a
   Python loop of ``grad``: equal to 1e-12, and how many times faster (target >= 10).
2. Revolve: the gradient of a 1,000-step loop over a 10^4-vector state with 10 snapshots
   against the plain tape: peak memory (tracemalloc; target <= 1/20) and time (target
   <= 4x). CPU time of this process, BLAS on one thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

import diffkit as dk  # noqa: E402
import diffkit.numpy as dnp  # noqa: E402
from diffkit.bench.probes import interleaved, peak_bytes  # noqa: E402


def cpu_time(fn: Callable[[], object], repeat: int = 3) -> float:
    """Median CPU seconds of one call (the one timer, on this process's CPU clock)."""
    return interleaved([fn], repeat, min_time=0.0, clock=time.process_time)[0][0]


def per_example() -> None:
    rng = np.random.default_rng(0)
    sizes = [(8, 32), (32, 32), (32, 4)]
    params = {}
    for k, (a, b) in enumerate(sizes, 1):
        params[f"w{k}"] = rng.normal(size=(a, b)) / np.sqrt(a)
        params[f"b{k}"] = rng.normal(size=b) * 0.1
    X, onehot = rng.normal(size=(256, 8)), np.eye(4)[rng.integers(0, 4, size=256)]
    loss = lambda p, x, t: dnp.logsumexp(_logits(p, x)) - dnp.sum(_logits(p, x) * t)  # noqa: E731
    batched = dk.vmap(dk.grad(loss), in_axes=(None, 0, 0))
    looped = lambda: [dk.grad(loss)(params, X[i], onehot[i]) for i in range(len(X))]  # noqa: E731
    got, want = batched(params, X, onehot), looped()
    err = max(float(np.max(np.abs(got[k][i] - want[i][k]))) for k in params for i in range(256))
    t_vmap, t_loop = cpu_time(lambda: batched(params, X, onehot)), cpu_time(looped, repeat=1)
    print(f"vmap(grad(loss)), 256 examples of an MLP 8-32-32-4: max |difference| {err:.1e} "
          f"(target <= 1e-12); loop {t_loop * 1e3:.1f} ms, vmap {t_vmap * 1e3:.1f} ms: "
          f"{t_loop / t_vmap:.1f}x faster (target >= 10x)")


def _logits(p: dict, x: object) -> object:
    h = dnp.tanh(x @ p["w1"] + p["b1"])
    h = dnp.tanh(h @ p["w2"] + p["b2"])
    return h @ p["w3"] + p["b3"]


def step(x: object) -> object:
    return x + 0.01 * dnp.sin(x)


def revolve(n: int = 1000, size: int = 10**4, snaps: int = 10) -> None:
    x = np.random.default_rng(1).normal(size=size)

    def plain() -> object:
        def f(z: object) -> object:
            for _ in range(n):
                z = step(z)
            return dnp.sum(z)
        return dk.grad(f)(x)

    def rev() -> object:
        return dk.grad(lambda z: dnp.sum(dk.checkpoint_loop(step, z, n, snapshots=snaps)))(x)

    same = float(np.max(np.abs(plain() - rev())))
    m_plain, m_rev = peak_bytes(plain), peak_bytes(rev)
    t_plain, t_rev = cpu_time(plain, 1), cpu_time(rev, 1)
    print(f"revolve, {n} steps over a {size}-vector, {snaps} snapshots: max |difference| "
          f"{same:.1e}; peak memory {m_plain / 1e6:.1f} MB plain vs {m_rev / 1e6:.1f} MB "
          f"= 1/{m_plain / m_rev:.0f} (target <= 1/20); time {t_plain:.2f} s vs {t_rev:.2f} s "
          f"= {t_rev / t_plain:.2f}x (target <= 4x)")


if __name__ == "__main__":
    per_example()
    revolve()
