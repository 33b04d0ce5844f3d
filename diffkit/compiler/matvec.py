"""One pass over a matrix for both its products: ``X @ w`` into a kernel, the kernel's
output ``g`` into ``Xᵀ @ g``.

The gradient of a loss over the rows of a data matrix (a linear or logistic model, the
last layer of a network) reads ``X`` twice: once for ``q = X @ w``, once for
``Xᵀ @ g`` after an elementwise loop has turned ``q`` into ``g``. Both products are
memory-bound (two flops per element of ``X`` read), so on a matrix larger than the cache
each one costs a full pass over memory, and the library calls cannot share it. Here the
kernel takes both over, in blocks of rows small enough to stay in the cache:

    for each block of rows:
        q[r] = X[r, :] · w              for r in the block    (a vectorized dot)
        the kernel's loop               for r in the block    (as without the products)
        z += g[r] · X[r, :]             for r in the block    (X's block still in cache)

so ``X`` is read from memory once, and within a block from the cache. Measured on one
core of this machine (``python benchmarks/matvec.py``: the logistic loss's gradient, 100
columns, against the same program with the two library products), the paired program
takes 0.6-0.65x the time once X outgrows the cache (76 MB) and 0.75-0.9x below that (0.1 to
23 MB), where it still saves the second call and the rows' round trip.
:func:`pair_products` finds the pattern in a fusion plan and hands the products to the
kernel (:attr:`~.fusion.Kernel.matvec`); the kernel's typed program states them
(:class:`~.kernel_ir.MatvecLoops`) with one order of addition, four lanes of columns then
the rest, which both renderers (:mod:`.llvm_kernels`: the lanes as one vector;
:mod:`.numba_kernels`: as four sums) follow to the bit. The values agree with the library's
products to rounding (BLAS adds in an order of its own).

>>> import numpy as np, diffkit as dk, diffkit.numpy as dnp
>>> from diffkit.compiler.fusion import fuse
>>> from diffkit.compiler.show import adjoint_program
>>> X, y = np.ones((6, 3)), np.ones(6)
>>> loss = lambda w: dnp.sum(dnp.log1p(dnp.exp(-y * (X @ w))))
>>> print(pair_products(fuse(adjoint_program(loss, (np.ones(3),)).graph)).report())
1 kernel, 2 library calls: k0 = 8 ops over (6,) with const @ v1 and its transpose -> v3_bar, v1_bar, sum->v7
"""

from __future__ import annotations

import numpy as np

from .. import primitives as P
from .fusion import FusionPlan, Kernel, MatvecPair, reached
from ..ir.graph import Atom, Const, Eqn, Var

F64 = np.dtype(np.float64)


def _users(plan: FusionPlan) -> dict[Var, list[Eqn]]:
    users: dict[Var, list[Eqn]] = {}
    for e in plan.graph.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                users.setdefault(a, []).append(e)
    return users


def _is_float_matrix(a: Atom) -> bool:
    return isinstance(a, (Var, Const)) and len(a.shape) == 2 and a.dtype == F64


def _through_reshape(v: Var, users: dict[Var, list[Eqn]], shape: tuple) -> tuple[Var, list]:
    """``v`` itself if of ``shape``, else its one reshape to ``shape`` (and that equation)."""
    if v.shape == shape:
        return v, []
    used = users.get(v, [])
    if len(used) == 1 and used[0].prim is P.reshape and used[0].out.shape == shape:
        return used[0].out, [used[0]]
    return v, None


def _transposed(t: Atom, x: Atom, made: dict[Var, Eqn]) -> list[Eqn] | None:
    """The equations making ``t`` = ``x``'s transpose ([] for a constant equal to the
    other's transpose: folding made it), or None when ``t`` is not that."""
    if isinstance(t, Const) and isinstance(x, Const):
        tv, xv = np.asarray(t.value), np.asarray(x.value)
        return [] if tv.shape == xv.shape[::-1] and np.array_equal(tv, xv.T) else None
    e = made.get(t) if isinstance(t, Var) else None
    if e is not None and e.prim is P.transpose and e.inputs[0] is x and \
            tuple(e.params.get("axes") or (1, 0)) == (1, 0):
        return [e]
    return None


def _pair(plan: FusionPlan, k: Kernel, product: Eqn, users: dict, made: dict
          ) -> tuple[MatvecPair, list[Eqn]] | None:
    """The pair around kernel ``k`` starting at library ``product`` = X @ w, if any."""
    (m,) = k.domain
    X, w = product.inputs
    if not (_is_float_matrix(X) and X.shape[0] == m and isinstance(w, (Var, Const))
            and w.shape in ((X.shape[1],), (X.shape[1], 1))):
        return None
    rows, extra = _through_reshape(product.out, users, (m,))
    if extra is None or rows.shape != (m,) or rows in plan.graph.outputs or any(
            e.out not in plan.fusible for e in users.get(rows, [])):
        return None
    for g in k.outputs:
        if g.shape != (m,) or g.dtype != F64:
            continue
        columns = [(g, [])] + [(e.out, [e]) for e in users.get(g, [])
                               if e.prim is P.reshape and e.out.shape == (m, 1)]
        for g_col, reshaped in columns:
            for back in users.get(g_col, []):
                if back.prim is not P.matmul or back.inputs[1] is not g_col:
                    continue
                made_t = _transposed(back.inputs[0], X, made)
                if made_t is None or any(u is not back for t in made_t
                                         for u in users.get(t.out, [])):
                    continue
                if len(users.get(g_col, [])) > 1:  # the column is read elsewhere too: kept
                    reshaped = []
                pair = MatvecPair(X, w, rows, g, back.out)
                return pair, [product, *extra, *reshaped, *made_t, back]
    return None


def pair_products(plan: FusionPlan) -> FusionPlan:
    """``plan`` with each 1-D float64 kernel between ``X @ w`` and ``Xᵀ @ g`` (``g`` its
    output) computing both products itself (:class:`MatvecPair`); the library calls
    they replace leave the plan."""
    users = _users(plan)
    made = {e.out: e for e in plan.graph.eqns}
    evaluated = {k.name: reached([plan.fusible[v] for v in k.outputs] + k.reductions + k.partials,
                                  plan.fusible, plan.materialized, k.stage)
                 for k in plan.kernels}
    gone: set[int] = set()
    for k in plan.kernels:
        if len(k.domain) != 1 or k.matvec is not None:
            continue
        for product in plan.library:
            if product.prim is not P.matmul or id(product) in gone:
                continue
            found = _pair(plan, k, product, users, made)
            if found is not None and all(  # no other kernel reads the rows
                    e.out in evaluated[k.name] and not any(
                        e.out in seen for name, seen in evaluated.items() if name != k.name)
                    for e in users.get(found[0].rows, [])):
                k.matvec, dropped = found
                k.outputs.append(k.matvec.out)
                gone.update(id(e) for e in dropped)
                break
    plan.steps = [s for s in plan.steps if id(s) not in gone]
    return plan


__all__ = ["pair_products"]
