"""The measuring of the report's one-figure experiments (the figures and their captions
are :mod:`diffkit.reporting.recompute` and :mod:`diffkit.reporting.fusion`):

* memory against recompute: one gradient of an n-step loop x ← x + 0.01 sin x, taped
  whole, checkpointed every √n steps, or by revolve's binomial schedule;
* fusion: the Rosenbrock gradient eager, compiled and fused, beside the memory-bound floor.

>>> rows = measure_recompute([4], 10, [2])
>>> sorted({r["strategy"] for r in rows})
['checkpoint every √n', 'plain tape', 'revolve, 2 snapshots']
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import backend
from ..transforms.checkpoint import checkpoint, checkpoint_loop
from ..transforms.functional import grad
from .probes import bandwidth_bytes_per_s, peak_bytes, peak_rss_bytes, timed
from .workloads import rosenbrock

Record = dict[str, Any]


def recompute_strategies(snapshots: Sequence[int]) -> dict[str, Callable[[Callable, Any, int], Any]]:
    """Name -> ``run(step, x, n)``: the loop as each strategy differentiates it."""
    def plain(step: Callable, x: Any, n: int) -> Any:
        for _ in range(n):
            x = step(x)
        return x

    def every_sqrt(step: Callable, x: Any, n: int) -> Any:
        width = max(1, math.isqrt(n))
        for start in range(0, n, width):
            x = checkpoint(lambda z, k=min(width, n - start): plain(step, z, k))(x)
        return x

    out = {"plain tape": plain, "checkpoint every √n": every_sqrt}
    for k in snapshots:
        out[f"revolve, {k} snapshots"] = \
            lambda step, x, n, k=k: checkpoint_loop(step, x, n, snapshots=k)
    return out


def measure_recompute(lengths: Sequence[int], size: int, snapshots: Sequence[int]) -> list[Record]:
    """One record per strategy and loop length: peak bytes, CPU seconds, step calls."""
    x0 = np.random.default_rng(0).normal(size=size)
    calls = [0]

    def step(x: Any) -> Any:
        calls[0] += 1
        return x + 0.01 * dnp.sin(x)

    rows = []
    for name, run in recompute_strategies(snapshots).items():
        for n in lengths:
            gradient = grad(lambda x: dnp.sum(run(step, x, n)))
            calls[0] = 0
            t = time.process_time()
            gradient(x0)
            seconds = time.process_time() - t
            steps = calls[0]
            peak = peak_bytes(lambda: gradient(x0))
            rows.append({"strategy": name, "n": n, "peak_bytes": peak, "seconds": seconds,
                         "step_calls": steps, "state_bytes": x0.nbytes})
    return rows


FUSION_WAYS = {"eager reverse": "reverse", "compiled (numpy, unfused)": "compiled[fuse=false]",
               "compiled, fused kernels": "compiled"}


def measure_fusion(sizes: Sequence[int], repeat: int = 5) -> list[Record]:
    """One record per way and n: median time per gradient, peak resident growth, setup;
    and one ``memory-bound`` record per n: (8n read + 8n written) / bandwidth at n."""
    rows = []
    for n in sizes:
        x = np.random.default_rng(n).uniform(-1.0, 1.0, n)
        for way, spec in FUSION_WAYS.items():
            be = backend(spec)
            g = grad(rosenbrock, backend=be)
            g(x)  # compile (compiled ways), warm up
            seconds = timed(lambda: g(x), repeat=repeat)[0]
            stats = be.stats(rosenbrock, x) if spec != "reverse" else {}
            rows.append({"way": way, "n": n, "time_s": seconds,
                         "peak_rss_bytes": peak_rss_bytes(lambda: g(x)),
                         "setup_s": stats.get("setup_s"), "fusion": stats.get("fusion")})
        bandwidth = bandwidth_bytes_per_s(n, repeat)
        rows.append({"way": "memory-bound", "n": n, "time_s": 16 * n / bandwidth,
                     "bytes": 16 * n, "bandwidth_bytes_per_s": bandwidth})
    return rows
