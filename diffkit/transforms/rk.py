"""Explicit Runge–Kutta integration for :func:`diffkit.odeint`, on lists of arrays.

A state is a list of arrays (the leaves of y). ``grid`` chooses the steps on the plain
numbers: for RK4, ``steps`` equal steps per output interval; for Dormand–Prince 5(4),
adaptive steps with Hairer's initial step, the error norm
``rms(err / (atol + rtol·max(|y|, |y_new|)))`` and his stiffness test (|λh| past the
method's stability boundary 3.25 on 15 accepted steps: refused, explicit steps would
crawl). A grid is, per output interval, the fractions 0 = a₀ < … < a_k = 1 of the
interval where steps begin and end; ``march`` replays it on any values (boxes too), so
the time points stay differentiable in t.

>>> import numpy as np
>>> grid, ys = grid_of(lambda y, t, p: [-y[0]], [np.array(1.0)], np.array([0.0, 1.0]), [],
...                    Options("dopri5", 1e-8, 1e-8, np.inf, 0))
>>> len(grid[0]) > 2, round(float(ys[-1][0]), 8)
(True, 0.36787944)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .. import numpy as dnp
from ..core import Box, DiffkitError, NotApplicable, primal, shape
from .solvers import decision_values

Leaves = list
Rhs = Callable[[Leaves, Any, Leaves], Leaves]


class Tableau(NamedTuple):
    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    e: tuple[float, ...] = ()  # b − b̂ (the embedded error weights), stage 7 = f(y_new) included


RK4 = Tableau((0.0, 0.5, 0.5, 1.0), ((), (0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)),
              (1 / 6, 1 / 3, 1 / 3, 1 / 6))
DOPRI5 = Tableau(
    (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0),
    ((), (1 / 5,), (3 / 40, 9 / 40), (44 / 45, -56 / 15, 32 / 9),
     (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
     (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656)),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
    (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40))
TABLEAUS = {"rk4": RK4, "dopri5": DOPRI5}


@dataclass(frozen=True)
class Options:
    method: str
    rtol: float
    atol: float
    mxstep: float
    steps: int
    hmax: float = np.inf

    def __post_init__(self) -> None:
        if self.method not in TABLEAUS:
            raise DiffkitError(f"dk.odeint: method must be one of {tuple(TABLEAUS)}, got "
                               f"{self.method!r}")
        if self.method == "rk4" and not (isinstance(self.steps, int) and self.steps >= 1):
            raise DiffkitError(f"dk.odeint: steps (RK4 steps per interval) must be an int >= 1, "
                               f"got {self.steps!r}")
        if not (self.rtol > 0 and self.atol >= 0 and self.mxstep >= 1 and self.hmax > 0):
            raise DiffkitError(f"dk.odeint: need rtol > 0, atol >= 0, mxstep >= 1, hmax > 0; got "
                               f"rtol={self.rtol}, atol={self.atol}, mxstep={self.mxstep}, "
                               f"hmax={self.hmax}")


# --------------------------------------------------------------------------- steps


def step(rhs: Rhs, tableau: Tableau, y: Leaves, t: Any, h: Any, ps: Leaves) -> tuple[Leaves,
                                                                                     Leaves]:
    """One explicit RK step: the new state and the stage derivatives."""
    ks = [rhs(y, t, ps)]
    for c, row in zip(tableau.c[1:], tableau.a[1:]):
        ks.append(rhs(combine(y, h, row, ks), t + c * h, ps))
    return combine(y, h, tableau.b, ks), ks


def combine(y: Leaves, h: Any, weights: tuple[float, ...], ks: list[Leaves]) -> Leaves:
    """``y + h Σ wⱼ kⱼ`` leaf by leaf (zero weights skipped)."""
    out = []
    for i, y_i in enumerate(y):
        acc = None
        for w, k in zip(weights, ks):
            if w:
                acc = w * k[i] if acc is None else acc + w * k[i]
        out.append(y_i if acc is None else y_i + h * acc)
    return out


def steps(rhs: Rhs, method: str, y: Leaves, start: Any, width: Any, ps: Leaves,
          fractions: Any) -> Leaves:
    """The steps of one interval [start, start + width] at the given fractions."""
    for a, b in zip(fractions[:-1], fractions[1:]):
        y = step(rhs, TABLEAUS[method], y, start + a * width, (b - a) * width, ps)[0]
    return y


def march(rhs: Rhs, method: str, y: Leaves, t: Any, ps: Leaves, grid: list) -> list[Leaves]:
    """The states at every t, stepping over a fixed grid."""
    outputs = [y]
    for i, fractions in enumerate(grid):
        y = steps(rhs, method, y, t[i], t[i + 1] - t[i], ps, fractions)
        outputs.append(y)
    return outputs


def integrate(rhs: Rhs, y: Leaves, t: Any, ps: Leaves, options: Options) -> list[Leaves]:
    """The states at every t: the steps chosen on the numbers, replayed on boxes if any."""
    grid, outputs = grid_of(rhs, y, t, ps, options)
    if outputs is None or any(isinstance(v, Box) for v in [*y, t, *ps]):
        outputs = march(rhs, options.method, y, t, ps, grid)
    return outputs


# --------------------------------------------------------------------------- the grid


def grid_of(rhs: Rhs, y: Leaves, t: Any, ps: Leaves, options: Options
            ) -> tuple[list[np.ndarray], list[Leaves] | None]:
    """The step fractions per interval, and (adaptive) the states at every t it computed."""
    n_intervals = shape(t)[0] - 1
    if options.method == "rk4":
        return [np.linspace(0.0, 1.0, options.steps + 1)] * n_intervals, None
    y = [np.asarray(_values(v), dtype=float) for v in y]
    ps = [_values(p) for p in ps]
    t = np.asarray(_values(t), dtype=float)
    rhs = plain(rhs)
    f0 = rhs(y, t[0], ps)
    h = _first_step(rhs, y, t[0], ps, f0, options) if n_intervals else 0.0
    grid, outputs, stiff = [], [y], _Stiffness()
    for i in range(n_intervals):
        fractions, now, end, taken = [0.0], t[i], t[i + 1], 0
        while now < end:
            h = min(h, options.hmax)
            last = h >= end - now
            h = end - now if last else h
            y_new, ks = step(rhs, DOPRI5, y, now, h, ps)
            f_new = rhs(y_new, now + h, ps)
            error = combine([0.0 * v for v in y], h, DOPRI5.e, ks + [f_new])
            ratio = _rms([e / (options.atol + options.rtol * np.maximum(abs(a), abs(b)))
                          for e, a, b in zip(error, y, y_new)])
            if not np.isfinite(ratio) or h < 1e-14 * max(1.0, abs(now)):
                raise DiffkitError(f"dk.odeint: the step size fell to {h:.3g} at t={now:.6g} "
                                   "(the solution blows up or is not smooth there)")
            if ratio <= 1.0:
                stiff.check(y, y_new, ks, f_new, now, h)
                now, y, f0, taken = (end if last else now + h), y_new, f_new, taken + 1
                fractions.append((now - t[i]) / (end - t[i]))
                if taken > options.mxstep:
                    raise DiffkitError(f"dk.odeint: more than mxstep={options.mxstep} steps in "
                                       f"[{t[i]}, {end}]; raise mxstep or loosen rtol/atol")
            h *= min(10.0, max(0.2, 0.9 * ratio ** -0.2)) if ratio > 0 else 10.0
        fractions[-1] = 1.0
        grid.append(np.array(fractions))
        outputs.append(y)
    return grid, outputs


def plain(rhs: Rhs) -> Rhs:
    """``rhs`` on numbers (values it closes over that are being differentiated, dropped)."""
    return lambda y, t, ps: [np.asarray(_values(v), dtype=float) for v in rhs(y, t, ps)]


class _Stiffness:
    """Hairer's test in DOPRI5: h·|λ| ≈ h·|k₇ − k₆| / |y₇ − y₆| past 3.25 on 15 accepted steps
    (reset after 6 that are not) means the step is held by stability, not accuracy."""

    def __init__(self) -> None:
        self.stiff = self.calm = 0

    def check(self, y: Leaves, y_new: Leaves, ks: list[Leaves], f_new: Leaves, t: float,
              h: float) -> None:
        y6 = combine(y, h, DOPRI5.a[5], ks)
        num = sum(float(np.sum((a - b) ** 2)) for a, b in zip(f_new, ks[5]))
        den = sum(float(np.sum((a - b) ** 2)) for a, b in zip(y_new, y6))
        if den > 0 and h * h * num > 3.25 ** 2 * den:
            self.stiff, self.calm = self.stiff + 1, 0
            if self.stiff == 15:
                raise NotApplicable(
                    f"n/a: dk.odeint: the problem is stiff near t={t:.4g} (|λ|h at the explicit "
                    f"method's stability limit with h={h:.2g}): explicit steps (dopri5, rk4) "
                    "would crawl or blow up; diffkit has no implicit integrator")
        else:
            self.calm += 1
            if self.calm == 6:
                self.stiff = 0


def _first_step(rhs: Rhs, y: Leaves, t0: float, ps: Leaves, f0: Leaves, o: Options) -> float:
    """Hairer, Nørsett & Wanner's starting step for a 5th-order method."""
    scale = [o.atol + o.rtol * abs(v) for v in y]
    d0 = _rms([v / s for v, s in zip(y, scale)])
    d1 = _rms([f / s for f, s in zip(f0, scale)])
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    f1 = rhs([v + h0 * f for v, f in zip(y, f0)], t0 + h0, ps)
    d2 = _rms([(a - b) / s for a, b, s in zip(f1, f0, scale)]) / h0
    h1 = max(1e-6, h0 * 1e-3) if max(d1, d2) <= 1e-15 else (0.01 / max(d1, d2)) ** 0.2
    return min(100 * h0, h1)


def _values(x: Any) -> Any:
    """The numbers that choose the steps: one problem's, not a batch's."""
    box = x
    while isinstance(box, Box):
        if box.batched:
            raise NotApplicable("n/a: dk.odeint chooses adaptive steps per problem, and vmap "
                                "outside a derivative batches the problems inside it; use "
                                "method='rk4', or put dk.vmap inside (dk.jacobian(dk.vmap(f)))")
        box = box.value
    return decision_values(x, "odeint", "its adaptive steps (method='rk4' compiles)")


def _rms(leaves: Leaves) -> float:
    total = sum(float(np.sum(np.square(v))) for v in leaves)
    count = sum(max(1, np.size(v)) for v in leaves)
    return math.sqrt(total / count)


# --------------------------------------------------------------------------- shapes


def array(x: Any) -> Any:
    return x if isinstance(x, Box) else np.asarray(x, dtype=float)


def times(t: Any) -> Any:
    """``t`` as an array of increasing times (checked on its numbers)."""
    t = array(t)
    if len(shape(t)) != 1 or shape(t)[0] < 1:
        raise DiffkitError(f"dk.odeint: t must be a 1-d array of times, got shape {shape(t)}")
    values = primal(t)
    if not isinstance(values, Box) and np.any(np.diff(values) <= 0):
        raise DiffkitError("dk.odeint: t must be strictly increasing (as in "
                           "jax.experimental.ode.odeint)")
    return t


def pack(outputs: list[Leaves]) -> Any:
    """States at every t as one array: times × state entries."""
    return dnp.stack([dnp.concatenate([dnp.reshape(v, (-1,)) for v in leaves])
                      for leaves in outputs])


def unpack(packed: Any, shapes: list[tuple[int, ...]]) -> Leaves:
    """The leaves of :func:`pack`'s array, each with the leading time axis."""
    out, i = [], 0
    n_t = shape(packed)[0]
    for s in shapes:
        size = int(np.prod(s))
        out.append(dnp.reshape(packed[:, i:i + size], (n_t,) + s))
        i += size
    return out


def chunk(grid: list) -> int:
    """Steps per checkpointed segment: √(all steps)."""
    return max(1, math.ceil(math.sqrt(sum(len(f) - 1 for f in grid))))
