"""Two standard figures: dense against coloured Jacobians, and derivatives by order.

* ``coloring``: seconds per Jacobian against n on a banded, an arrowhead and a random
  sparse residual (:mod:`diffkit.bench.structured`, the catalog's ``banded_least_squares``
  among them), for dense forward mode (``dk.jacobian``: n passes), coloured forward mode
  and CPR (``dk.sparse_jacobian``: a pass, or two evaluations, per colour; the pattern
  and colouring made once and kept). A banded pattern keeps its colours as n grows; an
  arrowhead (a dense row and a dense column) needs n colours either way: one-sided
  colouring cannot help it.
* ``orders``: the error and the time of the k-th derivative against k for each way
  (:mod:`diffkit.bench.orders`: symbolic, numeric, nested forward, forward-over-reverse,
  Taylor mode, compiled) on one scalar catalog function, against a 40-digit reference.

The report (:mod:`diffkit.reporting.report`) reads their spec sections (``[coloring]``,
``[orders]``), runs :func:`units` and draws with :func:`draw`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..bench import structured
from ..bench.cells import run_isolated
from ..bench.coloring import measure_way
from ..bench.orders import compare_order
from ..core import DiffkitError

Record = dict[str, Any]
PROBLEMS = {"banded": structured.banded_least_squares, "arrowhead": structured.arrowhead,
            "random sparse": structured.random_sparse}
WAYS = ("dense forward", "coloured forward", "cpr")
DEFAULTS = {"coloring": {"sizes": [100, 400, 1600], "problems": list(PROBLEMS)},
            "orders": {"function": "taylor_chain", "orders": [1, 2, 3, 4, 6, 8],
                       "ways": ["symbolic", "numeric", "nested forward",
                                   "forward-over-reverse", "taylor", "compiled"]}}
SECTION_KEYS = {"coloring": {"sizes", "problems"}, "orders": {"function", "orders", "ways"}}
INFO = {
    "coloring": ("Sparse Jacobians: dense against coloured",
                 "Median seconds per Jacobian against n: dense forward mode (one pass per "
                 "input), coloured forward mode and CPR finite differences (one pass, or two "
                 "evaluations of f, per colour of the pattern; the pattern and colouring are "
                 "made once per shape and kept, like a jit cache). A banded pattern keeps its "
                 "colours as n grows, so its coloured cost grows like f itself; an arrowhead (a "
                 "dense row and column) needs n colours, one-sided colouring cannot help it.",
                 ("problem", "n", "method", "status", "colors", "passes", "time_s", "error",
                  "message")),
    "orders": ("Higher derivatives: error and cost against the order",
               "The k-th derivative of one scalar function by each way, against a 40-digit "
               "reference (mpmath.diff of its closed form). Left: relative error; finite "
               "differences lose digits with every order. Right: seconds per call; nested "
               "forward mode grows about twofold per order or more, symbolic derivatives swell "
               "(timeouts leave gaps), Taylor mode gives every order up to k in one pass.",
               ("function", "order", "method", "status", "derivative", "error", "time_s",
                "message")),
}


def _coloring_cell(problem: str, n: int, method: str, timeout: float) -> Record:
    f, x = PROBLEMS[problem], np.linspace(-0.5, 0.7, n)
    cell = run_isolated(lambda: measure_way(method, f, x, 1, keep=False), timeout=timeout)
    return {"figure": "coloring", "problem": problem, "n": n, "method": method, **cell}


def units(fig: str, s: dict[str, Any], limits: dict[str, Any]
          ) -> Iterator[tuple[str, Callable[[], list[Record]]]]:
    """The steps of one figure's sweep: (progress label, work returning its records)."""
    timeout = limits["timeout"]
    unknown = sorted(set(s.get("problems", [])) - set(PROBLEMS))
    if unknown:
        raise DiffkitError(f"[coloring] has no problem {unknown[0]!r}; problems: {', '.join(PROBLEMS)}")
    if not all(type(k) is int and k >= 1 for k in s.get("orders", [1])):
        raise DiffkitError("[orders] orders must be a list of integers >= 1, e.g. [1, 2, 4, 8]")
    if fig == "coloring":
        for problem in s["problems"]:
            for n in s["sizes"]:
                for method in WAYS:
                    yield (f"coloring · {problem} n={n} · {method}",
                           lambda p=problem, n=n, m=method: [_coloring_cell(p, n, m, timeout)])
    elif fig == "orders":
        for k in s["orders"]:
            yield (f"orders · {s['function']} · order {k}", lambda k=k: [
                {"figure": "orders", **r} for r in compare_order(
                    s["function"], k, methods=s["ways"], timeout=timeout, repeat=1)])


def draw(fig: str, rows: list[Record]) -> Any:
    """The Figure of ``fig`` from its records."""
    import matplotlib  # (matplotlib: loaded when a figure is drawn)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "method" in r]  # (a lost cell's record holds only its label)
    if fig == "coloring":
        problems = list(dict.fromkeys(r["problem"] for r in rows))
        figure, axes = plt.subplots(1, max(1, len(problems)), figsize=(4.2 * max(1, len(problems)), 4),
                                    sharey=True, squeeze=False)
        for ax, problem in zip(axes[0], problems):
            for method in WAYS:
                mine = sorted((r for r in rows if r["problem"] == problem and r["method"] == method
                               and r.get("time_s")), key=lambda r: r["n"])
                if mine:
                    ax.loglog([r["n"] for r in mine], [r["time_s"] for r in mine], marker="o",
                              label=f"{method} ({mine[-1].get('colors') or mine[-1]['n']} "
                                    f"{'colours' if mine[-1].get('colors') else 'passes'} at n={mine[-1]['n']})")
            ax.set(title=problem, xlabel="n")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        axes[0][0].set_ylabel("seconds per Jacobian")
    else:
        figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
        for method in dict.fromkeys(r["method"] for r in rows):
            mine = sorted((r for r in rows if r["method"] == method and r["status"] == "ok"),
                          key=lambda r: r["order"])
            if mine:
                left.semilogy([r["order"] for r in mine], [max(r["error"], 1e-17) for r in mine],
                              marker="o", label=method)
                right.semilogy([r["order"] for r in mine], [r["time_s"] for r in mine],
                               marker="o", label=method)
        left.set(xlabel="order k", ylabel="relative error (exact 0 drawn at 1e-17)")
        right.set(xlabel="order k", ylabel="seconds per call")
        for ax in (left, right):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        if rows:
            figure.suptitle(f"{rows[0]['function']}: the k-th derivative by each way")
    figure.tight_layout()
    return figure
