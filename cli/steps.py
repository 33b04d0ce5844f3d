"""``diffkit steps``: finite-difference error against step size."""

from __future__ import annotations

import click

from .output import emit, format_option, output_option, render


@click.command()
@click.argument("func")
@click.option("--at", help="the point, e.g. x=1 or x1=1,x2=2")
@click.option("--methods", default="forward,central,richardson,complex", show_default=True,
              help="comma-separated: forward, backward, central, richardson, complex")
@format_option
@output_option
def steps(func: str, at: str | None, methods: str, fmt: str, output: str | None) -> None:
    """Error of each finite-difference method for steps h = 1e-1 … 1e-16, against the
    high-precision reference; the automatically chosen step is marked (auto = True).

    Truncation error falls as h shrinks, round-off error grows: the error traces a "V"
    whose bottom the automatic step aims for.

    \b
    Examples:
      diffkit steps "sin(x)" --at x=1
      diffkit steps rosenbrock --methods central,complex --format csv
    """
    from diffkit.backends.finite_diff import METHODS
    from diffkit.bench.sweeps import step_errors
    from diffkit.bench.targets import parse_at, find_target

    chosen = [m.strip() for m in methods.split(",") if m.strip()]
    bad = [m for m in chosen if m not in METHODS]
    if bad or not chosen:
        raise click.BadParameter(f"unknown method {', '.join(bad) or '(none)'}; choose from "
                                 f"{', '.join(METHODS)}", param_hint="--methods")
    target = find_target(func, at=parse_at(at) if at else None)
    if target.kind is None:
        from diffkit.bench.targets import kind_for
        target = type(target)(target.name, target.f, target.x, kind_for(target.x, target.f(target.x)))
    rows = step_errors(target, chosen)
    emit(render(rows, fmt, ("method", "step", "error", "auto", "message"),
                title=f"finite-difference error vs step: {target.name}"), output)
