"""``diffkit rules``: everything about one primitive, printed from its table entry."""

from __future__ import annotations

import click


@click.command()
@click.argument("primitive", required=False)
def rules(primitive: str | None) -> None:
    """Print PRIMITIVE's numpy implementation, sympy translation, and its forward (JVP)
    and reverse (VJP) rules, from the source of its one entry in the primitive table.
    Without PRIMITIVE, list the primitives.

    A unary function's entry gives its derivative d(y, x): forward mode multiplies it
    by the tangent x_dot, reverse mode by the adjoint y_bar.

    \b
    Examples:
      diffkit rules sin
      diffkit rules mul
    """
    from diffkit import primitives

    if primitive is None:
        click.echo(" ".join(sorted(primitives.table())))
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
