"""GradBench's ``ode``: an ODE solved by s steps of classic Runge–Kutta (cmpad's ``an_ode``).

y₀′ = x₀ and yᵢ′ = xᵢ yᵢ₋₁ for 0 < i < n, y(0) = 0, integrated to t = 2 by s steps of
RK4 (h = 2/s). Functions: ``primal`` (y(2), n numbers) and ``gradient`` (the gradient of
its last entry yₙ₋₁(2) w.r.t. x). Input ``{"x": [...], "s": s}``; GradBench draws x
uniform on [0, 1) after ``np.random.seed(31337)``, one vector per size, sizes ``n=N,s=S``
(N = 1000, 10000, 100000; S = 1, 10, 100) in order of n·s.

The gradient is of the computed RK4 solution, not of the exact one (RK4 is exact only for
the first entries, whose solutions are polynomials of degree ≤ 4 in t).

By hand: the reverse sweep of the RK4 loop (:func:`gradient_by_hand`), each stage's
adjoint in turn. For f(x, y) = (x₀, x₁y₀, …, xₙ₋₁yₙ₋₂), a cotangent w of f gives
x̄₀ += w₀, x̄ᵢ += wᵢ yᵢ₋₁ and ȳᵢ₋₁ += wᵢ xᵢ.

>>> import numpy as np
>>> [round(v, 12) for v in primal_by_hand(np.array([1.0, 3.0]), 1).tolist()]  # y₀ = t, y₁ = 3t²/2
[2.0, 6.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from ..transforms.loops import fori_loop
from .common import Eval, InputError, Prepared, Runner, floats, gradient_runner, integer, \
    legacy_draws, primal_runner, to_json

SEED = 31337
N = (1000, 10000, 100000)
S = (1, 10, 100)
WORKLOADS = sorted([(n, s) for n in N for s in S], key=lambda v: v[0] * v[1])
SIZES = tuple(f"n={n},s={s}" for n, s in WORKLOADS)
TF = 2.0


def field_of(x: Any, y: Any) -> Any:
    """The right-hand side: (x₀, x₁ y₀, …, xₙ₋₁ yₙ₋₂)."""
    return dnp.concatenate([x[:1], x[1:] * y[:-1]])


def rk4_step(x: Any, y: Any, h: float) -> Any:
    """y after one RK4 step of size h."""
    k1 = field_of(x, y)
    k2 = field_of(x, y + (h / 2) * k1)
    k3 = field_of(x, y + (h / 2) * k2)
    k4 = field_of(x, y + h * k3)
    return y + (h / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def primal(x: Any, s: int) -> Any:
    """y(2) after ``s`` RK4 steps, in :mod:`diffkit.numpy` (``s`` static to a compiler)."""
    y = dnp.zeros_like(x)
    for _ in range(s):
        y = rk4_step(x, y, TF / s)
    return y


def primal_looped(x: Any, s: int) -> Any:
    """The same with the steps as ``dk.fori_loop``: one loop in a compiled graph,
    ``lax.fori_loop`` on JAX's arrays."""
    return fori_loop(0, s, lambda i, y: rk4_step(x, y, TF / s), dnp.zeros_like(x))


def last(x: Any, s: int) -> Any:
    """yₙ₋₁(2): the entry whose gradient the eval asks for."""
    return primal(x, s)[-1]


# --------------------------------------------------------------------------- by hand


def _f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    z = np.empty_like(y)
    z[0] = x[0]
    z[1:] = x[1:] * y[:-1]
    return z


def _f_adjoint(x: np.ndarray, y: np.ndarray, w: np.ndarray, x_bar: np.ndarray,
               y_bar: np.ndarray) -> None:
    """Add the cotangent ``w`` of f(x, y) into x̄ and ȳ."""
    x_bar[0] += w[0]
    x_bar[1:] += w[1:] * y[:-1]
    y_bar[:-1] += w[1:] * x[1:]


def _steps(x: np.ndarray, s: int) -> list[tuple[np.ndarray, ...]]:
    """Each step's stage states (y, y₂, y₃, y₄) and final y, forward."""
    h, y, saved = TF / s, np.zeros_like(x), []
    for _ in range(s):
        k1 = _f(x, y)
        y2 = y + h / 2 * k1
        k2 = _f(x, y2)
        y3 = y + h / 2 * k2
        k3 = _f(x, y3)
        y4 = y + h * k3
        k4 = _f(x, y4)
        saved.append((y, y2, y3, y4))
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    saved.append((y,))
    return saved


def primal_by_hand(x: np.ndarray, s: int) -> np.ndarray:
    return _steps(x, s)[-1][0]


def gradient_by_hand(x: np.ndarray, s: int) -> np.ndarray:
    """∂yₙ₋₁(2)/∂x by the RK4 loop's reverse sweep."""
    h, saved = TF / s, _steps(x, s)
    x_bar = np.zeros_like(x)
    y_bar = np.zeros_like(x)
    y_bar[-1] = 1.0
    for y, y2, y3, y4 in reversed(saved[:-1]):
        # y' = y + h/6 (k1 + 2 k2 + 2 k3 + k4)
        k1_bar, k2_bar, k3_bar, k4_bar = (h / 6 * y_bar, h / 3 * y_bar, h / 3 * y_bar,
                                          h / 6 * y_bar)
        y_new = y_bar.copy()
        # k4 = f(y4), y4 = y + h k3
        y4_bar = np.zeros_like(x)
        _f_adjoint(x, y4, k4_bar, x_bar, y4_bar)
        y_new += y4_bar
        k3_bar = k3_bar + h * y4_bar
        # k3 = f(y3), y3 = y + h/2 k2
        y3_bar = np.zeros_like(x)
        _f_adjoint(x, y3, k3_bar, x_bar, y3_bar)
        y_new += y3_bar
        k2_bar = k2_bar + h / 2 * y3_bar
        # k2 = f(y2), y2 = y + h/2 k1
        y2_bar = np.zeros_like(x)
        _f_adjoint(x, y2, k2_bar, x_bar, y2_bar)
        y_new += y2_bar
        k1_bar = k1_bar + h / 2 * y2_bar
        # k1 = f(y)
        _f_adjoint(x, y, k1_bar, x_bar, y_new)
        y_bar = y_new
    return x_bar


# --------------------------------------------------------------------------- GradBench


def inputs(size: str) -> dict[str, Any]:
    draws = [(f"n={n},s={s}", lambda rs, n=n, s=s: {"x": rs.rand(n).tolist(), "s": s})
             for n, s in WORKLOADS]
    return legacy_draws(SEED, draws, size)


def prepare(input: dict[str, Any]) -> Prepared:
    s = integer(input, "s", 1)
    x = floats(input, "x", 1)
    if x.size == 0:
        raise InputError("field 'x' must not be empty")
    return (s,), (x,)


def build(function: str, backend: Backend) -> Runner:
    return primal_runner(primal, backend) if function == "primal" else \
        gradient_runner(last, backend)


def output(function: str, result: Any) -> Any:
    return to_json(result)


def reference(function: str, input: dict[str, Any]) -> Any:
    (s,), (x,) = prepare(input)
    return (primal_by_hand if function == "primal" else gradient_by_hand)(x, s).tolist()


EVAL = Eval("ode", ("primal", "gradient"), SIZES, inputs, prepare, build, output, reference,
            "an ODE solved by s RK4 steps, and the gradient of its last entry")
