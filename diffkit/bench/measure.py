"""Measuring one differentiation: accuracy, time, memory and size, in this process.

The rules, stated once (and shown in reports):

* **error**: relative max-norm error against the high-precision reference,
  ``max|d - r| / max|r|``; where the reference is zero everywhere, the absolute
  ``max|d - r|`` (``error_rule`` says which). ``tolerance`` is what the backend promises
  (:meth:`~diffkit.backends.Backend.tolerance`): a larger error makes the cell
  ``inaccurate`` (:mod:`diffkit.bench.verdict`).
* **time**: per-call time is the median over ``repeat`` timings after a warm-up call,
  each timing autoranged like ``timeit`` (enough calls to last ``min_time``); the
  spread is the interquartile range. ``setup_s`` is one-off work before calls
  (symbolic derive + compile; 0 for the eager backends, whose tracing happens in
  every call). ``cost_ratio`` = time(derivative) / time(f), measured the same way.
* **memory**: ``peak_bytes`` is the tracemalloc peak during one derivative call (numpy
  reports its buffers to tracemalloc); ``tape_bytes`` the arrays a reverse tape keeps.
* **size**: ``tape_ops`` primitives recorded (reverse tape; the forward trace has the
  same length); ``expr_nodes`` / ``expr_dag_nodes`` the symbolic derivative as a tree
  and after CSE; ``fevals`` function evaluations of the numeric backend.

Setup time and sizes are the backend's own answer to
:meth:`~diffkit.backends.Backend.stats`; nothing here depends on which backend it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import transforms
from ..backends import Backend
from ..core import primal
from .probes import first_call, peak_bytes, timed
from .verdict import numbers

TRANSFORMS = {"derivative": transforms.derivative, "grad": transforms.grad,
              "jacobian": transforms.jacobian}


def error_against(d: Any, ref: Any) -> tuple[float, str]:
    """The error of ``d`` against ``ref`` and the rule used (see module docstring)."""
    d, ref = numbers(d), numbers(ref)
    if d.shape != ref.shape:
        return float("nan"), f"shape {d.shape} differs from the reference's {ref.shape}"
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    worst = float(np.max(np.abs(d - ref))) if d.size else 0.0
    if not np.all(np.isfinite(d)):
        return float("inf"), "not finite"
    return (worst / scale, "relative") if scale > 0 else (worst, "absolute")


def measure(f: Callable, x: Any, kind: str, backend: Backend, ref: Any = None,
            repeat: int = 5) -> dict[str, Any]:
    """Everything the harness records for one (function, backend) cell."""
    value = f(x)
    diff = TRANSFORMS[kind](f, backend=backend, **holomorphic(x, value))
    d, first = first_call(lambda: diff(x))
    rec: dict[str, Any] = {"value": _jsonable(value), "derivative": _jsonable(d)}
    if ref is not None:
        rec["error"], rec["error_rule"] = error_against(d, ref)
        rec["tolerance"] = backend.tolerance(kind)
    rec["time_s"], rec["time_spread_s"] = timed(lambda: diff(x), repeat)
    rec["f_time_s"], _ = timed(lambda: f(x), repeat)
    rec["cost_ratio"] = rec["time_s"] / rec["f_time_s"] if rec["f_time_s"] > 0 else None
    rec["peak_bytes"] = peak_bytes(lambda: diff(x))
    rec["setup_s"] = 0.0  # unless the backend says otherwise: eager AD traces in every call
    rec.update({k: _jsonable(v) for k, v in backend.stats(f, x).items()})
    rec["first_call_s"] = first
    return rec


def holomorphic(x: Any, value: Any) -> dict[str, bool]:
    """``holomorphic=True`` for a complex output of a complex point (its derivative is
    ``f'(z)``, as JAX's); nothing otherwise (a real f of z has JAX's gradient)."""
    return {"holomorphic": True} if np.iscomplexobj(x) and np.iscomplexobj(primal(value)) else {}


def _jsonable(v: Any) -> Any:
    """JSON-friendly: floats and nested lists."""
    v = primal(v)
    if isinstance(v, (np.ndarray, np.generic)):
        return v.tolist()
    return v
