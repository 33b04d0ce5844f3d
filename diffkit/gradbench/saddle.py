"""GradBench's ``saddle``: a saddle point by gradient descent inside gradient descent.

f(p, q) = (p₀² + p₁²) − (q₀² + q₁²) for p, q ∈ R². The eval asks for
p* = argmin_p max_q f(p, q), then q* = argmax_q f(p*, q), each optimum found by
GradBench's gradient descent (:func:`.common.argmin`; an argmax is the argmin of −f,
``max_q`` the value of f at the argmax) started from the input's point s for every
descent, inner and outer. Output: p* then q*, four numbers. GradBench sends
``{"start": [1, 1]}`` (its description says ``w=0``, copied from ``particle``; the name is
kept) and expects 8.246324826140356e-06 four times.

The outer descent needs the gradient of m(p) = max_q f(p, q) w.r.t. p, whose value comes
out of the inner descent: the nested derivative goes through that whole loop. The four
functions name the modes: the first letter for ∇m (and for the final argmax), the second
for the inner ∇_q f, ``f`` by the backend's forward transform (``dk.jvp`` per unit
vector), ``r`` by its reverse one (``dk.value_and_grad``), as in :mod:`.particle`.

The inner descent stops after a number of iterations that depends on the values (170 from
s = (1, 1)). It is written without branches (a stopped descent is a fixed point of its
step) and bounded by ``limit`` iterations, from 16 and doubled while it runs out (up to
2¹⁶; a compiled backend builds a program per limit, traced with all its iterations; an
eager one stops as soon as the descent does). ``compiled[fuse=false]`` runs it in seconds;
the default fused ``compiled`` backend spends many minutes in numba on those unrolled
iterations.

By hand: ∇_q(−f) = 2q, and ∇m(p) = 2p: the inner descent's iterates do not depend on p
(∇_q f does not), so m's derivative is ∂f/∂p at the inner optimum (:func:`saddle_by_hand`,
the same descents in plain numpy with those gradients).

>>> saddle_by_hand(np.array([1.0, 1.0]))[0]   # GradBench's expected output
8.246324826140356e-06
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from .common import Eval, InputError, Prepared, Runner, argmin, argmin_by_hand, \
    bounded_runner, descent, finished, floats, to_json, value_and_gradient

STEPS, MAX_STEPS = 16, 1 << 16
FUNCTIONS = ("rr", "ff", "fr", "rf")  # in GradBench's order
SIZES = ("w=0",)


def objective(p: Any, q: Any) -> Any:
    """f(p, q) = (p₀² + p₁²) − (q₀² + q₁²), in :mod:`diffkit.numpy`."""
    return dnp.sum(p * p) - dnp.sum(q * q)


def against(q: Any, p: Any) -> Any:
    """−f(p, q) as a function of q: the inner descent's (an argmax of f) objective."""
    return -objective(p, q)


def best(p: Any, start: Any, inner: Any, limit: int) -> tuple:
    """(m(p) = max_q f(p, q) by the descent from ``start``, ∇_q by ``inner``; whether that
    descent stopped within ``limit`` iterations)."""
    q, done = argmin(inner, start, (p,), limit)
    return objective(p, q), done


def solver(function: str, backend: Backend, limit: int) -> Runner:
    inner = value_and_gradient(against, function[1], backend)
    outer = finished(value_and_gradient(lambda p, start: best(p, start, inner, limit),
                                        function[0], backend, has_aux=True))
    last = value_and_gradient(against, function[0], backend)

    def run(static: tuple, start: Any) -> Any:
        p = descent(outer, start, (start,))
        return dnp.concatenate([p, descent(last, start, (p,))])

    return run


# --------------------------------------------------------------------------- by hand


def saddle_by_hand(start: np.ndarray) -> list[float]:
    def best(p: np.ndarray) -> float:
        q = argmin_by_hand(lambda q: -(np.sum(p * p) - np.sum(q * q)), lambda q: 2.0 * q, start)
        return float(np.sum(p * p) - np.sum(q * q))

    p = argmin_by_hand(best, lambda p: 2.0 * p, start)
    q = argmin_by_hand(lambda q: -(np.sum(p * p) - np.sum(q * q)), lambda q: 2.0 * q, start)
    return np.concatenate([p, q]).tolist()


# --------------------------------------------------------------------------- GradBench


def inputs(size: str) -> dict[str, Any]:
    return {"start": [1.0, 1.0]}


def prepare(input: dict[str, Any]) -> Prepared:
    start = floats(input, "start", 1)
    if start.shape != (2,):
        raise InputError(f"field 'start' must hold 2 numbers, got {start.size}")
    return (), (start,)


def build(function: str, backend: Backend) -> Runner:
    return bounded_runner(lambda limit: solver(function, backend, limit), STEPS, MAX_STEPS,
                          "the inner descent")


def output(function: str, result: Any) -> Any:
    return to_json(result)


def reference(function: str, input: dict[str, Any]) -> Any:
    _, (start,) = prepare(input)
    return saddle_by_hand(start)


EVAL = Eval("saddle", FUNCTIONS, SIZES, inputs, prepare, build, output, reference,
            "a saddle point by gradient descent inside gradient descent, nested AD")
