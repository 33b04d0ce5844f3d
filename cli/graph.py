"""``diffkit graph``: draw the computational graph with values and gradients."""

from __future__ import annotations

import click


@click.command()
@click.argument("func")
@click.option("--at", help="the point: x=0.5, or x1=2,x2=5 for a formula's variables")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="picture file: .png, .svg or .pdf")
@click.option("--engine", type=click.Choice(["graphviz", "matplotlib"]),
              help="layout engine (default: graphviz when `dot` is installed)")
def graph(func: str, at: str | None, output: str, engine: str | None) -> None:
    """Draw FUNC's computational graph: one box per value (inputs shaded), labelled with
    its operation, value and gradient after a backward pass; arrows from operands to
    the operations that use them.

    \b
    Examples:
      diffkit graph "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=5 -o graph.png
      diffkit graph logistic_map --at x=0.3 -o swell.svg --engine matplotlib
    """
    import diffkit as dk
    from diffkit.bench import catalog
    from diffkit.bench.formula import parse_formula
    from diffkit.bench.targets import parse_at, find_target

    values = parse_at(at) if at else {}
    target = find_target(func, at=values or None)  # validates the function and the point
    if func in catalog.names() or ":" in func:
        g = dk.graph(target.f, target.x)
    else:
        formula = parse_formula(func)
        g = dk.graph(formula, *[values.get(v, 1.0) for v in formula.variables])
    used = g.save(output, engine)
    click.echo(f"wrote {output} ({len(g.nodes)} nodes, laid out by {used})")
