"""``diffkit trace``: the evaluation trace (Wengert list) of a function at a point."""

from __future__ import annotations

import click

from .output import emit, format_option, output_option, render


@click.command()
@click.argument("func")
@click.option("--at", help="the point: x=0.5, or x1=2,x2=5 for a formula's variables")
@click.option("--mode", type=click.Choice(["forward", "reverse"]), default="forward",
              show_default=True, help="forward: tangents row by row; reverse: the adjoint "
              "sweep, contribution by contribution")
@click.option("--order", type=click.Choice(["textbook", "evaluation"]), default="textbook",
              show_default=True, help="textbook: each operation numbered as soon as its "
              "operands exist, as Baydin et al. (2018) number Tables 2 and 3; evaluation: in "
              "the order Python evaluated them (the values are the same)")
@format_option
@output_option
def trace(func: str, at: str | None, mode: str, order: str, fmt: str, output: str | None
          ) -> None:
    """Show how automatic differentiation evaluates FUNC: one row per primitive
    (v₋₁, v₀ are the inputs, v₁, v₂ … each operation), with its value and its tangent
    (forward mode: the derivative along the first input's first entry) or its adjoint (reverse mode, followed by the
    reverse sweep showing each contribution as the backward pass adds it).

    \b
    Examples:
      diffkit trace "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=5
      diffkit trace "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=5 --mode reverse
      diffkit trace "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=5 --order evaluation
      diffkit trace logistic_map --at x=0.3
    """
    import diffkit as dk
    from diffkit.bench import catalog
    from diffkit.bench.formula import FormulaError, parse_formula
    from diffkit.bench.targets import parse_at, find_target

    values = parse_at(at) if at else {}
    if func in catalog.names() or ":" in func:
        target = find_target(func, at=values or None)
        result = dk.trace(target.f, target.x, mode=mode, order=order)
    else:
        target = find_target(func, at=values or None)  # validates names and values, one line each
        try:
            formula = parse_formula(func)
        except FormulaError as exc:
            raise click.UsageError(str(exc)) from None
        result = dk.trace(formula, *[values.get(v, 1.0) for v in formula.variables], mode=mode,
                          order=order)
    if fmt == "table":
        emit(str(result), output)
    else:
        emit(render(result.records(), fmt), output)
