"""One comparison cell as plain data, so it can travel to a Dask worker.

A :class:`CellTask` names what to measure (the function as the user gave it: a catalog
name, a formula, ``file.py:func``, or a function), the point, the kind of derivative,
the backend as spec text, and the reference's numbers. :func:`measure_cell` rebuilds the
target and the backend where it runs: no live backend (a SymPy cache, a compiled program,
a weak reference) is ever pickled, and a serial run measures through the same function.

>>> task = CellTask("rosenbrock", None, None, None, [-1.2, 1.0], "grad", "forward", {})
>>> backend_of(task).name, target_of(task).name
('forward', 'rosenbrock')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..backends import Backend, backend, label
from .cells import run_isolated
from .measure import measure
from .targets import Target, find_target
from .verdict import judge, why_nonfinite


@dataclass(frozen=True)
class CellTask:
    """What one cell measures (plain values; ``what`` may be the user's own function)."""

    what: str | Callable[[Any], Any]
    at: dict[str, Any] | None
    n: int | None
    depth: int | None
    x: Any  # the point, as a nested list
    kind: str
    backend: str | Backend  # spec text; a Backend object only if its spec cannot rebuild it
    ref: dict[str, Any]
    limits: dict[str, Any] = field(default_factory=dict)
    repeat: int = 5
    rtol: float | None = None
    size: str | None = None  # a GradBench eval's size


def portable(be: Backend) -> str | Backend:
    """The backend as spec text when that text rebuilds it, else the object itself."""
    spec = label(be)
    try:
        same = backend(spec)
    except Exception:  # a backend known only as an object (not registered by name)
        return be
    return spec if type(same) is type(be) and same.options == be.options else be


def backend_of(task: CellTask) -> Backend:
    return backend(task.backend) if isinstance(task.backend, str) else task.backend


def target_of(task: CellTask) -> Target:
    t = find_target(task.what, at=task.at, n=task.n, depth=task.depth, x=task.x,
                    size=task.size)
    return replace(t, kind=task.kind)


def measure_cell(task: CellTask, target: Target | None = None,
                 explain: Callable[[bool], str] | None = None) -> dict[str, Any]:
    """The cell's row: measured in an isolated process under the task's limits, judged
    against the reference (``target``: already resolved, and ``explain``: why a value is
    not finite, shared by the cells of a serial run)."""
    target = target or target_of(task)
    be = backend_of(task)

    def why(derivative: bool) -> str:
        return run_isolated(lambda: {"why": why_nonfinite(target.f, target.x, derivative)},
                            **task.limits).get("why", "")

    row = run_isolated(lambda: measure(target.f, target.x, task.kind, be,
                                       task.ref.get("derivative"), task.repeat), **task.limits)
    return judge(row, target.x, task.ref, explain or why, task.rtol)


@dataclass(frozen=True)
class Work:
    """A cluster job's work: the row of ``task`` with its identity fields ``base``."""

    task: CellTask
    base: dict[str, Any]

    def __call__(self) -> list[dict[str, Any]]:
        return [{**self.base, **measure_cell(self.task)}]
