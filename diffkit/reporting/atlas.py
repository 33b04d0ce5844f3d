"""The report's accuracy atlas: each elementwise function's error in ulps against mpmath,
per way of computing it (:mod:`diffkit.bench.atlas`), as a summary and a figure per function.

Each function of the ``[atlas]`` section (a primitive's name gives each of its slices, e.g.
``logaddexp(x, 0)``) is one cell: :func:`diffkit.bench.atlas.measure` at ``points`` points
for ``methods``, run isolated under ``timeout`` (without a memory limit: the peers' imports
map gigabytes of address space). Its one record holds the points ``x`` and, per method,
the summary of each quantity and the error at every point (``methods``), so the page is
rebuilt from ``results.jsonl`` alone. The page gets a summary table (functions × methods,
coloured by the larger of the value's and the first derivative's maximum), then per
function a figure (ulps against x, a panel per quantity, a line per method) and its table
(maximum and 99th percentile at the x of the maximum); the points where the exact result
is not a normal float are drawn apart and counted.

>>> load({"functions": ["sigmoid"]}, "spec")["points"]
400
>>> shade(0.5), shade(math.inf)
('#d9f0d3', '#e34a33')
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..bench import atlas as measured
from ..bench.cells import run_isolated
from ..core import DiffkitError
from ..views.tables import html_table, swatches
from .figures import DPI
from .plots import ShownFigure

Record = dict[str, Any]
TITLE = "Accuracy atlas: each rule's value and derivatives in ulps, per way of computing them"
EXPLAINS = (
    "The error of each function's value, first and second derivative against mpmath at 50 "
    "digits, in units in the last place (a correctly rounded result is within 0.5), over its "
    "whole domain: log-spaced magnitudes of both signs, a uniform working range and points "
    "approaching its zeros, poles and edges. diffkit's reverse and forward modes and fused "
    "kernels, central differences and the complex step (first derivative only), and JAX, "
    "PyTorch and autograd where installed, each with its own rules. A NaN or infinity where "
    "the exact result is a normal float counts as infinitely many ulps. Points where the exact "
    "result is not a normal float (0, subnormal, beyond the largest double, undefined) are "
    "left out of every maximum and percentile: the figures mark them in grey at the foot of "
    "each panel, and each function's count is stated under its figure.")
DEFAULTS: dict[str, Any] = {"functions": [], "points": 400, "methods": list(measured.METHODS),
                            "timeout": 600.0}
NAMES = {"value": "values", "d1": "first derivatives", "d2": "second derivatives"}
PANELS = {"value": "value", "d1": "first derivative", "d2": "second derivative"}
TARGET = {"value": 4.0, "d1": 4.0, "d2": 16.0}
FLOOR, CEIL = 1e-2, 1e20  # a figure's ulps axis: 0 drawn at FLOOR, inf and beyond at CEIL
#: colour of a summary cell by its largest error in ulps: (up to, background, meaning)
SHADES = ((1.0, "#d9f0d3", "≤ 1"), (4.0, "#a6dba0", "≤ 4 (the target)"),
          (16.0, "#fff2ae", "≤ 16"), (1e3, "#fdcc8a", "≤ 1000"),
          (1e10, "#fc8d59", "≤ 10¹⁰"), (math.inf, "#e34a33", "more, or a NaN"))


def load(section: Any, where: str) -> dict[str, Any]:
    """The ``[atlas]`` section with its defaults, checked (no functions: no atlas)."""
    if not isinstance(section, dict) or set(section) - set(DEFAULTS):
        raise DiffkitError(f"{where}: [atlas] takes functions, points, methods and timeout, "
                           "e.g. [atlas] functions = [\"sigmoid\", \"erfc\"]")
    s = {**DEFAULTS, **section}
    if not isinstance(s["functions"], list) or not all(isinstance(f, str) for f in s["functions"]):
        raise DiffkitError(f"{where}: [atlas] functions must be a list of names")
    try:
        measured.cases(s["functions"])
    except ValueError as exc:
        raise DiffkitError(f"{where}: [atlas] {exc}") from None
    if type(s["points"]) is not int or s["points"] < 10:
        raise DiffkitError(f"{where}: [atlas] points must be an integer of at least 10")
    if not isinstance(s["methods"], list) or not s["methods"]:
        raise DiffkitError(f"{where}: [atlas] methods must be a non-empty list of: "
                           f"{', '.join(measured.METHODS)}")
    bad = [m for m in s["methods"] if m not in measured.METHODS]
    if bad:
        raise DiffkitError(f"{where}: [atlas] unknown method {bad[0]!r}; methods: "
                           f"{', '.join(measured.METHODS)}")
    if not isinstance(s["timeout"], (int, float)) or s["timeout"] <= 0:
        raise DiffkitError(f"{where}: [atlas] timeout must be a positive number")
    s["timeout"] = float(s["timeout"])
    return s


def units(section: dict[str, Any]) -> Iterator[tuple[str, Callable[[], list[Record]]]]:
    """The atlas as cells, one a function (each slice of a binary primitive its own):
    (progress label, work returning its one record)."""
    for case in measured.cases(section["functions"]) if section["functions"] else ():
        yield f"atlas · {case.name}", lambda name=case.name: [_cell(name, section)]


def _cell(name: str, section: dict[str, Any]) -> Record:
    """One function measured in a child process: its points and every method's errors.
    (By name: a cluster ships the work by value, and a case's mpmath closures do not pickle.)"""
    def job() -> Record:
        case = measured.CASES[name]
        xs = measured.points(case, section["points"])
        return {"x": xs.tolist(),
                "methods": measured.measure(case, section["methods"], xs=xs, detail=True)}

    return {"function": name, **run_isolated(job, section["timeout"], None)}


def shade(ulps: float | None) -> str:
    """A summary cell's background for its largest error (grey: nothing measured).

    >>> shade(3.0) == SHADES[1][1], shade(None)
    (True, '#eeeeee')
    """
    if ulps is None:
        return "#eeeeee"
    return next(colour for top, colour, _ in SHADES if ulps <= top)


def _largest(method: Record) -> float | None:
    """The larger of a method's maximum errors of the value and the first derivative."""
    found = [method[q]["max"] for q in ("value", "d1") if method.get(q)]
    return max(found) if found else None


def _measured(rows: list[Record]) -> list[Record]:
    return [r for r in rows if r.get("status") == "ok"]


def summary(rows: list[Record]) -> str:
    """The summary table as HTML: a row per function, a column per method present; each
    cell the maximum ulps of value / first / second derivative (central differences and
    the complex step: the first), coloured by the larger of the first two."""
    present = [m for m in measured.SUMMARY_METHODS
               if any(x["key"] == m for r in _measured(rows) for x in r["methods"])]
    head = "".join(f"<th>{html.escape(measured.METHODS[m])}</th>" for m in present)
    body = []
    for r in _measured(rows):
        by = {x["key"]: x for x in r["methods"]}
        tds = []
        for m in present:
            x = by.get(m)
            if x is None or all(x[q] is None for q in measured.QUANTITIES):
                text, colour = ("n/a" if x is not None and x["note"] else "-"), shade(None)
            else:
                shown = ("d1",) if m in ("central", "complex") else measured.QUANTITIES
                text = " / ".join(measured.fmt_ulps(x[q]["max"]) if x[q] else "-"
                                  for q in shown)
                colour = shade(_largest(x))
            tds.append(f'<td style="background:{colour}">{html.escape(text)}</td>')
        link = f'<a href="#{anchor(r["function"])}">{html.escape(r["function"])}</a>'
        body.append(f"<tr><th>{link}</th>{''.join(tds)}</tr>")
    return (f'<table class="atlas"><thead><tr><th>function</th>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def legend() -> str:
    """The summary's colours, as HTML."""
    return "Colour: the larger of the value's and the first derivative's maximum, in ulps: " + \
        ", ".join(swatches(SHADES)) + "."


def anchor(name: str) -> str:
    """A function's page anchor and file stem.

    >>> anchor("logaddexp(x, 0)")
    'atlas-logaddexp-x-0'
    """
    return "atlas-" + re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")


#: each method's line: colour (tab10 without its grey, kept for the points left out), style
COLOURS = dict(zip(measured.METHODS, ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf")))
STYLE = {**{m: "-" for m in measured.DIFFKIT}, **{m: "--" for m in measured.PEERS},
         "central": ":", "complex": ":"}


def figure(record: Record) -> Figure:
    """One function's errors in ulps at each point, a panel per quantity, a line per
    method; its points left out in grey at the foot. The points (log-spaced magnitudes
    from 1e-300, a working range, clusters next to zeros and poles) span hundreds of
    decades, so the x axis takes them in increasing order, each as wide, labelled with
    their values."""
    fig = ShownFigure(figsize=(12.0, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3, sharex=True)
    xs = record["x"]
    at = sorted({round(k * (len(xs) - 1) / 6) for k in range(7)})
    for ax, q in zip(axes, measured.QUANTITIES):
        left_out = None
        for m in record["methods"]:
            errors = m.get("ulps", {}).get(q)
            if errors is None:
                continue
            pts = [(k, min(max(e, FLOOR), CEIL)) for k, e in enumerate(errors) if e is not None]
            if pts:
                ax.plot(*zip(*pts), STYLE.get(m["key"], "-"), lw=0.8, marker=".", ms=2.5,
                        color=COLOURS.get(m["key"]), label=m["method"],
                        zorder=3 if m["key"] in measured.DIFFKIT else 2)  # diffkit on top
            left_out = left_out or [k for k, e in enumerate(errors) if e is None]
        if left_out:
            ax.plot(left_out, [FLOOR / 3] * len(left_out), "|", color="0.55", ms=7,
                    label="left out: exact result not a normal float")
        ax.axhline(TARGET[q], color="0.3", lw=0.7, ls=(0, (4, 3)))
        ax.set(yscale="log", ylim=(FLOOR / 6, CEIL * 10), title=PANELS[q],
               xlabel="x (the points in increasing order)")
        ax.set_xticks(at, [f"{xs[k]:.2g}" for k in at], rotation=35, fontsize=8)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(f"ulps (0 drawn at {FLOOR:g}, ∞ at {CEIL:g}; dashed: target)",
                       fontsize=8)
    handles = {h.get_label(): h for ax in axes for h in ax.get_legend_handles_labels()[0]}
    fig.legend(list(handles.values()), list(handles), fontsize=8, loc="outside right upper")
    fig.suptitle(record["function"], fontsize=11, x=0.02, ha="left")
    return fig


def draw(rows: list[Record], out: Path) -> list[Path]:
    """Each measured function's figure as ``atlas-NAME.png`` in ``out``."""
    made = []
    for r in _measured(rows):
        png = out / f"{anchor(r['function'])}.png"
        fig = figure(r)
        fig.savefig(png, dpi=DPI, metadata={"Software": None})
        made.append(png)
    return made


def excluded(record: Record) -> str:
    """What was left out of one function's maxima, and why.

    >>> s = {"max": 1.0, "p99": 1.0, "x": 0.5, "n": 2, "excluded": 1}
    >>> excluded({"x": [0.0, 0.5, 1.0], "methods": [{"value": s, "d1": None, "d2": None}]})[-24:]
    'figure: 1 of the values.'
    """
    n = len(record["x"])
    counts = {}
    for m in record["methods"]:
        for q in measured.QUANTITIES:
            if m.get(q) is not None:
                counts.setdefault(q, m[q]["excluded"])
    left = [f"{k} of the {NAMES[q]}" for q, k in counts.items() if k]
    if not left:
        return f"{n} points; every one counted (each exact result is a normal float)."
    return (f"{n} points. Left out of the maxima and percentiles, where the exact result is "
            f"not a normal float (0, subnormal, beyond the largest double or undefined), and "
            f"marked in grey at the foot of the figure: {', '.join(left)}.")


def table(record: Record) -> str:
    """One function's table: per method, maximum / 99th percentile at the x of the maximum."""
    rows = measured.rows(record["methods"])
    return html_table(rows[0][1:], [row[1:] for row in rows[1:]])


def section(rows: list[Record], image: Callable[[Path], tuple[str, int]], folder: Path
            ) -> dict[str, Any] | None:
    """What the page shows of the atlas (``image(png)``: its data URL and width), if any."""
    if not rows:
        return None
    functions = []
    for r in rows:  # (a lost cell's record holds only its label)
        name = r.get("function") or r["cell"].split(" · ", 1)[-1]
        entry = {"name": name, "id": anchor(name)}
        if r.get("status") == "ok":
            src, width = image(folder / f"{entry['id']}.png")
            entry.update(image=src, width=width, table=table(r), excluded=excluded(r))
        else:
            entry["failed"] = f"{r.get('status')}: {r.get('message') or 'not measured'}"
        functions.append(entry)
    return {"title": TITLE, "explains": EXPLAINS, "summary": summary(rows), "legend": legend(),
            "functions": functions}
