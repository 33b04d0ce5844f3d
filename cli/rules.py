"""``diffkit rules``: everything about one primitive, printed from its table entry."""

from __future__ import annotations

import textwrap

import click


@click.command()
@click.argument("primitive", required=False)
@click.option("--list", "list_", is_flag=True,
              help="List the primitives and the diffkit.numpy functions, grouped.")
def rules(primitive: str | None, list_: bool) -> None:
    """Print PRIMITIVE's numpy implementation, sympy translation, and its forward (JVP)
    and reverse (VJP) rules, from the source of its one entry in the primitive table.
    Without PRIMITIVE (or with --list), list the primitives and the functions of
    diffkit.numpy and diffkit.scipy.special, grouped by family.

    A unary function's entry gives its derivative d(y, x): forward mode multiplies it
    by the tangent x_dot, reverse mode by the adjoint y_bar.

    \b
    Examples:
      diffkit rules sin
      diffkit rules mul
      diffkit rules --list
    """
    from diffkit import primitives

    if primitive is None or list_:
        click.echo(covered())
        return
    try:
        parts = primitives.source(primitive)
    except KeyError as exc:
        raise click.UsageError(exc.args[0]) from None
    titles = {"numpy": "numpy implementation", "sympy": "sympy translation",
              "jvp": "JVP rule (forward mode)", "vjp": "VJP rule (reverse mode)"}
    groups: dict[str, list[str]] = {}  # one source text may hold several parts (unary: all)
    for key, title in titles.items():
        body = "\n".join(parts[key]) or ("(none: numpy's own function works on arrays of "
                                         "sympy expressions)")
        groups.setdefault(body, []).append(title)
    for body, names in groups.items():
        click.echo(f"# {', '.join(names)}")
        click.echo(body)
        click.echo()


def covered() -> str:
    """The primitives by family, then the user-facing functions by family."""
    from diffkit import primitives
    from diffkit.nplib import base, contract, fft, linalg, math, shaping, stats
    from diffkit.scipy import special

    lines = ["primitives (the table: diffkit rules NAME shows one entry)"]
    for family, names in primitives.families().items():
        lines.append(textwrap.fill(", ".join(names), 88, initial_indent=f"  {family}: ",
                                   subsequent_indent="    "))
    groups = {"basics": base, "elementwise math": math, "statistics": stats, "shaping": shaping,
              "contractions": contract, "linalg (dnp.linalg)": linalg, "fft (dnp.fft)": fft}
    lines.append("diffkit.numpy functions (see docs/numpy-coverage.md for what is not covered)")
    for family, module in groups.items():
        names = sorted(n for n in module.__all__ if callable(getattr(module, n)))
        lines.append(textwrap.fill(", ".join(names), 88, initial_indent=f"  {family}: ",
                                   subsequent_indent="    "))
    lines.append(textwrap.fill(", ".join(sorted(special.__all__)), 88,
                               initial_indent="  diffkit.scipy.special (needs scipy): ",
                               subsequent_indent="    "))
    return "\n".join(lines)
