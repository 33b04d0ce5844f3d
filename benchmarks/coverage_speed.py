"""Gradients of einsum, tensordot and solve on 200 x 200 inputs: diffkit's reverse mode
against HIPS autograd's, as ratios (run on demand, not a test; target: <= 1.5).

    python benchmarks/coverage_speed.py [--repeat 15]

Both libraries differentiate the same loss, sum(f(A, B) * W), with respect to A and B;
CPU time of this process, median of interleaved repeats, BLAS on one thread (as
core_ratios.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench.probes import interleaved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if any(os.environ.get(k) != v for k, v in env.items()):  # before numpy's first use
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **env})
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        sys.exit("this comparison needs autograd: pip install diffkit[autograd]")
    rng = np.random.default_rng(0)
    n = 200
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, n))
    cases = {
        "einsum ij,jk->ik": lambda xp, a, b: xp.einsum("ij,jk->ik", a, b),
        "einsum bij,bkj->bik (8 x 25 x 200)": lambda xp, a, b: xp.einsum(
            "bij,bkj->bik", a.reshape(8, 25, n), b.reshape(8, 25, n)),
        "tensordot axes=1": lambda xp, a, b: xp.tensordot(a, b, axes=1),
        "tensordot axes=([0], [1])": lambda xp, a, b: xp.tensordot(a, b, axes=([0], [1])),
        "linalg.solve": lambda xp, a, b: xp.linalg.solve(a, b),
    }
    print(f"{'gradient w.r.t. A and B, 200 x 200':40s} {'diffkit':>10s} {'autograd':>10s} {'ratio':>7s}")
    for name, f in cases.items():
        w = rng.standard_normal(f(np, a, b).shape)
        ours = dk.grad(lambda a_, b_, f=f, w=w: dnp.sum(f(dnp, a_, b_) * w), argnums=(0, 1))
        theirs = autograd.grad(lambda ab, f=f, w=w: anp.sum(f(anp, ab[0], ab[1]) * w))
        np.testing.assert_allclose(ours(a, b)[0], theirs((a, b))[0], rtol=1e-9, atol=1e-9)
        (t_ours, _), (t_theirs, _) = interleaved([lambda: ours(a, b), lambda: theirs((a, b))],
                                                 args.repeat, clock=time.process_time)
        print(f"{name:40s} {t_ours * 1e3:8.2f}ms {t_theirs * 1e3:8.2f}ms {t_ours / t_theirs:7.2f}")


if __name__ == "__main__":
    main()
