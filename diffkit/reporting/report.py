"""Reports: a TOML spec in; sweeps through the harness, figures and an HTML page out.

A spec names a title, the functions and backends, sizes and depths, the figures to draw
and the limits every cell runs under (see ``reports/*.toml``; :data:`DEFAULTS` holds
every key). :func:`build` runs the sweeps (each cell isolated, under the spec's timeout
and memory limit), appends every finished cell to ``DIR/results.jsonl`` at once, so a
rerun into the same folder measures only what is missing, and writes into ``DIR``:
``index.html`` (figures, tables, what each figure shows, machine and versions, the
command that regenerates it), each figure as PNG and SVG, ``results.csv`` and a copy of
the spec with every default filled in (``spec.toml``). The ``diffkit`` command runs BLAS
on one thread (multi-threaded matrix products time erratically); from Python, set
``OPENBLAS_NUM_THREADS=1`` before numpy is imported for the same steadiness.

Regenerate the README gallery (``reports/gallery/*.png``, the 10 standard figures) with::

    diffkit report reports/quick.toml -o reports/gallery --gallery

>>> from diffkit.reporting.report import build, load_spec
>>> load_spec({"figures": ["accuracy"], "functions": ["exp"]})["accuracy"]["backends"]
['symbolic', 'numeric', 'forward', 'reverse']
>>> build({"figures": ["accuracy"], "functions": ["exp"], "limits": {"repeat": 1}},
...       "out/tiny")  # doctest: +SKIP
PosixPath('out/tiny/index.html')
"""

from __future__ import annotations

import copy
import csv
import datetime
import functools
import html
import importlib
import json
import os
import platform
import shlex
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..bench import catalog
from ..backends import as_backend, label
from ..backends.finite_diff import METHODS
from ..core import DiffkitError
from ..bench.harness import (
    EXTRA,
    FIELDS,
    append_result,
    compare,
    fmt_bytes,
    fmt_error,
    fmt_number,
    fmt_seconds,
    read_results,
)
from ..bench.cells import run_isolated
from ..bench.measure import measure
from ..bench.targets import Target, kind_for, find_target
from . import sparse_taylor, which

Record = dict[str, Any]
Progress = Callable[[str], None]
DPI = 150  # figures for slides: a 6.4-inch figure is 960 pixels wide
FIGURES = ("steps", "swell", "scaling", "cost", "jacobian", "memory", "accuracy", "graphmode",
           *sparse_taylor.DEFAULTS)
ALL_BACKENDS = ["symbolic", "numeric", "forward", "reverse"]
DEFAULTS: dict[str, Any] = {
    "title": "diffkit report", "description": "",
    "functions": ["exp", "sin_large", "rosenbrock", "logistic_map", "babylonian_sqrt",
                  "tanh_ax"],
    "backends": ALL_BACKENDS,
    "figures": list(FIGURES),
    "limits": {"timeout": 60.0, "memory_mb": 2048.0, "repeat": 5},
    "steps": {"functions": ["sin_large"],
              "methods": ["forward", "central", "richardson", "complex"]},
    "swell": {"functions": ["logistic_map", "nested_sin"], "depths": "1..8"},
    "scaling": {"function": "rosenbrock", "sizes": [10, 100, 1000, 10000]},
    "cost": {"bound": 4.0},
    "jacobian": {"inputs": [4, 64, 1024], "outputs": [1, 16, 256]},
    "memory": {"function": "nested_sin", "size": 10000, "depths": [1, 2, 4, 8, 16, 32, 64],
               "backends": ["forward", "reverse"]},
    "accuracy": {},
    "graphmode": {"function": "rosenbrock", "sizes": [10, 100, 1000, 10000, 100000]},
    "which": which.DEFAULTS,
    **sparse_taylor.DEFAULTS,
}
INHERITED = {"steps": ("backends",), "cost": ("functions", "backends"),
             "scaling": ("backends",), "accuracy": ("functions", "backends")}
SECTION_KEYS = {"steps": {"functions", "methods", "backends"},
                "swell": {"functions", "depths"},
                "scaling": {"function", "sizes", "backends"},
                "cost": {"functions", "backends", "n", "bound"},
                "jacobian": {"inputs", "outputs"},
                "memory": {"function", "size", "depths", "backends"},
                "accuracy": {"functions", "backends"},
                "graphmode": {"function", "sizes"}, **sparse_taylor.SECTION_KEYS}


# =========================================================================== the spec


def read_toml(path: str | os.PathLike) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DiffkitError(f"{path}: not valid TOML: {exc}") from None


EXPERIMENTS = {  # a spec's `experiment = NAME` -> "module:function(spec, out_dir) -> Path"
    "gradient_flow": "diffkit.reporting.gradient_flow:build",
    "memory_vs_recompute": "diffkit.reporting.recompute:build",
    "fusion": "diffkit.reporting.fusion:build",
}


def experiment(spec: str | os.PathLike | dict[str, Any]) -> str | None:
    """The experiment a spec runs instead of harness sweeps (e.g. ``gradient_flow``), if any.

    >>> experiment({"experiment": "gradient_flow"}), experiment({"functions": ["exp"]})
    ('gradient_flow', None)
    """
    name = (spec if isinstance(spec, dict) else read_toml(spec)).get("experiment")
    if name is not None and name not in EXPERIMENTS:
        raise DiffkitError(f"unknown experiment {name!r}; experiments: {', '.join(EXPERIMENTS)}")
    return name


def run_experiment(raw: dict[str, Any], out_dir: Path) -> Path:
    """Run the spec's declared experiment into ``out_dir``; returns its main output file."""
    module, function = EXPERIMENTS[experiment(raw)].split(":")
    return getattr(importlib.import_module(module), function)(raw, out_dir)


def write_experiment(out: Path, figure: Any, png: str, numbers: tuple[str, Any], title: str,
                     caption: str) -> Path:
    """A one-figure experiment's files in ``out``: the figure as ``png`` (110 dpi, then
    closed), ``numbers`` = (file name, data) as JSON, and ``captions.md``; returns the
    path of ``captions.md``."""
    import matplotlib.pyplot as plt

    figure.savefig(out / png, dpi=110)
    plt.close(figure)
    (out / numbers[0]).write_text(json.dumps(numbers[1], indent=1))
    alt = Path(png).stem.replace("_", " ")
    (out / "captions.md").write_text(f"# {title}\n\n![{alt}]({png})\n\n{caption}\n",
                                     encoding="utf-8")
    return out / "captions.md"


def load_spec(spec: str | os.PathLike | dict[str, Any]) -> dict[str, Any]:
    """The spec (a TOML file or a dict) with every default filled in and checked.

    >>> load_spec({"limits": {"timeout": 5}})["limits"]
    {'timeout': 5.0, 'memory_mb': 2048.0, 'repeat': 5}
    """
    if isinstance(spec, dict):
        raw, where = copy.deepcopy(spec), "spec"
    else:
        raw, where = read_toml(spec), str(spec)
    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise DiffkitError(f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(DEFAULTS)}")
    out = {k: copy.deepcopy(raw.get(k, v)) for k, v in DEFAULTS.items()
           if k not in FIGURES and k not in ("limits", "which")}
    out["title"], out["description"] = str(out["title"]), str(out["description"])
    out["functions"] = _names(out["functions"], f"{where}: functions")
    for fn in out["functions"]:
        find_target(fn)  # a misspelt name is an error even if no figure uses the list
    out["backends"] = _backends(out["backends"], f"{where}: backends")
    out["figures"] = _names(out["figures"], f"{where}: figures")
    bad = [f for f in out["figures"] if f not in FIGURES]
    if bad:
        raise DiffkitError(f"{where}: unknown figure {bad[0]!r}; figures: {', '.join(FIGURES)}")
    out["limits"] = _limits(raw.get("limits", {}), f"{where}: [limits]")
    out["which"] = which.load(raw.get("which", {}), where)
    for fn in out["which"]["functions"]:
        find_target(fn)
    for fig in FIGURES:
        section = raw.get(fig, {})
        if not isinstance(section, dict):
            raise DiffkitError(f"{where}: {fig} must be a table, e.g. [{fig}]")
        extra = sorted(set(section) - SECTION_KEYS[fig])
        if extra:
            raise DiffkitError(f"{where}: [{fig}] has no key {extra[0]!r}; its keys: "
                               f"{', '.join(sorted(SECTION_KEYS[fig]))}")
        merged = {**{k: out[k] for k in INHERITED.get(fig, ())}, **DEFAULTS[fig], **section}
        out[fig] = _section(fig, merged, f"{where}: [{fig}]", check=fig in out["figures"])
    return out


def _names(v: Any, where: str) -> list[str]:
    if not isinstance(v, list) or not v or not all(isinstance(s, str) and s for s in v):
        raise DiffkitError(f"{where} must be a non-empty list of names, e.g. [\"exp\"]")
    return list(v)


def _ints(v: Any, where: str) -> list[int]:
    if not isinstance(v, list) or not v or not all(type(i) is int and i > 0 for i in v):
        raise DiffkitError(f"{where} must be a non-empty list of positive integers")
    return list(v)


def _backends(v: Any, where: str) -> list[str]:
    return [label(as_backend(b)) for b in _names(v, where)]


def _limits(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict) or set(v) - set(DEFAULTS["limits"]):
        raise DiffkitError(f"{where} takes timeout (s), memory_mb and repeat")
    lim = {**DEFAULTS["limits"], **v}
    for key in ("timeout", "memory_mb"):
        if not isinstance(lim[key], (int, float)) or lim[key] <= 0:
            raise DiffkitError(f"{where}: {key} must be a positive number")
        lim[key] = float(lim[key])
    if type(lim["repeat"]) is not int or lim["repeat"] < 1:
        raise DiffkitError(f"{where}: repeat must be a positive integer")
    return lim


def _section(fig: str, s: dict[str, Any], where: str, check: bool) -> dict[str, Any]:
    from ..bench.sweeps import parse_depths  # sympy (the sweeps' reference): when a spec is read

    for key in ("functions", "methods"):
        if key in s:
            s[key] = _names(s[key], f"{where} {key}")
    if "backends" in s:
        s["backends"] = _backends(s["backends"], f"{where} backends")
    for key in ("sizes", "inputs", "outputs"):
        if key in s:
            s[key] = _ints(s[key], f"{where} {key}")
    if "depths" in s:
        s["depths"] = (parse_depths(s["depths"]) if isinstance(s["depths"], str)
                       else _ints(s["depths"], f"{where} depths"))
    for key in ("size", "n"):
        if key in s and (type(s[key]) is not int or s[key] < 1):
            raise DiffkitError(f"{where}: {key} must be a positive integer")
    if "bound" in s:
        if not isinstance(s["bound"], (int, float)) or s["bound"] <= 0:
            raise DiffkitError(f"{where}: bound must be a positive number")
        s["bound"] = float(s["bound"])
    bad = [m for m in s.get("methods", []) if m not in METHODS]
    if bad:
        raise DiffkitError(f"{where}: unknown method {bad[0]!r}; methods: {', '.join(METHODS)}")
    if check:
        for fn in s.get("functions", []) if fig in ("steps", "cost", "accuracy") else []:
            find_target(fn)  # an unknown name or a bad formula is a clear error now
        needs = {"swell": "depth", "memory": "depth", "scaling": "scalable",
                 "graphmode": "scalable"}.get(fig)
        for fn in s.get("functions", [s.get("function")]) if needs else []:
            entry = catalog.get(fn)
            if (needs == "depth" and entry.depth is None) or (needs == "scalable"
                                                              and not entry.scalable):
                fits = [e.name for e in catalog.ENTRIES
                        if (e.depth if needs == "depth" else e.scalable)]
                raise DiffkitError(f"{where}: {fn} has no {'depth' if needs == 'depth' else 'n'}"
                                   f"; try one of: {', '.join(fits)}")
    return s


# =========================================================================== the sweeps


class Runner:
    """Cells measured under the spec's limits, kept in a JSON Lines results file.

    Harness cells are keyed like :func:`diffkit.bench.harness.compare` keys them
    ``(function, backend, n, depth)``; step and swell rows carry ``sweep``. A ``lost``
    record (its cluster worker died twice) is measured again by the next run. While
    ``plan`` is a list, missing cells are not measured but kept there as cluster jobs.
    """

    def __init__(self, path: Path, limits: dict[str, Any]) -> None:
        self.path, self.limits = path, limits
        self.plan: list[Any] | None = None
        self.reload()

    def reload(self) -> None:
        """The cells of the results file, without its ``lost`` ones."""
        self.cells: dict[tuple, Record] = {}
        self.steps: dict[tuple, list[Record]] = {}
        self.swell: dict[tuple, list[Record]] = {}
        for r in read_results(self.path):
            if r.get("status") != "lost":
                self._index(r)

    def _index(self, r: Record) -> None:
        sweep = r.get("sweep")
        if sweep == "steps":
            self.steps.setdefault((r.get("function"), r.get("method")), []).append(r)
        elif sweep == "swell":
            self.swell.setdefault((r.get("function"), r.get("depth")), []).append(r)
        elif r.get("backend") is not None:
            self.cells[(r.get("function"), r.get("backend"), r.get("n"), r.get("depth"))] = r

    def _add(self, r: Record) -> Record:
        append_result(self.path, r)
        self._index(r)
        return r

    def _fill(self, what: str, work: Callable[[], list[Record]],
              stubs: Callable[[], list[Record]], key: tuple | None = None,
              after: list[tuple] = (), wanted: Callable[[], bool] | None = None) -> None:
        """Measure ``work`` now and store its records, or, while planning, keep it as a
        :class:`~diffkit.bench.cluster.Job` (``stubs`` hold its place meanwhile)."""
        if self.plan is None:
            for r in work():
                self._add(r)
            return
        from ..bench.cluster import Job

        self.plan.append(Job(what, work, stubs, key, after, wanted or (lambda: True)))
        for r in stubs():  # `job`: which planned job the figure walking past it waits for
            self._index({**r, "status": "lost", "message": "planned", "job": len(self.plan) - 1})

    def compared(self, fn: str, backends: list[str]) -> list[Record]:
        """:func:`~diffkit.bench.harness.compare` at the default point (with the reference)."""
        keys = [(fn, b, None, None) for b in backends]
        todo = [b for b, k in zip(backends, keys) if k not in self.cells]
        if todo:
            lim = self.limits
            sweep = functools.partial(compare, fn, backends=todo, timeout=lim["timeout"],
                                      memory_mb=lim["memory_mb"], repeat=lim["repeat"])
            if self.plan is None:  # compare appends each row as it finishes
                for r in sweep(results=self.path).records():
                    self._index(r)
            else:
                self._fill(f"compare · {fn}", lambda: sweep().rows, lambda: [
                    {"function": fn, "backend": b, "n": None, "depth": None} for b in todo])
        return [self.cells[k] for k in keys]

    def cell(self, name: str, backend: str, target: Callable[[], Target], n: int | None = None,
             depth: int | None = None, after: list[tuple] = (),
             wanted: Callable[[], bool] | None = None, **extra: Any) -> Record:
        """One backend timed and sized on ``target()`` without a reference (no error):
        for the speed and memory sweeps, whose inputs are too large for one."""
        key = (name, backend, n, depth)
        if key in self.cells:
            return self.cells[key]
        lim, ident = self.limits, {"function": name, "backend": backend, "n": n, "depth": depth}

        def work() -> list[Record]:
            t, be = target(), as_backend(backend)
            row = run_isolated(lambda: measure(t.f, t.x, t.kind, be, None, lim["repeat"]),
                               lim["timeout"], lim["memory_mb"])
            for big in ("value", "derivative"):  # keep results.jsonl small
                if np.size(row.get(big)) > 100:
                    row[big] = None
            return [{**ident, "kind": t.kind, **extra, **row}]

        self._fill(f"{name} · {backend}", work, lambda: [{**ident, **extra}], key, after, wanted)
        return self.cells[key]

    def grown(self, name: str, backend: str, target: Callable[[], Target], n: int | None,
              depth: int | None = None, smaller: list[tuple] = ()) -> Record:
        """:meth:`cell`, unless the same backend already ran out of time or memory on a
        smaller ``(n, depth)``: then a ``skipped`` row (not stored) saying where."""
        def skipped() -> Record | None:
            for sn, sd in reversed(smaller):
                r = self.cells.get((name, backend, sn, sd), {})
                if r.get("status") in ("timeout", "oom", "skipped"):
                    at = f"n = {sn}" if sd is None else f"depth {sd}"
                    return {"function": name, "backend": backend, "n": n, "depth": depth,
                            "status": "skipped", "message": f"{r['status']} at {at} already"}
            return None

        return skipped() or self.cell(name, backend, target, n, depth, after=[
            (name, backend, sn, sd) for sn, sd in smaller], wanted=lambda: skipped() is None)

    def step_errors(self, fn: str, methods: list[str]) -> list[Record]:
        """:func:`diffkit.bench.sweeps.step_errors` in isolation; one row per method and step."""
        from ..bench.sweeps import step_errors  # sympy: only when the sweep runs

        todo = [m for m in methods if (fn, m) not in self.steps]
        if todo:
            lim = self.limits

            def work() -> list[Record]:
                from ..bench.sweeps import step_errors

                t = find_target(fn)

                def job() -> dict[str, Any]:
                    kind = t.kind or kind_for(t.x, t.f(t.x))
                    return {"rows": step_errors(Target(t.name, t.f, t.x, kind), todo)}

                out = run_isolated(job, lim["timeout"], lim["memory_mb"])
                rows = out.get("rows") or [{"function": fn, "method": m, "step": None,
                                            "error": None, "auto": False,
                                            "status": out["status"],
                                            "message": out.get("message")} for m in todo]
                return [{"sweep": "steps", **r, "function": fn,
                         "status": r.get("status", "ok")} for r in rows]

            self._fill(f"steps · {fn}", work, lambda: [
                {"sweep": "steps", "function": fn, "method": m, "step": None, "error": None,
                 "auto": False} for m in todo])
        return [r for m in methods for r in self.steps[(fn, m)]]

    def swell_rows(self, fn: str, depth: int) -> list[Record]:
        """:func:`diffkit.bench.sweeps.swell` at one depth (the symbolic part isolated)."""
        from ..bench.sweeps import swell  # sympy: only when the sweep runs

        if (fn, depth) not in self.swell:
            lim = self.limits

            def work() -> list[Record]:
                from ..bench.sweeps import swell

                return [{"sweep": "swell", "function": fn, **r}
                        for r in swell(fn, [depth], lim["timeout"], lim["memory_mb"])]

            self._fill(f"swell · {fn} · depth {depth}", work, lambda: [
                {"sweep": "swell", "function": fn, "depth": depth, "backend": b}
                for b in ("symbolic", "reverse", "forward")])
        return self.swell[(fn, depth)]


def tanh_ax(m: int, n: int) -> Target:
    """The catalog's tanh(A x) with an m×n matrix A: a Jacobian of shape (m, n).

    >>> tanh_ax(2, 3).f(np.zeros(3)).shape
    (2,)
    """
    return Target(f"tanh_Ax_{m}x{n}", functools.partial(catalog.tanh_ax, m=m),
                  np.linspace(-1.0, 1.0, n), "jacobian", True)


Unit = tuple[str, Callable[[], list[Record]]]


def _units(fig: str, s: dict[str, Any], run: Runner) -> Iterator[Unit]:
    """The steps of one figure's sweep: (progress label, work returning its records)."""
    if fig == "steps":
        for fn in s["functions"]:
            yield f"steps · {fn}", lambda fn=fn: run.step_errors(fn, s["methods"])
            yield f"steps · {fn} · AD", lambda fn=fn: run.compared(fn, s["backends"])
    elif fig == "swell":
        for fn in s["functions"]:
            for k in s["depths"]:
                yield f"swell · {fn} · depth {k}", lambda fn=fn, k=k: run.swell_rows(fn, k)
    elif fig == "scaling":
        fn = s["function"]
        for n in s["sizes"]:
            for b in s["backends"]:
                yield f"scaling · {fn} n={n} · {b}", lambda n=n, b=b: [run.grown(
                    fn, b, lambda: find_target(fn, n=n), n=n, smaller=[
                        (m, None) for m in s["sizes"] if m < n])]
    elif fig == "cost":
        for fn in s["functions"]:
            n = s.get("n")
            if n and fn in catalog.names() and catalog.get(fn).scalable:
                for b in s["backends"]:
                    yield f"cost · {fn} n={n} · {b}", lambda fn=fn, b=b, n=n: [
                        run.cell(fn, b, lambda: find_target(fn, n=n), n=n)]
            else:
                yield f"cost · {fn}", lambda fn=fn: run.compared(fn, s["backends"])
    elif fig == "jacobian":
        for m in s["outputs"]:
            for n in s["inputs"]:
                for b in ("forward", "reverse"):
                    yield f"jacobian · m={m} n={n} · {b}", lambda m=m, n=n, b=b: [
                        run.cell(f"tanh_Ax_{m}x{n}", b, lambda: tanh_ax(m, n), n=n, m=m)]
    elif fig == "memory":
        fn, size = s["function"], s["size"]
        x = np.linspace(0.2, 0.8, size)  # inside every depth function's domain
        for k in s["depths"]:
            for b in s["backends"]:
                yield f"memory · {fn} depth {k} · {b}", lambda k=k, b=b: [run.grown(
                    fn, b, lambda: find_target(fn, depth=k, x=x), n=size, depth=k, smaller=[
                        (size, d) for d in s["depths"] if d < k])]
    elif fig == "accuracy":
        for fn in s["functions"]:
            yield f"accuracy · {fn}", lambda fn=fn: run.compared(fn, s["backends"])
    elif fig in sparse_taylor.DEFAULTS:
        yield from sparse_taylor.units(fig, s, run.limits if run else {"timeout": 60.0})
    elif fig == "graphmode":
        fn = s["function"]
        for n in s["sizes"]:
            for b in ("reverse", "compiled"):
                yield f"graphmode · {fn} n={n} · {b}", lambda n=n, b=b: [run.grown(
                    fn, b, lambda: find_target(fn, n=n), n=n, smaller=[
                        (m, None) for m in s["sizes"] if m < n])]


def plan(spec: str | os.PathLike | dict[str, Any]) -> list[str]:
    """The progress labels :func:`build` reports, in order (their count: a bar's total).

    >>> plan({"figures": ["accuracy"], "functions": ["exp", "tanh"]})
    ['accuracy · exp', 'accuracy · tanh']
    """
    s = load_spec(spec)
    return [lbl for fig in s["figures"] for lbl, _ in _units(fig, s[fig], None)] + [  # type: ignore
        f"which · {fn}" for fn in s["which"]["functions"]]


# =========================================================================== figures, tables


@dataclass(frozen=True)
class FigureInfo:
    title: str
    explains: str
    columns: tuple[str, ...]


INFO = {
    "steps": FigureInfo(
        "Finite differences: error against step",
        "Each curve is one finite-difference method's relative error as the step h shrinks "
        "from 10⁻¹ to 10⁻¹⁶. Truncation error falls like hᵖ (dashed grey, p the method's "
        "order) until round-off error, growing like ε/h (dotted), takes over: the \"V\". "
        "Stars mark the step each method picks automatically. Dash-dotted horizontal lines "
        "are the errors of the symbolic and AD backends at the same point: they have no "
        "step to tune. The complex step subtracts nothing, so it has no round-off arm.",
        ("function", "method", "status", "auto step", "error at auto step", "best step",
         "best error", "message")),
    "swell": FigureInfo(
        "Expression swell against depth",
        "Size of the derivative as the function is composed deeper (log scale). The "
        "symbolic derivative as a tree counts every repeated subexpression again and can "
        "grow exponentially; as a DAG after common-subexpression elimination it grows far "
        "slower. The reverse tape and the forward trace record one entry per primitive "
        "operation, so they grow linearly with depth. The compiled backend's optimized "
        "derivative graph (forward and adjoint equations) grows linearly too, next to the "
        "DAG: reverse mode is symbolic differentiation done on the shared graph.",
        ("function", "depth", "backend", "status", "expr_nodes", "expr_dag_nodes",
         "tape_ops", "graph_eqns", "message")),
    "scaling": FigureInfo(
        "Time against input dimension",
        "Left: median time per gradient against the number of inputs n (log-log); right: "
        "the cost ratio time(gradient) / time(f). Each legend gives the slope fitted to the "
        "three largest sizes, the exponent of n. Finite differences evaluate f n+1 or 2n "
        "times and forward mode carries n tangent directions, so their ratios grow like n "
        "(dotted guide ∝ n); reverse mode gets the whole gradient from one backward pass, a "
        "constant multiple of f (guide ∝ 1). Where f is cheap, fixed interpreter overhead "
        "flattens the times at small n; the ratio divides it out. Symbolic per-call time "
        "excludes its one-off setup (derive + compile, in the table).",
        ("function", "n", "backend", "status", "time_s", "f_time_s", "cost_ratio", "setup_s",
         "message")),
    "cost": FigureInfo(
        "Cost of a derivative relative to the function",
        "time(derivative) / time(f) per function and backend (log scale), each timed the "
        "same way. The cheap-gradient principle bounds reverse mode's operation count for a "
        "whole gradient by a small constant times f's (the dashed line); measured ratios "
        "add interpreter overhead, which dominates on tiny inputs. Finite differences pay "
        "about one or two evaluations of f per input.",
        ("function", "n", "backend", "status", "time_s", "f_time_s", "cost_ratio",
         "message")),
    "jacobian": FigureInfo(
        "Forward or reverse mode for a Jacobian",
        "Jacobians of tanh(A x), A a fixed-seed m×n matrix, over a grid of inputs n and "
        "outputs m. The colour is log10 time(forward) / time(reverse): in blue cells "
        "reverse mode wins (it needs one backward pass per output), in red cells forward "
        "mode wins (it carries one tangent per input, here all in one vectorized pass). The "
        "boundary between them is the crossover.",
        ("function", "m", "n", "backend", "status", "time_s", "peak_bytes", "message")),
    "memory": FigureInfo(
        "Memory against depth",
        "Peak bytes allocated (tracemalloc) during one derivative call, x an array, as the "
        "function is composed deeper. Reverse mode keeps the intermediate arrays on its "
        "tape for the backward pass (dashed: the tape's own bytes), so its memory grows "
        "with the number of operations; forward mode carries each value with its tangent "
        "and drops them as it goes, so its peak stays flat.",
        ("function", "n", "depth", "backend", "status", "peak_bytes", "tape_bytes",
         "tape_ops", "time_s", "message")),
    "accuracy": FigureInfo(
        "Accuracy of each backend",
        "log10 of each backend's error against a high-precision reference (the exact SymPy "
        "derivative evaluated with mpmath at 40 digits): relative max-norm error, absolute "
        "where the reference is 0; an exact 0 is written 0. Hatched cells gave no "
        "derivative: n/a (e.g. symbolic on value-dependent control flow), timeout, oom or "
        "error.",
        ("function", "backend", "status", "error", "error_rule", "reference_method",
         "message")),
    "graphmode": FigureInfo(
        "Static against dynamic graph",
        "Left: median time per gradient against n for eager reverse mode, which records "
        "its graph (the tape) in every call like PyTorch or MindSpore's PYNATIVE mode, and "
        "for the compiled backend, which traced the graph once, differentiated and "
        "optimized it and runs generated numpy code (GRAPH_MODE, jax.jit); dashed, the "
        "compiled backend's one-off setup (trace + transform + optimize + generate). Right: "
        "the number of calls after which compiling has paid for itself, setup / "
        "(time(reverse) - time(compiled)).",
        ("function", "n", "backend", "status", "time_s", "setup_s", "graph_eqns",
         "message")),
    **{fig: FigureInfo(*info) for fig, info in sparse_taylor.INFO.items()},
}
FORMAT = {"error": fmt_error, "best error": fmt_error, "error at auto step": fmt_error,
          "time_s": fmt_seconds, "f_time_s": fmt_seconds, "setup_s": fmt_seconds,
          "cost_ratio": fmt_number, "peak_bytes": fmt_bytes, "tape_bytes": fmt_bytes,
          "auto step": fmt_number, "best step": fmt_number}


def draw(fig: str, rows: list[Record], section: dict[str, Any]) -> Any:
    """The Figure of ``fig`` from its records."""
    from . import plots  # matplotlib: only when a figure is drawn

    if fig == "steps":
        return plots.step_error_figure([r for r in rows if r.get("sweep") == "steps"],
                                       [r for r in rows if r.get("sweep") != "steps"])
    if fig == "cost":
        return plots.cost_figure(rows, section["bound"])
    if fig == "graphmode":
        from .graphmode import graphmode_figure

        return graphmode_figure(rows)
    if fig in sparse_taylor.DEFAULTS:
        return sparse_taylor.draw(fig, rows)
    return getattr(plots, {"swell": "swell_figure", "scaling": "scaling_figure",
                           "jacobian": "jacobian_figure", "memory": "memory_figure",
                           "accuracy": "accuracy_figure"}[fig])(rows)


def table_rows(fig: str, rows: list[Record]) -> list[Record]:
    """The rows of a figure's table; the step sweep summarised per function and method."""
    if fig != "steps":
        return list({id(r): r for r in rows}.values())
    steps = [r for r in rows if r.get("sweep") == "steps"]
    out = []
    for fn, method in dict.fromkeys((r["function"], r.get("method")) for r in steps):
        mine = [r for r in steps if r["function"] == fn and r.get("method") == method]
        fine = [r for r in mine if r.get("error") is not None]
        auto = next((r for r in fine if r.get("auto")), {})
        best = min(fine, key=lambda r: r["error"], default={})
        out.append({"function": fn, "method": method,
                    "status": "ok" if fine else mine[0].get("status"),
                    "auto step": auto.get("step"), "error at auto step": auto.get("error"),
                    "best step": best.get("step"), "best error": best.get("error"),
                    "message": None if fine else mine[0].get("message")})
    return out + [{"function": r["function"], "method": f"({r['backend']})",
                   "status": r.get("status"), "best error": r.get("error"),
                   "message": r.get("message")} for r in rows if r.get("sweep") != "steps"]


def _cell(column: str, v: Any) -> str:
    if v is None or v == "":
        return "—"
    if column in FORMAT and isinstance(v, (int, float)):
        return FORMAT[column](v)
    return str(v)[:300]


# =========================================================================== build


def _run(spec: dict[str, Any], run: Runner, progress: Progress | None
         ) -> dict[str, list[Record]]:
    from ..backends import symbolic  # noqa: F401  (imported once here, not in every cell)
    from ..bench import reference  # noqa: F401  (likewise)

    data: dict[str, list[Record]] = {}
    for fig in spec["figures"]:
        data[fig] = []
        for what, work in _units(fig, spec[fig], run):
            if progress:
                progress(what)
            data[fig] += work()
    return data


def _run_on(cluster: Any, spec: dict[str, Any], run: Runner, progress: Progress | None,
            draw: Callable[[str, list[Record]], Any] | None = None) -> dict[str, list[Record]]:
    """Measure every missing cell of the spec as a task on ``cluster``; the records are
    stored (by this process alone) as tasks finish. The sweeps are walked first with
    :attr:`Runner.plan` set, so the jobs are exactly the cells a serial run would measure.
    Returns the records per figure; ``draw(fig, rows)`` is called for each figure as soon
    as the jobs it waits for are done, so it can be drawn while other cells still run."""
    from ..bench.cluster import using

    run.plan = []
    planned = _run(spec, run, None)
    jobs, run.plan = run.plan, None
    run.reload()  # the planned cells' stubs go
    waits = {fig: {r["job"] for r in rows if "job" in r} for fig, rows in planned.items()}
    number = {id(job): k for k, job in enumerate(jobs)}
    data: dict[str, list[Record]] = {}

    def ready() -> None:  # each figure whose jobs are all done: its records, and drawn
        for fig in spec["figures"]:
            if fig not in data and not waits[fig]:
                data[fig] = [r for _, work in _units(fig, spec[fig], run) for r in work()]
                if draw is not None:
                    draw(fig, data[fig])

    def done(job: Any, records: list[Record]) -> None:
        for r in records:
            run._add(r)
        for waiting in waits.values():
            waiting.discard(number[id(job)])
        ready()

    ready()
    if jobs:
        with using(cluster) as c:
            c.run(jobs, done, progress)
    return {fig: data[fig] for fig in spec["figures"]}


def _rendered(fig: str, rows: list[Record], section: dict[str, Any], svg: bool
              ) -> dict[str, bytes]:
    """Figure ``fig`` drawn and encoded, ``{".png": ..., ".svg": ...}``: a task a cluster
    worker can run (the client alone writes files, as it alone writes results)."""
    import io

    import matplotlib

    figure, files = draw(fig, rows, section), {}
    with io.BytesIO() as png:
        figure.savefig(png, format="png", dpi=DPI, metadata={"Software": None})
        files[".png"] = png.getvalue()
    if svg:
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "diffkit"}), \
                io.BytesIO() as text:
            figure.savefig(text, format="svg", metadata={"Date": None})
            files[".svg"] = text.getvalue()
    return files


def _made(spec: dict[str, Any], run: Runner, out: Path, svg: bool, progress: Progress | None,
          cluster: Any = None) -> dict[str, list[Record]]:
    """Every missing cell of the spec measured and every figure written into ``out``;
    the records per figure. On a cluster each figure is drawn on a worker as soon as its
    cells are in, while the others still run (drawing is a quarter of a quick report's
    serial time)."""
    def write(fig: str, files: dict[str, bytes]) -> None:
        for suffix, blob in files.items():
            (out / fig).with_suffix(suffix).write_bytes(blob)

    if cluster is None:
        data = _run(spec, run, progress)
        for fig, rows in data.items():
            write(fig, _rendered(fig, rows, spec[fig], svg))
        return data
    from ..bench.cluster import using

    with using(cluster) as c:
        drawn: dict[str, Callable[[], dict[str, bytes]]] = {}
        data = _run_on(c, spec, run, progress, lambda fig, rows: drawn.setdefault(
            fig, c.start(functools.partial(_rendered, fig, rows, spec[fig], svg))))
        for fig, files in drawn.items():
            write(fig, files())
    return data


def build(spec: str | os.PathLike | dict[str, Any], out_dir: str | os.PathLike,
          progress: Progress | None = None, cluster: Any = None) -> Path:
    """Run the spec's sweeps (resuming from ``out_dir/results.jsonl``), draw its figures
    and write the report; returns the path of ``index.html``. With ``cluster``
    (``"local:N"``, ``"tcp://host:port"`` or an open :class:`~diffkit.bench.cluster.Cluster`)
    the cells run as tasks on Dask workers (:mod:`diffkit.bench.cluster`).

    >>> build("reports/quick.toml", "out/quick")  # doctest: +SKIP
    PosixPath('out/quick/index.html')
    """
    raw = spec if isinstance(spec, dict) else read_toml(spec)
    if cluster is not None:
        _cluster_check(cluster, raw)
    if experiment(raw):  # e.g. a training experiment, not harness cells
        return run_experiment(raw, Path(out_dir))
    s = load_spec(raw)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run = Runner(out / "results.jsonl", s["limits"])
    data = _made(s, run, out, True, progress, cluster)
    chosen = which.rows(s["which"], run, progress)
    (out / "spec.toml").write_text(to_toml(s))
    write_csv(read_results(run.path), out / "results.csv")
    here = None if isinstance(spec, dict) else Path(spec)
    command = (f"diffkit report {shlex.quote(str(here or out / 'spec.toml'))} "
               f"-o {shlex.quote(str(out))}")
    index = out / "index.html"
    index.write_text(page(s, data, command, run.path, chosen))
    return index


def gallery(spec: str | os.PathLike | dict[str, Any], out_dir: str | os.PathLike,
            progress: Progress | None = None, cluster: Any = None) -> list[Path]:
    """Only the figures, as PNGs (150 dpi), measured afresh in a temporary folder:
    the README gallery. ``diffkit report reports/quick.toml -o reports/gallery --gallery``
    """
    if cluster is not None:
        _cluster_check(cluster, spec if isinstance(spec, dict) else read_toml(spec))
    s = load_spec(spec)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = _made(s, Runner(Path(tmp) / "results.jsonl", s["limits"]), out, False,
                     progress, cluster)
    return [out / f"{fig}.png" for fig in data]


def _cluster_check(cluster: Any, raw: dict[str, Any]) -> None:
    from ..bench.cluster import require

    if raw.get("experiment"):
        raise DiffkitError(f"the {raw['experiment']} experiment runs in this process, not as "
                           "cells a cluster could share; run it without --cluster")
    if isinstance(cluster, str):
        require(cluster)


def write_csv(records: list[Record], path: Path) -> None:
    """All records as CSV: ``sweep`` (``cell`` for harness cells), the harness fields,
    then any others; lists as JSON."""
    columns = list(dict.fromkeys(["sweep", *FIELDS, *EXTRA, *(k for r in records for k in r)]))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in records:
            r = {**r, "sweep": r.get("sweep", "cell")}
            w.writerow(["" if r.get(c) is None else json.dumps(r[c])
                        if isinstance(r[c], (list, dict)) else r[c] for c in columns])


def to_toml(spec: dict[str, Any]) -> str:
    """A loaded spec back as TOML (scalars, lists, one level of tables).

    >>> print(to_toml({"title": "t", "limits": {"repeat": 1}}))
    title = "t"
    <BLANKLINE>
    [limits]
    repeat = 1
    <BLANKLINE>
    """
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ", ".join(value(i) for i in v) + "]"
        if isinstance(v, float) and not np.isfinite(v):
            return "nan" if np.isnan(v) else "inf" if v > 0 else "-inf"
        return json.dumps(v, ensure_ascii=False)

    top = [f"{k} = {value(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    tables = [f"\n[{k}]\n" + "".join(f"{kk} = {value(vv)}\n" for kk, vv in v.items())
              for k, v in spec.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n" + "".join(tables)


# =========================================================================== the page


def machine() -> dict[str, str]:
    """Where and with what the report was measured."""
    from importlib.metadata import PackageNotFoundError, version

    from ..bench.cluster import cpu_model

    cpu = cpu_model()
    blas = {v: os.environ[v] for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                         "MKL_NUM_THREADS") if v in os.environ}
    info = {"platform": platform.platform(), "CPU": cpu, "CPU count": str(os.cpu_count()),
            "BLAS threads": ", ".join(f"{k}={v}" for k, v in blas.items()) or "default",
            "python": platform.python_version()}
    for pkg in ("numpy", "sympy", "matplotlib", "diffkit"):
        try:
            info[pkg] = version(pkg)
        except PackageNotFoundError:
            info[pkg] = "not installed"
    return info


def _table(columns: tuple[str, ...] | list[str], rows: list[Record]) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join(
        f"<tr class=\"{'' if r.get('status', 'ok') == 'ok' else 'failed'}\">"
        + "".join(f"<td>{esc(_cell(c, r.get(c)))}</td>" for c in columns) + "</tr>"
        for r in rows)
    return (f"<div class=\"scroll\"><table><thead><tr>{head}</tr></thead><tbody>{body}"
            "</tbody></table></div>")


def where(rows: list[Record]) -> str:
    """Where a figure's cells ran, when on a cluster: each machine, its CPU and how many
    cells it measured at a time; a warning when the CPU models differ.

    >>> where([{"host": "a", "cpu": "X", "concurrency": 2}])
    '<p class="where">Measured on a Dask cluster: a (X), 2 cells at a time.</p>'
    """
    hosts = {r["host"]: (r.get("cpu"), r.get("concurrency")) for r in rows if r.get("host")}
    if not hosts:
        return ""
    text = "; ".join(f"{h} ({cpu}), {n or '?'} cell{'s' if n != 1 else ''} at a time"
                     for h, (cpu, n) in sorted(hosts.items()))
    mixed = len({cpu for cpu, _ in hosts.values()}) > 1
    return (f"<p class=\"where\">Measured on a Dask cluster: {html.escape(text)}."
            + (" <b>Timings here come from different CPU models: compare them with care.</b>"
               if mixed else "") + "</p>")


STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;
color:#222}img{max-width:100%;height:auto;border:1px solid #ddd}.scroll{overflow-x:auto;
max-width:100%}code{overflow-wrap:anywhere}table{border-collapse:collapse;
font-size:0.85em;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#f2f2f2}tr.failed td{background:#fbeaea}code{background:#f4f4f4;padding:1px 4px}
.meta td:first-child{font-weight:bold}"""


def _data_url(png: Path) -> str:
    """A PNG as a data URL, so the page needs no other file to show it."""
    import base64

    if not png.exists():
        return f"{png.name}"
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def page(spec: dict[str, Any], data: dict[str, list[Record]], command: str,
         results: Path, chosen: list[Record] = ()) -> str:
    """The HTML report, self-contained: its figures are embedded (PNG as data URLs, read
    from the folder of ``results``), so the one file shows everything; every
    user-supplied text is escaped. ``chosen``: the "which method" rows, if any."""
    esc = html.escape
    failed: dict[str, int] = {}
    ident = ("sweep", "function", "backend", "method", "n", "m", "depth")
    cells = {tuple(r.get(k) for k in ident): r for rows in data.values() for r in rows}
    for r in cells.values():  # a step sweep's failure counts once per method
        if r.get("status", "ok") != "ok":
            failed[r["status"]] = failed.get(r["status"], 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(failed.items())) or "none"
    lim = spec["limits"]
    title = esc(spec["title"])
    parts = [f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>"
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
             + f"<style>{STYLE}</style></head><body><h1>{title}</h1>"]
    if spec["description"]:
        parts.append(f"<p>{esc(spec['description'])}</p>")
    parts.append(
        f"<p>Generated {esc(datetime.datetime.now().isoformat(timespec='seconds'))}. "
        f"Regenerate (finished cells are kept and not measured again): "
        f"<code>{esc(command)}</code></p>"
        f"<p>Every cell ran in its own process under a {lim['timeout']:g} s time limit and a "
        f"{lim['memory_mb']:g} MB memory limit; times are medians of {lim['repeat']} "
        f"timing{'s' if lim['repeat'] != 1 else ''} after a warm-up. Cells that did not "
        f"finish: {esc(summary)} (their status is shown in the tables; hatched or marked x "
        "in the figures).</p>")
    parts.append("<div class=\"scroll\"><table class=\"meta\">" + "".join(
        f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in machine().items())
        + "</table></div>")
    parts.append(f"<p>Raw results: <a href=\"{esc(results.name)}\">results.jsonl</a>, "
                 "<a href=\"results.csv\">results.csv</a>; the spec with its defaults: "
                 "<a href=\"spec.toml\">spec.toml</a>.</p>")
    for i, (fig, rows) in enumerate(data.items(), 1):
        info = INFO[fig]
        trows = table_rows(fig, rows)
        parts.append(
            f"<h2 id=\"{fig}\">{i}. {esc(info.title)}</h2><p>{esc(info.explains)}</p>"
            + where(rows) +
            f"<p><img src=\"{_data_url(results.parent / f'{fig}.png')}\" "
            f"alt=\"{esc(info.title)}\"><br><a href=\"{fig}.svg\">{fig}.svg</a> (vector)</p>"
            f"<details{' open' if len(trows) <= 30 else ''}><summary>{len(trows)} rows"
            f"</summary>{_table(info.columns, trows)}</details>")
    if chosen:
        parts.append(f"<h2 id=\"which\">{len(data) + 1}. {esc(which.TITLE)}</h2>"
                     f"<p>{esc(which.EXPLAINS)}</p>"
                     + _table(which.COLUMNS, [which.display(r) for r in chosen]))
    parts.append("<h2>How things are measured</h2><ul>"
                 "<li>error: relative max-norm error against the high-precision reference, "
                 "max|d − r| / max|r|; absolute where the reference is 0.</li>"
                 "<li>time: median per call after a warm-up, autoranged like timeit; "
                 "setup (symbolic derive + compile) apart; cost ratio = time(derivative) / "
                 "time(f), timed the same way.</li>"
                 "<li>memory: tracemalloc peak during one derivative call (numpy reports its "
                 "buffers); tape bytes: the arrays a reverse tape keeps.</li>"
                 "<li>size: symbolic nodes as a tree and after CSE; primitives on the tape "
                 "or trace; function evaluations of finite differences.</li></ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
