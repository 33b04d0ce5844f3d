"""Programs that iterate, and the ways to differentiate them, measured side by side.

The catalog's solver entries (a contraction fixed point, Newton on a cubic, a logistic ODE,
Lotka–Volterra, stiff Robertson, a neural ODE) are :class:`Problem` s: a loss of the
parameters ``x`` computed by :func:`~diffkit.fixed_point`, :func:`~diffkit.root` or
:func:`~diffkit.odeint`, differentiable by several *ways* (``implicit`` / ``unrolled``
for solvers; ``discrete`` / ``checkpointed`` / ``continuous`` / ``forward`` adjoints for
ODEs) and, for a sweep, at a given number of iterations or RK4 steps. :func:`measure`
gives one way's gradient, its error against the exact gradient (closed forms where there
are; a tight-tolerance forward-sensitivity run for Lotka–Volterra and the neural ODE),
its time and its peak memory; ``diffkit compare F --solver ...`` and the report's solvers
figure call it.

>>> row = measure("newton_cubic", "implicit")
>>> row["status"], row["error"] < 1e-12
('ok', True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import numpy as dnp
from ..core import DiffkitError, NotApplicable
from ..transforms.functional import grad
from ..transforms.odeint import ADJOINTS, odeint
from ..transforms.solvers import MODES, fixed_point, root
from .measure import error_against
from .probes import peak_bytes, timed

T_END = 5.0


@dataclass(frozen=True)
class Problem:
    """``loss(x, way, steps)``: steps is the iteration count (tol = 0) or the RK4 steps; a
    float, Dormand–Prince's tolerance; None, the default (converged, rtol = 1e-10)."""

    name: str
    loss: Callable[[Any, str, int | None], Any]
    ways: tuple[str, ...]
    point: np.ndarray
    exact: Callable[[np.ndarray], np.ndarray] | None
    steps_label: str

    def fn(self, x: Any, solver: str | None = None) -> Any:
        return self.loss(x, solver or self.ways[0], None)


def _fixed_point_sqrt(a: Any, way: str, steps: int | None) -> Any:
    """x = √(a + x) per entry: x* = (1 + √(1 + 4a)) / 2, a contraction (slope 1/(2x*))."""
    kw = {"tol": 0.0, "max_iter": steps} if steps else {"tol": 1e-14}
    return dnp.sum(fixed_point(lambda x, a: dnp.sqrt(a + x), dnp.ones_like(a), a, mode=way, **kw))


def _newton_cubic(q: Any, way: str, steps: int | None) -> Any:
    """x³ + 2x − q = 0 per entry (one real root), Newton from 0."""
    kw = {"tol": 0.0, "max_iter": steps} if steps else {"tol": 1e-14}
    return dnp.sum(root(lambda x, q: x ** 3 + 2.0 * x - q, dnp.zeros_like(q), q, mode=way, **kw))


def _ode_options(steps: int | float | None) -> dict[str, Any]:
    """An int: that many RK4 steps; a float: Dormand–Prince at that tolerance; None: 1e-10."""
    if isinstance(steps, int):
        return {"method": "rk4", "steps": steps}
    return {"rtol": steps or 1e-10, "atol": steps or 1e-10}


def _logistic(x: Any, way: str, steps: int | None) -> Any:
    """y(5) of y' = r y (1 − y/K), x = (r, K, y0)."""
    ys = odeint(lambda y, t, r, k: r * y * (1.0 - y / k), x[2], np.array([0.0, T_END]), x[0],
                x[1], adjoint=way, **_ode_options(steps))
    return ys[-1]


def _lotka_volterra(x: Any, way: str, steps: int | None) -> Any:
    """Σ y(5) of predator–prey, x = (a, b, c, d), y0 = (1, 0.5)."""
    def rhs(y: Any, t: Any, p: Any) -> Any:
        return dnp.stack([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])
    ys = odeint(rhs, np.array([1.0, 0.5]), np.array([0.0, T_END]), x, adjoint=way,
                **_ode_options(steps))
    return dnp.sum(ys[-1])


def _robertson(x: Any, way: str, steps: int | None) -> Any:
    """y₃(40) of Robertson's chemical kinetics, x = (k1, k2, k3): rates 10⁻²..10⁷, stiff."""
    def rhs(y: Any, t: Any, k: Any) -> Any:
        fast = k[2] * y[1] * y[2]
        return dnp.stack([-k[0] * y[0] + fast, k[0] * y[0] - fast - k[1] * y[1] ** 2,
                          k[1] * y[1] ** 2])
    with np.errstate(all="ignore"):
        ys = odeint(rhs, np.array([1.0, 0.0, 0.0]), np.array([0.0, 40.0]), x, adjoint=way,
                    **_ode_options(steps))
    return ys[-1, 2]


_MLP = (2, 8, 2)


def _neural_ode(w: Any, way: str, steps: int | None) -> Any:
    """|y(1)|² for y' = W₂ tanh(W₁ y + b₁) + b₂, the 42 weights flat in w."""
    def rhs(y: Any, t: Any, w: Any) -> Any:
        (n_in, n_hidden, n_out), k = _MLP, _MLP[0] * _MLP[1]
        w1, b1 = dnp.reshape(w[:k], (n_in, n_hidden)), w[k:k + n_hidden]
        w2 = dnp.reshape(w[k + n_hidden:k + n_hidden + n_hidden * n_out], (n_hidden, n_out))
        return dnp.tanh(y @ w1 + b1) @ w2 + w[k + n_hidden + n_hidden * n_out:]

    ys = odeint(rhs, np.array([1.0, -0.5]), np.array([0.0, 1.0]), w, adjoint=way,
                **_ode_options(steps))
    return dnp.sum(ys[-1] ** 2)


def _sqrt_exact(a: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(1.0 + 4.0 * a)


def _cubic_exact(q: np.ndarray) -> np.ndarray:
    s = np.sqrt(q * q / 4 + 8.0 / 27)
    x = np.cbrt(q / 2 + s) + np.cbrt(q / 2 - s)  # Cardano
    return 1.0 / (3 * x * x + 2.0)


def _logistic_exact(x: np.ndarray) -> np.ndarray:
    r, k, y0 = x
    e = np.exp(r * T_END)
    d = k + y0 * (e - 1.0)
    return np.array([k * y0 * T_END * e * (k - y0), y0 * y0 * e * (e - 1.0), k * k * e]) / d ** 2


_W0 = np.random.default_rng(0).normal(scale=0.5, size=2 * 8 + 8 + 8 * 2 + 2)
PROBLEMS = {p.name: p for p in [
    Problem("fixed_point_sqrt", _fixed_point_sqrt, MODES, np.linspace(0.5, 3.0, 5),
            _sqrt_exact, "iterations"),
    Problem("newton_cubic", _newton_cubic, MODES, np.linspace(1.0, 5.0, 5), _cubic_exact,
            "Newton steps"),
    Problem("logistic_ode", _logistic, ADJOINTS, np.array([1.2, 2.0, 0.1]), _logistic_exact,
            "RK4 steps"),
    Problem("lotka_volterra", _lotka_volterra, ADJOINTS, np.array([1.5, 1.0, 3.0, 1.0]),
            None, "RK4 steps"),
    Problem("robertson", _robertson, ADJOINTS, np.array([0.04, 3e7, 1e4]), None, "RK4 steps"),
    Problem("neural_ode", _neural_ode, ADJOINTS, _W0, None, "RK4 steps"),
]}


def exact_gradient(name: str, x: np.ndarray) -> np.ndarray | None:
    """The reference gradient: a closed form, else forward sensitivities at 1e-12."""
    p = PROBLEMS[name]
    if p.exact is not None:
        return p.exact(x)
    if name == "robertson":
        return None
    return np.asarray(grad(lambda x: p.loss(x, "forward", 1e-13))(x))


def problem(name: str) -> Problem:
    if name not in PROBLEMS:
        raise DiffkitError(f"--solver applies to the catalog's iterative functions "
                           f"({', '.join(PROBLEMS)}), not {name!r}")
    return PROBLEMS[name]


def measure(name: str, way: str, steps: int | None = None, x: Any = None,
            reference: Any = None, repeat: int = 3) -> dict[str, Any]:
    """One way's gradient of problem ``name``: derivative, error, time, peak memory."""
    p = problem(name)
    if way not in p.ways:
        raise DiffkitError(f"{name} is differentiated by {', '.join(p.ways)}, not {way!r}")
    x = p.point if x is None else np.asarray(x, dtype=float)
    row: dict[str, Any] = {"function": name, "way": way, "steps": steps, "status": "ok"}
    gradient = grad(lambda x: p.loss(x, way, steps))
    try:
        d = np.asarray(gradient(x))
    except NotApplicable as exc:
        return {**row, "status": "n/a", "message": str(exc)}
    ref = exact_gradient(name, x) if reference is None else reference
    row["derivative"] = d.tolist()
    row["error"] = error_against(d, ref)[0] if ref is not None else None
    row["time_s"] = timed(lambda: gradient(x), repeat=repeat, min_time=0.02)[0]
    row["peak_bytes"] = peak_bytes(lambda: gradient(x))
    return row


def sweep(name: str, steps: list[int], ways: tuple[str, ...] | None = None,
          repeat: int = 1) -> list[dict[str, Any]]:
    """:func:`measure` for every way and step count (one reference for all)."""
    p = problem(name)
    ref = exact_gradient(name, p.point)
    return [measure(name, way, n, reference=ref, repeat=repeat)
            for way in (ways or p.ways) for n in steps]


def advise_way(name: str, accuracy: float, memory_bytes: float | None = None
               ) -> tuple[list[dict[str, Any]], str]:
    """Every way measured once, and a sentence: the cheapest way meeting ``accuracy``
    (within ``memory_bytes``), and the one that keeps the least memory."""
    p = problem(name)
    ref = exact_gradient(name, p.point)
    rows = [measure(name, way, reference=ref, repeat=1) for way in p.ways]
    done = [r for r in rows if r["status"] == "ok"]
    if not done:
        return rows, f"f iterates, and no way of differentiating it applies: {rows[0]['message']}"
    fits = sorted((r for r in done if r["error"] is not None and r["error"] <= accuracy
                   and (memory_bytes is None or r["peak_bytes"] <= memory_bytes)),
                  key=lambda r: r["time_s"])
    lean = min(done, key=lambda r: r["peak_bytes"])
    figures = "; ".join(f"{r['way']} {r['time_s'] * 1e3:.3g} ms, {r['peak_bytes'] / 1e3:.3g} kB, "
                        f"error {r['error']:.1e}" for r in done)
    pick = (f"the {fits[0]['way']} way is the cheapest meeting --accuracy {accuracy:g}"
            if fits else f"no way met --accuracy {accuracy:g}")
    return rows, (f"f iterates ({p.steps_label}): {pick}; the {lean['way']} way keeps the least "
                  f"memory, whatever the count ({figures}). Compare them: diffkit compare "
                  f"{name} --solver all")
