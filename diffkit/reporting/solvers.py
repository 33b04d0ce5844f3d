"""The report's solvers figure: gradient error, time and peak memory of each way of
differentiating an iterating program, against its number of iterations or steps.

For each function of the ``[solvers]`` section (the catalog's iterative entries,
:mod:`diffkit.bench.iterative`) every way is measured in this process at each count:
fixed points and Newton at ``iterations`` (tol = 0: exactly that many), ODEs at
``rk4_steps``. The figure has one row per function and three panels: the error against
the exact gradient, the CPU time and the peak memory of one gradient, one line per way.

>>> load({"functions": ["newton_cubic"]}, "spec")["iterations"]
[2, 4, 8, 16, 32]
>>> fig = figure([{"function": "f", "way": "implicit", "steps": 10, "status": "ok",
...                "error": 1e-16, "time_s": 1e-3, "peak_bytes": 1000}], {"f": "iterations"})
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

from ..bench.harness import fmt_bytes, fmt_error, fmt_seconds
from ..bench.iterative import PROBLEMS, problem, sweep
from ..core import DiffkitError
from .figures import DPI
from .plots import ShownFigure, _legend

Record = dict[str, Any]
TITLE = "Differentiating a solver: unrolled, implicit, adjoint"
EXPLAINS = (
    "One gradient of each iterating function, by each way of differentiating it, against the "
    "number of iterations (fixed point, Newton; tol = 0, so exactly that many) or RK4 steps "
    "(ODEs). Unrolled and discrete ways keep every step on the tape (memory grows with the "
    "count); the implicit derivative solves one linear system at the answer, the continuous "
    "adjoint integrates backwards from the stored outputs (memory flat). The continuous "
    "adjoint's error is that of a different discretization (the adjoint equation's), so at "
    "few steps it differs from the discrete one. Error: relative max-norm against the exact "
    "gradient (a closed form, or forward sensitivities at rtol = 1e-13).")
COLUMNS = ("function", "way", "steps", "status", "error", "time", "peak memory")
DEFAULTS: dict[str, Any] = {"functions": [], "iterations": [2, 4, 8, 16, 32],
                            "rk4_steps": [10, 30, 100, 300, 1000]}


def load(section: Any, where: str) -> dict[str, Any]:
    """The ``[solvers]`` section with its defaults, checked (no functions: no figure)."""
    if not isinstance(section, dict) or set(section) - set(DEFAULTS):
        raise DiffkitError(f"{where}: [solvers] takes functions, iterations and rk4_steps, "
                           "e.g. [solvers] functions = [\"logistic_ode\"]")
    s = {**DEFAULTS, **section}
    for name in s["functions"]:
        problem(name)
    for key in ("iterations", "rk4_steps"):
        if not (isinstance(s[key], list) and s[key]
                and all(type(n) is int and n >= 1 for n in s[key])):
            raise DiffkitError(f"{where}: [solvers] {key} must be a list of positive integers")
    return s


def units(section: dict[str, Any]) -> Iterator[tuple[str, Callable[[], list[Record]]]]:
    """The sweep as cells, one a function and way: (progress label, work returning the way's
    rows at every count). The report's runner stores them like the other figures' cells."""
    for name in section["functions"]:
        counted = "iterations" if "iterations" in PROBLEMS[name].steps_label or \
            "Newton" in PROBLEMS[name].steps_label else "rk4_steps"
        for way in problem(name).ways:
            yield (f"solvers · {name} · {way}", lambda name=name, way=way, steps=section[counted]:
                   sweep(name, steps, ways=(way,), repeat=3))


def figure(data: list[Record], labels: dict[str, str] | None = None) -> Figure:
    """Error, time and peak memory against the count, one row of panels per function."""
    data = [r for r in data if "way" in r]  # (a lost cell's record holds only its label)
    functions = list(dict.fromkeys(r["function"] for r in data)) or ["(no data)"]
    fig = ShownFigure(figsize=(12.0, 3.2 * len(functions)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(functions), 3, squeeze=False)
    for (err, sec, mem), name in zip(axes, functions):
        mine = [r for r in data if r["function"] == name and r.get("status") == "ok"]
        for way in dict.fromkeys(r["way"] for r in mine):
            pts = sorted((r for r in mine if r["way"] == way), key=lambda r: r["steps"])
            n = [r["steps"] for r in pts]
            line = err.plot(n, [max(r["error"], 1e-17) for r in pts], marker="o", ms=3,
                            label=way)[0]
            sec.plot(n, [r["time_s"] for r in pts], marker="o", ms=3, color=line.get_color())
            mem.plot(n, [r["peak_bytes"] / 1e3 for r in pts], marker="o", ms=3,
                     color=line.get_color())
        label = (labels or {}).get(name) or (PROBLEMS[name].steps_label if name in PROBLEMS
                                             else "steps")
        for ax, what in ((err, "gradient error"), (sec, "seconds per gradient"),
                         (mem, "peak memory (kB)")):
            ax.set(xscale="log", yscale="log", xlabel=label, ylabel=what)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.grid(True, alpha=0.3)
        err.set_title(name, fontsize=10, loc="left")
        _legend(err, fontsize=7)
    return fig


def draw(data: list[Record], out: Path) -> Path:
    """The figure as ``solvers.png`` in ``out``."""
    png = out / "solvers.png"
    fig = figure(data)
    fig.savefig(png, dpi=DPI)
    return png


def display(r: Record) -> Record:
    """One table row: the :data:`COLUMNS` as display strings."""
    return dict(zip(COLUMNS, (r.get("function", r.get("cell")), r.get("way"),
                              str(r.get("steps")), r["status"],
                              fmt_error(r.get("error")), fmt_seconds(r.get("time_s")),
                              fmt_bytes(r.get("peak_bytes")))))
