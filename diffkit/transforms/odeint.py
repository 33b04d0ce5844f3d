"""``dk.odeint``: integrate y' = func(y, t, *params) and differentiate the integration four ways.

Explicit Runge–Kutta steps, fixed (``method="rk4"``, ``steps`` per output interval) or
adaptive (``"dopri5"``, Dormand–Prince 5(4) with ``rtol``/``atol``, :mod:`.rk`). An
adaptive run first chooses its steps on the plain numbers; the steps are then a fixed
grid (fractions of each output interval), so every way below differentiates the same
discrete scheme or the same equation, and step-size decisions carry no derivative.

* ``adjoint="discrete"``: the steps run on the boxes, so reverse mode records every stage
  and sweeps back through them: the exact derivative of the discrete solution, O(steps)
  memory.
* ``"checkpointed"``: the same derivative, the steps in √n chunks under
  :func:`~diffkit.checkpoint` (each chunk recomputed in the backward sweep): O(√n) memory.
* ``"continuous"``: the adjoint ODE a' = −(∂f/∂y)ᵀa, θ̄' = −(∂f/∂θ)ᵀa integrated backwards
  from the stored outputs, re-integrating y alongside (Pontryagin; ``jax.experimental.ode``,
  torchdiffeq's ``odeint_adjoint``): O(1) memory in the steps, but it differentiates the
  *equation*, so its gradient differs from the discrete one by the integration error.
* ``"forward"``: forward sensitivities, s' = (∂f/∂y)s + (∂f/∂θ)θ̇, one pass per input.

Under forward mode the continuous and forward ways both push tangents through the steps.
The compiled backend traces the fixed-step integration as one program; an adaptive one
needs the values to choose its steps, so it is refused there with one line.

>>> import numpy as np, diffkit as dk
>>> decay = lambda k: dk.odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 2.0]), k)[-1]
>>> round(float(dk.grad(decay)(0.5)), 7)          # d/dk e^(-2k) = -2 e^(-1)
-0.7357589
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import Box, DiffkitError, NotApplicable, in_batch, primal, shape
from ..pytree import flatten
from . import rk
from .checkpoint import checkpoint
from .custom import _Custom
from .functional import jacobian, jvp, vjp
from .solvers import per_example

ADJOINTS = ("discrete", "checkpointed", "continuous", "forward")
Leaves = list


def odeint(func: Callable[..., Any], y0: Any, t: Any, *params: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: float = np.inf, hmax: float = np.inf,
           method: str = "dopri5", steps: int = 100, adjoint: str = "discrete") -> Any:
    """y at the times ``t`` (increasing; y(t[0]) = y0) of ``dy/dt = func(y, t, *params)``,
    as ``jax.experimental.ode.odeint``: the result has a leading axis over ``t`` (per
    leaf when y0 is a tree). Differentiable in y0, t and params, by ``adjoint`` (see the
    module): ``"discrete"``, ``"checkpointed"``, ``"continuous"`` or ``"forward"``.

    ``method="dopri5"`` (adaptive, ``rtol``/``atol``, at most ``mxstep`` steps per
    interval of at most ``hmax``; a stiff problem is refused) or ``"rk4"`` (``steps`` fixed
    steps per interval).

    >>> import numpy as np, diffkit as dk
    >>> ys = dk.odeint(lambda y, t: {"x": y["v"], "v": -y["x"]}, {"x": 1.0, "v": 0.0},
    ...                np.array([0.0, np.pi]), rtol=1e-10, atol=1e-10)
    >>> round(float(ys["x"][-1]), 8)
    -1.0
    """
    if adjoint not in ADJOINTS:
        raise DiffkitError(f"dk.odeint: adjoint must be one of {ADJOINTS}, got {adjoint!r}")
    options = rk.Options(method, float(rtol), float(atol), mxstep, steps, float(hmax))
    y_leaves, y_rebuild = flatten(y0)
    y_leaves = [rk.array(y) for y in y_leaves]
    p_leaves, p_rebuild = flatten(params)
    t = rk.times(t)
    shapes = [shape(y) for y in y_leaves]

    def rhs(ys: Leaves, s: Any, ps: Leaves) -> Leaves:
        out = flatten(func(y_rebuild(list(ys)), s, *p_rebuild(list(ps))))[0]
        if [shape(o) for o in out] != shapes:
            raise DiffkitError(f"dk.odeint: func returned shapes {[shape(o) for o in out]} for "
                               f"a state of shapes {shapes}; return dy/dt shaped like y")
        return [rk.array(o) for o in out]

    ode = _ODE(rhs, len(y_leaves), options, adjoint)
    args = (*y_leaves, t, *p_leaves)
    packed = ode.fun(*args) if adjoint in ("discrete", "checkpointed") else ode(*args)
    values = primal(packed)
    if not isinstance(values, Box) and not np.all(np.isfinite(values)):
        raise NotApplicable("n/a: dk.odeint: the solution overflowed (not finite): explicit "
                            "steps are unstable here (a stiff problem, or too few rk4 steps)")
    return y_rebuild(rk.unpack(packed, shapes))


class _ODE(_Custom):
    """The integration as one custom rule over ``(*y0 leaves, t, *param leaves)``, giving
    the outputs packed as one array (times × state entries)."""

    name = "odeint"

    def __init__(self, rhs: Callable[[Leaves, Any, Leaves], Leaves], n: int,
                 options: rk.Options, adjoint: str) -> None:
        self.rhs, self.n, self.options, self.adjoint = rhs, n, options, adjoint

    def split(self, xs: Any) -> tuple[Leaves, Any, Leaves]:
        return list(xs[:self.n]), xs[self.n], list(xs[self.n + 1:])

    def fun(self, *xs: Any) -> Any:
        y0, t, ps = self.split(xs)
        grid, outputs = rk.grid_of(self.rhs, y0, t, ps, self.options)
        if outputs is None or any(isinstance(x, Box) for x in xs):
            chunk = rk.chunk(grid) if self.adjoint == "checkpointed" else None
            outputs = self.march(y0, t, ps, grid, chunk)
        return rk.pack(outputs)

    def march(self, y: Leaves, t: Any, ps: Leaves, grid: list, chunk: int | None = None
              ) -> list[Leaves]:
        """The states at every t, stepping over the fixed ``grid`` (in segments of
        ``chunk`` checkpointed steps, or on one recording)."""
        if chunk is None:
            return rk.march(self.rhs, self.options.method, y, t, ps, grid)
        outputs = [y]
        for i, fractions in enumerate(grid):
            start, width = t[i], t[i + 1] - t[i]
            for k in range(0, len(fractions) - 1, chunk):
                y = self._segment(y, start, width, ps, fractions[k:k + chunk + 1])
            outputs.append(y)
        return outputs

    def _segment(self, y: Leaves, start: Any, width: Any, ps: Leaves, fractions: Any) -> Leaves:
        shapes = [shape(v) for v in y]

        def run(z: Any, start: Any, width: Any, *ps: Any) -> Any:
            ys = rk.unpack(dnp.reshape(z, (1, -1)), shapes)
            ys = rk.steps(self.rhs, self.options.method, [v[0] for v in ys], start, width,
                          list(ps), fractions)
            return dnp.reshape(rk.pack([ys]), (-1,))

        z = checkpoint(run)(dnp.reshape(rk.pack([y]), (-1,)), start, width, *ps)
        return [v[0] for v in rk.unpack(dnp.reshape(z, (1, -1)), shapes)]

    def _frozen(self, xs: Any) -> Callable[..., Any]:
        """The integration over the grid the values choose, as a function of all inputs."""
        y0, t, ps = self.split(xs)
        grid = rk.grid_of(self.rhs, y0, t, ps, self.options)[0]
        return lambda *xs: rk.pack(self.march(*self.split(xs), grid))

    def jvp(self, xs: list, x_dots: list) -> tuple[Any, Any]:
        self._no_closure(xs)
        return jvp(self._frozen(xs), tuple(xs), tuple(x_dots))

    def fwd(self, *xs: Any) -> tuple[Any, Any]:
        self._no_closure(xs)
        packed = self(*xs)
        return packed, (xs, packed)

    def _no_closure(self, xs: Any) -> None:
        """The rule differentiates in the arguments only: func must not read others."""
        values = [primal(x) for x in xs]
        if any(isinstance(v, Box) or in_batch(x) for v, x in zip(values, xs)):
            return  # a graph being traced or a batch: not one problem's numbers to try
        y0, t, ps = self.split(values)
        if any(isinstance(v, Box) for v in self.rhs(y0, t[0], ps)):
            raise DiffkitError(f"dk.odeint(adjoint={self.adjoint!r}): func reads a value being "
                               "differentiated that is not among its arguments (a closure); "
                               "pass it as a parameter: odeint(func, y0, t, *params)")

    def bwd(self, res: Any, g: Any) -> tuple[Any, ...]:
        xs, packed = res
        if self.adjoint == "forward":  # sensitivities s = ∂y/∂x, one tangent pass per input
            sens = jacobian(self._frozen(xs), argnums=tuple(range(len(xs))),
                            backend="forward")(*xs)
            g_flat = dnp.reshape(g, (-1,))
            return tuple(dnp.reshape(dnp.matmul(g_flat, dnp.reshape(s, (g_flat.size, -1))),
                                     shape(x)) for s, x in zip(sens, xs))
        return self._continuous(xs, packed, g)

    def _continuous(self, xs: Any, packed: Any, g: Any) -> tuple[Any, ...]:
        """The adjoint ODE backwards over each interval, from the stored outputs."""
        y0, t, ps = self.split(xs)
        shapes = [shape(v) for v in y0]
        ys, gs = rk.unpack(packed, shapes), rk.unpack(g, shapes)
        row = lambda leaves, i: [v[i] for v in leaves]  # noqa: E731
        n_t = shape(t)[0]
        a = row(gs, n_t - 1)
        p_bar = [0.0 * p if isinstance(p, Box) else np.zeros(shape(p)) for p in ps]
        t_bar = []
        adjoint = functools.partial(_adjoint_rhs, self.rhs, len(y0))
        for i in range(n_t - 1, 0, -1):
            y_i = row(ys, i)
            t_bar.append(_dot(row(gs, i), self.rhs(y_i, t[i], ps)))
            s = dnp.stack([-t[i], -t[i - 1]])
            state = rk.integrate(adjoint, y_i + a + p_bar, s, ps, self.options)[-1]
            a = [u + v for u, v in zip(state[len(y0):2 * len(y0)], row(gs, i - 1))]
            p_bar = state[2 * len(y0):]
            if i == 1:  # t0 moves the start: −a(t0⁺)·f(y0, t0), before ys[0]'s own cotangent
                t_bar.append(-_dot(state[len(y0):2 * len(y0)], self.rhs(y0, t[0], ps)))
        if n_t == 1:
            t_bar.append(0.0 * t[0])
        return (*a, dnp.stack(t_bar[::-1]), *p_bar)

    def batched(self, axes: list[int | None]) -> _Custom:
        return per_example(self, axes)


def _adjoint_rhs(rhs: Callable, n: int, state: Leaves, s: Any, ps: Leaves) -> Leaves:
    """The augmented system in reversed time s = −t: y' = −f, a' = (∂f/∂y)ᵀa,
    θ̄' = (∂f/∂θ)ᵀa."""
    y, a = state[:n], state[n:2 * n]
    f_y, pull = vjp(lambda *u: rk.pack([rhs(list(u[:n]), -s, list(u[n:]))])[0], *y, *ps,
                    backend="reverse")
    bars = pull(rk.pack([a])[0])
    f_y = [v[0] for v in rk.unpack(dnp.reshape(f_y, (1, -1)), [shape(v) for v in y])]
    return [-v for v in f_y] + list(bars)


def _dot(u: Leaves, v: Leaves) -> Any:
    return functools.reduce(lambda acc, uv: acc + dnp.sum(uv[0] * uv[1]), zip(u, v), 0.0)
