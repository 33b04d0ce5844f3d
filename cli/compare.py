"""``diffkit compare``: every backend on one function, side by side."""

from __future__ import annotations

import click

from .output import (Progress, cluster_option, emit, format_option, output_option,
                     quiet_option, render)


@click.command()
@click.argument("func")
@click.option("--at", help="the point: x=0.5, x1=1,x2=2 (formula variables) or x=[1,2,3]")
@click.option("--dim", type=click.IntRange(min=1), help="input dimension n (scalable catalog "
              "functions)")
@click.option("--depth", type=click.IntRange(min=1), help="depth (catalog functions with one, "
              "e.g. logistic_map)")
@click.option("--backends", default="symbolic,numeric,forward,reverse", show_default=True,
              help="comma-separated; options as name:key=value, e.g. numeric:method=richardson")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="seconds per cell before it is stopped")
@click.option("--memory", type=click.FloatRange(min=16), default=2048.0, show_default=True,
              help="MB of memory per cell before it is stopped")
@click.option("--repeat", type=click.IntRange(min=1), default=5, show_default=True,
              help="timing repeats (median reported)")
@click.option("--results", type=click.Path(dir_okay=False),
              help="JSON Lines file: each finished cell is appended; a rerun resumes")
@cluster_option
@format_option
@output_option
@quiet_option
def compare(func: str, at: str | None, dim: int | None, depth: int | None, backends: str,
            timeout: float, memory: float, repeat: int, results: str | None,
            cluster: str | None, fmt: str, output: str | None, quiet: bool) -> None:
    """Measure each backend on FUNC: error against a high-precision reference, setup and
    per-call time, cost ratio time(derivative)/time(f), peak memory, and size (symbolic
    expression nodes, tape operations, function evaluations).

    Each cell runs in its own process under --timeout and --memory: a hang or an
    explosion becomes a row with status timeout / oom / error, and the rest go on.

    \b
    Examples:
      diffkit compare rosenbrock --dim 100
      diffkit compare logistic_map --depth 8 --backends symbolic,reverse
      diffkit compare "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=0.5 --format json
      diffkit compare my_model.py:loss --at x=[0.1,0.2] --backends forward,reverse
      diffkit compare rosenbrock --dim 1000 --cluster local:2
    """
    from diffkit.bench.harness import FIELDS, compare as run
    from diffkit.bench.targets import parse_at

    specs = [b.strip() for b in backends.split(",") if b.strip()]
    if not specs:
        raise click.BadParameter("name at least one backend", param_hint="--backends")
    progress = Progress(None if cluster else len(specs), quiet)
    try:
        result = run(func, backends=specs, at=parse_at(at) if at else None, n=dim, depth=depth,
                     timeout=timeout, memory_mb=memory, repeat=repeat, results=results,
                     progress=progress.step, cluster=cluster)
    finally:
        progress.close()
    title = f"{result.function} ({result.kind}); reference: " \
            f"{result.reference.get('method') or result.reference.get('message')}"
    text = render(result.records(), fmt, columns=FIELDS, table=result.table(), title=title)
    if fmt == "table":
        notes = [f"{r['backend']}: {r['message']}" for r in result.rows if r.get("message")]
        text = "\n".join([text, *notes, "error: relative max-norm vs the reference (absolute "
                          "where the reference is 0); time: median per call"])
    emit(text, output)
