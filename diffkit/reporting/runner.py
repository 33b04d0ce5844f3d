"""A report's sweeps: every cell its figures need, measured once and kept.

:class:`Runner` measures cells under the spec's limits (each isolated in its own process)
and appends each finished one to a JSON Lines results file at once, so a rerun into the
same folder measures only what is missing. :func:`plan` lists the work; on a Dask cluster
the same cells run as tasks (:func:`run_on`).
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..backends import as_backend
from ..bench import catalog
from ..bench.cells import run_isolated
from ..bench.harness import append_result, compare, read_results
from ..bench.measure import measure
from ..bench.targets import Target, find_target, kind_for, tanh_ax
from . import atlas, gradbench, solvers, sparse_taylor
from .spec import load_spec

Record = dict[str, Any]
Progress = Callable[[str], None]


class Runner:
    """Cells measured under the spec's limits, kept in a JSON Lines results file.

    Harness cells are keyed like :func:`diffkit.bench.harness.compare` keys them
    ``(function, backend, n, depth)``; step and swell rows carry ``sweep``; the rows of
    the other figures' cells (coloring, orders, solvers, atlas) carry their figure as ``sweep``
    and ``cell``, the cell's progress label. A ``lost``
    record (its cluster worker died twice) is measured again by the next run. While
    ``plan`` is a list, missing cells are not measured but kept there as cluster jobs.
    """

    def __init__(self, path: Path, limits: dict[str, Any]) -> None:
        self.path, self.limits = path, limits
        self.plan: list[Any] | None = None
        self.reload()

    def reload(self) -> None:
        """The cells of the results file, without its ``lost`` ones (kept aside, to be
        replaced when they are measured again)."""
        self.cells: dict[tuple, Record] = {}
        self.steps: dict[tuple, list[Record]] = {}
        self.swell: dict[tuple, list[Record]] = {}
        self.units: dict[tuple, list[Record]] = {}
        self.lost: set[tuple] = set()
        for r in read_results(self.path):
            if r.get("status") == "lost":
                self.lost.add(slot(r))
            else:
                self._index(r)

    def _index(self, r: Record) -> None:
        store, key = slot(r)
        if store == "cells":
            self.cells[key] = r
        elif store:
            getattr(self, store).setdefault(key, []).append(r)

    def _add(self, r: Record) -> Record:
        self._replace_lost([slot(r)])
        append_result(self.path, r)
        self._index(r)
        return r

    def _replace_lost(self, slots: list[tuple]) -> None:
        """A cell is recorded once: the ``lost`` records of cells measured again go from
        the results file (rewritten whole, then renamed over it) before their new ones."""
        if self.lost.isdisjoint(slots):
            return
        gone = self.lost.intersection(slots)
        kept = [r for r in read_results(self.path)
                if not (r.get("status") == "lost" and slot(r) in gone)]
        fresh = self.path.with_name(self.path.name + ".new")
        fresh.write_text("".join(json.dumps(r, default=str) + "\n" for r in kept))
        os.replace(fresh, self.path)
        self.lost -= gone

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
            self._replace_lost([("cells", (fn, b, None, None)) for b in todo])
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

    def unit(self, figure: str, label: str, work: Callable[[], list[Record]]) -> list[Record]:
        """The rows of one cell of ``figure`` (its progress ``label`` names it), measured
        by ``work`` unless the results file has them."""
        if (figure, label) not in self.units:
            ident = {"sweep": figure, "figure": figure, "cell": label}
            self._fill(label, lambda: [{**r, **ident} for r in work()], lambda: [ident])
        return self.units[(figure, label)]

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


Unit = tuple[str, Callable[[], list[Record]]]


class Phases:
    """Where a report's wall time goes, phase by phase (``diffkit report --verbose``).

    >>> p = Phases(); p.mark("planning"); p.mark("cells")
    >>> [name for name, _ in p.seen]
    ['planning', 'cells']
    """

    def __init__(self) -> None:
        self.seen: list[tuple[str, float]] = []
        self._since = time.perf_counter()

    def mark(self, name: str) -> None:
        """The phase ``name`` ended now (it began when the one before it ended)."""
        now = time.perf_counter()
        self.seen.append((name, now - self._since))
        self._since = now

    def __str__(self) -> str:
        total = sum(s for _, s in self.seen)
        return f"{total:.1f} s: " + "; ".join(f"{name} {s:.1f} s" for name, s in self.seen)


def slot(r: Record) -> tuple:
    """Where a record is kept: the store of :class:`Runner` and the key of its cell (a
    figure's cell, a step sweep's method, a swell depth, a harness cell), or ``(None,
    None)`` for a record of none (the "which" table's)."""
    if "cell" in r:
        return "units", (r.get("figure"), r["cell"])
    sweep = r.get("sweep")
    if sweep == "steps":
        return "steps", (r.get("function"), r.get("method"))
    if sweep == "swell":
        return "swell", (r.get("function"), r.get("depth"))
    if r.get("backend") is not None:
        return "cells", (r.get("function"), r.get("backend"), r.get("n"), r.get("depth"))
    return None, None


#: the sections beside the figures, each its cells from its own spec section
SECTION_UNITS = {"solvers": solvers.units, "atlas": atlas.units, "gradbench": gradbench.units}


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
    elif fig in sparse_taylor.DEFAULTS or fig in SECTION_UNITS:
        cells = SECTION_UNITS[fig](s) if fig in SECTION_UNITS else \
            sparse_taylor.units(fig, s, run.limits if run else {"timeout": 60.0})
        for label, work in cells:
            yield label, lambda label=label, work=work: run.unit(fig, label, work)
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
    return [lbl for fig in sections(s) for lbl in plan_of(s, fig)] + [
        f"which · {fn}" for fn in s["which"]["functions"]]


def sections(spec: dict[str, Any]) -> list[str]:
    """The spec's figures, and ``solvers``, ``atlas`` and ``gradbench`` where their sections
    name functions: each one's cells are walked, stored and distributed alike."""
    return spec["figures"] + [fig for fig in SECTION_UNITS if spec[fig]["functions"]]


def plan_of(spec: dict[str, Any], fig: str) -> list[str]:
    """The progress labels of one figure's sweep in a loaded spec (its functions, sizes
    and backends, as measured).

    >>> from diffkit.reporting.spec import load_spec
    >>> plan_of(load_spec({"figures": ["accuracy"], "functions": ["exp"]}), "accuracy")
    ['accuracy · exp']
    """
    return [label for label, _ in _units(fig, spec[fig], None)]  # type: ignore[arg-type]


def run_all(spec: dict[str, Any], run: Runner, progress: Progress | None
         ) -> dict[str, list[Record]]:
    from ..backends import symbolic  # noqa: F401  (imported once here, not in every cell)
    from ..bench import reference  # noqa: F401  (likewise)

    data: dict[str, list[Record]] = {}
    for fig in sections(spec):
        data[fig] = []
        for what, work in _units(fig, spec[fig], run):
            if progress:
                progress(what)
            data[fig] += work()
    return data


def run_on(cluster: Any, spec: dict[str, Any], run: Runner, progress: Progress | None,
           draw: Callable[[str, list[Record]], Any] | None = None,
           phases: Phases | None = None) -> dict[str, list[Record]]:
    """Measure every missing cell of the spec as a task on ``cluster``; the records are
    stored (by this process alone) as tasks finish. The sweeps are walked first with
    :attr:`Runner.plan` set, so the jobs are exactly the cells a serial run would measure.
    Returns the records per figure; ``draw(fig, rows)`` is called for each figure as soon
    as the jobs it waits for are done, so it can be drawn while other cells still run."""
    from ..bench.cluster import using

    run.plan = []
    planned = run_all(spec, run, None)
    jobs, run.plan = run.plan, None
    run.reload()  # the planned cells' stubs go
    waits = {fig: {r["job"] for r in rows if "job" in r} for fig, rows in planned.items()}
    number = {id(job): k for k, job in enumerate(jobs)}
    data: dict[str, list[Record]] = {}

    def ready() -> None:  # each figure whose jobs are all done: its records, and drawn
        for fig in sections(spec):
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
    if phases:
        phases.mark(f"planning ({len(jobs)} tasks)")
    if jobs:
        with using(cluster) as c:
            c.run(jobs, done, progress)
    if phases:
        phases.mark("cells")
    return {fig: data[fig] for fig in sections(spec)}
