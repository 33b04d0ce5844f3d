"""Kinks: points where f's closed form has no derivative, so no answer can be judged right.

``|x|`` at 0, ``relu`` at 0, ``sign`` and ``floor`` at their jumps, a tie of
``max(a, b)``, a ``where`` whose condition sits on its boundary with branches that leave
it at different slopes: there the exact derivative is undefined, and the reference's
number (SymPy's convention, e.g. ``d|x|/dx = sign(x) = 0``) is one choice among several.
A comparison at such a point says ``kink`` instead of judging errors against it.

>>> import sympy as sp
>>> x = sp.Symbol("x", real=True)
>>> kink([sp.Abs(x) + x], {x: 0.0}, 30)
'Abs(x) at x = 0'
>>> kink([sp.Abs(x)], {x: 1e-8}, 30)
''
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sympy as sp

from ..interpreters.symbolic import Select, evaluate_at

JUMPS = (sp.Abs, sp.sign, sp.Heaviside, sp.floor, sp.ceiling)


def kink(exprs: Iterable[Any], point: dict, dps: int) -> str:
    """A description of the first kink of ``exprs`` at ``point``, or ``""`` if none."""
    def at(e: Any) -> float:
        return evaluate_at(e, point, dps)

    for e in exprs:
        e = sp.sympify(e)
        for node in e.atoms(*JUMPS):
            v = at(node.args[0])
            if v == (round(v) if node.func in (sp.floor, sp.ceiling) else 0.0):
                return f"{node} at {node.args[0]} = {v:g}"
        for node in e.atoms(sp.Max, sp.Min):
            values = [at(a) for a in node.args]
            best = max(values) if node.func is sp.Max else min(values)
            if values.count(best) > 1:
                return f"{node}: a tie at {best:g}"
        for node in e.atoms(sp.Piecewise, Select):
            pairs = [(c, b) for b, c in node.args] if isinstance(node, sp.Piecewise) \
                else [(node.args[0], node.args[1]), (sp.true, node.args[2])]
            for (cond, branch), (_, other) in zip(pairs, pairs[1:]):
                if _on_boundary(cond, at) and _slopes_differ(branch, other, at):
                    return f"the condition {cond} on its boundary"
    return ""


def _on_boundary(cond: Any, at: Any) -> bool:
    """A comparison whose two sides are equal at the point."""
    return isinstance(cond, sp.core.relational.Relational) and at(cond.lhs - cond.rhs) == 0.0


def _slopes_differ(a: Any, b: Any, at: Any) -> bool:
    """Two branches that meet with different values or different first derivatives."""
    gap = a - b
    return at(gap) != 0.0 or any(at(sp.diff(gap, s)) != 0.0 for s in gap.free_symbols)
