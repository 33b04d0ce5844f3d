"""``diffkit advise``: which way should I differentiate this function?"""

from __future__ import annotations

from typing import Any

import click

from .output import emit, format_option, output_option, wrapped


def _size(text: str) -> float:
    """``2GB``, ``512MB``, ``1e9`` -> bytes."""
    units = {"kb": 2**10, "mb": 2**20, "gb": 2**30, "b": 1}
    t = text.strip().lower()
    for unit, k in units.items():
        if t.endswith(unit):
            t, scale = t[: -len(unit)], k
            break
    else:
        scale = 1
    try:
        return float(t) * scale
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a size; write e.g. 2GB or 512MB",
                                 param_hint="--memory") from None


@click.command()
@click.argument("func")
@click.option("--at", help="the point: x=0.5, x1=1,x2=2 (formula variables) or x=[1,2,3]")
@click.option("--dim", type=click.IntRange(min=1), help="input dimension n (scalable catalog "
              "functions)")
@click.option("--depth", type=click.IntRange(min=1), help="depth (catalog functions with one)")
@click.option("--calls", type=click.IntRange(min=1), default=100, show_default=True,
              help="how many derivative calls you will make: setup (compiling, deriving) is "
                   "spread over them")
@click.option("--accuracy", type=click.FloatRange(min=0, min_open=True), default=1e-8,
              show_default=True, help="the relative error the method must meet")
@click.option("--memory", help="peak memory allowed per call, e.g. 2GB")
@click.option("--verify", is_flag=True, help="then measure the recommendation and the "
              "runner-up against a high-precision reference (isolated cells)")
@format_option
@output_option
def advise(func: str, at: str | None, dim: int | None, depth: int | None, calls: int,
           accuracy: float, memory: str | None, verify: bool, fmt: str,
           output: str | None) -> None:
    """Recommend how to differentiate FUNC, from a few seconds of measurements on it.

    Probes the numbers of inputs and outputs, the cost of f, whether automatic
    differentiation can trace it, noise and kinks near the point; runs each method that
    fits the time budget once in an isolated cell; recommends the cheapest one whose
    error meets --accuracy (setup spread over --calls), with the runner-up and the
    reasons in sentences.

    \b
    Examples:
      diffkit advise rosenbrock --dim 1000
      diffkit advise "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=5 --calls 1
      diffkit advise logistic_map --depth 8 --accuracy 1e-12 --verify
      diffkit advise tanh_ax --format json
    """
    from diffkit.bench.advise import advise as run
    from diffkit.bench.targets import parse_at

    advice = run(func, at=parse_at(at) if at else None, n=dim, depth=depth, calls=calls,
                 accuracy=accuracy, memory_bytes=_size(memory) if memory else None,
                 verify=verify)
    if fmt == "json":
        import json

        emit(json.dumps(advice.records(), indent=2, default=str), output)
        return
    emit(text(advice, fmt), output)


def text(advice: Any, fmt: str = "table") -> str:
    """The advice as the command prints it: the table fitted to the terminal (numbers and
    names never cut), the candidates' notes, then the recommendation and its reasons."""
    from .output import render

    rows = advice.table()
    records = [dict(zip(rows[0], r)) for r in rows[1:]]
    table = render(records, fmt, columns=rows[0], table=rows, title="measured or predicted")
    if fmt == "csv":
        return table
    return f"{table}\n{wrapped(advice.notes())}\n\n{wrapped(str(advice).splitlines())}"
