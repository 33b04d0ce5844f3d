"""Row fusion: a matrix read once for ``A @ v``, a kernel of it, and ``A.T @ r``.

The gradient of a linear model's loss, ``sum(f(A @ w))``, is ``A.T @ f'(A @ w)``: two
matrix-vector products with the same ``A`` around an elementwise kernel. As three steps
the matrix travels through memory twice (it is the big operand: 10^4 x 100 is 8 MB,
while the vectors are 80 KB). When the kernel's only array is ``r`` and ``r`` only feeds
``A.T @ r``, one loop over the rows of ``A`` does all three, each row read once while it
is in cache:

    for i0 in range(n):
        ai = A[i0]
        u = 0.0
        for j in range(k):
            u += ai[j] * v[j]          # (A @ v)[i0]
        ...                            # the kernel at i0, reading u
        r = ...
        for j in range(k):
            g[j] += r * ai[j]          # g = A.T @ r, accumulated row by row

:func:`row_fusions` finds the kernels of a fusion plan that have that shape, in the form
the tracer gives ``A @ v`` for a vector ``v`` (``reshape(matmul(A, reshape(v, (k, 1))),
(n,))``) and its adjoint (``reshape(matmul(transpose(A), reshape(r, (n, 1))), (k,))``,
where a constant ``A``'s transpose is a constant equal to ``A.T``). :mod:`.kernels` writes
them. The sums are reassociated (``fastmath={'reassoc'}``, as every kernel's): results
agree with BLAS's to rounding, not to the bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .fusion import FusionPlan, Kernel
from .graph import Atom, Const, Eqn, Var

F64 = np.dtype(np.float64)


@dataclass(eq=False)
class RowFusion:
    """One kernel run inside a loop over the rows of ``matrix``."""

    kernel: Kernel
    matrix: Var | Const       # A, (n, k)
    vector: Var | Const       # v, (k,)
    product: Var              # u = A @ v, (n,): the kernel reads it at i0
    out: Var                  # g = A.T @ r, (k,): what the loop accumulates
    absorbed: set[Eqn] = field(default_factory=set)  # library equations it replaces


def row_fusions(plan: FusionPlan) -> dict[Kernel, RowFusion]:
    """The kernels of ``plan`` that run as row loops (float64 only, see module doc)."""
    graph = plan.graph
    made = {e.out: e for e in graph.eqns}
    users: dict[Var, list[Eqn]] = {}
    for e in graph.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                users.setdefault(a, []).append(e)
    outputs = {a for a in graph.outputs if isinstance(a, Var)}
    found = {}
    for k in plan.kernels:
        if len(k.domain) != 1 or len(k.outputs) != 1 or k.outputs[0].dtype != F64:
            continue
        r = k.outputs[0]
        after = _after(r, k.domain[0], made, users, outputs)
        if after is None:
            continue
        t, g, absorbed = after
        reads, reached = _reads(k, plan)
        for u in reads:
            before = _before(u, made, users, outputs, reached)
            if before is not None and _same_matrix(before[0], t, made):
                a, v, more = before
                absorbed |= more
                if isinstance(t, Var):
                    absorbed.add(made[t])
                found[k] = RowFusion(k, a, v, u, g, absorbed)
                break
    return found


def _only(v: Var, users: dict[Var, list[Eqn]], outputs: set[Var], name: str,
          **params: object) -> Eqn | None:
    """The one equation using ``v``, when it is ``name`` with these parameters."""
    us = users.get(v, [])
    if v in outputs or len(us) != 1 or us[0].prim.name != name:
        return None
    return us[0] if all(us[0].params.get(p) == x for p, x in params.items()) else None


def _after(r: Var, n: int, made: dict[Var, Eqn], users: dict[Var, list[Eqn]],
           outputs: set[Var]) -> tuple[Atom, Var, set[Eqn]] | None:
    """``reshape(matmul(T, reshape(r, (n, 1))), (k,))``: (T, its result, the 3 equations)."""
    col = _only(r, users, outputs, "reshape", shape=(n, 1))
    mm = col and _only(col.out, users, outputs, "matmul")
    if mm is None or mm.inputs[1] is not col.out or not isinstance(mm.inputs[0], (Var, Const)):
        return None
    t = mm.inputs[0]
    if len(t.shape) != 2 or t.shape[1] != n or t.dtype != F64:
        return None
    flat = _only(mm.out, users, outputs, "reshape", shape=(t.shape[0],))
    if flat is None or (isinstance(t, Var) and (len(users.get(t, [])) != 1 or t in outputs
                                                or made.get(t) is None)):
        return None
    return t, flat.out, {col, mm, flat}


def _reads(k: Kernel, plan: FusionPlan) -> tuple[list[Var], set[Var]]:
    """The (n,)-shaped float64 library values the kernel reads, and the values it computes."""
    reached: set[Var] = set()
    todo, found = [k.outputs[0], *(e.out for e in k.reductions)], []
    while todo:
        v = todo.pop()
        if v in reached:
            continue
        e = plan.fusible.get(v)
        if e is not None and plan.materialized.get(v, k.stage) >= k.stage:
            reached.add(v)
            todo += [a for a in e.inputs if isinstance(a, Var)]
        elif e is None and v.shape == k.domain and v.dtype == F64 and v not in found:
            found.append(v)
    return found, reached


def _before(u: Var, made: dict[Var, Eqn], users: dict[Var, list[Eqn]], outputs: set[Var],
            reached: set[Var]) -> tuple[Var | Const, Var | Const, set[Eqn]] | None:
    """``u = reshape(matmul(A, reshape(v, (k, 1))), (n,))`` used by this kernel only:
    (A, v, the 3 equations)."""
    flat = made.get(u)
    if u in outputs or flat is None or flat.prim.name != "reshape" \
            or not all(e.out in reached for e in users.get(u, [])):
        return None
    mm = made.get(flat.inputs[0]) if isinstance(flat.inputs[0], Var) else None
    if mm is None or mm.prim.name != "matmul" or len(users[mm.out]) != 1:
        return None
    a, col = mm.inputs
    e = made.get(col) if isinstance(col, Var) else None
    if e is None or e.prim.name != "reshape" or len(users[col]) != 1 or col in outputs:
        return None
    v = e.inputs[0]
    if not (isinstance(a, (Var, Const)) and isinstance(v, (Var, Const)) and len(a.shape) == 2
            and v.shape == (a.shape[1],) and a.dtype == v.dtype == F64):
        return None
    return a, v, {flat, mm, e}


def _same_matrix(a: Var | Const, t: Atom, made: dict[Var, Eqn]) -> bool:
    """Is ``t`` the transpose of ``a`` (an equation; for constants, equal to ``a.T``)?"""
    if isinstance(t, Var):
        e = made.get(t)
        return e is not None and e.prim.name == "transpose" and e.inputs[0] is a \
            and tuple(e.params.get("axes") or (1, 0)) == (1, 0)
    if not isinstance(a, Const) or not isinstance(t, Const):
        return False
    x, y = np.asarray(a.value), np.asarray(t.value)
    return y.shape == x.shape[::-1] and bool(np.array_equal(y, x.T))


__all__ = ["RowFusion", "row_fusions"]
