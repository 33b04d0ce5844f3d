"""``diffkit swell``: expression size against depth."""

from __future__ import annotations

import click

from .output import emit, format_option, output_option, render


@click.command()
@click.argument("func")
@click.option("--depth", "depths", default="1..6", show_default=True,
              help="depths: K, 1..K or a list like 1,2,4,8")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="seconds allowed for each symbolic derivation")
@format_option
@output_option
def swell(func: str, depths: str, timeout: float, fmt: str, output: str | None) -> None:
    """How the derivative's size grows with depth: the symbolic derivative as a tree
    (with repeats) and after common-subexpression elimination, against the number of
    operations on the reverse tape and the forward trace, and the equations of the
    compiled backend's optimized derivative graph.

    FUNC is a catalog function with a depth, e.g. logistic_map or nested_sin.

    \b
    Examples:
      diffkit swell logistic_map --depth 1..8
      diffkit swell nested_sin --depth 1,2,4,8 --format json
    """
    from diffkit.bench import catalog
    from diffkit.bench.sweeps import parse_depths, swell as run

    if catalog.get(func).depth is None:
        with_depth = ", ".join(e.name for e in catalog.ENTRIES if e.depth is not None)
        raise click.BadParameter(f"{func} has no depth; try one of: {with_depth}",
                                 param_hint="FUNC")
    rows = run(func, parse_depths(depths), timeout=timeout)
    emit(render(rows, fmt, ("depth", "backend", "expr_nodes", "expr_dag_nodes", "tape_ops",
                            "graph_eqns", "status", "message"), title=f"expression swell: {func}"),
         output)
