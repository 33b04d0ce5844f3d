"""GradBench's ``llsq``: a linear least-squares objective (cmpad's ``llsq_obj``).

y(x) = ½ Σᵢ (sᵢ − Σⱼ xⱼ tᵢʲ)², i < n, j < m, with tᵢ = −1 + 2i/(n − 1) and sᵢ = sign(tᵢ)
(0 at tᵢ = 0). Functions: ``primal`` (y) and ``gradient`` (∇y). Input ``{"x": [...],
"n": n}``; GradBench draws x (m = 128) uniform on [0, 1) after ``np.random.seed(31337)``,
one vector per size, sizes ``n=16,m=128`` … ``n=16392,m=128`` in order of n·m.

By hand, with the residual rᵢ = sᵢ − Σⱼ xⱼ tᵢʲ and V the Vandermonde matrix Vᵢⱼ = tᵢʲ:
y = ½ rᵀr and ∂y/∂xⱼ = −Σᵢ rᵢ tᵢʲ, i.e. ∇y = −Vᵀ r.

>>> import numpy as np
>>> t, s = grid(3)                     # t = −1, 0, 1 and s = −1, 0, 1
>>> t.tolist(), s.tolist()
([-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0])
>>> float(llsq(np.array([0.0, 1.0]), 3))   # x₁ t fits s exactly
0.0
>>> gradient_by_hand(np.array([1.0, 0.0]), 3).tolist()   # r = (−2, −1, 0)
[3.0, -2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from .common import Eval, InputError, Prepared, Runner, floats, gradient_runner, integer, \
    legacy_draws, primal_runner, to_json

SEED = 31337
N = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392)  # (sic: 8196, 16392)
M = (128,)
WORKLOADS = sorted([(n, m) for n in N for m in M], key=lambda v: v[0] * v[1])
SIZES = tuple(f"n={n},m={m}" for n, m in WORKLOADS)


def grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """tᵢ = −1 + (2i)/(n − 1), as GradBench writes it (exactly 0 in the middle of an odd
    n), and sᵢ = sign(tᵢ). Data, not differentiated."""
    t = -1.0 + (np.arange(n) * 2.0) / (n - 1)
    return t, np.sign(t)


def vandermonde(t: np.ndarray, m: int) -> np.ndarray:
    """Vᵢⱼ = tᵢʲ, j < m, by repeated products as the definition's inner loop does."""
    v = np.empty((t.size, m))
    if m:
        v[:, 0] = 1.0
    for j in range(1, m):
        v[:, j] = v[:, j - 1] * t
    return v


def llsq(x: Any, n: int) -> Any:
    """½ ‖s − V x‖², in :mod:`diffkit.numpy` (``n`` is a size: static to a compiler)."""
    t, s = grid(n)
    r = dnp.subtract(s, dnp.matmul(vandermonde(t, x.shape[0]), x))
    return 0.5 * dnp.sum(r * r)


def residual(x: np.ndarray, n: int) -> np.ndarray:
    t, s = grid(n)
    return s - vandermonde(t, x.size) @ x


def primal_by_hand(x: np.ndarray, n: int) -> float:
    r = residual(x, n)
    return float(0.5 * r @ r)


def gradient_by_hand(x: np.ndarray, n: int) -> np.ndarray:
    """∇y = −Vᵀ r."""
    t, _ = grid(n)
    return -(vandermonde(t, x.size).T @ residual(x, n))


def inputs(size: str) -> dict[str, Any]:
    draws = [(f"n={n},m={m}", lambda rs, n=n, m=m: {"x": rs.rand(m).tolist(), "n": n})
             for n, m in WORKLOADS]
    return legacy_draws(SEED, draws, size)


def prepare(input: dict[str, Any]) -> Prepared:
    n = integer(input, "n", 2)
    x = floats(input, "x", 1)
    if x.size == 0:
        raise InputError("field 'x' must not be empty")
    return (n,), (x,)


def build(function: str, backend: Backend) -> Runner:
    return primal_runner(llsq, backend) if function == "primal" else gradient_runner(llsq, backend)


def output(function: str, result: Any) -> Any:
    return to_json(result)


def reference(function: str, input: dict[str, Any]) -> Any:
    (n,), (x,) = prepare(input)
    return primal_by_hand(x, n) if function == "primal" else gradient_by_hand(x, n).tolist()


EVAL = Eval("llsq", ("primal", "gradient"), SIZES, inputs, prepare, build, output, reference,
            "linear least squares (cmpad's llsq_obj) and its gradient")
