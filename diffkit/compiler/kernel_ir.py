"""One fused kernel as a small typed program: what both kernel renderers read.

A :class:`~.fusion.Kernel` is a loop nest over its domain; :func:`build` writes the body
of its innermost loop as a list of :class:`Instr`: each computes one value (``result``,
of ``dtype``) from operands that are earlier results, scalar parameters or numbers.
The operations are the lowering registry's scalar operations
(:data:`~diffkit.primitives.lowering.OPS`: an equation becomes the instructions of its
formula) and five of the loop's own:

* ``load``: ``(array, index)``, the element of an input array at an index whose axes are
  ``("i", axis, offset)`` (the loop variable plus an offset) or ``("c", k)``;
* ``store``: ``(out, value)``, the value into an output array at the loop's index;
* ``add_to``: ``(k, value)``, the value added to the kernel's sum ``k``;
* ``add_at``: ``(out, value, index, in_order)``, the value added to an output's element
  (a sum over some axes: the index without them, or with 0 for them where the sum keeps
  them); reassociated unless ``in_order`` (see :func:`.fusion.in_order`);
* ``set``: ``(value,)``, a mutable value set again inside a test (a slice's adjoint);
* ``if``: ``(tests, body)``, ``body`` only where every test ``(axis, "<" | ">=", bound)``
  on the loop variables holds (the edges of shifted slices).

Every fused value is computed at the index where it is needed, once per scope, so
intermediates never travel through memory. Nothing here is text: :mod:`.llvm_kernels`
renders the list as LLVM IR, :mod:`.numba_kernels` as Numba source.

>>> import numpy as np, diffkit.numpy as dnp
>>> from diffkit.compiler.fusion import fuse
>>> from diffkit.ir.tracer import trace_graph
>>> plan = fuse(trace_graph(lambda x: dnp.sigmoid(x) * x, (np.ones(4),)))
>>> print(build(plan, plan.kernels[0]).listing())
k0(a0: f64[4], o0: f64[4] out) over (4,):
  t1: f64 = load(a0, [i0])
  t2: bool = greater_equal(t1, 0.0)
  t3: f64 = fabs(t1)
  t4: f64 = neg(t3)
  t5: f64 = exp(t4)
  t6: f64 = select(t2, 1.0, t5)
  t7: f64 = add(1.0, t5)
  t8: f64 = div(t6, t7)
  t9: f64 = mul(t8, t1)
  store(o0, t9)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .. import primitives as P
from ..primitives.lowering import OPS, ScalarExpr
from . import formulas
from .fusion import (INDEX_MAPS, FusionPlan, Kernel, basic_index, in_order, operand_index,
                     root_shape, summed_axes)
from ..ir.graph import Atom, Const, Eqn, Var

BOOL = np.dtype(np.bool_)
Operand = Union[str, int, float, bool]   # a result's or scalar parameter's name, or a number
Index = tuple  # per axis: ("i", axis, offset) = loop variable + offset, or ("c", k)


@dataclass(frozen=True)
class Instr:
    """One operation of a kernel's body (see the module doc for ``op`` and ``args``)."""

    op: str
    result: str | None
    args: tuple
    dtype: np.dtype | None

    def text(self, depth: int = 1) -> list[str]:
        pad = "  " * depth
        if self.op == "if":
            tests, body = self.args
            head = " and ".join(f"i{a} {cmp} {n}" for a, cmp, n in tests)
            return [f"{pad}if {head}:", *(line for i in body for line in i.text(depth + 1))]
        args = [f"[{', '.join(index_text(i) for i in a)}]" if isinstance(a, tuple) else str(a)
                for a in self.args]
        call = f"{self.op}({', '.join(args)})"
        return [f"{pad}{self.result}: {short(self.dtype)} = {call}" if self.result else pad + call]


@dataclass(frozen=True)
class Param:
    """A kernel argument: an input ``array`` or ``scalar`` (``a0, a1 ...``) or an ``out``
    array it writes (``o0 ...``)."""

    name: str
    kind: str
    dtype: np.dtype
    shape: tuple[int, ...]


@dataclass(frozen=True)
class MatvecLoops:
    """A kernel's matrix-vector pair (:mod:`.matvec`), each field a parameter's name:
    ``rows = matrix @ vector`` before the kernel's loop, ``out = matrixᵀ @ grad`` after it.
    Both renderers add in this one order, so their results agree to the bit: ``rows[r]``
    in ``lanes`` partial sums, lane k taking the columns j ≡ k (mod lanes) of the whole
    groups in increasing j, the lanes added left to right, then the remaining columns in
    order; ``out[j]`` over the rows in increasing r; no fused multiply-add."""

    matrix: str
    vector: str
    rows: str
    grad: str
    out: str
    lanes: int = 4


@dataclass(eq=False)
class KernelIR:
    """A kernel's loop nest (``domain``), parameters, body and number of sums; ``atoms``
    are the graph's values passed for the input parameters, in order."""

    name: str
    domain: tuple[int, ...]
    params: list[Param]
    body: list[Instr]
    sums: int
    atoms: list[Atom]
    matvec: MatvecLoops | None = None

    def instructions(self) -> list[Instr]:
        """Every instruction, those inside tests included."""
        out, todo = [], list(self.body)
        while todo:
            i = todo.pop(0)
            out.append(i)
            if i.op == "if":
                todo[:0] = list(i.args[1])
        return out

    def listing(self) -> str:
        params = ", ".join(f"{p.name}: {short(p.dtype)}{list(p.shape) if p.shape else ''}"
                           f"{' out' if p.kind == 'out' else ''}" for p in self.params)
        lines = [f"{self.name}({params}) over {self.domain}:"]
        if self.matvec:
            mv = self.matvec
            lines.append(f"  by blocks of rows: {mv.rows} = {mv.matrix} @ {mv.vector}, the "
                         f"loop, {mv.out} += {mv.matrix}ᵀ @ {mv.grad}")
        lines += [line for i in self.body for line in i.text()]
        return "\n".join(lines + ([f"  return {self.sums} sums"] if self.sums else []))


def short(dtype: np.dtype | None) -> str:
    """``f64``, ``f32``, ``i64``, ``bool``."""
    if dtype is None:
        return ""
    return "bool" if dtype == BOOL else f"{dtype.kind}{dtype.itemsize * 8}"


def index_text(ix: tuple) -> str:
    """``i0 + 1`` or ``3``: one axis of an index as Python writes it."""
    if ix[0] == "c":
        return str(ix[1])
    off = ix[2]
    return f"i{ix[1]}" + (f" + {off}" if off > 0 else f" - {-off}" if off < 0 else "")


def _shift(ix: tuple, by: int) -> tuple:
    return ("i", ix[1], ix[2] + by) if ix[0] == "i" else ("c", ix[1] + by)


#: a kernel recomputes a fused value at every index a view shifts it to; a chain of
#: stencil steps (u[i-1], u[i], u[i+1] of the step before, a hundred times) would need
#: thousands of values per element, more than fusing saves: past this, run unfused
MAX_INSTRUCTIONS = 20_000


class KernelTooLarge(Exception):
    """A fused kernel past :data:`MAX_INSTRUCTIONS` (its message is the report's line)."""


class _Builder:
    """Writes one kernel's body: each value at the index where it is needed."""

    def __init__(self, plan: FusionPlan, kernel: Kernel) -> None:
        self.plan, self.kernel = plan, kernel
        self.args: dict[Any, str] = {}   # Var or id(Const) -> parameter name
        self.params: list[Param] = []
        self.atoms: list[Atom] = []
        self.block: list[Instr] = []
        self.scopes: list[dict] = [{}]
        self.ranges = [(0, n) for n in kernel.domain]
        self.tmp = 0

    def arg(self, a: Var | Const) -> str:
        key = a if isinstance(a, Var) else id(a)
        if key not in self.args:
            self.args[key] = name = f"a{len(self.args)}"
            self.atoms.append(a)
            self.params.append(Param(name, "scalar" if len(a.shape) == 0 else "array",
                                     a.dtype, tuple(a.shape)))
        return self.args[key]

    def emit(self, op: str, args: tuple, dtype: np.dtype | None) -> str:
        self.tmp += 1
        if self.tmp > MAX_INSTRUCTIONS:
            raise KernelTooLarge(f"run unfused: one fused kernel would take more than "
                                 f"{MAX_INSTRUCTIONS:,} operations per element (values "
                                 "recomputed at many shifted indices, as a stencil's steps)")
        name = f"t{self.tmp}"
        self.block.append(Instr(op, name, args, dtype))
        return name

    def known(self, key: Any) -> Operand | None:
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    def recomputed(self, v: Var) -> bool:
        e = self.plan.fusible.get(v)
        return e is not None and e.prim is not P.sum and \
            self.plan.materialized.get(v, self.kernel.stage) >= self.kernel.stage

    def value(self, a: Atom, idx: Index) -> Operand:
        """The element of ``a`` at ``idx``: a number, a scalar parameter or a result."""
        number = formulas.constant(a) if not isinstance(a, Var) else None
        if number is not None:
            return number
        if isinstance(a, Var) and self.recomputed(a):
            e = self.plan.fusible[a]
            if e.prim in INDEX_MAPS:  # a view or a slice's adjoint: no new value
                return self.view(e, idx)
            name = self.known((a, idx))
            return self.prepare(a, idx) if name is None else name
        if len(a.shape) == 0:
            return self.arg(a)
        key = ("read", a if isinstance(a, Var) else id(a), idx)
        name = self.known(key)
        if name is None:
            name = self.scopes[-1][key] = self.emit("load", (self.arg(a), idx), a.dtype)
        return name

    def prepare(self, v: Var, idx: Index) -> Operand:
        """``v`` at ``idx``, the elementwise values it depends on computed first (deepest
        first) with a stack of our own, not Python's: a chain of thousands of operations
        (an unrolled integrator's adjoint) becomes one kernel, not a RecursionError."""
        todo, seen = [(v, idx, False)], set()
        while todo:
            u, ix, ready = todo.pop()
            if ready:  # its operands are known now
                if self.known((u, ix)) is None:
                    self.scopes[-1][(u, ix)] = self.compute(self.plan.fusible[u], ix)
                continue
            if (u, ix) in seen:
                continue
            seen.add((u, ix))
            todo.append((u, ix, True))
            e = self.plan.fusible[u]
            for k, a in enumerate(e.inputs):
                key = (a, operand_index(e, k, ix))
                if isinstance(a, Var) and self.recomputed(a) and key not in seen and \
                        self.plan.fusible[a].prim not in INDEX_MAPS and self.known(key) is None:
                    todo.append((*key, False))
        return self.known((v, idx))

    def compute(self, e: Eqn, idx: Index) -> Operand:
        """An elementwise equation at ``idx``: the instructions of its formula."""
        ops = [self.value(a, operand_index(e, k, idx)) for k, a in enumerate(e.inputs)]
        done: dict[int, Operand] = {}

        def lay(f: ScalarExpr) -> Operand:
            if f.op == "arg":
                return ops[f.value]
            if f.op == "const":
                return f.value
            if id(f) not in done:
                args = tuple(lay(a) for a in f.args)
                dtype = BOOL if OPS[f.op].kind == "compare" else e.out.dtype
                done[id(f)] = self.emit(f.op, args, dtype)
            return done[id(f)]

        return lay(formulas.of(e))

    def view(self, e: Eqn, idx: Index) -> Operand:
        if e.prim is P.broadcast_to:
            return self.value(e.inputs[0], operand_index(e, 0, idx))
        if e.prim is P.scatter_add:
            return self.scatter(e, idx)
        x = e.inputs[0]
        spec, out_axis, x_idx = basic_index(e.params["idx"], x.shape), 0, []
        for s in spec:
            if s[0] == "new":
                out_axis += 1
            elif s[0] == "int":
                x_idx.append(("c", s[1]))
            else:
                x_idx.append(_shift(idx[out_axis], s[1]))
                out_axis += 1
        return self.value(x, tuple(x_idx))

    def scatter(self, e: Eqn, idx: Index) -> Operand:
        """``scatter_add(u, idx)`` at ``idx``: ``u`` at the shifted index where the slice
        covers it, else 0 (the gather form of a slice's adjoint)."""
        conds, u_idx, out_axis = [], [], 0
        for s in basic_index(e.params["idx"], e.params["shape"]):
            if s[0] == "new":
                u_idx.append(("c", 0))
                continue
            ix = idx[out_axis]
            out_axis += 1
            if s[0] == "int":
                conds += [self.cond(ix, ">=", s[1]), self.cond(ix, "<", s[1] + 1)]
            else:
                conds += [self.cond(ix, ">=", s[1]), self.cond(ix, "<", s[2])]
                u_idx.append(_shift(ix, -s[1]))
        if False in conds:
            return 0.0
        tests = [c for c in conds if c is not True]
        if not tests:
            return self.value(e.inputs[0], tuple(u_idx))
        out = self.emit("set", (0.0,), e.out.dtype)
        self.guarded(tests, lambda: self.block.append(
            Instr("set", out, (self.value(e.inputs[0], tuple(u_idx)),), e.out.dtype)))
        return out

    def cond(self, ix: tuple, op: str, bound: int) -> bool | tuple:
        """``ix op bound`` decided from the loop's range, else the test ``(axis, op, at)``."""
        if ix[0] == "c":
            return ix[1] >= bound if op == ">=" else ix[1] < bound
        axis, off = ix[1], ix[2]
        lo, hi = self.ranges[axis]
        at = bound - off
        if lo >= at:
            return op == ">="
        if hi - 1 < at:
            return op == "<"
        return (axis, op, at)

    def guarded(self, tests: list[tuple], body: Callable[[], None]) -> None:
        outer, self.block = self.block, []
        self.scopes.append({})
        body()
        self.scopes.pop()
        inner, self.block = self.block, outer
        self.block.append(Instr("if", None, (tuple(tests), tuple(inner)), None))

    def loop_body(self) -> None:
        """Each root at the loop's index: the outputs stored, the sums added to (roots
        of the full domain first: their values are shared with the guarded ones)."""
        k, dom = self.kernel, self.kernel.domain
        full = tuple(("i", a, 0) for a in range(len(dom)))
        roots = [(v.shape, v, None) for v in k.outputs
                 if k.matvec is None or v is not k.matvec.out] + \
                [(root_shape(e), None, e) for e in k.reductions + k.partials]
        roots.sort(key=lambda r: r[0] != dom)
        for shape, v, e in roots:
            guard = [self.cond(("i", a, 0), "<", n) for a, n in enumerate(shape)]
            if False in guard:
                continue

            def body(v: Var | None = v, e: Eqn | None = e) -> None:
                if v is not None:
                    value = self.value(v, full)
                    self.block.append(Instr("store", None, (f"o{k.outputs.index(v)}", value),
                                            v.dtype))
                elif e in k.reductions:
                    value = self.value(e.inputs[0], full)
                    self.block.append(Instr("add_to", None, (k.reductions.index(e), value),
                                            e.out.dtype))
                else:  # a sum over some axes: into its element of the output
                    value = self.value(e.inputs[0], full)
                    axes, keep = summed_axes(e), len(e.out.shape) == len(dom)
                    at = tuple(("c", 0) if a in axes else ix for a, ix in enumerate(full)
                               if keep or a not in axes)
                    out = f"o{len(k.outputs) + k.partials.index(e)}"
                    self.block.append(Instr("add_at", None, (out, value, at, in_order(axes, len(dom))),
                                            e.out.dtype))
            tests = [g for g in guard if g is not True]
            if tests:
                self.guarded(tests, body)
            else:
                body()


def build(plan: FusionPlan, kernel: Kernel) -> KernelIR:
    """The typed program of one kernel of ``plan``."""
    b = _Builder(plan, kernel)
    b.loop_body()
    outs = [Param(f"o{k}", "out", v.dtype, tuple(v.shape))
            for k, v in enumerate(kernel.outputs + [e.out for e in kernel.partials])]
    pair = kernel.matvec
    names = None if pair is None else MatvecLoops(
        b.arg(pair.matrix), b.arg(pair.vector), b.arg(pair.rows),
        f"o{kernel.outputs.index(pair.grad)}", f"o{kernel.outputs.index(pair.out)}")
    return KernelIR(kernel.name, kernel.domain, b.params + outs, b.block,
                    len(kernel.reductions), b.atoms, names)


def flattened(ir: KernelIR) -> KernelIR:
    """The kernel as one loop over its elements, when every array it reads or writes has
    the domain's shape and is read at the loop's own index: in C order that is one flat
    index, and one long loop vectorizes where a nest of short ones (an image's 16 columns
    inside channels inside a batch) pays its loop overhead at every row. Other kernels as
    they are. (For renderers that index C-contiguous memory, as the LLVM route does.)

    >>> import numpy as np, diffkit.numpy as dnp
    >>> from diffkit.compiler.fusion import fuse
    >>> from diffkit.ir.tracer import trace_graph
    >>> plan = fuse(trace_graph(lambda x: dnp.tanh(x) * x, (np.ones((4, 2, 3)),)))
    >>> flattened(build(plan, plan.kernels[0])).domain
    (24,)
    """
    full = tuple(("i", a, 0) for a in range(len(ir.domain)))
    if len(ir.domain) < 2 or ir.matvec or any(
            p.kind != "scalar" and p.shape != ir.domain for p in ir.params) or any(
            i.op in ("if", "add_at") or (i.op == "load" and i.args[1] != full)
            for i in ir.instructions()):
        return ir
    n = int(np.prod(ir.domain))
    body = [Instr(i.op, i.result, (i.args[0], (("i", 0, 0),)), i.dtype) if i.op == "load"
            else i for i in ir.body]
    params = [p if p.kind == "scalar" else Param(p.name, p.kind, p.dtype, (n,))
              for p in ir.params]
    return KernelIR(ir.name, (n,), params, body, ir.sums, ir.atoms)


__all__ = ["Instr", "KernelIR", "MatvecLoops", "Param", "build", "flattened", "index_text"]
