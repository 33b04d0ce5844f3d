"""A report's figures: what each one shows (title, explanation, table columns), drawn
from its records and encoded as PNG and SVG."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..bench.harness import fmt_bytes, fmt_error, fmt_number, fmt_seconds
from . import sparse_taylor

Record = dict[str, Any]
DPI = 150  # figures for slides: a 6.4-inch figure is 960 pixels wide


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


def cell(column: str, v: Any) -> str:
    """One table cell's text: numbers in the column's format, a dash for nothing."""
    if v is None or v == "":
        return "—"
    if column in FORMAT and isinstance(v, (int, float)):
        return FORMAT[column](v)
    return str(v)[:300]


def rendered(fig: str, rows: list[Record], section: dict[str, Any], svg: bool
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
