"""The standard report figures, each a function of plain records returning a Figure.

Every function takes the records the harness writes (``compare(...).records()``, the
rows of :func:`diffkit.bench.sweeps.step_errors` / :func:`~diffkit.bench.sweeps.swell`, or the lines
of a report's ``results.jsonl``) and returns a :class:`matplotlib.figure.Figure` drawn on
an Agg canvas: nothing here touches ``pyplot``, so no display is ever needed and a
notebook's own backend is left alone; in Jupyter a figure shows itself as a PNG
(``_repr_png_``), with or without ``%matplotlib inline``. A failed cell (status ``timeout``, ``oom``,
``error``, ``n/a``) is drawn as a hatched, labelled cell or an ``x`` with its status.

>>> import diffkit as dk
>>> from diffkit.reporting.plots import accuracy_figure
>>> rows = dk.compare("exp", backends=["forward", "numeric"], repeat=1).records()
>>> fig = accuracy_figure(rows)
>>> fig.savefig("accuracy.png")  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import blended_transform_factory

from ..backends import parse_spec

Record = dict[str, Any]
EPS = float(np.finfo(float).eps)
MB = 2.0**20
FLOOR = 1e-17  # an error of exactly 0 is drawn here (log scales have no 0)
BASE_COLORS = {"symbolic": "#4c72b0", "numeric": "#dd8452", "forward": "#55a868",
               "reverse": "#c44e52", "compiled": "#8172b3"}
SPARE_COLORS = ("#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")
METHOD_ORDER = {"forward": 1, "backward": 1, "central": 2, "complex": 2}
HATCH = {"facecolor": "#eeeeee", "edgecolor": "#999999", "hatch": "///", "linewidth": 0.5}
LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.0}


TITLE = 12  # points: readable on a slide at 150 dpi
LEGEND = 9
NOTE = 8


class ShownFigure(Figure):
    """A figure that shows itself in Jupyter (as PNG), with no ``%matplotlib inline``."""

    def _repr_png_(self) -> bytes:
        import io

        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=110)
        return buf.getvalue()


MIN_WIDTH = 6.4  # inches: 960 pixels at the reports' 150 dpi, a slide's width


def _figure(width: float = 6.4, height: float = 4.2, ncols: int = 1) -> tuple[Figure, list]:
    fig = ShownFigure(figsize=(max(width, MIN_WIDTH), height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def words(name: str) -> str:
    """A catalog name in words for a title: its description's head when short, else the
    name with spaces.

    >>> words("sin_large"), words("logistic_map")
    ('sin(x) at x = 10', 'Logistic map')
    """
    from ..bench import catalog

    if name in catalog.names():
        head = catalog.get(name).description.split(":")[0].strip()
        if len(head) <= 24:
            return head
    return name.replace("_", " ").capitalize()


def colors(labels: Iterable[str]) -> dict[str, str]:
    """A stable colour per backend label: its base backend's colour, spares for variants.

    >>> colors(["reverse", "numeric[method=richardson]", "numeric"])["numeric"]
    '#8172b3'
    """
    out: dict[str, str] = {}
    spare = iter(SPARE_COLORS * 4)
    for label in dict.fromkeys(labels):
        base = BASE_COLORS.get(parse_spec(label)[0])
        out[label] = base if base and base not in out.values() else next(spare)
    return out


def ok(r: Record) -> bool:
    return r.get("status", "ok") == "ok"


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _order(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def _failed_mark(ax: Any, x: float, status: str, color: str) -> None:
    """An ``x`` at the top of the axes above ``x`` (data), labelled with the status."""
    tr = blended_transform_factory(ax.transData, ax.transAxes)
    ax.plot([x], [0.97], marker="x", color=color, transform=tr, clip_on=False, ls="none")
    ax.text(x, 0.93, status, transform=tr, color=color, fontsize=NOTE, rotation=90,
            ha="center", va="top", bbox=LABEL_BOX)


def _hatched_cell(ax: Any, x: float, y: float, text: str) -> None:
    ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, **HATCH))
    ax.text(x, y, text, ha="center", va="center", fontsize=NOTE, color="#333333", bbox=LABEL_BOX)


def _note_empty(ax: Any, text: str) -> None:
    ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, **HATCH))
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=9,
            wrap=True, bbox=LABEL_BOX)


def _log_scales(ax: Any, x: bool = True, base: float = 10) -> None:
    """Log axes; an axes with no data to scale gets fixed limits (log needs values > 0)."""
    lim = ax.dataLim
    if not (np.isfinite([lim.y0, lim.y1]).all() and lim.y0 > 0):
        ax.set_ylim(1e-6, 1.0)
    if x and not (np.isfinite([lim.x0, lim.x1]).all() and lim.x0 > 0):
        ax.set_xlim(1, 10)
    ax.set_yscale("log")
    if x:
        ax.set_xscale("log", base=base)


def _legend(ax: Any, **kw: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)


def _text_color(rgba: Sequence[float]) -> str:
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


# ------------------------------------------------------------------ 1. error vs step


def step_error_figure(rows: Sequence[Record], references: Sequence[Record] = ()) -> Figure:
    """Finite-difference error vs step, one panel per function (the "V").

    ``rows``: :func:`diffkit.bench.sweeps.step_errors` records (``function, method, step,
    error, auto``); ``references``: compare records of the same functions, drawn as
    horizontal lines (AD and symbolic errors). Dashed grey lines are the truncation
    error ∝ hᵖ of each method's order p (anchored at its largest step), the dotted line
    the round-off error ∝ ε/h; stars mark the automatically chosen steps.

    >>> from diffkit.bench.sweeps import step_errors
    >>> from diffkit.bench.targets import find_target
    >>> fig = step_error_figure(step_errors(find_target("exp")))
    """
    functions = _order(r["function"] for r in rows) or ["(no data)"]
    fig, axes = _figure(5.2 * len(functions) + 1.6, 4.2, len(functions))
    for ax, fn in zip(axes, functions):
        mine = [r for r in rows if r.get("function") == fn]
        ax.set_title(f"{words(fn)}: finite-difference error vs step", fontsize=TITLE)
        if not any(_num(r.get("error")) is not None for r in mine):
            why = next((r for r in mine if not ok(r)), None)
            _note_empty(ax, f"{why.get('status')}: {why.get('message') or ''}" if why
                        else "no data")
            continue
        _draw_steps(ax, mine, [r for r in references if r.get("function") == fn])
    return fig


def _draw_steps(ax: Any, rows: Sequence[Record], refs: Sequence[Record]) -> None:
    methods = _order(r["method"] for r in rows)
    cmap = dict(zip(methods, ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")))
    all_h = [r["step"] for r in rows if _num(r.get("step"))]
    h = np.logspace(np.log10(min(all_h)), np.log10(max(all_h)), 50) if all_h else None
    drawn_orders: set[int] = set()
    for m in methods:
        pts = sorted((r["step"], max(r["error"], FLOOR)) for r in rows
                     if r["method"] == m and not r.get("auto") and _num(r.get("error")) is not None
                     and _num(r.get("step")))
        auto = [r for r in rows if r["method"] == m and r.get("auto") and
                _num(r.get("error")) is not None]
        if not pts:
            why = next((r for r in rows if r["method"] == m), {})
            ax.plot([], [], " ", label=f"{m}: {why.get('status', 'n/a')}")
            continue
        ax.plot(*zip(*pts), marker="o", ms=3, lw=1.2, color=cmap[m], label=m,
                ls="--" if m == "backward" else "-")
        for r in auto:
            ax.plot(r["step"], max(r["error"], FLOOR), marker="*", ms=12, color=cmap[m],
                    mec="black", mew=0.6, ls="none", zorder=5)
        p = METHOD_ORDER.get(m)
        if p and p not in drawn_orders and h is not None:
            drawn_orders.add(p)
            h0, e0 = pts[-1]
            line = e0 * (h / h0) ** p
            keep = line >= FLOOR
            ax.plot(h[keep], line[keep], ls="--", color="grey", lw=0.9,
                    label="truncation ∝ $h^p$" if not drawn_orders - {p} else None)
            if keep.any():
                mid = np.flatnonzero(keep)[keep.sum() // 2]
                ax.annotate(f"$h^{p}$", (h[mid], line[mid]), fontsize=NOTE + 1,
                            color="grey", textcoords="offset points", xytext=(4, -12))
    if h is not None:
        ax.plot(h, EPS / h, ls=":", color="black", lw=0.9, label=r"round-off ∝ $\varepsilon/h$")
    ax.plot([], [], marker="*", ms=10, color="white", mec="black", ls="none",
            label="automatic step")
    _reference_lines(ax, [r for r in refs if not r.get("backend", "").startswith("numeric")])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(FLOOR / 3, 10.0)
    ax.set_xlabel("step h (log scale)")
    ax.set_ylabel("relative error of the derivative")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, fontsize=LEGEND, loc="center left", bbox_to_anchor=(1.01, 0.5))


def _reference_lines(ax: Any, refs: Sequence[Record]) -> None:
    """The symbolic and AD errors as horizontal lines, annotated on the plot: backends
    with the same error share one line (three "exact" lines would overlap)."""
    same: dict[float, list[str]] = {}
    for r in refs:
        b = r.get("backend", "")
        name = f"{b} AD" if b in ("forward", "reverse") else b
        err = _num(r.get("error"))
        if ok(r) and err is not None:
            same.setdefault(max(err, FLOOR), []).append(name)
        else:
            ax.plot([], [], " ", label=f"{name}: {r.get('status')}")
    for y, names in same.items():
        ax.axhline(y, color="#555555", ls="-.", lw=1.0)
        what = "exact (error 0)" if y == FLOOR else f"error {y:.0e}"
        ax.annotate(f"{', '.join(names)}: {what}", (0.02, y), xycoords=("axes fraction", "data"),
                    textcoords="offset points", xytext=(0, 3), fontsize=NOTE, color="#333333")


# ------------------------------------------------------------------ 2. swell vs depth


def swell_figure(rows: Sequence[Record]) -> Figure:
    """Derivative size vs depth, one panel per function, log scale: the symbolic
    derivative as a tree and as a DAG after CSE, against the reverse tape, the
    forward trace (primitives recorded) and the compiled derivative graph (equations).

    >>> from diffkit.bench.sweeps import swell
    >>> rows = [dict(r, function="logistic_map") for r in swell("logistic_map", [1, 2, 3])]
    >>> fig = swell_figure(rows)
    """
    functions = _order(r.get("function", "") for r in rows) or ["(no data)"]
    fig, axes = _figure(4.6 * len(functions) + 0.6, 4.0, len(functions))
    for ax, fn in zip(axes, functions):
        mine = [r for r in rows if r.get("function", "") == fn]
        tapes = [sorted((r["depth"], r["tape_ops"]) for r in mine
                        if r.get("backend") == b and ok(r) and r.get("tape_ops"))
                 for b in ("reverse", "forward")]
        ad = ((("reverse", "tape_ops", "AD: reverse tape = forward trace", "-", "^"),)
              if tapes[0] == tapes[1] else  # one line: the same numbers, not one hidden
              (("reverse", "tape_ops", "reverse tape", "-", "^"),
               ("forward", "tape_ops", "forward trace", ":", "v")))
        series = (("symbolic", "expr_nodes", "symbolic tree", "-", "o"),
                  ("symbolic", "expr_dag_nodes", "symbolic DAG (after CSE)", "--", "s"), *ad,
                  ("compiled", "graph_eqns", "compiled derivative graph", "-.", "D"))
        for backend, key, label, ls, marker in series:
            pts = sorted((r["depth"], r[key]) for r in mine
                         if r.get("backend") == backend and ok(r) and r.get(key))
            if pts:
                ax.plot(*zip(*pts), ls=ls, marker=marker, ms=4, label=label,
                        color=BASE_COLORS[backend])
        for r in mine:
            if not ok(r):
                _failed_mark(ax, r["depth"], f"{r.get('backend')}: {r.get('status')}",
                             BASE_COLORS.get(r.get("backend", ""), "black"))
        _log_scales(ax, x=False)
        ax.set_xlabel("depth (times the function is composed)")
        ax.set_ylabel("size: expression nodes or operations (log)")
        ax.set_title(f"{words(fn)}: size of the derivative vs depth", fontsize=TITLE)
        ax.grid(True, alpha=0.3)
        _legend(ax, fontsize=LEGEND)
    return fig


# ------------------------------------------------------------------ 3. time vs n


def fitted_slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Least-squares slope of log y against log x (None below two points).

    >>> round(fitted_slope([1, 10, 100], [2, 20, 200]), 6)
    1.0
    """
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len({p[0] for p in pts}) < 2:
        return None
    return float(np.polyfit(*zip(*pts), 1)[0])


def scaling_figure(rows: Sequence[Record]) -> Figure:
    """Against input dimension n per backend (log-log): the time of one gradient (left)
    and the cost ratio time(gradient) / time(f) (right), slopes fitted to the three
    largest sizes in the legends. At small n fixed per-call overheads hide the
    theory in the times; the ratio divides f's own cost out and shows it: finite
    differences and forward mode grow like n (slope 1), reverse mode stays flat
    (slope 0, the cheap-gradient principle).

    >>> import diffkit as dk
    >>> rows = [r for n in (4, 16) for r in dk.compare("rosenbrock", n=n,
    ...         backends=["reverse"], repeat=1).records()]
    >>> fig = scaling_figure(rows)
    """
    fig, (ax, ratio_ax) = _figure(12.0, 4.6, 2)
    labels = _order(r["backend"] for r in rows)
    bc = colors(labels)
    for axis, key in ((ax, "time_s"), (ratio_ax, "cost_ratio")):
        for b in labels:
            mine = sorted((r for r in rows if r["backend"] == b), key=lambda r: r.get("n") or 0)
            pts = [(r["n"], r[key]) for r in mine if ok(r) and _num(r.get(key))]
            if pts:
                s = fitted_slope(*zip(*pts[-3:]))
                axis.plot(*zip(*pts), marker="o", ms=4, color=bc[b],
                          label=f"{b} (slope {s:.2f})" if s is not None else b)
            for r in mine:
                if not ok(r):
                    _failed_mark(axis, r["n"], r.get("status", "?"), bc[b])
    f_pts = sorted({r["n"]: r["f_time_s"] for r in rows if ok(r) and _num(r.get("f_time_s"))
                    and r.get("n")}.items())
    if f_pts:
        s = fitted_slope(*zip(*f_pts[-3:]))
        ax.plot(*zip(*f_pts), ls="--", color="grey", marker=".",
                label=f"f itself (slope {s:.2f})" if s is not None else "f itself")
    ns = sorted({r["n"] for r in rows if r.get("n")})
    if len(ns) > 1:
        for power, text in ((1, "∝ n"), (0, "∝ 1")):
            ratio_ax.plot(ns, [2.0 * (n / ns[0]) ** power for n in ns], ls=":", color="grey",
                          lw=1)
            ratio_ax.annotate(text, (ns[-1], 2.0 * (ns[-1] / ns[0]) ** power), fontsize=NOTE,
                              color="grey", textcoords="offset points", xytext=(3, 0))
    fn = ", ".join(words(f) for f in _order(r["function"] for r in rows))
    ax.set_title(f"{fn}: time of one gradient vs n", fontsize=TITLE)
    ratio_ax.set_title(f"{fn}: cost ratio vs n", fontsize=TITLE)
    for axis in (ax, ratio_ax):
        _log_scales(axis)
        axis.set_xlabel("input dimension n (log scale)")
        axis.grid(True, which="major", alpha=0.3)
    ax.set_ylabel("time per gradient (seconds, log scale)")
    ratio_ax.set_ylabel("time(gradient) / time(f) (log scale)")
    _legend(ax, fontsize=LEGEND, title="time ∝ n^slope", title_fontsize=LEGEND)
    _legend(ratio_ax, fontsize=LEGEND, title="ratio ∝ n^slope", title_fontsize=LEGEND)
    return fig


# ------------------------------------------------------------------ 4. cost ratio


def cost_figure(rows: Sequence[Record], bound: float = 4.0) -> Figure:
    """time(derivative) / time(f) per function (groups) and backend (bars), log scale,
    against the cheap-gradient bound (a horizontal line).

    >>> import diffkit as dk
    >>> fig = cost_figure(dk.compare("exp", backends=["forward"], repeat=1).records())
    """
    functions = _order(_fname(r) for r in rows)
    labels = _order(r["backend"] for r in rows)
    bc = colors(labels)
    fig, (ax,) = _figure(max(6.4, 1.0 * len(functions) + 3.2), 4.2)
    width = 0.8 / max(len(labels), 1)
    ratios = [v for r in rows if ok(r) and (v := _num(r.get("cost_ratio"))) and v > 0]
    top = max(ratios + [bound * 2])
    by = {(_fname(r), r["backend"]): r for r in rows}
    for j, b in enumerate(labels):
        for i, fn in enumerate(functions):
            r = by.get((fn, b))
            x = i - 0.4 + width * (j + 0.5)
            v = _num(r.get("cost_ratio")) if r else None
            if r and ok(r) and v:
                ax.bar(x, v, width, color=bc[b], label=b if i == 0 else None)
            elif r:  # no bar (its height would mean nothing): the status at the baseline
                ax.text(x, 0.02, r.get("status", "?"), rotation=90, ha="center", va="bottom",
                        fontsize=NOTE, color=bc[b], bbox=LABEL_BOX,
                        transform=blended_transform_factory(ax.transData, ax.transAxes))
    for b in labels:  # a legend entry even for a backend with no successful bar
        if not any(ok(r) and r["backend"] == b and _num(r.get("cost_ratio")) for r in rows):
            ax.bar([0], [0], 0, color=bc[b], label=b)
    ax.axhline(bound, color="black", ls="--", lw=1, label=f"cheap-gradient bound ({bound:g})")
    ax.set_yscale("log")
    ax.set_ylim(bottom=min(ratios + [1.0]) / 2, top=top * 1.5)
    ax.set_xticks(range(len(functions)), functions, rotation=30, ha="right", fontsize=9)
    ax.set_ylabel("cost ratio: time(derivative) / time(f)")
    ax.set_title("What a derivative costs, in evaluations of f", fontsize=TITLE)
    ax.grid(True, axis="y", alpha=0.3)
    _legend(ax, fontsize=LEGEND, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _fname(r: Record) -> str:
    return f"{r['function']} (n={r['n']})" if r.get("n") else str(r["function"])


# ------------------------------------------------------------------ 5. forward vs reverse


def jacobian_figure(rows: Sequence[Record]) -> Figure:
    """Heatmap over inputs n (columns) and outputs m (rows) of
    log10(time forward / time reverse) for a Jacobian: > 0 (blue) reverse wins, < 0
    (red) forward wins. Records need ``n``, ``m`` and ``time_s``.

    >>> rows = [{"n": 4, "m": 1, "backend": "forward", "time_s": 2e-4, "status": "ok"},
    ...         {"n": 4, "m": 1, "backend": "reverse", "time_s": 1e-4, "status": "ok"}]
    >>> fig = jacobian_figure(rows)
    """
    ns = sorted({r["n"] for r in rows})
    ms = sorted({r["m"] for r in rows})
    cell = {(r["m"], r["n"], parse_spec(r["backend"])[0]): r for r in rows}
    grid = np.full((len(ms), len(ns)), np.nan)
    for i, m in enumerate(ms):
        for j, n in enumerate(ns):
            f, r = cell.get((m, n, "forward")), cell.get((m, n, "reverse"))
            if f and r and ok(f) and ok(r) and _num(f.get("time_s")) and _num(r.get("time_s")):
                grid[i, j] = math.log10(f["time_s"] / r["time_s"])
    fig, (ax,) = _figure(5.6, 4.4)
    lim = max(float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0, 0.3)
    im = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu", vmin=-lim, vmax=lim,
                   origin="lower", aspect="auto")
    for i, m in enumerate(ms):
        for j, n in enumerate(ns):
            if np.isfinite(grid[i, j]):
                ratio = 10 ** grid[i, j]
                text = f"rev ×{ratio:.2g}" if ratio >= 1 else f"fwd ×{1 / ratio:.2g}"
                ax.text(j, i, text, ha="center", va="center", fontsize=NOTE + 1,
                        color=_text_color(im.cmap(im.norm(grid[i, j]))))
            else:
                bad = [r for r in (cell.get((m, n, "forward")), cell.get((m, n, "reverse")))
                       if r and not ok(r)]
                _hatched_cell(ax, j, i, "\n".join(f"{r['backend']}: {r.get('status')}"
                                                  for r in bad) or "missing")
    ax.set_xticks(range(len(ns)), [str(n) for n in ns])
    ax.set_yticks(range(len(ms)), [str(m) for m in ms])
    ax.set_xlabel("inputs n")
    ax.set_ylabel("outputs m")
    ax.set_title("Jacobian of tanh(A x): which mode is faster", fontsize=TITLE)
    fig.colorbar(im, ax=ax, label="log10 time(forward) / time(reverse)")
    return fig


# ------------------------------------------------------------------ 6. memory vs depth


def memory_figure(rows: Sequence[Record]) -> Figure:
    """Peak bytes of one derivative call against depth per backend (log-log), and the
    reverse tape's own bytes (dashed): the tape grows with the operations recorded,
    forward mode stays flat.

    >>> import numpy as np, diffkit as dk
    >>> rows = [r for k in (1, 4) for r in dk.compare("nested_sin", np.ones(10), depth=k,
    ...         backends=["forward", "reverse"], repeat=1).records()]
    >>> fig = memory_figure(rows)
    """
    fig, (ax,) = _figure(6.4, 4.2)
    labels = _order(r["backend"] for r in rows)
    bc = colors(labels)
    for b in labels:
        mine = sorted((r for r in rows if r["backend"] == b), key=lambda r: r["depth"])
        pts = [(r["depth"], r["peak_bytes"] / MB) for r in mine if ok(r) and r.get("peak_bytes")]
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=4, color=bc[b], label=f"{b}: peak")
        tape = [(r["depth"], r["tape_bytes"] / MB) for r in mine if ok(r) and r.get("tape_bytes")]
        if tape:
            ax.plot(*zip(*tape), ls="--", marker=".", color=bc[b], label=f"{b}: tape")
        for r in mine:
            if not ok(r):
                _failed_mark(ax, r["depth"], r.get("status", "?"), bc[b])
    sizes = _order(r.get("n") for r in rows if r.get("n"))
    what = ", ".join(_order(words(str(r["function"])) for r in rows))
    ax.set_title(f"{what}: memory of one derivative vs depth"
                 + (f" (x of {sizes[0]:,} entries)" if sizes else ""), fontsize=TITLE)
    _log_scales(ax)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("depth (the operations recorded grow with it)")
    ax.set_ylabel("memory (MB, log scale)")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, fontsize=LEGEND)
    return fig


# ------------------------------------------------------------------ 7. accuracy heatmap


def accuracy_figure(rows: Sequence[Record]) -> Figure:
    """log10 of the error per function (rows) and backend (columns); an exact 0 is
    written "0", a failed cell is hatched with its status.

    >>> import diffkit as dk
    >>> fig = accuracy_figure(dk.compare("exp", backends=["forward"], repeat=1).records())
    """
    functions = _order(r["function"] for r in rows)
    labels = _order(r["backend"] for r in rows)
    by = {(r["function"], r["backend"]): r for r in rows}
    grid = np.full((len(functions), len(labels)), np.nan)
    for i, fn in enumerate(functions):
        for j, b in enumerate(labels):
            r = by.get((fn, b))
            err = _num(r.get("error")) if r and ok(r) else None
            if err is not None:
                grid[i, j] = math.log10(max(err, FLOOR))
    fig, (ax,) = _figure(1.3 * len(labels) + 3.2, 0.42 * len(functions) + 1.6)
    im = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=-17, vmax=0,
                   aspect="auto")
    for i, fn in enumerate(functions):
        for j, b in enumerate(labels):
            r = by.get((fn, b))
            if np.isfinite(grid[i, j]):
                text = "0" if r["error"] == 0 else f"{r['error']:.0e}"
                ax.text(j, i, text, ha="center", va="center", fontsize=NOTE + 1,
                        color=_text_color(im.cmap(im.norm(grid[i, j]))))
            else:
                status = r.get("status", "?") if r else "missing"
                _hatched_cell(ax, j, i, "no error" if status == "ok" else status)
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=9)
    ax.set_yticks(range(len(functions)), [str(f) for f in functions], fontsize=9)
    ax.set_title("How accurate is each way? Error against the reference", fontsize=TITLE)
    fig.colorbar(im, ax=ax, label="log10 of the relative error")
    return fig
