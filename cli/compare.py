"""``diffkit compare``: every backend on one function, side by side."""

from __future__ import annotations

from typing import Any

import click

from .output import Progress, cluster_option, color, emit, format_option, output_option, \
    quiet_option, render, wrapped, writable
from .specs import SYNTAX, shown, split_backends

KINDS = {"derivative": "derivative", "grad": "gradient", "jacobian": "Jacobian"}


@click.command()
@click.argument("func")
@click.option("--at", help="the point: x=0.5, x1=1,x2=2 (formula variables) or x=[1,2,3]; "
              "default: the catalog's point, or 1 for every variable")
@click.option("--dim", type=click.IntRange(min=1), help="input dimension n (scalable catalog "
              "functions)")
@click.option("--depth", type=click.IntRange(min=1), help="depth (catalog functions with one, "
              "e.g. logistic_map)")
@click.option("--backends", default="symbolic,numeric,forward,reverse,compiled", show_default=True,
              help=f"comma-separated names; {SYNTAX}")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="seconds per cell before it is stopped")
@click.option("--memory", type=click.FloatRange(min=16), default=2048.0, show_default=True,
              help="MB of memory per cell before it is stopped")
@click.option("--repeat", type=click.IntRange(min=1), default=5, show_default=True,
              help="timing repeats (median reported)")
@click.option("--order", type=click.IntRange(min=1), help="compare the derivative of this "
              "order of f: R -> R by symbolic, numeric, nested forward, forward-over-reverse, "
              "Taylor mode and compiled (--backends then names some of these)")
@click.option("--sparse", is_flag=True, help="compare dense and coloured Jacobians: dense "
              "forward/reverse/numeric, coloured forward/reverse, CPR (--backends: some of these)")
@click.option("--results", type=click.Path(dir_okay=False), callback=writable,
              help="JSON Lines file: each finished cell is appended; a rerun resumes")
@cluster_option
@format_option
@output_option
@quiet_option
def compare(func: str, at: str | None, dim: int | None, depth: int | None, backends: str,
            timeout: float, memory: float, repeat: int, order: int | None, sparse: bool,
            results: str | None, cluster: str | None, fmt: str, output: str | None,
            quiet: bool) -> None:
    """Measure each backend on FUNC: its derivative, the error against a high-precision
    reference, setup and per-call time, cost ratio time(derivative)/time(f), peak memory,
    and size (symbolic expression nodes, tape operations, function evaluations).

    Each cell runs in its own process under --timeout and --memory: a hang or an
    explosion becomes a row with status timeout / oom / error, and the rest go on. A
    point outside f's domain is status domain; a derivative that is not finite there,
    nonfinite. The exit status is 0 when every cell is ok (or n/a: the method does not
    apply), 1 when some cell is not, 2 for a usage error.

    \b
    Examples:
      diffkit compare rosenbrock --dim 100
      diffkit compare logistic_map --depth 8 --backends symbolic,reverse
      diffkit compare "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=0.5 --format json
      diffkit compare rosenbrock --backends "forward,numeric[method=central,order=4]"
      diffkit compare examples/train_moons.py:loss --backends forward,reverse
      diffkit compare rosenbrock --dim 1000 --cluster local:2
      diffkit compare taylor_chain --order 6
      diffkit compare bratu --dim 400 --sparse
    """
    from diffkit.bench.harness import FIELDS, compare as run
    from diffkit.bench.targets import parse_at
    from diffkit.bench.verdict import PASSING

    if order or sparse:
        _other_comparison(click.get_current_context(), func, at, dim, depth, backends, timeout,
                          repeat, order, sparse, fmt, output)
        return

    specs = split_backends(backends)
    progress = Progress(None if cluster else len(specs), quiet)
    try:
        result = run(func, backends=specs, at=parse_at(at) if at else None, n=dim, depth=depth,
                     timeout=timeout, memory_mb=memory, repeat=repeat, results=results,
                     progress=progress.step, cluster=cluster)
    finally:
        progress.close()
    records = result.records()
    if fmt == "table":
        emit(_table(result, records, at is None, color(output)), output)
    elif fmt == "markdown":
        emit(render(records, fmt, table=_rows(records)), output)
    else:
        emit(render(records, fmt, columns=FIELDS), output)
    if any(r["status"] not in PASSING for r in records):
        raise click.exceptions.Exit(1)


def _other_comparison(ctx: click.Context, func: str, at: str | None, dim: int | None,
                      depth: int | None, backends: str, timeout: float, repeat: int,
                      order: int | None, sparse: bool, fmt: str, output: str | None) -> None:
    """--order k or --sparse: their own ways, in place of the backends."""
    from diffkit.bench.targets import parse_at

    from .compare_ways import order_report, sparse_report

    if order and sparse:
        raise click.UsageError("--order and --sparse are two comparisons; give one of them")
    chosen = None
    if ctx.get_parameter_source("backends") is not click.core.ParameterSource.DEFAULT:
        chosen = [b.strip() for b in backends.split(",") if b.strip()]
    if order:
        records = order_report(func, order, depth, parse_at(at) if at else None, chosen, timeout,
                               repeat, fmt, output, color(output))
    else:
        records = sparse_report(func, dim, chosen, timeout, repeat, fmt, output, color(output))
    if any(r["status"] not in ("ok", "n/a") for r in records):
        raise click.exceptions.Exit(1)


def _table(result: Any, records: list[dict[str, Any]], default_point: bool, colored: bool
           ) -> str:
    from diffkit.bench.verdict import point_text

    rows = _rows(records)
    kind = KINDS.get(result.kind or "", "derivative")
    where = "; the default point, choose with --at" if default_point else ""
    title = f"{result.function}: {kind} at x = {point_text(result.x)}{where}"
    table = render([], "table", table=rows, title=title, colored=colored,
                   optional=("setup", "cost", "peak mem"))
    lines = []
    messages = [(shown(r["backend"]), r["message"]) for r in records if r.get("message")]
    if messages and len(messages) == len(records) and len({m for _, m in messages}) == 1:
        lines.append(f"all backends: {messages[0][1]}")
    else:
        lines += [f"{b}: {m}" for b, m in messages]
    lines += [f"{shown(r['backend'])}: {r['graph_passes']}" for r in records
              if r.get("graph_passes")]  # the compiled graph's passes, before → after
    ref = result.reference
    how = {"closed form": "the exact derivative of f's closed form, evaluated at 40 digits",
           "local closed form": "the exact derivative of the closed form valid around the "
                                "point (its branches decided there), at 40 digits"}
    lines.append("error: relative max-norm against " + how.get(ref.get("method"), "")
                 if ref.get("method") in how else f"error: {ref.get('message') or 'none'}")
    lines.append("cost = time(derivative) / time(f), both medians per call; setup: one-off "
                 "work before calls (— where a backend has none); size: expression nodes, "
                 "tape or trace operations, evaluations of f, or compiled graph equations")
    return table + "\n" + wrapped(lines)


def _rows(records: list[dict[str, Any]]) -> list[list[str]]:
    """The header and one line of display strings per backend."""
    from diffkit.bench.harness import fmt_bytes, fmt_error, fmt_number, fmt_seconds, size_text

    head = ["backend", "status", "derivative", "error", "setup", "per call", "cost",
            "peak mem", "size"]
    return [head] + [[shown(r["backend"]), r["status"], _numbers(r.get("derivative")),
                      fmt_error(r.get("error")), _setup(r.get("setup_s")),
                      fmt_seconds(r.get("time_s")), fmt_number(r.get("cost_ratio")),
                      fmt_bytes(r.get("peak_bytes")), size_text(r)] for r in records]


def _numbers(v: Any, first: int = 2) -> str:
    """A derivative in short: 0.5403, or its first entries [-215.6, 792, …]."""
    import numpy as np

    if v is None:
        return "—"
    a = np.asarray(v, dtype=float).ravel()
    if np.ndim(v) == 0:
        return f"{float(a[0]):.4g}"
    shown_ = ", ".join(f"{x:.4g}" for x in a[:first])
    return f"[{shown_}{', …' if a.size > first else ''}]"


def _setup(v: Any) -> str:
    from diffkit.bench.harness import fmt_seconds

    return "—" if not v else fmt_seconds(v)
