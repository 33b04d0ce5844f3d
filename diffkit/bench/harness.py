"""The comparison harness: every backend on the same function, measured side by side.

``compare`` resolves the function (:mod:`diffkit.bench.targets`), computes its reference
(:mod:`diffkit.bench.reference`), then measures each backend (:mod:`diffkit.bench.measure`), each
step in its own child process under a time and memory limit (:mod:`diffkit.bench.cells`).
A failing cell is a row with its ``status`` and ``message``; the others go on. With
``results=path`` each finished cell is appended to a JSON Lines file at once, and a
rerun skips the cells already there, so an interrupted sweep resumes.

>>> import diffkit as dk
>>> result = dk.compare("rosenbrock", backends=["forward", "reverse"], repeat=2)
>>> [row["status"] for row in result.records()]
['ok', 'ok']
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..backends import Backend, backend, label
from ..core import DiffkitError
from ..views.tables import html_table
from .cells import run_isolated
from .celltask import CellTask, Work, measure_cell, portable
from .iterative import PROBLEMS, exact_gradient
from .targets import Target, kind_for, find_target
from .verdict import why_nonfinite

FIELDS = ("function", "backend", "status", "message", "value", "derivative", "error", "setup_s",
          "time_s", "peak_bytes", "expr_nodes", "expr_dag_nodes", "tape_ops", "fevals")
EXTRA = ("kind", "x", "n", "depth", "size", "error_rule", "tolerance", "reference_method",
         "time_spread_s", "f_time_s", "cost_ratio", "tape_bytes", "first_call_s", "step",
         "graph_eqns", "graph_eqns_traced", "graph_passes", "fusion")
DEFAULT_BACKENDS = ("symbolic", "numeric", "forward", "reverse", "compiled")


@dataclass
class Comparison:
    """The rows of one comparison; ``records()`` gives plain dicts (JSON-ready)."""

    function: str
    kind: str | None
    x: Any
    reference: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    size: str | None = None  # a GradBench eval's size

    def records(self) -> list[dict[str, Any]]:
        return [{k: row.get(k) for k in FIELDS + EXTRA} for row in self.rows]

    def to_json(self) -> str:
        return json.dumps(self.records(), default=str)

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame, one row per backend (pandas is optional:
        ``pip install 'diffkit[notebook]'``)."""
        try:
            import pandas as pd
        except ImportError:
            from ..core import DiffkitError

            raise DiffkitError("to_pandas needs pandas: pip install 'diffkit[notebook]' "
                               "(or use .records() / .to_json())") from None
        return pd.DataFrame(self.records())

    def table(self) -> list[list[str]]:
        """Header and one line of display strings per backend."""
        head = ["backend", "status", "error", "setup", "per call", "cost ratio", "peak mem",
                "size"]
        return [head] + [[r["backend"], r["status"], fmt_error(r.get("error")),
                          fmt_seconds(r.get("setup_s")), fmt_seconds(r.get("time_s")),
                          fmt_number(r.get("cost_ratio")), fmt_bytes(r.get("peak_bytes")),
                          size_text(r)] for r in self.rows]

    def __str__(self) -> str:
        rows = self.table()
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [f"{self.function}  ({self.kind or 'f failed'}; reference: "
                 f"{self.reference.get('method') or self.reference.get('message')})"]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        lines += [f"  {r['backend']}: {r['message']}" for r in self.rows if r.get("message")]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = self.table()
        return (f"<p>{html.escape(self.function)} ({html.escape(self.kind or 'f failed')})</p>"
                + html_table(rows[0], rows[1:]))


def fmt_error(v: Any) -> str:
    return "—" if v is None else f"{v:.1e}" if math.isfinite(v) else str(v)


def fmt_seconds(v: Any) -> str:
    if v is None:
        return "—"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if v >= scale or unit == "µs":
            return f"{v / scale:.3g} {unit}"
    return str(v)


def fmt_bytes(v: Any) -> str:
    if v is None:
        return "—"
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if v >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v} B"


def fmt_number(v: Any) -> str:
    return "—" if v is None else f"{v:.3g}"


def size_text(r: dict[str, Any]) -> str:
    """The size measure that fits the backend, with its unit: expression nodes, trace or
    tape operations, evaluations of f, or graph equations."""
    if r.get("expr_nodes") is not None:
        return f"{r['expr_nodes']} nodes ({r['expr_dag_nodes']} CSE)"
    if r.get("tape_ops") is not None:
        return f"{r['tape_ops']} {'trace' if r['backend'] == 'forward' else 'tape'} ops"
    if r.get("fevals") is not None:
        return f"{r['fevals']} f-evals"
    if r.get("graph_eqns") is not None:
        return f"{r['graph_eqns']} eqns"
    return "—"


def read_results(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Records of a JSON Lines results file; a torn last line (power cut) is skipped."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    for line in p.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def append_result(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Append one record and make it durable before going on."""
    with open(path, "a") as fh:
        if fh.tell() and not Path(path).read_bytes().endswith(b"\n"):
            fh.write("\n")  # after a torn line, start a fresh one
        fh.write(json.dumps(record, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def compare(f: str | Callable, *args: Any, backends: Sequence[str | Backend] | None = None,
            at: dict[str, Any] | None = None, n: int | None = None, depth: int | None = None,
            timeout: float = 60.0, memory_mb: float | None = 2048, repeat: int = 5,
            results: str | os.PathLike | None = None, reference: bool = True,
            progress: Callable[[str], None] | None = None, cluster: Any = None,
            rtol: float | None = None, size: str | None = None) -> Comparison:
    """Measure each backend on ``f`` at ``args[0]`` (or the catalog/formula default point).

    ``f`` is a callable, a catalog name, a formula or ``file.py:func``; ``backends`` are
    names, ``"numeric[method=richardson]"`` style specs, or configured backend objects
    (default: the five ways, ``DEFAULT_BACKENDS``).
    ``reference=False`` skips the high-precision reference (and so the error column),
    for time and memory sweeps on inputs too large for it. With ``cluster``
    (``"local:N"``, ``"tcp://host:port"`` or an open :class:`~diffkit.bench.cluster.Cluster`)
    the backends are measured as parallel Dask tasks, after the reference (computed here).
    A cell whose error is above ``rtol`` (default: what its method promises) is
    ``inaccurate``; at a point where f has no derivative every cell is ``kink``.
    ``size`` names a GradBench eval's input (``compare("gmm", size="10_25_1000")``); its
    reference is the eval's gradient derived by hand.
    """
    if isinstance(cluster, str):  # connect first: a bad address fails before anything runs
        from .cluster import using

        with using(cluster) as opened:
            return compare(f, *args, backends=backends, at=at, n=n, depth=depth,
                           timeout=timeout, memory_mb=memory_mb, repeat=repeat,
                           results=results, reference=reference, progress=progress,
                           cluster=opened, rtol=rtol, size=size)
    target = find_target(f, at=at, n=n, depth=depth, x=args[0] if args else None, size=size)
    specs = list(backends or DEFAULT_BACKENDS)
    chosen = [backend(b) if isinstance(b, str) else b for b in specs]
    point = np.asarray(target.x).tolist()
    base = {"function": target.name, "n": n, "depth": depth, "size": target.size, "x": point}
    done = {_key(r): r for r in read_results(results) if r.get("status") != "lost"} \
        if results else {}
    todo = [be for be in chosen if _key({**base, "backend": label(be)}) not in done]
    limits = {"timeout": timeout, "memory_mb": memory_mb}

    kind, probe = target.kind, None
    if kind is None and todo:
        probe = run_isolated(lambda: _probe(target), **limits)
        if "usage" in probe:  # e.g. f returns a string: one line, nothing measured
            raise DiffkitError(probe["usage"])
        kind = probe.get("kind")
    target = replace(target, kind=kind)
    ref: dict[str, Any] = {"method": None, "message": "reference skipped"}
    if probe is not None and kind is None:
        ref = probe
    elif reference and todo:
        ref = _as_sentence(run_isolated(lambda: _reference(target), **limits), timeout)
    out = Comparison(target.name, kind, target.x, ref, size=target.size)
    reasons: dict[bool, str] = {}

    def explain(derivative: bool) -> str:
        if derivative not in reasons:
            reasons[derivative] = run_isolated(lambda: {"why": why_nonfinite(
                target.f, target.x, derivative)}, **limits).get("why", "")
        return reasons[derivative]

    def task(be: Backend) -> CellTask:  # plain data: a cluster's worker rebuilds the rest
        return CellTask(f, at, n, depth, point, kind, portable(be), ref, limits, repeat, rtol,
                        target.size)

    def row_of(be: Backend, row: dict[str, Any]) -> dict[str, Any]:
        return {**base, "backend": label(be), "kind": kind,
                "reference_method": ref.get("method"), **row}

    def cell(be: Backend) -> dict[str, Any]:
        if kind is None:
            return row_of(be, {"status": probe["status"],
                               "message": f"the function itself failed: {probe.get('message')}"})
        if ref.get("not_applicable"):
            return row_of(be, {"status": "n/a", "message": ref["not_applicable"]})
        return row_of(be, measure_cell(task(be), target, explain))

    def keep(row: dict[str, Any]) -> None:
        done[_key(row)] = row
        if results:
            append_result(results, row)

    if cluster is None or kind is None:  # (f itself failed: nothing to send anywhere)
        for be in todo:
            if progress:
                progress(f"{target.name} · {label(be)}")
            keep(cell(be))
    else:
        from .cluster import Job

        cluster.run([Job(f"{target.name} · {label(be)}", Work(task(be), row_of(be, {})),
                         lambda be=be: [{**base, "backend": label(be)}]) for be in todo],
                    lambda job, rows: keep(rows[0]), progress)
    out.rows = [done[_key({**base, "backend": label(be)})] for be in chosen]
    if out.kind is None and out.rows:
        out.kind = out.rows[0].get("kind")
    return out


def _probe(target: Target) -> dict[str, Any]:
    """The kind of derivative f asks for at its point (f run once), or what is wrong with
    its output as a ``usage`` sentence."""
    out = target.f(target.x)
    try:
        return {"kind": kind_for(target.x, out)}
    except DiffkitError as exc:
        return {"usage": str(exc)}


def _key(record: dict[str, Any]) -> tuple:
    """What identifies a cell in a results file: function, backend, dimension, depth, a
    GradBench size, point."""
    return (record.get("function"), record.get("backend"), record.get("n"),
            record.get("depth"), record.get("size"),
            json.dumps(record.get("x"), default=str))  # (complex: text)


def _as_sentence(ref: dict[str, Any], timeout: float) -> dict[str, Any]:
    """A failed reference's record, its message a sentence (not an exception's name)."""
    if ref.get("status", "ok") == "ok":
        return ref
    why = {"timeout": f"it took longer than {timeout:g} s",
           "oom": "it ran out of memory"}.get(ref["status"])
    if why is None:
        why = str(ref.get("message", "")).split(": ", 1)[-1] or "it failed"
    return {"method": None, "message": f"no reference ({why})"}


def _reference(target: Target) -> dict[str, Any]:
    from .reference import NotHolomorphic, complex_reference, reference  # sympy, mpmath

    if target.exact is not None:  # a GradBench eval: its gradient derived by hand
        return {"method": "hand-derived gradient", "value": float(target.f(target.x)),
                "derivative": np.asarray(target.exact(target.x)).tolist()}
    exact = exact_gradient(target.name, target.x) if target.name in PROBLEMS else None
    if exact is not None:  # a solver: no closed form to run on symbols, but a known gradient
        return {"method": "exact gradient", "value": np.asarray(target.f(target.x)).tolist(),
                "derivative": np.asarray(exact).tolist()}
    try:
        r = complex_reference(target.f, target.x) if np.iscomplexobj(target.x) else \
            reference(target.f, target.x, target.kind)
    except NotHolomorphic as exc:  # no derivative to measure: every cell says so
        return {"method": None, "message": f"no reference ({exc})", "not_applicable": str(exc)}
    return {"method": r.method, "value": np.asarray(r.value).tolist(),
            "derivative": np.asarray(r.derivative).tolist(), "kink": r.kink}
