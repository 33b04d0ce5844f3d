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
    and reverse (VJP) rules, from the source of its one entry in the primitive table;
    then how the compiler runs it on each target (its scalar formula in the lowering
    registry, the numpy call, the LLVM and Numba kernel routes, the tape VM's rows), or
    why it stays a library call.
    Without PRIMITIVE (or with --list), list the primitives and the functions of
    diffkit.numpy and diffkit.scipy.special, grouped by family.

    A unary function's entry gives its derivative d(y, x): forward mode multiplies it
    by the tangent x_dot, reverse mode by the adjoint y_bar.

    \b
    Examples:
      diffkit rules sin
      diffkit rules sigmoid
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
    derivative = _unary_derivative(primitive)
    if derivative is not None:
        click.echo(_unary_modes(primitive, derivative, parts))
        click.echo(_compiled(primitive))
        return
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
    click.echo(_compiled(primitive))


def _compiled(name: str) -> str:
    """The compiler's targets for primitive ``name`` (diffkit/primitives/lowering.py)."""
    from diffkit import primitives
    from diffkit.compiler.show import compiled_rules

    prim = primitives.table()[name]
    arity = len(prim.vjp) if isinstance(prim.vjp, (tuple, list)) else 1
    return "\n".join(["# compiled: how each target of the compiler runs it "
                      "(diffkit/primitives/lowering.py)", *compiled_rules(prim, arity)])


def _unary_derivative(name: str) -> str | None:
    """The derivative ``d(y, x)`` of a unary entry (made by ``unary(...)``) as text, e.g.
    ``cos(x)``; None for any other entry."""
    import ast
    import inspect

    from diffkit import primitives

    prim = primitives.table()[name]
    if len(prim.jvp) != 1 or prim.jvp_joint is not None:
        return None
    d = primitives.unary_derivative(prim.jvp[0])
    if d is None:
        return None
    try:
        tree = ast.parse(inspect.getsource(d).strip().rstrip(","))
    except (OSError, SyntaxError):
        return None
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
               and [a.arg for a in n.args.args] == ["y", "x"]]
    return ast.unparse(lambdas[0].body) if len(lambdas) == 1 else None


def _factor(expression: str) -> str:
    """``expression`` as a factor of a product: parenthesized where it binds more loosely
    than ``*`` (``1.0 - y * y`` times ``x_dot`` is ``(1.0 - y * y) * x_dot``).

    >>> _factor("1.0 - y * y"), _factor("cos(x)"), _factor("-sin(x)")
    ('(1.0 - y * y)', 'cos(x)', '-sin(x)')
    """
    import ast

    node = ast.parse(expression, mode="eval").body
    loose = (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))) or \
        isinstance(node, (ast.IfExp, ast.Compare, ast.BoolOp, ast.Lambda, ast.NamedExpr))
    return f"({expression})" if loose else expression


def _unary_modes(name: str, derivative: str, parts: dict[str, list[str]]) -> str:
    """What each mode computes from a unary entry's one derivative, and what the tape keeps."""
    from diffkit import primitives

    saves = primitives.table()[name].saves[0]
    kept = {"x": "its input x", "y": "its output y", "x y": "its input x and output y",
            "y x": "its input x and output y", "": "nothing"}.get(saves, saves)
    return "\n".join([
        f"# the entry: {name} is unary, both modes come from its one derivative "
        f"dy/dx = {derivative}",
        parts["jvp"][0], "", *_helpers(name, derivative),
        "# JVP rule (forward mode): the tangent of y from the tangent of x",
        f"y_dot = {_factor(derivative)} * x_dot", "",
        "# VJP rule (reverse mode): the adjoint y_bar pushed back, added into x_bar",
        f"x_bar += y_bar * {_factor(derivative)}", "",
        f"# what the tape saves for the reverse sweep: {kept}", "",
        "# numpy implementation", *parts["numpy"], ""])


def _helpers(name: str, derivative: str) -> list[str]:
    """The source of the module's own functions the derivative calls (``_dtanh(x, y)``),
    each under a comment line, so the rule is read to the end."""
    import ast
    import inspect

    from diffkit import primitives

    d = primitives.unary_derivative(primitives.table()[name].jvp[0])
    scope = getattr(d, "__globals__", {})
    out = []
    for node in ast.walk(ast.parse(derivative, mode="eval")):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id.startswith("_") and inspect.isfunction(scope.get(node.func.id)):
            out += [f"# {node.func.id}, which the derivative calls",
                    inspect.getsource(scope[node.func.id]).strip(), ""]
    return out


def covered() -> str:
    """The primitives by family, then the user-facing functions by family."""
    from diffkit import primitives
    from diffkit.nplib import base, contract, convolve, fft, linalg, math, shaping, stats
    from diffkit.nplib import (building, nanfunctions, numpy2, polynomial, quantiles,
                               rearranging, sampled, value_only)
    from diffkit.scipy import linalg as scipy_linalg, signal, special, stats as scipy_stats

    lines = ["primitives (the table: diffkit rules NAME shows one entry)"]
    for family, names in primitives.families().items():
        lines.append(textwrap.fill(", ".join(names), 88, initial_indent=f"  {family}: ",
                                   subsequent_indent="    "))
    groups = {"basics": base, "elementwise math": math, "statistics": stats, "shaping": shaping,
              "contractions": contract, "convolution": convolve, "quantiles": quantiles,
              "nan-reductions": nanfunctions, "sampled data": sampled, "polynomials": polynomial,
              "building arrays": building, "rearranging": rearranging, "numpy 2 names": numpy2,
              "value only (no derivative)": value_only,
              "linalg (dnp.linalg)": linalg, "fft (dnp.fft)": fft}
    lines.append("diffkit.numpy functions (see docs/numpy-coverage.md for what is not covered)")
    for family, module in groups.items():
        names = sorted(n for n in module.__all__ if callable(getattr(module, n)))
        lines.append(textwrap.fill(", ".join(names), 88, initial_indent=f"  {family}: ",
                                   subsequent_indent="    "))
    lines.append(textwrap.fill(", ".join(sorted(special.__all__)), 88,
                               initial_indent="  diffkit.scipy.special (needs scipy): ",
                               subsequent_indent="    "))
    for name, module in {"linalg": scipy_linalg, "stats": scipy_stats, "signal": signal}.items():
        lines.append(textwrap.fill(", ".join(sorted(module.__all__)), 88,
                                   initial_indent=f"  diffkit.scipy.{name} (needs scipy): ",
                                   subsequent_indent="    "))
    return "\n".join(lines)
