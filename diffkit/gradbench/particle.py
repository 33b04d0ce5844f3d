"""GradBench's ``particle``: the charge that steers a particle to the origin, by nested AD.

A particle of unit mass and charge starts at x = (0, 8) with velocity (0.75, 0) and is
repelled by two unit charges at (10, 10 − w) and (10, 0): its potential is
p(x; w) = Σ_c 1/‖x − c‖ and its acceleration −∇ₓp. Euler's method with Δt = 0.1 moves it
(x ← x + Δt ẋ, ẋ ← ẋ − Δt ∇ₓp(x) with ∇ₓp at the old x) as long as the new position is
above the x axis; from the last such state the line x + s ẋ meets the axis at
s = −x₁/ẋ₁, and E(w) = (x₀ + s ẋ₀)² is how far from the origin. The eval minimises E by
GradBench's gradient descent (:func:`.common.argmin`) from the input's w (GradBench sends
``{"w": 0}``, described as ``w=0``, and expects 0.2071918746486116).

The four functions differ in how the two derivatives are taken: the first letter is the
descent's dE/dw, the second the Euler steps' ∇ₓp, ``f`` by the backend's forward
transform (``dk.jvp`` per unit vector), ``r`` by its reverse one (``dk.value_and_grad``);
dE/dw goes through ∇ₓp, whose derivative in w is the nested one. On the ``compiled``
backend both are genuinely forward and reverse mode; the ``forward`` backend computes a
``value_and_grad`` by forward mode (its only mode) and the ``reverse`` backend a ``jvp``
by a VJP per output: there the letters name the transform called.

The Euler loop stops when the particle lands, after a number of steps that depends on w
(352 for w = 0). A traced graph cannot take that branch, so the loop is written without
one: a step that would cross the axis leaves the state as it is (a landed state is a
fixed point), and the loop runs at most ``limit`` steps, stopping early when the backend
knows the particle has landed (every backend but a traced compiled one, which runs all
of them; the numbers are the same). A trajectory still in flight after ``limit`` steps is
run again with twice the limit (from 512; a compiled backend builds a program per
limit) up to 2¹⁶ steps, then an error: GradBench's loop has no bound.

Traced (the ``compiled`` backend), the Euler loop is a ``dk.fori_loop``: one loop in the
graph, its step (with the inner derivative) traced once; fused, it runs as one
machine-code loop (``docs/compiled.md``, "Loops"): each of the four functions builds in
under a second and evaluates E and dE/dw in about 0.3 ms. Unrolled (before), its 512
steps took the fused backend minutes to compile. On JAX's arrays (the ``jax`` backend)
the same loop is ``lax.fori_loop``, with the inner derivative nested in it
(:func:`~diffkit.transforms.loops.one_loop` says where a loop is one loop).

By hand (:func:`trajectory_by_hand`): ∇ₓp = −Σ_c d_c/r_c³ (d_c = x − c, r_c = ‖d_c‖) and
the tangents of the state in w along the same steps, with ċ = (0, −1) for the moving
charge: δ(∇ₓp) = −Σ_c (ḋ_c/r_c³ − 3 d_c (d_c·ḋ_c)/r_c⁵), ḋ_c = ẋ − ċ; at the end
ṡ = −(ẋ₁ v₁ − x₁ v̇₁)/v₁² and dE/dw = 2 (x₀ + s v₀)(ẋ₀ + ṡ v₀ + s v̇₀).

>>> round(trajectory_by_hand(0.0)[0], 6)    # E(0): lands 1.79 to the right of the origin
3.199079
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..backends import Backend
from ..core import DiffkitError
from ..transforms.loops import fori_loop, one_loop
from .common import Eval, Prepared, Runner, argmin_by_hand, bounded_runner, descent, \
    finished, number, settled, value_and_gradient

DT = 0.1
START, VELOCITY = np.array([0.0, 8.0]), np.array([0.75, 0.0])
CHARGES = np.array([[10.0, 10.0], [10.0, 0.0]])
MOVES = np.array([[0.0, 1.0], [0.0, 0.0]])  # charges = CHARGES − w MOVES
STEPS, MAX_STEPS = 512, 1 << 16
FUNCTIONS = ("rr", "ff", "fr", "rf")  # in GradBench's order
SIZES = ("w=0",)


def potential(x: Any, charges: Any) -> Any:
    """p(x) = Σ_c 1/‖x − c‖, in :mod:`diffkit.numpy`."""
    d = x - charges
    return dnp.sum(1.0 / dnp.sqrt(dnp.sum(d * d, axis=1)))


def euler(x: Any, v: Any, charges: Any, inner: Any) -> tuple:
    """One Euler step, or none when the particle would cross the axis: (x, ẋ, landed)."""
    _, force = inner(x, charges)  # ∇ₓp: the acceleration is its opposite
    moved = x + DT * v
    flying = moved[1] > 0.0
    return (dnp.where(flying, moved, x), dnp.where(flying, v - DT * force, v),
            dnp.where(flying, False, True))


def miss(w: Any, inner: Any, limit: int) -> tuple:
    """(E(w), landed) for ``w`` of shape (1,), ∇ₓp by ``inner``, at most ``limit`` steps."""
    charges = CHARGES - w * MOVES
    x, v, landed = START, VELOCITY, False
    if one_loop():  # one loop in the graph, every step run (a landed state is a fixed point)
        x, v = fori_loop(0, limit, lambda i, s: euler(*s, charges, inner)[:2], (x, v))
        landed = (x + DT * v)[1] <= 0.0
    else:
        for _ in range(limit):
            if settled(landed):
                break
            x, v, landed = euler(x, v, charges, inner)
    s = -x[1] / v[1]
    reach = x[0] + s * v[0]
    return reach * reach, landed


def solver(function: str, backend: Backend, limit: int) -> Runner:
    inner = value_and_gradient(potential, function[1], backend)
    outer = finished(value_and_gradient(lambda w: miss(w, inner, limit), function[0],
                                        backend, has_aux=True))
    return lambda static, w: descent(outer, w)


# --------------------------------------------------------------------------- by hand


@functools.lru_cache(maxsize=4)  # the descent asks E, then dE/dw, at the same w
def trajectory_by_hand(w: float, limit: int = MAX_STEPS) -> tuple[float, float, bool]:
    """(E(w), dE/dw, landed): at most ``limit`` Euler steps (as :func:`miss`) with their
    tangent in w, in plain numpy."""
    charges = CHARGES - w * MOVES
    moving = -MOVES  # d charges / dw
    x, v = START.copy(), VELOCITY.copy()
    dx, dv = np.zeros(2), np.zeros(2)
    landed = False
    for _ in range(limit):
        landed = not (x + DT * v)[1] > 0.0
        if landed:
            break
        d = x - charges
        r = np.sqrt(np.sum(d * d, axis=1))[:, None]
        dd = dx - moving
        force = -np.sum(d / r ** 3, axis=0)
        dforce = -np.sum(dd / r ** 3 - 3.0 * d * np.sum(d * dd, axis=1)[:, None] / r ** 5,
                         axis=0)
        x, dx = x + DT * v, dx + DT * dv
        v, dv = v - DT * force, dv - DT * dforce
    s = -x[1] / v[1]
    ds = -(dx[1] * v[1] - x[1] * dv[1]) / v[1] ** 2
    reach = x[0] + s * v[0]
    return float(reach * reach), float(2.0 * reach * (dx[0] + ds * v[0] + s * dv[0])), landed


def particle_by_hand(w0: float) -> float:
    def flight(w: np.ndarray) -> tuple[float, float, bool]:
        value, slope, landed = trajectory_by_hand(float(w[0]))
        if not landed:
            raise DiffkitError(f"the particle does not land within {MAX_STEPS} steps "
                               f"(w = {w[0]})")
        return value, slope, landed

    return float(argmin_by_hand(lambda w: flight(w)[0], lambda w: np.array([flight(w)[1]]),
                                np.array([w0]))[0])


# --------------------------------------------------------------------------- GradBench


def inputs(size: str) -> dict[str, Any]:
    return {"w": 0.0}


def prepare(input: dict[str, Any]) -> Prepared:
    return (), (np.array([number(input, "w")]),)


def build(function: str, backend: Backend) -> Runner:
    return bounded_runner(lambda limit: solver(function, backend, limit), STEPS, MAX_STEPS,
                          "the particle's flight (Euler steps until it lands)")


def output(function: str, result: Any) -> Any:
    return float(np.reshape(result, -1)[0])


def reference(function: str, input: dict[str, Any]) -> Any:
    _, (w,) = prepare(input)
    return particle_by_hand(float(w[0]))


EVAL = Eval("particle", FUNCTIONS, SIZES, inputs, prepare, build, output, reference,
            "w steering a charged particle to the origin: argmin by descent, nested AD")
