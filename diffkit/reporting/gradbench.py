"""The report's GradBench section: GradBench's evals × methods, as gradben.ch summarises them.

Each eval of the ``[gradbench]`` section (:mod:`diffkit.gradbench.workloads`) is measured
at its ``sizes`` smallest GradBench sizes by each of ``backends`` (diffkit's five and the
installed peers by default), every size through :func:`diffkit.bench.harness.compare`:
the gradient's status, its error against the eval's hand-derived gradient, time per call,
setup and peak memory, under the section's limits (``[limits]``'s by default). A cell is
one eval and method, all its sizes in increasing order; after a timeout or running out of
memory the larger sizes are ``skipped``. The page shows a table, evals × methods at each
eval's largest size, every cell coloured by its time relative to the fastest valid method
on that eval (valid: status ``ok``, the error within what the method promises), the
others marked with their status; then per eval a figure of time against size, a line
per method, and its rows. ``python -m diffkit.reporting.gradbench RESULTS`` prints the
table as Markdown from a report's ``results.jsonl``.

>>> load({"functions": ["det"], "backends": ["reverse"]}, "spec", {"timeout": 5.0,
...      "memory_mb": 512.0, "repeat": 1})["sizes"]
2
>>> rows = [{"function": "det", "backend": b, "size": "5", "status": "ok", "time_s": t}
...         for b, t in (("forward", 2e-3), ("reverse", 1e-3))]
>>> [(c["text"], c["colour"]) for c in summary_cells(rows)["det"].values()]
[('2 ms (2×)', '#a6d96a'), ('1 ms (fastest)', '#66bd63')]
"""

from __future__ import annotations

import argparse
import html
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..backends import as_backend, label
from ..backends.peers import PEERS, installed
from ..bench.harness import compare, fmt_bytes, fmt_error, fmt_seconds, read_results
from ..core import DiffkitError
from ..gradbench.workloads import workload
from ..views.tables import html_table, swatches
from .figures import DPI
from .plots import ShownFigure, _legend

Record = dict[str, Any]
TITLE = "GradBench's evals: each method's gradient, timed and checked"
EXPLAINS = (
    "GradBench's evals (gradben.ch) written once with diffkit.numpy, at GradBench's inputs "
    "for its smallest sizes: the gradient of each eval's objective by every method, its "
    "error against the eval's gradient derived by hand in plain numpy, and its time per "
    "call (median after a warm-up; setup such as compiling apart). The table shows each "
    "eval at its largest size measured, each cell coloured by its time relative to the "
    "fastest valid method on that eval (valid: status ok, the error within what the method "
    "promises); other cells show their status. JAX and PyTorch are timed up to the numpy "
    "result, so their asynchronous dispatch is waited for (GradBench's own JAX tool times "
    "jit(f)(x) without block_until_ready). A method that ran out of time or memory at a "
    "size is skipped at the larger ones.")
DIFFKIT = ["symbolic", "numeric", "forward", "reverse", "compiled"]
PEER_WAYS = {"jax": ["jax", "jax[jit=true]"], "torch": ["torch"], "autograd": ["autograd"]}
DEFAULTS: dict[str, Any] = {"functions": [], "sizes": 2, "backends": None, "timeout": None,
                            "memory_mb": None, "repeat": None}
KEPT = ("function", "backend", "size", "status", "message", "error", "time_s", "setup_s",
        "peak_bytes", "cost_ratio", "tolerance")
COLUMNS = ("method", "size", "status", "error", "per call", "setup", "peak mem", "message")
#: colour of a table cell by its time over the eval's fastest valid one: (up to, colour, meaning)
SHADES = ((1.0, "#66bd63", "fastest"), (2.0, "#a6d96a", "≤ 2×"), (5.0, "#d9ef8b", "≤ 5×"),
          (20.0, "#fee08b", "≤ 20×"), (100.0, "#fdae61", "≤ 100×"),
          (math.inf, "#f46d43", "more"))
INVALID = "#e0e0e0"


def default_backends() -> list[str]:
    """diffkit's five backends, then each installed peer in its own idioms (JAX eager and
    jitted, PyTorch, autograd)."""
    return DIFFKIT + [way for peer, ways in PEER_WAYS.items() if installed(PEERS[peer][0])
                      for way in ways]


def load(section: Any, where: str, limits: dict[str, Any]) -> dict[str, Any]:
    """The ``[gradbench]`` section with its defaults (the limits from ``limits``), checked
    (no functions: no section)."""
    if not isinstance(section, dict) or set(section) - set(DEFAULTS):
        raise DiffkitError(f"{where}: [gradbench] takes {', '.join(DEFAULTS)}, e.g. "
                           "[gradbench] functions = [\"gmm\", \"lse\"]")
    s = {**DEFAULTS, **{k: v for k, v in limits.items() if k in DEFAULTS}, **section}
    if not isinstance(s["functions"], list) or not all(isinstance(f, str) for f in s["functions"]):
        raise DiffkitError(f"{where}: [gradbench] functions must be a list of GradBench evals")
    for name in s["functions"]:
        workload(name)  # an unknown eval: one line naming the evals
    if type(s["sizes"]) is not int or s["sizes"] < 1:
        raise DiffkitError(f"{where}: [gradbench] sizes (how many of each eval's smallest "
                           "sizes) must be a positive integer")
    backends = default_backends() if s["backends"] is None else s["backends"]
    if not isinstance(backends, list) or not backends or not all(
            isinstance(b, str) for b in backends):
        raise DiffkitError(f"{where}: [gradbench] backends must be a list of backend names")
    s["backends"] = [label(as_backend(b)) for b in backends]
    for key in ("timeout", "memory_mb"):
        if not isinstance(s[key], (int, float)) or s[key] <= 0:
            raise DiffkitError(f"{where}: [gradbench] {key} must be a positive number")
        s[key] = float(s[key])
    if type(s["repeat"]) is not int or s["repeat"] < 1:
        raise DiffkitError(f"{where}: [gradbench] repeat must be a positive integer")
    return s


def sizes(name: str, count: int) -> list[str]:
    """Eval ``name``'s ``count`` smallest sizes (GradBench sends them smallest first).

    >>> sizes("gmm", 2)
    ['2_5_1000', '2_10_1000']
    """
    return list(workload(name).eval.sizes[:count])


def units(section: dict[str, Any]) -> Iterator[tuple[str, Callable[[], list[Record]]]]:
    """The section as cells, one an eval and method: (progress label, work returning the
    method's rows at each size). The report's runner stores them like the other figures'."""
    for name in section["functions"]:
        for b in section["backends"]:
            yield f"gradbench · {name} · {b}", lambda name=name, b=b: measure(name, b, section)


def measure(name: str, backend: str, section: dict[str, Any]) -> list[Record]:
    """``backend`` on eval ``name`` at each of its sizes, smallest first, each size a
    :func:`~diffkit.bench.harness.compare` cell; the sizes after a timeout or oom skipped."""
    out: list[Record] = []
    stopped = ""
    for size in sizes(name, section["sizes"]):
        if stopped:
            out.append({"function": name, "backend": backend, "size": size,
                        "status": "skipped", "message": stopped})
            continue
        row = compare(name, backends=[backend], size=size, timeout=section["timeout"],
                      memory_mb=section["memory_mb"], repeat=section["repeat"]).rows[0]
        out.append({k: row.get(k) for k in KEPT})
        if row["status"] in ("timeout", "oom"):
            stopped = f"{row['status']} at {size}"
    return out


def _measured(rows: list[Record]) -> list[Record]:
    return [r for r in rows if "backend" in r]  # (a lost cell's record holds only its label)


def shade(ratio: float) -> str:
    """A valid cell's colour for its time over the fastest valid one's.

    >>> shade(1.0), shade(3.0), shade(1e6)
    ('#66bd63', '#d9ef8b', '#f46d43')
    """
    return next(colour for top, colour, _ in SHADES if ratio <= top * (1 + 1e-9))


def summary_cells(rows: list[Record]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per eval, per method: the table's cell at the eval's largest size measured (its
    ``text``, ``colour``, ``size``, ``valid``, ``ratio`` and the row's ``message``)."""
    rows = _measured(rows)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in dict.fromkeys(r["function"] for r in rows):
        mine = [r for r in rows if r["function"] == name]
        order = workload(name).eval.sizes
        size = max((r["size"] for r in mine), key=order.index)
        at = {r["backend"]: r for r in mine if r["size"] == size}
        times = [r["time_s"] for r in at.values() if r["status"] == "ok" and r.get("time_s")]
        best = min(times) if times else None
        out[name] = {}
        for b, r in at.items():
            valid = r["status"] == "ok" and bool(r.get("time_s"))
            cell = {"size": size, "valid": valid, "message": r.get("message") or "",
                    "ratio": r["time_s"] / best if valid else None}
            if valid:
                ratio = cell["ratio"]
                cell["text"] = (f"{fmt_seconds(r['time_s'])} "
                                f"({'fastest' if ratio <= 1 + 1e-9 else ratio_text(ratio)})")
                cell["colour"] = shade(ratio)
            else:  # (a skipped cell: where its method stopped)
                timed = f" ({fmt_seconds(r['time_s'])})" if r.get("time_s") else ""
                what = cell["message"] if r["status"] == "skipped" else r["status"]
                cell["text"], cell["colour"] = f"{what}{timed}", INVALID
            out[name][b] = cell
    return out


def ratio_text(ratio: float) -> str:
    """A ratio to the fastest, as the table shows it.

    >>> ratio_text(2.345), ratio_text(3204.4)
    ('2.3×', '3,204×')
    """
    return f"{ratio:.2g}×" if ratio < 10 else f"{ratio:,.0f}×"


def methods(rows: list[Record]) -> list[str]:
    """The methods of the rows: diffkit's five, then the peers, then any other, as seen.

    >>> methods([{"backend": b} for b in ("torch", "numeric[method=complex]", "reverse")])
    ['reverse', 'torch', 'numeric[method=complex]']
    """
    known = DIFFKIT + [way for ways in PEER_WAYS.values() for way in ways]
    seen = list(dict.fromkeys(r["backend"] for r in _measured(rows)))
    return sorted(seen, key=lambda m: (known.index(m) if m in known else len(known),
                                       seen.index(m)))


def summary(rows: list[Record]) -> str:
    """The evals × methods table as HTML (every text escaped; a failed cell's message as
    its tooltip)."""
    cells, shown = summary_cells(rows), methods(rows)
    head = "".join(f"<th>{html.escape(m)}</th>" for m in shown)
    body = []
    for name, by in cells.items():
        tds = []
        for m in shown:
            c = by.get(m, {"text": "—", "colour": INVALID, "message": ""})
            tip = f' title="{html.escape(c["message"])}"' if c["message"] else ""
            mark = "" if c.get("valid") else ' class="invalid"'
            tds.append(f'<td style="background:{c["colour"]}"{tip}{mark}>'
                       f'{html.escape(c["text"])}</td>')
        size = next(iter(by.values()))["size"] if by else ""
        link = f'<a href="#{anchor(name)}">{html.escape(name)}</a> {html.escape(size)}'
        body.append(f"<tr><th>{link}</th>{''.join(tds)}</tr>")
    return (f'<table class="gradbench"><thead><tr><th>eval (size)</th>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def legend() -> str:
    """The table's colours, as HTML."""
    return ("Colour: time per gradient over the fastest valid method's on the same eval: "
            + ", ".join(swatches(SHADES)) + "; "
            + swatches([(None, INVALID, "not valid: its status (hover for why)")])[0] + ".")


def markdown(rows: list[Record]) -> str:
    """The evals × methods table as Markdown (the fastest valid method in bold).

    >>> print(markdown([{"function": "det", "backend": "reverse", "size": "5",
    ...                  "status": "ok", "time_s": 1e-3}]))
    | eval | size | reverse |
    |---|---|---|
    | det | 5 | **1 ms** |
    """
    cells, shown = summary_cells(rows), methods(rows)
    lines = ["| eval | size | " + " | ".join(shown) + " |", "|---" * (len(shown) + 2) + "|"]
    for name, by in cells.items():
        texts = []
        for m in shown:
            c = by.get(m)
            if c is None:
                texts.append("—")
            elif c["valid"]:
                t = c["text"].split(" (")[0]
                texts.append(f"**{t}**" if c["ratio"] <= 1 + 1e-9 else c["text"])
            else:
                texts.append(c["text"].split(" (")[0])
        size = next(iter(by.values()))["size"]
        lines.append(f"| {name} | {size} | " + " | ".join(texts) + " |")
    return "\n".join(lines)


def anchor(name: str) -> str:
    """An eval's page anchor and figure stem: ``gmm`` -> ``gradbench-gmm``."""
    return "gradbench-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def figure(name: str, rows: list[Record]) -> Figure:
    """Eval ``name``'s time per gradient against its sizes (GradBench's names, smallest
    first), a line per method through its valid points; its other sizes' statuses in its
    legend entry."""
    mine = [r for r in _measured(rows) if r["function"] == name]
    order = workload(name).eval.sizes
    shown = sorted({r["size"] for r in mine}, key=order.index)
    fig = ShownFigure(figsize=(9.6, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for m in methods(mine):
        pts = sorted((shown.index(r["size"]), r["time_s"]) for r in mine
                     if r["backend"] == m and r["status"] == "ok" and r.get("time_s"))
        failed = [f"{r['size']}: {r['status']}" for r in mine
                  if r["backend"] == m and r["status"] != "ok"]
        ax.plot(*(zip(*pts) if pts else ([], [])), marker="o", ms=4,
                label=m + (f" ({', '.join(failed)})" if failed else ""),
                ls="-" if m.split("[")[0] in DIFFKIT else "--")
    ax.set_xticks(range(len(shown)), shown)
    ax.set_xlim(-0.3, max(len(shown) - 0.7, 0.3))
    ax.set(yscale="log", xlabel=f"{name}: GradBench's size", ylabel="seconds per gradient")
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{name}: time per gradient (valid cells; dashed: peers)", fontsize=10,
                 loc="left")
    _legend(ax, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def draw(rows: list[Record], out: Path) -> list[Path]:
    """Each eval's figure as ``gradbench-NAME.png`` in ``out``."""
    made = []
    for name in dict.fromkeys(r["function"] for r in _measured(rows)):
        png = out / f"{anchor(name)}.png"
        figure(name, rows).savefig(png, dpi=DPI, metadata={"Software": None})
        made.append(png)
    return made


def table(name: str, rows: list[Record]) -> str:
    """Eval ``name``'s rows: each method at each size."""
    mine = [r for r in _measured(rows) if r["function"] == name]
    return html_table(COLUMNS, [
        [r["backend"], r["size"], r["status"], fmt_error(r.get("error")),
         fmt_seconds(r.get("time_s")), fmt_seconds(r.get("setup_s") or None),  # (0: none)
         fmt_bytes(r.get("peak_bytes")), r.get("message") or ""] for r in mine],
        ["" if r["status"] == "ok" else "failed" for r in mine])


def section(rows: list[Record], image: Callable[[Path], tuple[str, int]], folder: Path
            ) -> dict[str, Any] | None:
    """What the page shows of the section (``image(png)``: its data URL and width), if any."""
    if not rows:
        return None
    evals = []
    for name in dict.fromkeys(r["function"] for r in _measured(rows)):
        src, width = image(folder / f"{anchor(name)}.png")
        evals.append({"name": name, "id": anchor(name), "image": src, "width": width,
                      "table": table(name, rows)})
    return {"title": TITLE, "explains": EXPLAINS, "summary": summary(rows), "legend": legend(),
            "evals": evals}


def main(argv: list[str] | None = None) -> None:
    """Print the Markdown table of a report's ``results.jsonl``."""
    parser = argparse.ArgumentParser(prog="python -m diffkit.reporting.gradbench",
                                     description="the GradBench table of a report's results")
    parser.add_argument("results", type=Path, help="a report's results.jsonl")
    path = parser.parse_args(argv).results
    rows = [r for r in read_results(path) if r.get("figure") == "gradbench"]
    if not rows:
        parser.exit(2, f"{path}: no GradBench rows (run: diffkit report "
                       "reports/gradbench.toml -o DIR)\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
