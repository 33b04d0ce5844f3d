"""``diffkit steps``: finite-difference error against step size."""

from __future__ import annotations

from typing import Any

import click

from .output import emit, format_option, output_option, render, wrapped


@click.command()
@click.argument("func")
@click.option("--at", help="the point, e.g. x=1 or x1=1,x2=2; default: the catalog's point, "
              "or 1 for every variable")
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
    if fmt != "table":
        emit(render(rows, fmt, ("method", "step", "error", "auto", "message")), output)
        return
    emit(_table(target, rows, at is None), output)


def _table(target: Any, rows: list[dict[str, Any]], default_point: bool) -> str:
    """One row per step, one column per method (the V reads downwards); the automatic
    step's error and step last."""
    from diffkit.bench.verdict import point_text

    where = "; the default point, choose with --at" if default_point else ""
    title = f"finite-difference error vs step: {target.name} at x = {point_text(target.x)}{where}"
    methods = list(dict.fromkeys(r["method"] for r in rows))

    def error(r: dict[str, Any]) -> str:
        return "n/a" if r.get("message") else "—" if r["error"] is None else f"{r['error']:.1e}"

    fixed = [r for r in rows if not r["auto"]]
    table = [["step h"] + methods]
    for h in dict.fromkeys(r["step"] for r in fixed):
        table.append([f"{h:.0e}"] + [error(r) for m in methods for r in fixed
                                      if r["method"] == m and r["step"] == h])
    auto = {r["method"]: r for r in rows if r["auto"]}
    table.append(["auto"] + [error(auto[m]) + ("" if auto[m]["step"] is None or auto[m].get(
        "message") else f" (h={auto[m]['step']:.0e})") for m in methods])
    notes = {}
    for r in rows:
        if r.get("message"):
            notes.setdefault(r["method"], r["message"])
    lines = [f"{m}: {msg}" for m, msg in notes.items()]
    lines.append("error: relative max-norm against the high-precision reference; auto: the "
                 "step each method chooses by itself")
    return "\n".join([wrapped([title]), render([], "table", table=table), wrapped(lines)])
