"""Operator fusion: which equations of an optimized graph run together as one loop.

Elementwise and broadcast equations (``sin``, ``mul``, ``where`` ...), views that only
shift indices (``x[1:]``, ``broadcast_to``) and the adjoints of those views
(``scatter_add`` of a slice) are *fusible*: each element of their result is a formula
of a few elements of their operands. A :class:`Kernel` is one loop over an index
domain; inside it every fusible value is recomputed at the index where it is needed,
so intermediates never travel through memory. A full ``sum`` of a fusible value is
fused into the loop that produces it (an accumulator), and so is a sum over some of its
axes, each element added to its place in the result (a bias's gradient ``g.sum(axis=0)``
row after row, in numpy's order; a row sum ``exp(z).sum(axis=1)``, reassociated as a full
sum is). ``matmul``, other reductions and library calls stay library calls, as do 0-d
(scalar) lines.

The adjoint of a shifted slice is taken in *gather* form: ``g[j]`` reads ``x[j-1],
x[j], x[j+1]`` and is written once, instead of zero-filling ``g`` and scattering into
it (the scatter form makes a second pass over ``g``). This comes for free from the
index view: ``scatter_add(u, idx=(slice(1, None),))`` at ``j`` is ``u[j-1]`` when
``j >= 1``, else 0.

Values are *materialized* (written to an array) where something outside the loops
needs them: a graph output or a library call. Kernels are ordered in *stages*: stage k
runs once every library call it depends on has run. A value a later stage reads is
recomputed there only while that is cheap (:data:`RECOMPUTE_LIMIT`), else its own
stage writes it once: a loop-carried value (an integrator's state, step after step of
library calls) is not recomputed from the start in every later stage.

>>> import numpy as np, diffkit.numpy as dnp
>>> from diffkit.compiler.show import adjoint_program
>>> rosen = lambda x: dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
>>> print(fuse(adjoint_program(rosen, (np.ones(5),)).graph).report())
1 kernel, 0 library calls: k0 = 19 ops over (5,) -> x_bar, sum->v10
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import primitives as P
from . import formulas
from ..ir.graph import Atom, Const, Eqn, Graph, Var

#: the primitives a fused kernel computes as index maps (no new value: a view of an operand,
#: or the adjoint of a slice, a gather)
INDEX_MAPS = frozenset({P.getitem, P.broadcast_to, P.scatter_add})
#: a value computed in one stage and read by a kernel of a later stage is computed again
#: there when that costs at most this much work (in arithmetic operations, a C library call
#: :data:`.formulas.CALL_WORK`; see :func:`recompute_work`), else written to memory once by
#: its own stage: about what writing and reading it back costs (docs/compiled.md, "What a
#: kernel recomputes")
RECOMPUTE_LIMIT = 8
#: a kernel evaluating more fused operations than this is cut into several, values written
#: at the cuts (:func:`cuts`): LLVM's code generation grows faster than the loop body it
#: compiles (bodies of 2,400, 6,000 and 18,000 operations took 2, 10 and 90 s), and bodies
#: of this size take ~0.1-0.2 s each, so a long program compiles in time linear in its size
KERNEL_OPS = 512


@dataclass(frozen=True)
class MatvecPair:
    """``rows = matrix @ vector`` (read by a kernel) and ``out = matrixᵀ @ grad`` (``grad``
    one of the kernel's outputs), computed by the kernel in one pass over the matrix
    (found by :func:`.matvec.pair_products`)."""

    matrix: Atom
    vector: Atom
    rows: Var
    grad: Var
    out: Var


@dataclass(eq=False)
class Kernel:
    """One fused loop over ``domain``: the arrays it writes and the sums it accumulates."""

    name: str
    stage: int
    domain: tuple[int, ...]
    outputs: list[Var] = field(default_factory=list)      # materialized arrays
    reductions: list[Eqn] = field(default_factory=list)   # full sums, fused as accumulators
    partials: list[Eqn] = field(default_factory=list)     # sums over some axes (arrays)
    ops: int = 0                                          # fusible equations it evaluates
    route: str = ""                                       # "llvm", "numba", "numba prange"
    matvec: MatvecPair | None = None                      # X @ w in, Xᵀ @ g out (.matvec)

    def describe(self, names: dict[Var, str]) -> str:
        made = [names[v] for v in self.outputs] + [f"sum->{names[e.out]}"
                                                   for e in self.reductions]
        made += [f"sum{list(summed_axes(e))}->{names[e.out]}" for e in self.partials]
        pair = "" if self.matvec is None else " with {} @ {} and its transpose".format(
            *(names.get(a, "const") for a in (self.matvec.matrix, self.matvec.vector)))
        return (f"{self.name} = {self.ops} ops over {self.domain}{pair} -> {', '.join(made)}"
                + (f" [{self.route}]" if self.route else ""))


@dataclass(eq=False)
class FusionPlan:
    """The program as steps: kernels and library equations, in an order that runs."""

    graph: Graph
    steps: list[Kernel | Eqn]
    fusible: dict[Var, Eqn]
    materialized: dict[Var, int]  # a value written by a kernel -> its stage

    @property
    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel)]

    @property
    def library(self) -> list[Eqn]:
        return [s for s in self.steps if isinstance(s, Eqn)]

    def report(self) -> str:
        """``2 kernels, 1 library call: k0 = 7 ops over (999999,) -> sum; ...``."""
        names = self.graph.names()
        ks, lib = self.kernels, self.library
        head = (f"{len(ks)} kernel{'s' * (len(ks) != 1)}, {len(lib)} library "
                f"call{'s' * (len(lib) != 1)}")
        return head + (": " + "; ".join(k.describe(names) for k in ks) if ks else "")


def basic_index(idx: tuple, shape: Sequence[int]) -> list[tuple] | None:
    """Per axis of the indexed array: ``("slice", start, stop)`` (step 1), ``("int", k)``,
    and ``("new",)`` for each ``None``; or None when the index is not of that form.

    >>> basic_index((slice(1, None),), (5,))
    [('slice', 1, 5)]
    >>> basic_index((Ellipsis, 0), (2, 3)), basic_index((slice(None, None, 2),), (4,))
    ([('slice', 0, 2), ('int', 0)], None)
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    if not all(i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer))
               for i in idx) or sum(i is Ellipsis for i in idx) > 1:
        return None  # arrays, masks: a gather numpy does better
    named = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if named > len(shape):
        return None
    at = next((k for k, i in enumerate(idx) if i is Ellipsis), None)
    if at is not None:
        idx = idx[:at] + (slice(None),) * (len(shape) - named) + idx[at + 1:]
    else:
        idx = idx + (slice(None),) * (len(shape) - named)
    out, axis = [], 0
    for i in idx:
        if i is None:
            out.append(("new",))
            continue
        n = shape[axis]
        axis += 1
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step != 1:
                return None
            out.append(("slice", start, max(start, stop)))
        elif isinstance(i, (int, np.integer)) and not isinstance(i, bool) and -n <= i < n:
            out.append(("int", int(i) % n))
        else:
            return None
    return out


def fusible(e: Eqn) -> bool:
    """Can ``e`` be computed element by element inside a loop (or accumulated in one)?"""
    out = e.out
    if out.dtype.kind not in "biuf" or any(
            isinstance(a, (Var, Const)) and a.dtype.kind not in "biuf" for a in e.inputs):
        return False
    prim = e.prim
    if prim is P.sum:
        x = e.inputs[0]
        return (isinstance(x, Var) and len(x.shape) > 0 and out.shape == ()
                and out.dtype.kind == "f" and not e.params.get("keepdims")) or \
            summed_axes(e) is not None
    if out.shape == () or 0 in out.shape:
        return False  # scalars stay plain lines; empty arrays need no loop
    f = formulas.of(e)
    if f is not None:  # the C library's functions on floats only
        return all(a.dtype.kind == "f" for a in (out, *e.inputs)
                   if isinstance(a, (Var, Const))) or "call" not in formulas.kinds(f)
    if prim is P.broadcast_to:  # of an array, or a fill (one number everywhere)
        return isinstance(e.inputs[0], (Var, Const, int, float))
    if prim is P.getitem:
        x = e.inputs[0]
        return isinstance(x, (Var, Const)) and basic_index(e.params["idx"], x.shape) is not None
    if prim is P.scatter_add:
        return basic_index(e.params["idx"], e.params["shape"]) is not None
    return False


def summed_axes(e: Eqn) -> tuple[int, ...] | None:
    """The axes a float ``sum`` reduces into an array: some of its operand's axes (a sum
    over rows, over an image's pixels ...), or all of them with ``keepdims``; else None.

    >>> from diffkit.ir.graph import Var
    >>> from diffkit.primitives import sum as sum_
    >>> g = Var(1, (5, 4, 3), np.dtype(np.float64))
    >>> summed_axes(Eqn(sum_, (g,), Var(2, (4,), g.dtype), {"axis": (-1, 0)}))
    (0, 2)
    """
    x, axis = e.inputs[0], e.params.get("axis")
    if e.prim is not P.sum or not isinstance(x, Var) or axis is None or \
            e.out.dtype.kind != "f" or 0 in e.out.shape:
        return None
    nd = len(x.shape)
    axes = tuple(sorted({a % nd for a in ((axis,) if isinstance(axis, int) else axis)}))
    return axes if 0 < len(axes) < nd or (axes and e.out.shape) else None


def in_order(axes: tuple[int, ...], nd: int) -> bool:
    """A sum over leading axes (not all ``nd``) adds row after row, as numpy does (its
    result to the bit); any other is reassociated, as a full sum is (it vectorizes)."""
    return len(axes) < nd and axes == tuple(range(len(axes)))


def fuse(graph: Graph, barriers: frozenset[Var] = frozenset()) -> FusionPlan:
    """Group the graph's fusible equations into kernels; the rest are library calls. Each
    of ``barriers`` is written to memory by its kernel and read by the next stage instead
    of being recomputed where it is needed (see :func:`shifted_sources`); so is a value
    that kernels of several stages would compute, at more than :data:`RECOMPUTE_LIMIT`
    (:func:`written_once`)."""
    fus = {e.out: e for e in graph.eqns if fusible(e)}
    reductions = {v for v, e in fus.items() if e.prim is P.sum}
    needed: set[Var] = {a for a in graph.outputs if isinstance(a, Var)}
    for e in graph.eqns:
        if e.out not in fus:
            needed.update(a for a in e.inputs if isinstance(a, Var))
    level: dict[Var, int] = {v: 0 for v in graph.inputs}
    materialized: dict[Var, int] = {}
    lib_level: dict[Eqn, int] = {}
    roots: dict[int, list[Eqn]] = {}
    for e in graph.eqns:
        lv = max((level[a] for a in e.inputs if isinstance(a, Var)), default=0)
        if e.out in reductions:
            roots.setdefault(lv, []).append(e)
            materialized[e.out] = lv
            level[e.out] = lv + 1
        elif e.out in fus:
            level[e.out] = lv + (e.out in barriers)
            if e.out in needed or e.out in barriers:
                materialized[e.out] = lv
                roots.setdefault(lv, []).append(e)
        else:
            level[e.out] = lv + 1
            lib_level[e] = lv + 1
    domains = {lv: [root_shape(e) for e in rs] for lv, rs in roots.items()}
    for v in written_once(graph, fus, level, materialized, domains):
        materialized[v] = level[v]
        roots.setdefault(level[v], []).append(fus[v])
    calls: dict[int, list[Eqn]] = {}  # the library calls after each stage, in graph order
    for e in graph.eqns:
        if e in lib_level:
            calls.setdefault(lib_level[e], []).append(e)
    steps: list[Kernel | Eqn] = []
    count = 0
    for stage in range(max([*roots, *lib_level.values(), 0]) + 1):
        for group in _groups(roots.get(stage, [])):
            k = Kernel(f"k{count}", stage, _domain(group))
            count += 1
            for e in group:
                if e.out not in reductions:
                    k.outputs.append(e.out)
                else:
                    (k.partials if e.out.shape else k.reductions).append(e)
            k.ops = len(reached(group, fus, materialized, stage))
            steps.append(k)
        steps += calls.get(stage + 1, [])
    return FusionPlan(graph, steps, fus, materialized)


def written_once(graph: Graph, fus: dict[Var, Eqn], level: dict[Var, int],
                 materialized: dict[Var, int],
                 domains: dict[int, list[tuple[int, ...]]] | None = None) -> list[Var]:
    """The computed values to write to memory, in their own stage (``level``), beyond the
    ``materialized`` ones (written by the kernel of the stage each names): those a kernel
    of a later stage reads, at a cost past :data:`RECOMPUTE_LIMIT` to compute there
    (:func:`recompute_work`), that kernels of more than one stage would compute (each
    recomputing it where it is not written), or that a kernel of their own stage can
    write in the loop it makes anyway (``domains``: the shapes each stage's kernels loop
    over), so that writing costs a store and a load, less than the work. A loop-carried
    value (a state updated step after step, between library calls) is of the first kind:
    recomputed, each step's kernel would compute every step before it again. The MLP's
    derivative of ``tanh`` is of the second: computed beside ``tanh``, in the forward
    kernel, it shares that kernel's exponential and the gradient's kernel reads it alone.

    Two walks: backwards, the first and last stage whose kernels evaluate each value;
    forwards, for each equation reading a value of an earlier stage, the decision, with
    the values already written then (so a chain written every few steps costs at most the
    limit per step).
    """
    spans: dict[Var, tuple[int, int]] = {}
    for e in reversed(graph.eqns):
        span = (materialized[e.out],) * 2 if e.out in materialized else spans.get(e.out)
        if e.out not in fus or span is None:
            continue
        for a in e.inputs:
            if isinstance(a, Var) and a in fus:
                lo, hi = spans.get(a, span)
                spans[a] = (min(lo, span[0]), max(hi, span[1]))
    written = dict(materialized)
    out = []
    for e in graph.eqns:
        if e.out not in fus:
            continue
        lv = max((level[a] for a in e.inputs if isinstance(a, Var)), default=0)
        for a in e.inputs:
            a = _source(a, fus, written)
            lo, hi = spans.get(a, (lv, lv))  # (a value no kernel evaluates: no stage)
            if a is not None and level[a] < lv and \
                    (lo < hi or _looped(a.shape, (domains or {}).get(level[a], ()))) and \
                    recompute_work(a, fus, written) > RECOMPUTE_LIMIT:
                written[a] = level[a]
                out.append(a)
    return out


def _looped(shape: tuple[int, ...], domains: Sequence[tuple[int, ...]]) -> bool:
    """Does a kernel looping over one of ``domains`` loop over ``shape`` too (the
    grouping rule of :func:`_groups`)?"""
    return any(len(d) == len(shape) and all(abs(a - b) <= 2 for a, b in zip(shape, d))
               for d in domains)


def _source(a: Atom, fus: dict[Var, Eqn], materialized: dict[Var, int]) -> Var | None:
    """The value a kernel reading ``a`` computes: ``a`` itself, or for a view (or a
    slice's adjoint) of a computed value, that value; None when nothing is computed (an
    input, a library call's result, a value written to memory, a number)."""
    while isinstance(a, Var) and a in fus and a not in materialized:
        e = fus[a]
        if e.prim not in INDEX_MAPS:
            return a
        a = e.inputs[0]
    return None


def recompute_work(v: Var, fus: dict[Var, Eqn], materialized: dict[Var, int],
                   limit: int = RECOMPUTE_LIMIT) -> int:
    """The work of computing ``v`` again in a kernel of a later stage: the formulas
    (:func:`.formulas.work`) of ``v`` and of the values it is made of that no kernel writes
    to memory, each once (a kernel computes a value once per index); counted up to just
    past ``limit``.

    >>> import numpy as np, diffkit.numpy as dnp
    >>> from diffkit.ir.tracer import trace_graph
    >>> g = trace_graph(lambda x: dnp.sin(x * 2.0)[1:] + x[:-1], (np.ones(3),))
    >>> fus = {e.out: e for e in g.eqns if fusible(e)}
    >>> recompute_work(g.eqns[-1].out, fus, {}, limit=100)  # add, a view, sin (a call), mul
    10
    >>> recompute_work(g.eqns[-1].out, fus, {})  # past the limit after the sin: stop there
    9
    """
    total, seen, todo = 0, set(), [v]
    while todo and total <= limit:
        u = todo.pop()
        if u in seen or u not in fus or u in materialized:
            continue
        seen.add(u)
        f = formulas.of(fus[u])
        total += 0 if f is None else formulas.work(f)
        todo += [a for a in fus[u].inputs if isinstance(a, Var)]
    return total


def shifted_sources(plan: FusionPlan) -> frozenset[Var]:
    """The computed values that views read at shifted indices (``u[1:]`` of a computed
    ``u``, a slice's adjoint). A kernel recomputes such a value at each index a view
    shifts it to, so a chain of them (a stencil's steps: ``u[i-1], u[i], u[i+1]`` of the
    step before, a hundred times over) multiplies the work by three per step; written to
    memory instead, each step is one loop that reads the last.

    >>> import numpy as np, diffkit.numpy as dnp
    >>> from diffkit.ir.tracer import trace_graph
    >>> def f(x):
    ...     s = dnp.sin(x)
    ...     return s[1:] * s[:-1] + x[1:]
    >>> [str(v.shape) for v in shifted_sources(fuse(trace_graph(f, (np.ones(5),))))]
    ['(5,)']
    """
    fus = plan.fusible
    return frozenset(a for e in fus.values() if e.prim in (P.getitem, P.scatter_add)
                     for a in e.inputs[:1]
                     if isinstance(a, Var) and a in fus and fus[a].prim not in INDEX_MAPS)


def cuts(plan: FusionPlan) -> frozenset[Var]:
    """Values to write so that no kernel evaluates more than :data:`KERNEL_OPS` operations:
    along each larger kernel's values in program order, one at every :data:`KERNEL_OPS`
    (a computed value, not a view); what a later part still reads of the earlier ones
    is written or recomputed as :func:`written_once` decides.

    >>> import numpy as np, diffkit.numpy as dnp
    >>> from diffkit.ir.tracer import trace_graph
    >>> def chain(x):
    ...     for _ in range(400):
    ...         x = dnp.sin(x) * 0.5
    ...     return x
    >>> plan = fuse(trace_graph(chain, (np.ones(4),)))
    >>> [k.ops for k in plan.kernels], len(cuts(plan))
    ([800], 1)
    >>> [k.ops for k in fuse(plan.graph, cuts(plan)).kernels]
    [512, 288]
    """
    order = {e.out: k for k, e in enumerate(plan.graph.eqns)}
    out: set[Var] = set()
    for k in plan.kernels:
        if k.ops <= KERNEL_OPS:
            continue
        roots = [plan.fusible[v] for v in k.outputs] + k.reductions + k.partials
        values = sorted(reached(roots, plan.fusible, plan.materialized, k.stage), key=order.get)
        since = 0
        for v in values:
            since += 1
            if since >= KERNEL_OPS and plan.fusible[v].prim not in INDEX_MAPS and \
                    plan.fusible[v].prim is not P.sum:
                out.add(v)
                since = 0
    return frozenset(out)


def root_shape(e: Eqn) -> tuple[int, ...]:
    """The index space a root is computed over (a sum's: its operand's)."""
    return e.inputs[0].shape if e.prim is P.sum else e.out.shape


def _groups(roots: list[Eqn]) -> list[list[Eqn]]:
    """Roots of one stage, grouped by rank when their shapes differ by at most 2 per axis
    (shifted slices of one array): one loop each, guarded where a root is smaller."""
    groups: list[list[Eqn]] = []
    for e in roots:
        s = root_shape(e)
        for g in groups:
            if _looped(s, [root_shape(g[0])]):
                g.append(e)
                break
        else:
            groups.append([e])
    return groups


def _domain(group: list[Eqn]) -> tuple[int, ...]:
    return tuple(int(m) for m in np.max([root_shape(e) for e in group], axis=0))


def reached(group: list[Eqn], fus: dict[Var, Eqn], materialized: dict[Var, int],
             stage: int) -> set[Var]:
    """The fusible values a kernel evaluates (values written by earlier stages are read)."""
    seen: set[Var] = set()
    todo = [e.out for e in group]
    while todo:
        v = todo.pop()
        if v in seen or v not in fus or materialized.get(v, stage) < stage:
            continue
        seen.add(v)
        todo += [a for a in fus[v].inputs if isinstance(a, Var)]
    return seen


def operand_index(e: Eqn, k: int, idx: tuple) -> tuple:
    """Map an output index of elementwise/broadcast ``e`` to its operand ``k``'s index
    (numpy broadcasting: trailing axes align, axes of length 1 read element 0)."""
    a: Atom = e.inputs[k]
    shape = a.shape if isinstance(a, (Var, Const)) else ()
    lead = len(idx) - len(shape)
    return tuple(("c", 0) if n == 1 and e.out.shape[lead + d] != 1 else idx[lead + d]
                 for d, n in enumerate(shape))


__all__ = ["KERNEL_OPS", "RECOMPUTE_LIMIT", "FusionPlan", "cuts", "Kernel", "MatvecPair", "basic_index", "fuse",
           "fusible", "in_order", "recompute_work", "summed_axes", "operand_index", "root_shape",
           "shifted_sources", "written_once"]
