"""``diffkit accuracy``: each elementwise function's errors in ulps against mpmath, per method."""

from __future__ import annotations

from typing import Any

import click

from .output import (Progress, emit, format_option, output_option, quiet_option, render,
                     wrapped)


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    """One record for scripts: each quantity's max, p99, x of the max and exclusions."""
    out = {"function": record["function"], "method": record["method"],
           "points": record["points"]}
    for q in ("value", "d1", "d2"):
        s = record[q] or {}
        out.update({f"{q}_max_ulps": s.get("max"), f"{q}_p99_ulps": s.get("p99"),
                    f"{q}_x": s.get("x"), f"{q}_excluded": s.get("excluded")})
    out["note"] = record["note"]
    return out


@click.command()
@click.argument("names", nargs=-1, metavar="[PRIMITIVE]...")
@click.option("-n", "--points", type=click.IntRange(min=10), default=400, show_default=True,
              help="points per function (log-spaced magnitudes, a uniform range, near "
              "zeros, poles and edges)")
@click.option("-m", "--methods", metavar="M,M...",
              help="only these methods: reverse, forward, compiled, central, complex, jax, "
              "torch, autograd (default: every one installed)")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="0: the documented points; another seed draws other points (and other "
              "distances to zeros, poles and edges): a search for what the fixed ones miss")
@click.option("--summary", is_flag=True, help="one row per function: each method's max ulps "
              "of value / first / second derivative (the table of docs/accuracy.md)")
@format_option
@output_option
@quiet_option
def accuracy(names: tuple[str, ...], points: int, methods: str | None, seed: int, summary: bool,
             fmt: str, output: str | None, quiet: bool) -> None:
    """Measure the error in ulps of PRIMITIVE's value, first and second derivative against
    mpmath at 50 digits, over its whole domain, for each way of computing them: diffkit's
    reverse and forward modes, its compiled fused kernels (with numba), central differences
    and the complex step (first derivative), and JAX, PyTorch and autograd where installed.
    Each column gives the largest error, the 99th percentile and the x of the largest.
    Points where the exact result is not a normal float (0, subnormal, overflow, undefined)
    are left out and counted (json, csv). PRIMITIVE is an elementwise primitive (a binary
    one gives its slices, e.g. logaddexp(x, 0)) or a diffkit.scipy.special function
    (ndtr, expit, digamma ...); without one, every function (minutes).

    \b
    Examples:
      diffkit accuracy sigmoid
      diffkit accuracy tanh expm1 --methods reverse,jax
      diffkit accuracy log_ndtr --format json
      diffkit accuracy gammaln --seed 7        # 400 other points
      diffkit accuracy --summary --format markdown -o table.md
    """
    from diffkit.bench import atlas

    chosen = tuple(atlas.METHODS)
    if methods:
        chosen = tuple(m.strip() for m in methods.split(",") if m.strip())
        unknown = [m for m in chosen if m not in atlas.METHODS]
        if unknown or not chosen:
            raise click.UsageError(f"unknown method {unknown[0] if unknown else methods!r}; "
                                   f"choose from {', '.join(atlas.METHODS)}")
    try:
        cases = atlas.cases(names)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    progress = Progress(len(cases), quiet)
    records: list[dict[str, Any]] = []
    try:
        for case in cases:
            progress.step(case.name)
            records += atlas.measure(case, chosen, points, seed=seed)
    finally:
        progress.close()
    if summary:
        table = atlas.summary(records)
        rows = [dict(zip(table[0], row)) for row in table[1:]]
        emit(render(rows, fmt, table[0], table=table if fmt in ("table", "markdown") else None,
                    title="max ulps: value / first / second derivative"), output)
        return
    if fmt in ("json", "csv"):
        emit(render([_flat(r) for r in records], fmt), output)
        return
    table = atlas.rows(records)
    text = render([], fmt, table=table, wrap=("note",), optional=("note",),
                  title=f"error in ulps against mpmath, {points} points: max / 99th percentile "
                  "at the x of the max (diffkit compiled: fused kernels)")
    emit(text + "\n\n" + wrapped(_left_out(records)), output)


WORDS = {"value": "values", "d1": "first derivatives", "d2": "second derivatives"}


def _left_out(records: list[dict[str, Any]]) -> list[str]:
    """Per function, the points left out of each quantity (its exact result not normal)."""
    lines, seen = [], set()
    for r in records:
        if r["function"] in seen:
            continue
        counts = {q: r[q]["excluded"] for q in ("value", "d1", "d2") if r[q] is not None}
        if counts:
            seen.add(r["function"])
            left = ", ".join(f"{n} of the {WORDS[q]}" for q, n in counts.items())
            lines.append(f"  - {r['function']}, {r['points']} points; left out where the exact "
                         f"result is not a normal float: {left}")
    return lines
