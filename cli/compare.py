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
@click.option("--size", help="a GradBench eval's input, as GradBench names it (gmm: 2_5_1000, "
              "lse: n=2500 ...; see `diffkit list`); default its smallest")
@click.option("--backends", default="symbolic,numeric,forward,reverse,compiled", show_default=True,
              help=f"comma-separated names; {SYNTAX}")
@click.option("--solver", help="for an iterative catalog function (fixed_point_sqrt, newton_cubic, "
              "logistic_ode, lotka_volterra, robertson, neural_ode): compare the ways of "
              "differentiating its solver instead of backends, comma-separated "
              "(implicit,unrolled; discrete,checkpointed,continuous,forward) or all")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="seconds per cell before it is stopped")
@click.option("--memory", type=click.FloatRange(min=16), default=2048.0, show_default=True,
              help="MB of memory per cell before it is stopped")
@click.option("--repeat", type=click.IntRange(min=1), default=5, show_default=True,
              help="timing repeats (median reported)")
@click.option("--rtol", type=click.FloatRange(min=0.0), help="the largest relative error a "
              "cell may have and be ok (default: what each method promises); above it the "
              "cell is inaccurate")
@click.option("--calls", type=click.IntRange(min=1), default=100, show_default=True,
              help="for the closing 'fastest over N calls' line: how many derivatives you "
              "will take (one-off setup counted once)")
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
def compare(func: str, at: str | None, dim: int | None, depth: int | None, size: str | None,
            backends: str, solver: str | None, timeout: float, memory: float, repeat: int,
            rtol: float | None, calls: int, order: int | None, sparse: bool,
            results: str | None, cluster: str | None, fmt: str, output: str | None,
            quiet: bool) -> None:
    """Measure each backend on FUNC: its derivative, the error against a high-precision
    reference, setup and per-call time, cost ratio time(derivative)/time(f), peak memory,
    and size (symbolic expression nodes, tape operations, function evaluations).

    The table ends with the answers: the most accurate way, the fastest per call, the
    fastest over --calls calls with its setup counted, and the one needing least memory.

    Each cell runs in its own process under --timeout and --memory: a hang or an
    explosion becomes a row with status timeout / oom / error, and the rest go on. A
    point outside f's domain is status domain; a derivative that is not finite there,
    nonfinite; an error above what the method promises (or --rtol), inaccurate; a point
    where f has no derivative (|x| at 0), kink. The exit status is 0 when every cell is
    ok (or n/a: the method does not apply), 1 when some cell is not, 2 for a usage error.

    \b
    Examples:
      diffkit compare rosenbrock --dim 100
      diffkit compare logistic_map --depth 8 --backends symbolic,reverse
      diffkit compare "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=0.5 --format json
      diffkit compare rosenbrock --backends "forward,numeric[method=central,order=4]"
      diffkit compare examples/train_moons.py:loss --backends forward,reverse
      diffkit compare rosenbrock --dim 1000 --cluster local:2
      diffkit compare lotka_volterra --solver discrete,continuous
      diffkit compare taylor_chain --order 6
      diffkit compare bratu --dim 400 --sparse
      diffkit compare gmm --size 10_25_1000 --backends numeric,reverse,compiled,jax
    """
    if size is not None and (solver or order or sparse):
        raise click.UsageError("--size chooses a GradBench eval's input for the backends' "
                               "comparison; it does not combine with --solver, --order or "
                               "--sparse")
    if solver:
        return _solver_ways(func, solver, fmt, output)
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
                     progress=progress.step, cluster=cluster, rtol=rtol, size=size)
    finally:
        progress.close()
    records = result.records()
    if fmt == "table":
        emit(_table(result, records, at is None, color(output), calls), output)
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


def _table(result: Any, records: list[dict[str, Any]], default_point: bool, colored: bool,
           calls: int) -> str:
    from diffkit.bench.verdict import point_text
    from diffkit.bench.winners import winners

    rows = _rows(records)
    kind = KINDS.get(result.kind or "", "derivative")
    where = "; the default point, choose with --at" if default_point else ""
    title = f"{result.function}: {kind} at x = {point_text(result.x)}{where}"
    if result.size:
        title = (f"{result.function} {result.size} (GradBench's input): {kind} in "
                 f"{result.x.size} parameters; other sizes: --size")
    table = render([], "table", table=rows, title=title, colored=colored,
                   optional=("setup", "peak mem", "size"))  # the last named goes first
    best = [f"{question}: {shown_all(who)} ({figure})"
            for question, who, figure in winners(records, calls)]
    lines = []
    messages = [(shown(r["backend"]), r["message"]) for r in records if r.get("message")]
    if messages and len(messages) == len(records) and len({m for _, m in messages}) == 1:
        lines.append(f"all backends: {messages[0][1]}")
    else:
        lines += [f"{b}: {m}" for b, m in messages]
    lines += [f"{shown(r['backend'])}: {r['graph_passes']}" for r in records
              if r.get("graph_passes")]  # the compiled graph's passes, before → after
    if any("numba missing" in str(r.get("fusion", "")) for r in records):
        lines.append("compiled: ran the unfused numpy program: fused kernels need the jit "
                     "extra (pip install 'diffkit[jit]')")
    ref = result.reference
    how = {"exact gradient": "the exact gradient of the solver's answer (a closed form, or "
                             "forward sensitivities at rtol = atol = 1e-13)",
           "closed form": "the exact derivative of f's closed form, evaluated at 40 digits",
           "local closed form": "the exact derivative of the closed form valid around the "
                                "point (its branches decided there), at 40 digits",
           "hand-derived gradient": "the eval's gradient derived by hand in plain numpy "
                                    "(GradBench's reference, independent of every backend)"}
    lines.append("error: relative max-norm against " + how.get(ref.get("method"), "")
                 if ref.get("method") in how else f"error: {ref.get('message') or 'none'}")
    lines.append("cost = time(derivative) / time(f), both medians per call; setup: one-off "
                 "work before calls (— where a backend has none); size: expression nodes, "
                 "tape or trace operations, evaluations of f, or compiled graph equations")
    return table + "\n" + wrapped(best) + ("\n" if best else "") + wrapped(lines)


def shown_all(labels: str) -> str:
    """Comma-separated backend labels, each as the table shows it."""
    return ", ".join(shown(b) for b in labels.split(", "))


def _rows(records: list[dict[str, Any]]) -> list[list[str]]:
    """The header and one line of display strings per backend."""
    from diffkit.bench.harness import fmt_bytes, fmt_error, fmt_number, fmt_seconds, size_text

    head = ["backend", "status", "derivative", "error", "setup", "per call", "cost",
            "peak mem", "size"]
    return [head] + [[shown(r["backend"]), r["status"], _numbers(r.get("derivative")),
                      fmt_error(r.get("error")), _setup(r.get("setup_s")),
                      fmt_seconds(r.get("time_s")), fmt_number(r.get("cost_ratio")),
                      fmt_bytes(r.get("peak_bytes")), size_text(r)] for r in records]


def _solver_ways(func: str, solver: str, fmt: str, output: str | None) -> None:
    """Each way of differentiating FUNC's solver, measured in this process (reverse mode)."""
    from diffkit.bench.harness import fmt_bytes, fmt_error, fmt_seconds
    from diffkit.bench.iterative import measure, problem

    ways = problem(func).ways if solver == "all" else [w.strip() for w in solver.split(",")]
    records = [measure(func, way) for way in ways]
    rows = [["way", "status", "gradient", "error", "per call", "peak mem"]] + [
        [r["way"], r["status"], _numbers(r.get("derivative")), fmt_error(r.get("error")),
         fmt_seconds(r.get("time_s")), fmt_bytes(r.get("peak_bytes"))] for r in records]
    notes = [f"{r['way']}: {r['message']}" for r in records if r.get("message")]
    notes.append("error: relative max-norm against the exact gradient (a closed form, or "
                 "forward sensitivities at rtol = atol = 1e-13)")
    table = render(records, fmt, table=rows if fmt in ("table", "markdown") else None,
                   title=f"{func}: its gradient by each way of differentiating the solver",
                   colored=color(output))
    emit(table + ("\n" + wrapped(notes) if fmt == "table" else ""), output)
    if any(r["status"] not in ("ok", "n/a") for r in records):
        raise click.exceptions.Exit(1)


def _numbers(v: Any, first: int = 2) -> str:
    """A derivative in short: 0.5403, 6-8j, or its first entries [-215.6, 792, …]."""
    import numpy as np

    from diffkit.bench.verdict import numbers

    if v is None:
        return "—"
    a = numbers(v).ravel()
    if np.ndim(v) == 0:
        return f"{a[0].item():.4g}"
    shown_ = ", ".join(f"{x.item():.4g}" for x in a[:first])
    return f"[{shown_}{', …' if a.size > first else ''}]"


def _setup(v: Any) -> str:
    from diffkit.bench.harness import fmt_seconds

    return "—" if not v else fmt_seconds(v)
