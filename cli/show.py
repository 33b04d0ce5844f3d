"""``diffkit show``: the derivative itself, symbolic and numeric."""

from __future__ import annotations

import click


@click.command()
@click.argument("func")
@click.option("--at", help="the point for the numeric derivative: x=0.5 or x1=2,x2=5")
@click.option("--dim", type=click.IntRange(min=2), help="input dimension n (scalable catalog "
              "functions)")
@click.option("--depth", type=click.IntRange(min=1), help="depth (catalog functions with one)")
@click.option("--latex/--no-latex", default=True, show_default=True, help="also print LaTeX")
@click.option("--code", is_flag=True, help="print the compiled backend's generated forward "
              "and adjoint program instead (one line per equation, v1 ... and v1_bar ...)")
@click.option("--optimized", is_flag=True, help="with --code: the program as the compiled "
              "backend runs it, results written into dead operands' buffers (out=)")
def show(func: str, at: str | None, dim: int | None, depth: int | None, latex: bool,
         code: bool, optimized: bool) -> None:
    """Show FUNC's derivative: the closed form SymPy derives (as text and LaTeX), the
    same after common-subexpression elimination with its size, and the numeric
    derivative at the point with its step, error estimate and evaluations (Richardson).

    \b
    Examples:
      diffkit show "x^2 * sin(x)" --at x=1
      diffkit show logistic_map --at x=0.3 --depth 3
      diffkit show rosenbrock --dim 3
      diffkit show --code "log(x1) + x1*x2 - sin(x2)" --at x1=2,x2=5
      diffkit show --code rosenbrock --dim 4 --optimized
    """
    if code:
        return _show_code(func, at, dim, depth, optimized)
    if optimized:
        raise click.UsageError("--optimized goes with --code")
    import numpy as np

    from diffkit.interpreters.symbolic import closed_form
    from diffkit.bench.sweeps import ENGINES
    from diffkit.bench.targets import kind_for, parse_at, find_target

    t = find_target(func, at=parse_at(at) if at else None, n=dim, depth=depth)
    kind = t.kind or kind_for(t.x, t.f(t.x))
    d = closed_form(t.f, t.x, kind)
    click.echo(f"f = {d.f}")
    click.echo(f"{kind} = {d.expression}")
    replacements, reduced = d.common_subexpressions()
    click.echo("after common-subexpression elimination:")
    for sym, rhs in replacements:
        click.echo(f"  {sym} = {rhs}")
    click.echo(f"  {kind} = {reduced[0] if len(reduced) == 1 else reduced}")
    s = d.sizes
    click.echo(f"size: {s['expr_nodes']} nodes as a tree, {s['expr_dag_nodes']} after CSE, "
               f"{s['count_ops']} operations (f itself: {s['f_expr_nodes']} nodes); "
               f"derived and compiled in {d.setup_s * 1e3:.1f} ms")
    if latex:
        click.echo(f"LaTeX: {d.latex()}")
    r = ENGINES[kind](t.f, t.x, method="richardson")
    click.echo(f"numeric (richardson) at {np.asarray(t.x).tolist()}: "
               f"{np.asarray(r.value).tolist()} ± {np.max(r.error):.2g}, step "
               f"{np.max(r.step):.3g}, {r.fevals} evaluations"
               + (f"; {'; '.join(r.notes)}" if r.notes else ""))
    exact = d(t.x)[1]
    click.echo(f"symbolic value there: {np.asarray(exact).tolist()}")


def _show_code(spec: str, at: str | None, dim: int | None, depth: int | None,
               optimized: bool) -> None:
    """The generated program of the gradient: the forward sweep, then the adjoint sweep.
    A formula of several variables gets one argument per variable (x1, x2 ...)."""
    import importlib.util

    import numpy as np

    from diffkit.compiler.kernel_ir import build
    from diffkit.compiler.driver import fusion_plan, kernel_routes
    from diffkit.compiler.scalar_vm import encode
    from diffkit.compiler.show import adjoint_program
    from diffkit.bench.formula import FormulaError, parse_formula
    from diffkit.bench.targets import find_target, parse_at

    t = find_target(spec, at=parse_at(at) if at else None, n=dim, depth=depth)
    try:
        formula = parse_formula(spec)
    except FormulaError:
        formula = None
    if formula is not None and len(formula.variables) > 1:
        fun, names = formula, list(formula.variables)
        args = tuple(np.float64(v) for v in np.asarray(t.x, dtype=float))
    else:
        fun, names, args = t.f, None, (t.x,)
    prog = adjoint_program(fun, args, names, reuse_buffers=optimized)
    shown = prog.graph.names()
    inputs = [shown[v] for v in prog.graph.inputs]
    value, *grads = prog(*args)
    click.echo(f"f = {spec} at " + ", ".join(f"{n}={np.asarray(a).tolist()}"
                                             for n, a in zip(inputs, args)))
    plan = (f"buffers reused: {prog.bytes_reused} bytes" if optimized else
            "one array per equation; --optimized shows the buffer plan")
    click.echo(f"generated forward and adjoint program ({prog.summary()}; {plan}; trace + "
               f"optimize + generate {prog.setup_s * 1e3:.1f} ms):\n")
    click.echo(prog.source)
    if importlib.util.find_spec("numba") is None:
        click.echo("fused (dk.jit(f, fuse=True)): needs the jit extra (pip install "
                   "'diffkit[jit]'); without it the program above runs\n")
    else:
        tape = encode(prog.graph)  # a scalar program runs on the tape VM
        plan = None if tape else kernel_routes(fusion_plan(prog.graph))
        click.echo(f"fused (dk.jit(f, fuse=True)): {tape.report() if tape else plan.report()}\n")
        if plan is not None and plan.kernels:
            click.echo("each kernel as typed operations (what the LLVM and Numba renderers read):")
            click.echo("\n".join(build(plan, k).listing() for k in plan.kernels) + "\n")
    click.echo(f"value: {np.asarray(value).tolist()}")
    for n, g in zip(inputs, grads):
        click.echo(f"{n}_bar = ∂f/∂{n} = {np.asarray(g).tolist()}")
    click.echo("The forward lines are the primal trace (v1, v2 ...), the rest the adjoint "
               "trace (v_bar), as in Baydin et al. (2018), Table 3.")
