"""Sweeps behind ``diffkit steps`` and ``diffkit swell`` (and the report figures).

* :func:`step_errors`: finite-difference error against the reference for each method
  over steps h = 10⁻¹ … 10⁻¹⁶, plus the automatically chosen step: the "V" of
  truncation error (falling with h) meeting round-off error (rising as h shrinks).
* :func:`swell`: how big the derivative gets as a function is composed deeper: the
  symbolic derivative as a tree and after CSE, against the AD trace length and the
  compiled backend's optimized derivative graph (reverse mode is symbolic
  differentiation on the shared graph: it stays the size of the DAG, not the tree).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..backends import backend, finite_diff as fd
from ..interpreters.symbolic import closed_form
from ..core import NotApplicable
from .cells import run_isolated
from .measure import error_against
from .reference import reference
from .targets import Target, find_target

METHODS = ("forward", "central", "richardson", "complex")
STEPS = tuple(10.0 ** -k for k in range(1, 17))
ENGINES = {"derivative": fd.estimate_derivative, "grad": fd.estimate_gradient,
           "jacobian": fd.estimate_jacobian}


def step_errors(target: Target, methods: Sequence[str] = METHODS,
                steps: Iterable[float] = STEPS) -> list[dict[str, Any]]:
    """Records ``method, step, error, auto`` (``auto`` marks the automatic step)."""
    ref = reference(target.f, target.x, target.kind).derivative
    engine = ENGINES[target.kind]
    rows = []
    for method in methods:
        for h in [None, *steps]:
            row: dict[str, Any] = {"function": target.name, "method": method, "auto": h is None}
            try:
                r = engine(target.f, target.x, method=method, step=h)
                row["step"] = float(np.max(r.step))
                row["error"], _ = error_against(r.value, ref)
            except NotApplicable as exc:  # e.g. the complex step on a non-analytic function
                row.update(step=h, error=None, status="n/a", message=str(exc).splitlines()[0])
            rows.append(row)
    return rows


def parse_depths(text: str) -> list[int]:
    """``"1..8"``, ``"5"`` or ``"1,2,4"`` to a list of depths."""
    try:
        if ".." in text:
            lo, hi = (int(v) for v in text.split(".."))
            depths = list(range(lo, hi + 1))
        else:
            depths = [int(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"bad depth {text!r}: write K, 1..K or a list like 1,2,4") from None
    if not depths or min(depths) < 1:
        raise ValueError(f"bad depth {text!r}: depths start at 1")
    return depths


def swell(name: str, depths: Sequence[int], timeout: float = 30.0,
          memory_mb: float | None = 2048) -> list[dict[str, Any]]:
    """Records ``depth, backend, expr_nodes, expr_dag_nodes, tape_ops, graph_eqns, status``."""
    rows = []
    for k in depths:
        t = find_target(name, depth=k)
        kind = "derivative" if t.kind == "derivative" else "grad"

        def symbolic() -> dict[str, Any]:
            d = closed_form(t.f, t.x, "jacobian" if t.kind == "jacobian" else kind)
            return {s: d.sizes[s] for s in ("expr_nodes", "expr_dag_nodes", "f_expr_nodes")}

        sym = run_isolated(symbolic, timeout, memory_mb)
        rows.append({"depth": k, "backend": "symbolic", **sym})
        rows += [{"depth": k, "backend": b, "status": "ok",
                  "tape_ops": backend(b).stats(t.f, t.x)["tape_ops"]} for b in ("reverse", "forward")]
        rows.append({"depth": k, "backend": "compiled", **_graph_size(t, kind)})
    return rows


def _graph_size(t: Target, kind: str) -> dict[str, Any]:
    """Equations of the compiled backend's optimized derivative graph (and of f's graph)."""
    from ..compiler.jit import make_graph
    from ..core import DiffkitError

    be = backend("compiled")
    try:
        if kind == "grad" or np.ndim(t.x) == 0:
            be.value_and_grad(t.f, t.x, False)
        else:
            be.derivative(t.f, t.x)
        f_eqns = len(make_graph(t.f)(t.x))
    except DiffkitError as exc:  # e.g. a branch on a value: no static graph
        return {"status": "n/a" if isinstance(exc, NotApplicable) else "error",
                "message": str(exc)}
    return {"status": "ok", "graph_eqns": be.stats(t.f, t.x)["graph_eqns"], "graph_f_eqns": f_eqns}
