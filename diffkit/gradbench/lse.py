"""GradBench's ``lse``: LogSumExp and its gradient.

LSE(x) = log Σᵢ exp(xᵢ), computed stably as a + log Σᵢ exp(xᵢ − a) with a = max x, from its
primitive steps (a maximum, a sum), not a library logsumexp. Functions: ``primal`` (LSE(x))
and ``gradient`` (∇LSE(x)). Input ``{"x": [...]}``; GradBench draws x uniform on [0, 1)
after ``np.random.seed(31337)``, one vector per size in order (n = 2500, 5000, … 1280000).

By hand: ∂LSE/∂xᵢ = exp(xᵢ − LSE(x)), the softmax of x (the shift a cancels: its
derivative, 1 − Σᵢ softmaxᵢ, is zero, whichever entry the maximum picks).

>>> import numpy as np
>>> x = np.log(np.array([1.0, 3.0]))
>>> float(np.exp(lse(x)))                       # 1 + 3
4.0
>>> gradient_by_hand(x).tolist()
[0.25, 0.75]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from .common import Eval, InputError, Prepared, Runner, floats, gradient_runner, legacy_draws, \
    primal_runner, to_json

SEED = 31337
N = (2500, 5000, 10000, 20000, 40000, 80000, 160000, 320000, 640000, 1280000)
SIZES = tuple(f"n={n}" for n in N)


def lse(x: Any) -> Any:
    """LogSumExp by the max shift, in :mod:`diffkit.numpy` (any backend differentiates it)."""
    a = dnp.max(x)
    return a + dnp.log(dnp.sum(dnp.exp(x - a)))


def primal_by_hand(x: np.ndarray) -> float:
    a = np.max(x)
    return float(a + np.log(np.sum(np.exp(x - a))))


def gradient_by_hand(x: np.ndarray) -> np.ndarray:
    """The softmax of x: exp(xᵢ − a) / Σⱼ exp(xⱼ − a)."""
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def inputs(size: str) -> dict[str, Any]:
    draws = [(f"n={n}", lambda rs, n=n: rs.rand(n)) for n in N]
    return {"x": legacy_draws(SEED, draws, size).tolist()}


def prepare(input: dict[str, Any]) -> Prepared:
    x = floats(input, "x", 1)
    if x.size == 0:
        raise InputError("field 'x' must not be empty")
    return (), (x,)


def build(function: str, backend: Backend) -> Runner:
    return primal_runner(lse, backend) if function == "primal" else gradient_runner(lse, backend)


def output(function: str, result: Any) -> Any:
    return to_json(result)


def reference(function: str, input: dict[str, Any]) -> Any:
    x = prepare(input)[1][0]
    return primal_by_hand(x) if function == "primal" else gradient_by_hand(x).tolist()


EVAL = Eval("lse", ("primal", "gradient"), SIZES, inputs, prepare, build, output, reference,
            "LogSumExp and its gradient")
